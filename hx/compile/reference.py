"""A reference interpreter in plain NumPy: one example at a time, Python loops, no padding, inference mode.

It reads the same variables and frozen parameters as a `CompiledProgram` and should compute the same
outputs as its `apply(..., train=False)`; the tests compare the two. It follows the paper's definitions
directly (section 2) and shares no code with the lowering beyond the parameter layout. Each module runs
as its template's float64 reference, which sits beside the template's JAX code in `hx.compile.modules`
(`Template.reference`, `reference_module`).

One example's values (no batch axis, no padding):
  tensor   np.ndarray of the type's shape
  list     a Python list of np.ndarray
  graph    RefGraph(values: list of np.ndarray, neighbours: list of lists of node indices, each node's
           own index first)

`unbatch` turns a batched value (array / ListBatch / GraphBatch / EdgeGraphBatch) into a list of such
examples (an edge-list graph's neighbour lists: each node, then the senders of its edges in edge order),
and `to_batch` pads examples into a batch (a neighbour table; `hx.compile.values.edges_from_table` makes
edge lists of it).

`fix(e)` runs e until no value changes by more than the compiled program's `config.fix.tolerance`, or
`config.fix.max_iterations` times, one example at a time.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Sequence, Union

import numpy as np

from hx.compile.lower import CompiledProgram
from hx.compile.modules.templates import reference_module
from hx.lang import program as P
from hx.lang.values import EdgeGraphBatch, GraphBatch, ListBatch

if TYPE_CHECKING:
  import jax

  from hx.lang.values import Batch

__all__ = ["RefGraph", "reference_apply", "reference_module", "unbatch", "to_batch"]


@dataclasses.dataclass
class RefGraph:
  """One graph: node values and, per node, its neighbour list (its own index first)."""
  values: list
  neighbours: list


RefValue = Union[np.ndarray, list[np.ndarray], RefGraph]
"""One example's value as the reference interpreter holds it (module docstring): a tensor, a list of
tensors, or a graph."""


def reference_apply(compiled: CompiledProgram, variables: dict, frozen: Sequence[dict],
                    example: RefValue) -> RefValue:
  """Runs `compiled.program` on one example (see the module docstring for value forms), inference mode."""
  fresh = {n: i for i, n in enumerate(compiled.fresh_slots)}
  lib = {n: j for j, n in enumerate(compiled.library_slots)}
  window = compiled.config.conv_window

  def module(node: P.Fresh | P.Lib, args: Sequence[np.ndarray | list[np.ndarray]]) -> np.ndarray:
    if isinstance(node, P.Fresh):
      i = fresh[node.name]
      return reference_module(compiled.specs[node.name], variables["params"][i],
                              variables["batch_stats"][i], args)
    j = lib[node.name]
    return reference_module(compiled.specs[f"lib.{node.name}"], frozen[j]["params"],
                            frozen[j]["batch_stats"], args)

  def run(node: P.Program, v: RefValue) -> RefValue:
    if isinstance(node, (P.Fresh, P.Lib)):
      return module(node, [v])
    if isinstance(node, P.Compose):
      return run(node.f, run(node.g, v))
    if isinstance(node, P.Map):
      if isinstance(v, RefGraph):
        return RefGraph([run(node.fn, a) for a in v.values], v.neighbours)
      return [run(node.fn, a) for a in v]
    if isinstance(node, P.Fold):
      if not isinstance(node.init, P.Zeros):
        raise NotImplementedError(f"fold start {node.init}")
      state = np.zeros(node.init.n)
      for a in (v.values if isinstance(v, RefGraph) else v):
        state = module(node.fn, [state, a])
      return state
    if isinstance(node, P.Conv) and node.adt == "l":
      k = len(v)
      order = [0] + list(range(-window, 0)) + list(range(1, window + 1))  # own element first
      return [run(node.fn, [v[min(max(i + o, 0), k - 1)] for o in order]) for i in range(k)]
    if isinstance(node, P.Conv):
      return RefGraph([run(node.fn, [v.values[j] for j in nbrs]) for nbrs in v.neighbours], v.neighbours)
    if isinstance(node, P.Repeat):
      for _ in range(node.k):
        v = run(node.fn, v)
      return v
    if isinstance(node, P.Fix):
      fix = compiled.config.fix
      for _ in range(fix.max_iterations):
        new = run(node.fn, v)
        change = max((float(np.max(np.abs(np.subtract(a, b, dtype=np.float64)), initial=0.0))
                      for a, b in zip(_elements(v), _elements(new))), default=0.0)
        v = new
        if not change > fix.tolerance:
          break
      return v
    raise ValueError(f"cannot run {node}")

  return run(compiled.program, example)


def _elements(v: RefValue) -> list:
  """The arrays of one example's value: a tensor, a list's elements or a graph's node values."""
  if isinstance(v, RefGraph):
    return list(v.values)
  return list(v) if isinstance(v, list) else [v]


def unbatch(x: Batch, mask: jax.typing.ArrayLike | None = None) -> list[RefValue]:
  """Batched value -> list of per-example values without padding (rows where mask is False dropped)."""
  if isinstance(x, EdgeGraphBatch):
    vals, senders, receivers, edge_mask, m = (np.asarray(a) for a in x)
    out = []
    for b in range(vals.shape[0]):
      n = int(m[b].sum())
      lists = [[u] for u in range(n)]
      for e in np.flatnonzero(edge_mask[b]):
        lists[int(receivers[b, e])].append(int(senders[b, e]))
      out.append(RefGraph([vals[b, u] for u in range(n)], lists))
  elif isinstance(x, GraphBatch):
    vals, nb, nm, m = (np.asarray(a) for a in x)
    out = []
    for b in range(vals.shape[0]):
      n = int(m[b].sum())
      out.append(RefGraph([vals[b, u] for u in range(n)],
                          [[int(nb[b, u, k]) for k in range(nb.shape[2]) if nm[b, u, k]] for u in range(n)]))
  elif isinstance(x, ListBatch):
    vals, m = np.asarray(x.values), np.asarray(x.mask)
    out = [[vals[b, i] for i in range(int(m[b].sum()))] for b in range(vals.shape[0])]
  else:
    out = list(np.asarray(x))
  if mask is not None:
    out = [o for o, keep in zip(out, np.asarray(mask)) if keep]
  return out


def to_batch(examples: Sequence[RefValue], length: int | None = None, neighbours: int | None = None,
             fill: float = 0.0) -> np.ndarray | ListBatch | GraphBatch:
  """Pads per-example values into a batch (the inverse of `unbatch`).

  Args:
    examples: all tensors (stacked as they are), all lists, or all RefGraphs.
    length: padded list length / node count (default: the longest).
    neighbours: padded neighbour-list length K for graphs (default: the longest list).
    fill: value of padded elements (padding never changes a result, whatever it holds).
  """
  first = examples[0]
  if isinstance(first, RefGraph):
    n = length or max(len(g.values) for g in examples)
    k = neighbours or max(len(nb) for g in examples for nb in g.neighbours)
    elem = np.shape(first.values[0])
    vals = np.full((len(examples), n) + elem, fill, np.float32)
    nb = np.zeros((len(examples), n, k), np.int32)
    nm = np.zeros((len(examples), n, k), bool)
    m = np.zeros((len(examples), n), bool)
    for b, g in enumerate(examples):
      for u, (val, lst) in enumerate(zip(g.values, g.neighbours)):
        vals[b, u], m[b, u] = val, True
        nb[b, u] = u  # padded entries point at the node itself
        nb[b, u, :len(lst)], nm[b, u, :len(lst)] = lst, True
      for u in range(len(g.values), n):
        nb[b, u] = u
    return GraphBatch(vals, nb, nm, m)
  if isinstance(first, list):
    n = length or max(len(e) for e in examples)
    elem = np.shape(next(a for e in examples for a in e))
    vals = np.full((len(examples), n) + elem, fill, np.float32)
    m = np.zeros((len(examples), n), bool)
    for b, e in enumerate(examples):
      for i, a in enumerate(e):
        vals[b, i], m[b, i] = a, True
    return ListBatch(vals, m)
  return np.stack([np.asarray(e, np.float32) for e in examples])
