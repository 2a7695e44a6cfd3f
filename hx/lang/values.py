"""The batched values programs run on, and the split format the training loop consumes.

Shapes below use B for the batch axis, L for the padded list length, N for the padded node count, K for
the padded neighbour count and E for the padded edge count. Padding is marked by masks and never changes a
result.

A tensor value of type `Tensor<a>[m1]...[mk]` is a plain array of shape (B, m1, ..., mk).

Data sets keep their images on the device in one table of shape (num_images, *image_shape); an example
then stores indices into that table in the same containers (`values` holding integer indices instead of
images), and `gather` swaps the indices for the images inside the jitted step.

A split of graphs stores its structure once per graph shape: `SharedGraphs` holds per-example node values
and a small layout id into `GraphLayouts` (the neighbour tables and masks of the few graph shapes a split
has, e.g. one per grid size), and `take` builds the `GraphBatch` of a batch of examples from them (inside
the jitted step). A million 4x4 grids then share one 16-node table instead of holding a million copies.

A graph comes in one of two forms, which `conv_g` treats alike (same function, same parameters):
`GraphBatch`, a dense neighbour table (R, N, K), which suits graphs of small, even degree such as the
paper's grids; and `EdgeGraphBatch`, sender and receiver index arrays, for graphs of any size and degree
(`conv_g` then aggregates with segment operations over the edges). `edges_from_table` and
`table_from_edges` convert between them; `check_graphs` validates an edge-list batch, `pack_graphs` builds
one from per-graph arrays and `size_bucket` rounds sizes up so that a few shapes (compilations) serve
graphs of many sizes.

This module imports NumPy only (no JAX): the data layer builds these containers without JAX, and the
functions here work on NumPy and JAX arrays alike. It sits in `hx.lang`, below both the data layer that
builds the containers and `hx.compile`, which runs programs on them (and re-exports them as
`hx.compile.values`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Union

import numpy as np

if TYPE_CHECKING:
  import jax
  import numpy.typing as npt

__all__ = ["ListBatch", "GraphBatch", "EdgeGraphBatch", "GraphLayouts", "SharedGraphs", "Split", "gather",
           "take", "rows", "num_examples", "images_per_example", "real_elements", "index_dtype",
           "ELEMENT_BATCHES", "Array", "Batch", "Inputs",
           "edges_from_table", "table_from_edges", "check_graphs", "pack_graphs", "size_bucket"]

Array = Union[np.ndarray, "jax.Array"]
"""An array of a container: NumPy as the data layer builds it, or JAX on the device (inside the jitted
step, a tracer)."""


class ListBatch(NamedTuple):
  """A batch of lists of tensors.

  Attributes:
    values: `(B, L, *elem)` element values (or (B, L) int32 indices into an image table).
    mask: (B, L) bool, True for real elements; the real elements of each row are a prefix.
  """
  values: Array
  mask: Array


class GraphBatch(NamedTuple):
  """A batch of graphs whose nodes hold tensors.

  Attributes:
    values: `(B, N, *elem)` node values (or (B, N) int32 indices into an image table).
    neighbours: (B, N, K) int32; neighbours[b, u, 0] == u (a node comes first in its own list), then
      u's neighbours; padded entries point at u itself and are masked out.
    neighbour_mask: (B, N, K) bool, True for real entries of each neighbour list (a prefix).
    mask: (B, N) bool, True for real nodes; the real nodes of each graph are a prefix.
  """
  values: Array
  neighbours: Array
  neighbour_mask: Array
  mask: Array


class EdgeGraphBatch(NamedTuple):
  """A batch of graphs whose nodes hold tensors, their structure given by edge lists.

  jraph's `GraphsTuple` layout with one graph per batch row: the lowering flattens the rows into one node
  axis of B*N nodes and offsets each row's indices by row*N, which is jraph's batching by concatenation
  with every graph given N node and E edge slots (a split's size bucket, `size_bucket`). Keeping the batch
  axis lets targets, losses and masks stay per row, as for lists and the neighbour-table form.

  Under conv_g, node u's neighbour list is u itself first, then the sender of every real edge into u in
  edge order (the `GraphBatch` form of the same graph lists them in its table); an undirected graph lists
  each of its edges once in each direction.

  Attributes:
    values: `(B, N, *elem)` node values (or (B, N) integer indices into an image table).
    senders: (B, E) integer; edge e of graph b goes from node senders[b, e] (an index within graph b) ...
    receivers: (B, E) integer; ... to node receivers[b, e]. Padded edges may hold any index in 0..N-1.
    edge_mask: (B, E) bool, True for real edges; the real edges of each graph are a prefix.
    mask: (B, N) bool, True for real nodes; the real nodes of each graph are a prefix. A real edge joins
      two real nodes (`check_graphs`).
  """
  values: Array
  senders: Array
  receivers: Array
  edge_mask: Array
  mask: Array


ELEMENT_BATCHES = (ListBatch, GraphBatch, EdgeGraphBatch)
"""The containers of elements with a `values` array (B, L or N, ...) and a `mask` (B, L or N)."""


class GraphLayouts(NamedTuple):
  """The structure of S graph shapes, each padded to N nodes (e.g. S grid sizes of one split).

  Attributes:
    neighbours: (S, N, K) int32; as in GraphBatch, per shape.
    neighbour_mask: (S, N, K) bool.
    mask: (S, N) bool, True for real nodes.
  """
  neighbours: Array
  neighbour_mask: Array
  mask: Array


class SharedGraphs(NamedTuple):
  """n graphs whose structure is one of a few shared layouts: a split's compact graph inputs.

  Attributes:
    values: `(n, N, *elem)` node values, or (n, N) integer indices into an image table (any integer dtype:
      the data layer stores the narrowest one that holds the table's size, e.g. uint16).
    layout: (n,) integer; example i has the structure `layouts[:, layout[i]]`.
    layouts: the shared GraphLayouts (S of them).
  """
  values: Array
  layout: Array
  layouts: GraphLayouts


Batch = Union[Array, ListBatch, GraphBatch, EdgeGraphBatch]
"""A batch's inputs as a program consumes them: an array, a ListBatch, a GraphBatch or an EdgeGraphBatch."""

Inputs = Union[Batch, SharedGraphs]
"""A split's inputs: a `Batch`, or SharedGraphs (graphs sharing a few layouts)."""


class Split(NamedTuple):
  """One split of a task: n examples.

  Attributes:
    inputs: the program's input for all n examples, with a leading axis n: an array `(n, *shape)`, a
      ListBatch, a GraphBatch or a SharedGraphs; image inputs hold integer indices into the task's image
      table (int32, or for SharedGraphs the narrowest integer dtype that holds the table's size).
    targets: the expected outputs: float32 `(n, *shape)` for real outputs and for Tensor<bool>[1]
      (0 or 1); int32 class indices (n,) for Tensor<bool>[k] with k > 1; for list or graph outputs,
      `(n, L or N, *shape)`, scored only where the input's mask is True. Graph targets that are small
      exact integers may be stored as uint8 to save memory: the training loop casts targets to float32
      (int32 for class indices) inside the jitted step.
  """
  inputs: Inputs
  targets: Array


def index_dtype(size: int) -> np.dtype:
  """The narrowest unsigned integer dtype that holds the indices 0..size-1 (uint8, uint16 or uint32)."""
  if size < 0:
    raise ValueError(f"a table size must be >= 0, got {size}")
  for dtype in (np.uint8, np.uint16, np.uint32):
    if size - 1 <= np.iinfo(dtype).max:
      return np.dtype(dtype)
  raise ValueError(f"a table of {size} rows needs 64-bit indices")


def take(inputs: Inputs, idx: Array | slice) -> Batch:
  """Examples `idx` of a split's inputs, as the program consumes them.

  Args:
    inputs: an array (n, ...), ListBatch, GraphBatch or SharedGraphs.
    idx: (B,) integer indices (or a slice) into the n examples; NumPy or JAX.

  Returns:
    The same container for arrays, ListBatch and GraphBatch (rows idx of every array); a GraphBatch for
    SharedGraphs, its neighbour tables and masks gathered from the shared layouts and integer values
    widened to int32 (GraphBatch's index dtype); an EdgeGraphBatch with its integer arrays (values,
    senders, receivers) widened to int32 (a split may store them narrower).
  """
  if isinstance(inputs, SharedGraphs):
    layout = inputs.layout[idx]
    values = inputs.values[idx]
    if np.issubdtype(values.dtype, np.integer):
      values = values.astype(np.int32)
    layouts = inputs.layouts
    return GraphBatch(values, layouts.neighbours[layout], layouts.neighbour_mask[layout],
                      layouts.mask[layout])
  if isinstance(inputs, EdgeGraphBatch):
    widen = lambda a: a.astype(np.int32) if np.issubdtype(a.dtype, np.integer) else a
    return EdgeGraphBatch(widen(inputs.values[idx]), widen(inputs.senders[idx]), widen(inputs.receivers[idx]),
                          inputs.edge_mask[idx], inputs.mask[idx])
  if isinstance(inputs, (ListBatch, GraphBatch)):
    return type(inputs)(*(a[idx] for a in inputs))
  return inputs[idx]


def rows(inputs: Inputs, idx: Array | slice) -> Inputs:
  """Examples `idx` of a split's inputs in the split's own form (SharedGraphs stays SharedGraphs, sharing
  its layouts); e.g. a prefix of a split."""
  if isinstance(inputs, SharedGraphs):
    return inputs._replace(values=inputs.values[idx], layout=inputs.layout[idx])
  if isinstance(inputs, EdgeGraphBatch):
    return EdgeGraphBatch(*(a[idx] for a in inputs))
  return take(inputs, idx)


def num_examples(inputs: Inputs) -> int:
  """n, the number of examples of a split's inputs."""
  if isinstance(inputs, (*ELEMENT_BATCHES, SharedGraphs)):
    return int(inputs.values.shape[0])
  return int(inputs.shape[0])


def images_per_example(inputs: Inputs) -> int:
  """How many rows (images, list elements or graph nodes) an example of these inputs pushes through the
  per-element networks, padding included: 1 for a tensor, L for a list, N for a graph."""
  if isinstance(inputs, (*ELEMENT_BATCHES, SharedGraphs)):
    return int(inputs.values.shape[1])
  return 1


def real_elements(inputs: Inputs) -> np.ndarray | None:
  """(n,) int64: the real list elements or graph nodes of each example of a split's inputs (a ListBatch,
  GraphBatch, EdgeGraphBatch or SharedGraphs; NumPy or device arrays, read on the host), the rows a
  packed map pushes through its function; None for tensor inputs (nothing is padded)."""
  if isinstance(inputs, SharedGraphs):
    per_layout = np.asarray(inputs.layouts.mask).astype(bool).sum(axis=1)
    return per_layout[np.asarray(inputs.layout).astype(np.int64)]
  if isinstance(inputs, ELEMENT_BATCHES):
    return np.asarray(inputs.mask).astype(bool).sum(axis=1)
  return None


def gather(table: Array, inputs: Batch) -> Batch:
  """`inputs` with each array of integer image indices replaced by the images it points at.

  Args:
    table: `(num_images, *image_shape)` images.
    inputs: (B,) integer indices, or a ListBatch / GraphBatch / EdgeGraphBatch whose `values` are integer
      indices.

  Returns:
    `(B, *image_shape)` images, or the same container with `values` of shape `(B, L or N, *image_shape)`.
  """
  if isinstance(inputs, ELEMENT_BATCHES):
    return inputs._replace(values=table[inputs.values])
  return table[inputs]


def size_bucket(size: int, minimum: int = 8) -> int:
  """The padded size for `size` nodes or edges: the next power of two, at least `minimum`.

  Padding every split's graphs to a bucket instead of to their exact largest size lets splits and tasks of
  similar sizes share one compiled executable (one per bucket), at the cost of less than twice the work.
  """
  if size < 0 or minimum < 1:
    raise ValueError(f"size_bucket needs size >= 0 and minimum >= 1, got {size}, {minimum}")
  bucket = minimum
  while bucket < size:
    bucket *= 2
  return bucket


def check_graphs(graphs: EdgeGraphBatch, name: str = "graph") -> None:
  """Raises ValueError if an edge-list batch is malformed, naming the graph (row) and the edge.

  Checks the shapes, that the node and edge masks are prefixes, and that every real edge's sender and
  receiver is one of its graph's real nodes (a padding edge may hold anything: it is never read).
  """
  values, senders, receivers, edge_mask, mask = (np.asarray(a) for a in graphs)
  if mask.ndim != 2 or values.shape[:2] != mask.shape:
    raise ValueError(f"{name}s: values {values.shape} and mask {mask.shape} must share (B, N)")
  if senders.shape != receivers.shape or senders.shape != edge_mask.shape or senders.ndim != 2 or (
      senders.shape[0] != mask.shape[0]):
    raise ValueError(f"{name}s: senders {senders.shape}, receivers {receivers.shape} and edge_mask "
                     f"{edge_mask.shape} must all be (B, E) with B = {mask.shape[0]}")
  if not (np.issubdtype(senders.dtype, np.integer) and np.issubdtype(receivers.dtype, np.integer)):
    raise ValueError(f"{name}s: senders and receivers must be integer arrays, got {senders.dtype}, "
                     f"{receivers.dtype}")
  nodes = mask.astype(bool).sum(axis=1)
  edges = edge_mask.astype(bool).sum(axis=1)
  for what, m, count in (("node", mask, nodes), ("edge", edge_mask, edges)):
    prefix = np.arange(m.shape[1])[None, :] < count[:, None]
    bad = np.flatnonzero(np.any(m.astype(bool) != prefix, axis=1))
    if bad.size:
      raise ValueError(f"{name} {bad[0]}: its real {what}s are not a prefix of its {what} mask")
  for role, idx in (("sender", senders), ("receiver", receivers)):
    out = edge_mask.astype(bool) & ((idx < 0) | (idx >= nodes[:, None]))
    if out.any():
      b, e = np.argwhere(out)[0]
      raise ValueError(f"{name} {b}: edge {e} has {role} {int(idx[b, e])}, not one of its {nodes[b]} nodes "
                       f"(0..{nodes[b] - 1})")


def pack_graphs(values: Sequence[npt.ArrayLike], senders: Sequence[npt.ArrayLike],
                receivers: Sequence[npt.ArrayLike], nodes: int | None = None,
                edges: int | None = None, fill: float = 0.0, name: str = "graph") -> EdgeGraphBatch:
  """An EdgeGraphBatch of graphs given one by one.

  Args:
    values: per graph, an array `(n_b, *elem)` of node values (or (n_b,) integer image indices).
    senders, receivers: per graph, integer arrays (e_b,): edge i goes from senders[b][i] to receivers[b][i].
    nodes, edges: the padded N and E (default: the largest n_b and e_b).
    fill: the value of padded nodes (it never changes a result).
    name: what a graph is called in error messages.

  Raises:
    ValueError: a graph with an edge index outside its nodes (naming the graph, edge and index), or
      padded sizes smaller than a graph.
  """
  values = [np.asarray(v) for v in values]
  senders = [np.asarray(s).reshape(-1) for s in senders]
  receivers = [np.asarray(r).reshape(-1) for r in receivers]
  if not len(values) == len(senders) == len(receivers) or not values:
    raise ValueError(f"pack_graphs needs as many senders and receivers as node arrays (at least one), got "
                     f"{len(values)}, {len(senders)}, {len(receivers)}")
  for b, (s, r) in enumerate(zip(senders, receivers)):
    if s.shape != r.shape:
      raise ValueError(f"{name} {b}: {s.shape[0]} senders but {r.shape[0]} receivers")
  n = max(len(v) for v in values) if nodes is None else nodes
  e = max(len(s) for s in senders) if edges is None else edges
  if n < max(len(v) for v in values) or e < max(len(s) for s in senders):
    raise ValueError(f"cannot pad {name}s of up to {max(len(v) for v in values)} nodes and "
                     f"{max(len(s) for s in senders)} edges to {n} nodes and {e} edges")
  elem = values[0].shape[1:]
  dtype = values[0].dtype if np.issubdtype(values[0].dtype, np.integer) else np.float32
  out_values = np.full((len(values), n) + elem, fill, dtype)
  out_senders = np.zeros((len(values), e), np.int32)
  out_receivers = np.zeros((len(values), e), np.int32)
  edge_mask = np.zeros((len(values), e), bool)
  mask = np.zeros((len(values), n), bool)
  for b, (v, s, r) in enumerate(zip(values, senders, receivers)):
    out_values[b, :len(v)], mask[b, :len(v)] = v, True
    out_senders[b, :len(s)], out_receivers[b, :len(r)], edge_mask[b, :len(s)] = s, r, True
  graphs = EdgeGraphBatch(out_values, out_senders, out_receivers, edge_mask, mask)
  check_graphs(graphs, name)
  return graphs


def edges_from_table(graphs: GraphBatch, edges: int | None = None) -> EdgeGraphBatch:
  """The same graphs as edge lists: entry k >= 1 of node u's neighbour list becomes an edge into u.

  Entry 0 (the node itself, which conv_g's kernel always sees first) is not an edge: the edge-list form
  adds it by itself. Edges come in the table's order (node by node, then entry by entry), so a kernel sees
  the same neighbour lists in the same order.

  Args:
    graphs: a neighbour-table batch (NumPy arrays).
    edges: the padded E (default: the most edges a graph has).
  """
  values, neighbours, neighbour_mask, mask = (np.asarray(a) for a in graphs)
  b, n, k = neighbours.shape
  real = neighbour_mask.astype(bool) & mask.astype(bool)[:, :, None]
  real[:, :, 0] = False
  counts = real.reshape(b, -1).sum(axis=1)
  e = int(counts.max(initial=0)) if edges is None else edges
  if e < counts.max(initial=0):
    raise ValueError(f"cannot pad graphs of up to {counts.max()} edges to {e}")
  senders = np.zeros((b, e), np.int32)
  receivers = np.zeros((b, e), np.int32)
  edge_mask = np.arange(e)[None, :] < counts[:, None]
  receiver_of = np.broadcast_to(np.arange(n)[None, :, None], (b, n, k))
  for row in range(b):
    flat = real[row].reshape(-1)
    senders[row, :counts[row]] = neighbours[row].reshape(-1)[flat]
    receivers[row, :counts[row]] = receiver_of[row].reshape(-1)[flat]
  return EdgeGraphBatch(values, senders, receivers, edge_mask, mask.astype(bool))


def table_from_edges(graphs: EdgeGraphBatch, neighbours: int | None = None) -> GraphBatch:
  """The same graphs as a neighbour table: node u's list is u, then the senders of its edges in order.

  Args:
    graphs: an edge-list batch (NumPy arrays; checked with `check_graphs`).
    neighbours: the padded K (default: one more than the largest in-degree).
  """
  check_graphs(graphs)
  values, senders, receivers, edge_mask, mask = (np.asarray(a) for a in graphs)
  b, n = mask.shape
  lists = [[[u] for u in range(n)] for _ in range(b)]
  for row in range(b):
    for e in np.flatnonzero(edge_mask[row]):
      lists[row][receivers[row, e]].append(int(senders[row, e]))
  k = max(len(nb) for g in lists for nb in g) if neighbours is None else neighbours
  if k < max(len(nb) for g in lists for nb in g):
    raise ValueError(f"cannot fit neighbour lists of up to {max(len(nb) for g in lists for nb in g)} "
                     f"entries in {k}")
  table = np.broadcast_to(np.arange(n, dtype=np.int32)[None, :, None], (b, n, k)).copy()
  table_mask = np.zeros((b, n, k), bool)
  for row in range(b):
    for u in range(int(mask[row].sum())):
      table[row, u, :len(lists[row][u])] = lists[row][u]
      table_mask[row, u, :len(lists[row][u])] = True
  return GraphBatch(values, table, table_mask, mask.astype(bool))
