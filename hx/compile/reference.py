"""A reference interpreter in plain NumPy: one example at a time, Python loops, no padding, inference mode.

It reads the same variables and frozen parameters as a `CompiledProgram` and should compute the same
outputs as its `apply(..., train=False)`; the tests compare the two. It follows the paper's definitions
directly (section 2) and shares no code with the lowering beyond the parameter layout.

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
from typing import Any, Sequence

import numpy as np

from hx.compile.lower import CompiledProgram
from hx.compile.modules import ModuleSpec
from hx.compile.values import EdgeGraphBatch, GraphBatch, ListBatch
from hx.lang import program as P

__all__ = ["RefGraph", "reference_apply", "reference_module", "unbatch", "to_batch"]


@dataclasses.dataclass
class RefGraph:
  """One graph: node values and, per node, its neighbour list (its own index first)."""
  values: list
  neighbours: list


def _np(tree: Any) -> Any:
  if isinstance(tree, dict):
    return {k: _np(v) for k, v in tree.items()}
  if isinstance(tree, (tuple, list)):
    return type(tree)(_np(v) for v in tree)
  return np.asarray(tree, np.float64)


def _dense(p: dict, x: np.ndarray) -> np.ndarray:
  return x @ p["w"] + p["b"]


def _relu(x: np.ndarray) -> np.ndarray:
  return np.maximum(x, 0.0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-x))


def _activate(y: np.ndarray, activation: str) -> np.ndarray:
  if activation == "sigmoid":
    return _sigmoid(y)
  if activation == "softmax":
    e = np.exp(y - y.max())
    return e / e.sum()
  return y


def _conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Valid convolution of one HWC image with an HWIO kernel, by loops over output positions."""
  k = w.shape[0]
  h_out, w_out = x.shape[0] - k + 1, x.shape[1] - k + 1
  out = np.empty((h_out, w_out, w.shape[3]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = np.tensordot(x[i:i + k, j:j + k], w, axes=3) + b
  return out


def _max_pool(x: np.ndarray, k: int) -> np.ndarray:
  h_out, w_out = x.shape[0] // k, x.shape[1] // k
  out = np.empty((h_out, w_out, x.shape[2]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = x[i * k:(i + 1) * k, j * k:(j + 1) * k].max(axis=(0, 1))
  return out


def reference_module(spec: ModuleSpec, params: dict, stats: dict, args: Sequence[Any]) -> np.ndarray:
  """One module on one example in inference mode.

  Args:
    spec: the module's spec.
    params, stats: its parameters and running statistics.
    args: one value per argument: arrays of the argument shapes, or (lstm, graph_kernel) a list of arrays.

  Returns:
    the output, of the spec's output shape (float64).
  """
  p, s = _np(params), _np(stats)
  t = spec.template
  shape = spec.output.shape
  if t == "mlp":
    x = np.concatenate([np.asarray(a, np.float64).reshape(-1) for a in args])
    h = _dense(p["hidden"], x)
    bn, stats_bn = p["bn"], s["bn"]
    h = (h - stats_bn["mean"]) / np.sqrt(stats_bn["var"] + spec["bn_epsilon"]) * bn["scale"] + bn["bias"]
    return _activate(_dense(p["out"], _relu(h)), spec.activation).reshape(shape)
  if t == "cnn":
    h = np.transpose(np.asarray(args[0], np.float64), (1, 2, 0))
    for conv in p["convs"]:
      h = _max_pool(_relu(_conv2d(h, conv["w"], conv["b"])), spec["pool"])
    h = h.reshape(-1)
    if spec["output_layer"]:
      return _activate(_dense(p["out"], h), spec.activation).reshape(shape)
    return h.reshape(shape)
  if t == "lstm":
    n = spec["hidden"]
    h, c = np.zeros(n), np.zeros(n)
    for a in args[0]:
      g = np.asarray(a, np.float64).reshape(-1) @ p["w_i"] + h @ p["w_h"] + p["b"]
      i, f, gg, o = g[:n], g[n:2 * n], g[2 * n:3 * n], g[3 * n:]
      c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
      h = _sigmoid(o) * np.tanh(c)
    return _activate(_dense(p["out"], h), spec.activation).reshape(shape)
  if t == "graph_kernel":
    elems = [np.asarray(a, np.float64).reshape(-1) for a in args[0]]
    own = elems[0] if elems else np.zeros(int(np.prod(spec.inputs[0].elem.shape)))
    msgs = [_dense(p["pair_out"], _relu(_dense(p["pair_hidden"], np.concatenate([own, e])))) for e in elems]
    m = spec["message"]
    aggs = []
    for how in spec["aggregations"]:
      if not msgs:
        aggs.append(np.zeros(m))
      elif how == "min":
        aggs.append(np.min(msgs, axis=0))
      elif how == "max":
        aggs.append(np.max(msgs, axis=0))
      elif how == "sum":
        aggs.append(np.sum(msgs, axis=0))
      else:
        aggs.append(np.mean(msgs, axis=0))
    y = _dense(p["node_out"], _relu(_dense(p["node_hidden"], np.concatenate([own] + aggs))))
    keep = dict(spec.hyper).get("keep", 0)
    if dict(spec.hyper).get("update") == "residual":
      y = own[keep:] + y
    y = np.concatenate([own[:keep], y])
    return _activate(y, spec.activation).reshape(shape)
  raise ValueError(f"unknown template {t!r}")


def reference_apply(compiled: CompiledProgram, variables: dict, frozen: Sequence[dict], example: Any) -> Any:
  """Runs `compiled.program` on one example (see the module docstring for value forms), inference mode."""
  fresh = {n: i for i, n in enumerate(compiled.fresh_slots)}
  lib = {n: j for j, n in enumerate(compiled.library_slots)}
  window = compiled.config.conv_window

  def module(node: P.Fresh | P.Lib, args: Sequence[Any]) -> np.ndarray:
    if isinstance(node, P.Fresh):
      i = fresh[node.name]
      return reference_module(compiled.specs[node.name], variables["params"][i],
                              variables["batch_stats"][i], args)
    j = lib[node.name]
    return reference_module(compiled.specs[f"lib.{node.name}"], frozen[j]["params"],
                            frozen[j]["batch_stats"], args)

  def run(node: P.Program, v: Any) -> Any:
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


def _elements(v: Any) -> list:
  """The arrays of one example's value: a tensor, a list's elements or a graph's node values."""
  if isinstance(v, RefGraph):
    return list(v.values)
  return list(v) if isinstance(v, list) else [v]


def unbatch(x: Any, mask: Any = None) -> list:
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


def to_batch(examples: Sequence[Any], length: int | None = None, neighbours: int | None = None,
             fill: float = 0.0) -> Any:
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
