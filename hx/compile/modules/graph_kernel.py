"""The `graph_kernel` template: `List<T> -> U` in the kernel position of conv_g / conv_l (see
`hx.compile.modules`): a pair network over (node, neighbour) pairs, masked reductions of its messages,
and a node network; on lists (R, K, ...) or on `Neighbourhoods` given by edges. Also what both graph
kernels share: the kept components and the residual update (`_update`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.modules.layers import Rows, _dense, _size, activate, apply_dense
from hx.compile.modules.reference_layers import _ref_activate, _ref_dense, _ref_relu, _ref_vector
from hx.compile.modules.spec import ModuleSpec

__all__ = ["Neighbourhoods"]


def _residual(spec: ModuleSpec) -> bool:
  """Whether a graph kernel adds its node network's output to the node's own value."""
  return dict(spec.hyper).get("update") == "residual"


def _kept(spec: ModuleSpec) -> int:
  """The leading components of the node's value a graph kernel passes through (ModuleConfig.graph_keep)."""
  return dict(spec.hyper).get("keep", 0)


def _update(spec: ModuleSpec, x: jax.Array, y: jax.Array) -> jax.Array:
  """A graph kernel's output from the node's own value x (M, elem) and its last layer's y (M, elem -
  keep): the kept components of x, then y, or x's others plus y under the residual update."""
  k = _kept(spec)
  rest = x[:, k:] + y if _residual(spec) else y
  return jnp.concatenate([x[:, :k], rest], -1) if k else rest


def _masked_aggregate(m: jax.Array, valid: jax.Array, how: str) -> jax.Array:
  """Reduces m (R, K, M) over K where valid (R, K); rows with no valid entry give 0."""
  v = valid[..., None]
  count = jnp.sum(valid, 1)[:, None]
  if how == "min":
    r = jnp.min(jnp.where(v, m, jnp.inf), 1)
  elif how == "max":
    r = jnp.max(jnp.where(v, m, -jnp.inf), 1)
  elif how == "sum":
    return jnp.sum(jnp.where(v, m, 0.0), 1)
  else:
    return jnp.sum(jnp.where(v, m, 0.0), 1) / jnp.maximum(count, 1).astype(m.dtype)
  return jnp.where(count > 0, r, 0.0)


class Neighbourhoods(NamedTuple):
  """The neighbour lists of M nodes given by edges: a graph kernel's input under conv_g over an
  `hx.compile.values.EdgeGraphBatch` (flattened: M = rows * N nodes, indices offset by row * N).

  Node u's list is u itself, then the sender of every counted edge into u, in edge order: the same list
  the neighbour-table form gives the kernel, without a K axis. A node outside the module's row mask has an
  empty list (its output is never read).

  Attributes:
    nodes: (M, *elem) node values.
    senders: (E,) int32 indices into nodes.
    receivers: (E,) int32 indices into nodes.
    edge_mask: (E,) bool, the edges that count (False for padding edges).
  """
  nodes: jax.Array
  senders: jax.Array
  receivers: jax.Array
  edge_mask: jax.Array


def _segment_aggregate(m: jax.Array, segments: jax.Array, valid: jax.Array, count: jax.Array,
                       num_segments: int, how: str) -> jax.Array:
  """Reduces the messages m (P, M) into num_segments segments by segment id (P,) where valid (P,);
  count (num_segments, 1) is the valid messages per segment; a segment with none gives 0.

  Invalid messages go to an extra last segment that is dropped (as jraph routes padding edges to a padding
  node), and are replaced by the reduction's identity too, so they reach no gradient either.
  """
  ids = jnp.where(valid, segments, num_segments)
  v = valid[:, None]
  n = num_segments + 1
  if how == "min":
    r = jax.ops.segment_min(jnp.where(v, m, jnp.inf), ids, n)[:num_segments]
  elif how == "max":
    r = jax.ops.segment_max(jnp.where(v, m, -jnp.inf), ids, n)[:num_segments]
  else:
    total = jax.ops.segment_sum(jnp.where(v, m, 0.0), ids, n)[:num_segments]
    return total if how == "sum" else total / jnp.maximum(count, 1.0)
  return jnp.where(count > 0, r, 0.0)


# Inside a loop (`recompute=True`, what the lowering passes in repeat's body) the graph kernel is
# rematerialised (`jax.checkpoint`): its backward pass recomputes the pair network from the kernel's inputs
# instead of keeping its residuals. Those are per pair (the pair network's input, hidden activations and
# ReLU masks, the messages, ~300 bytes a pair) against a node state of a few floats, so under
# repeat(10, conv_g(k)) on 150 4x4 grids they came to ~45 MB of stacked scan buffers per training step,
# and filling fresh buffers of that size (page faults, copies) cost more on XLA:CPU than computing the pair
# network again: the step measured faster rematerialised (benchmarks/notes/2026-11-22-graph-conv.md).
# A single call keeps its residuals (rematerialised it measured slower), and so does fix's body,
# whose backward pass already recomputes one application at a time (hx.compile.fixpoint). Values and
# gradients are the same either way.


def _graph_kernel_lists(spec: ModuleSpec, params: dict, values: jax.Array, valid: jax.Array) -> jax.Array:
  """The graph kernel on R lists values (R, K, *elem) with mask (R, K), element 0 the node itself:
  (R, prod(output)) pre-activation; reductions over the K axis."""
  r, k = values.shape[:2]
  x = values.reshape(r, k, -1).astype(jnp.float32)
  own = x[:, 0]
  msg = _pair_messages(params, jnp.concatenate([jnp.broadcast_to(own[:, None], x.shape), x], -1))
  valid = valid.astype(bool)
  return _node_output(spec, params, own, [_masked_aggregate(msg, valid, how) for how in spec["aggregations"]])


def _graph_kernel_edges(spec: ModuleSpec, params: dict, nb: Neighbourhoods, mask: jax.Array) -> jax.Array:
  """The graph kernel on neighbour lists given by edges (`Neighbourhoods`): (M, *output) pre-activation."""
  r = nb.nodes.shape[0]
  x = nb.nodes.reshape(r, -1).astype(jnp.float32)
  senders, receivers = nb.senders.astype(jnp.int32), nb.receivers.astype(jnp.int32)
  # One pair per node (itself, itself), then one per edge (receiver, sender): the dense form's K entries.
  pairs = jnp.concatenate([jnp.concatenate([x, x], -1), jnp.concatenate([x[receivers], x[senders]], -1)], 0)
  msg = _pair_messages(params, pairs)
  segments = jnp.concatenate([jnp.arange(r, dtype=jnp.int32), receivers])
  valid = jnp.concatenate([mask.astype(bool), nb.edge_mask.astype(bool)])
  count = jax.ops.segment_sum(valid.astype(jnp.float32), jnp.where(valid, segments, r), r + 1)[:r, None]
  agg = [_segment_aggregate(msg, segments, valid, count, r, how) for how in spec["aggregations"]]
  return _node_output(spec, params, x, agg)


def _pair_messages(params: dict, pairs: jax.Array) -> jax.Array:
  """The graph kernel's pair network: (..., 2 * elem) (node, neighbour) pairs -> (..., message)."""
  return apply_dense(params["pair_out"], jax.nn.relu(apply_dense(params["pair_hidden"], pairs)))


def _node_output(spec: ModuleSpec, params: dict, x: jax.Array, agg: list) -> jax.Array:
  """The graph kernel's node network on a node's value x (M, elem) and its aggregated messages (each
  (M, message)): (M, prod(output)) pre-activation (`_update`)."""
  h = jax.nn.relu(apply_dense(params["node_hidden"], jnp.concatenate([x] + agg, -1)))
  return _update(spec, x, apply_dense(params["node_out"], h))


# The kernels as called inside a loop (`recompute=True`): rematerialised, see above.
_RECOMPUTED = {f: jax.checkpoint(f, static_argnums=(0,)) for f in (_graph_kernel_lists, _graph_kernel_edges)}


def _init_graph_kernel(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  d = _size(spec.inputs[0].elem)
  h, m = spec["hidden"], spec["message"]
  n_agg = len(spec["aggregations"])
  return {"pair_hidden": _dense(keys[0], 2 * d, h), "pair_out": _dense(keys[1], h, m),
          "node_hidden": _dense(keys[2], d + n_agg * m, h),
          "node_out": _dense(keys[3], h, _size(spec.output) - _kept(spec), zero=_residual(spec))}, {}


def _apply_graph_kernel(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
                        activation: str) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  if isinstance(lb, Neighbourhoods):
    kernel = _RECOMPUTED[_graph_kernel_edges] if rows.recompute else _graph_kernel_edges
    y = kernel(spec, params, lb, rows.mask)
    return activate(y.reshape((lb.nodes.shape[0],) + spec.output.shape), activation), stats
  kernel = _RECOMPUTED[_graph_kernel_lists] if rows.recompute else _graph_kernel_lists
  y = kernel(spec, params, lb.values, lb.mask)
  return activate(y.reshape((lb.values.shape[0],) + spec.output.shape), activation), stats


def _reference_graph_kernel(spec: ModuleSpec, p: dict, s: dict,
                            args: Sequence[list[np.ndarray]]) -> np.ndarray:
  elems = [_ref_vector(a) for a in args[0]]
  own = elems[0] if elems else np.zeros(_size(spec.inputs[0].elem))
  msgs = [_ref_dense(p["pair_out"], _ref_relu(_ref_dense(p["pair_hidden"], np.concatenate([own, e]))))
          for e in elems]
  reduce = {"min": np.min, "max": np.max, "sum": np.sum, "mean": np.mean}
  aggs = [reduce[how](msgs, axis=0) if msgs else np.zeros(spec["message"]) for how in spec["aggregations"]]
  y = _ref_dense(p["node_out"], _ref_relu(_ref_dense(p["node_hidden"], np.concatenate([own] + aggs))))
  keep = _kept(spec)
  if _residual(spec):
    y = own[keep:] + y
  y = np.concatenate([own[:keep], y])
  return _ref_activate(y, spec.activation).reshape(spec.output.shape)
