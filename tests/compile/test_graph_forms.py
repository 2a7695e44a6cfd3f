"""Graphs as edge lists: conv_g with segment operations computes what the neighbour-table form computes
(outputs, gradients, batch statistics), whatever the padding; conversions, validation and errors."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.modules import ModuleConfig, Neighbourhoods, Rows, apply_module, init_module, module_spec
from hx.compile.reference import RefGraph, reference_apply, to_batch, unbatch
from hx.compile.values import (
  EdgeGraphBatch,
  GraphBatch,
  ListBatch,
  check_graphs,
  edges_from_table,
  images_per_example,
  num_examples,
  pack_graphs,
  rows,
  size_bucket,
  table_from_edges,
  take,
)
from hx.data.grids import grid_layouts
from hx.lang import program as P
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import CFG, build, rand_graph

F = P.Fresh
R2, R3 = "Tensor<real>[2]", "Tensor<real>[3]"
# The GS programs' shape: a per-node MLP (batch norm, dropout), then a graph kernel repeated.
GS = P.Compose(P.Repeat(3, P.Conv("g", F("nn_k"))), P.Map("g", F("nn_e")))
GS_TYPES = {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}"}
ALL_AGGREGATIONS = ModuleConfig(mlp_hidden=16, graph_hidden=8, graph_message=4,
                                graph_aggregations=("min", "max", "mean", "sum"))


def _grid_batch(rng: np.random.Generator, sides=(3, 4, 3, 4, 4)) -> GraphBatch:
  layouts = grid_layouts(sorted(set(sides)), 16)
  which = [sorted(set(sides)).index(s) for s in sides]
  values = rng.normal(size=(len(sides), 16, 3)).astype(np.float32)
  return GraphBatch(values, layouts.neighbours[which], layouts.neighbour_mask[which], layouts.mask[which])


def _train_and_infer(cp, variables, frozen, x, weights):
  """The train-mode loss over real nodes with its gradient (parameters and input node values) and batch
  statistics, and inference outputs. The input's gradient tells apart how tied messages share a min's or
  max's gradient, which the parameters' gradient (a sum over the tied entries) cannot."""
  key = jax.random.key(11)

  def loss(params, values, stats):
    y, new_stats = cp.apply({"params": params, "batch_stats": stats}, frozen, x._replace(values=values),
                            train=True, rng=key)
    m = y.mask[..., None]
    return jnp.sum(jnp.where(m, jnp.sin(y.values * weights[:, :y.values.shape[1]]), 0.0)), (y, new_stats)

  @jax.jit
  def run(variables, values):
    grad = jax.value_and_grad(loss, (0, 1), has_aux=True)
    out = grad(variables["params"], values, variables["batch_stats"])
    return out, cp.apply(variables, frozen, x, train=False)

  ((total, (y, stats)), (grads, x_grad)), y_infer = run(variables, jnp.asarray(x.values))
  real = lambda v: [np.asarray(v.values[b])[np.asarray(v.mask[b])] for b in range(v.values.shape[0])]
  x_grad = [np.asarray(x_grad[b])[np.asarray(x.mask[b])] for b in range(x_grad.shape[0])]
  return total, real(y), stats, (grads, x_grad), real(y_infer)


def _assert_same(a, b):
  (t0, y0, s0, g0, i0), (t1, y1, s1, g1, i1) = a, b
  np.testing.assert_allclose(t0, t1, rtol=1e-5, atol=1e-5)
  for u, v in zip(y0 + i0, y1 + i1):
    np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)
  jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6), s0, s1)
  scale = max(float(jnp.abs(g).max()) for g in jax.tree.leaves(g0))
  assert scale > 0
  jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5 * scale), g0, g1)


@pytest.mark.slow
@pytest.mark.parametrize("config", [CFG, ALL_AGGREGATIONS], ids=["default", "all_aggregations"])
def test_edge_lists_equal_the_neighbour_table_on_grids(config):
  """3x3 and 4x4 grids in one batch: outputs, gradients and batch statistics (train mode, dropout on)."""
  cp, variables, frozen = build(GS, GS_TYPES, config=config, seed=5)
  assert cp.config.mlp_dropout > 0
  rng = np.random.default_rng(0)
  table = _grid_batch(rng)
  edges = edges_from_table(table)
  assert isinstance(edges, EdgeGraphBatch) and edges.senders.shape == (5, 48)  # a 4x4 grid has 48 edges
  weights = jnp.asarray(rng.normal(size=(5, 64, 2)).astype(np.float32))
  _assert_same(_train_and_infer(cp, variables, frozen, table, weights),
               _train_and_infer(cp, variables, frozen, edges, weights))


@pytest.mark.slow
def test_edge_lists_equal_the_neighbour_table_on_random_graphs_with_ties_and_any_padding():
  """Random directed graphs (self loops and repeated edges included) with all four aggregations; some
  graphs have equal node values, so messages tie (the gradient of a min or max is shared between ties
  in both forms; no dropout here, which would tell the equal nodes apart). Padded nodes hold NaN; padded
  edges point anywhere."""
  config = dataclasses.replace(ALL_AGGREGATIONS, mlp_dropout=0.0)
  cp, variables, frozen = build(GS, GS_TYPES, config=config, seed=2)
  rng = np.random.default_rng(1)
  graphs = [rand_graph(rng, (3,), 1, 7, degree=4) for _ in range(5)]
  graphs.append(RefGraph([np.ones(3, np.float32)] * 4, [[0, 1, 2, 3], [1, 0, 0], [2, 2, 3], [3]]))
  graphs.append(RefGraph([np.full(3, 0.5, np.float32)], [[0]]))  # one node, no edge
  table = to_batch(graphs, fill=np.nan)
  edges = edges_from_table(table)
  wide = edges_from_table(to_batch(graphs, length=11, neighbours=7, fill=np.nan), edges=64)
  junk = rng.integers(0, 11, wide.senders.shape)
  wide = wide._replace(senders=np.where(wide.edge_mask, wide.senders, junk).astype(np.int32),
                       receivers=np.where(wide.edge_mask, wide.receivers, 10).astype(np.int32))
  weights = jnp.asarray(rng.normal(size=(len(graphs), 11, 2)).astype(np.float32))
  reference = _train_and_infer(cp, variables, frozen, table, weights)
  _assert_same(reference, _train_and_infer(cp, variables, frozen, edges, weights))
  _assert_same(reference, _train_and_infer(cp, variables, frozen, wide, weights))


def test_the_graph_kernel_is_one_function_on_lists_and_on_edges_ties_included():
  """The module itself: masked reductions over a ListBatch's K axis (conv_l's form) against segment
  operations over `Neighbourhoods` (conv_g's), on the same lists: outputs, and gradients for the
  parameters and for every list entry. Rows with equal entries make the min and max tie, whose gradient
  both forms share equally between the tied entries; a row with no valid entry gives zeros."""
  spec = module_spec(parse_type(f"List<{R3}> -> {R2}"), ALL_AGGREGATIONS, role="kernel")
  params, _ = init_module(spec, jax.random.key(0))
  rng = np.random.default_rng(6)
  r, k = 6, 4
  values = rng.normal(size=(r, k, 3)).astype(np.float32)
  values[1] = values[1, 0]  # all four entries equal
  values[2, 2] = values[2, 1]  # two neighbours equal
  lengths = np.array([4, 4, 3, 1, 2, 4])
  mask = np.arange(k)[None, :] < lengths[:, None]
  row_mask = np.array([True, True, True, True, True, False])
  mask[~row_mask] = False
  weights = jnp.asarray(rng.normal(size=(r, 2)).astype(np.float32))

  def dense(params, values):
    y, _ = apply_module(spec, params, {}, (ListBatch(values, jnp.asarray(mask)),),
                        Rows(jnp.asarray(row_mask), train=True))
    return jnp.sum(jnp.sin(y * weights)), y

  # Node u of the edge form is list u's own value; entry j >= 1 of list u is a node of its own (outside
  # the module's mask), joined to u by an edge.
  others = np.arange(r * (k - 1)).reshape(r, k - 1) + r
  senders = others.reshape(-1)
  receivers = np.repeat(np.arange(r), k - 1)
  edge_mask = mask[:, 1:].reshape(-1)

  def edges(params, values):
    nodes = jnp.concatenate([values[:, 0], values[:, 1:].reshape(-1, 3)])
    nb = Neighbourhoods(nodes, jnp.asarray(senders), jnp.asarray(receivers), jnp.asarray(edge_mask))
    node_mask = jnp.concatenate([jnp.asarray(row_mask), jnp.zeros(r * (k - 1), bool)])
    y, _ = apply_module(spec, params, {}, (nb,), Rows(node_mask, train=True))
    return jnp.sum(jnp.sin(y[:r] * weights)), y[:r]

  (l0, y0), g0 = jax.jit(jax.value_and_grad(dense, (0, 1), has_aux=True))(params, values)
  (l1, y1), g1 = jax.jit(jax.value_and_grad(edges, (0, 1), has_aux=True))(params, values)
  np.testing.assert_allclose(y0[row_mask], y1[row_mask], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(l0, l1, rtol=1e-5)
  valid = jnp.asarray(mask)[..., None]
  np.testing.assert_allclose(jnp.where(valid, g0[1], 0), jnp.where(valid, g1[1], 0), rtol=1e-4, atol=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), g0[0], g1[0])
  assert float(jnp.abs(g0[1][1]).max()) > 0  # the tied row's entries get gradient


def test_the_rematerialised_graph_kernel_equals_the_plain_one():
  """Inside a loop the graph kernel recomputes its pair network in the backward pass (`jax.checkpoint`):
  outputs and gradients equal those of the plain computation, on both forms, with tied entries, a padding
  edge, a padded row and an empty list."""
  spec = module_spec(parse_type(f"List<{R3}> -> {R2}"), ALL_AGGREGATIONS, role="kernel")
  params, _ = init_module(spec, jax.random.key(1))
  rng = np.random.default_rng(7)
  r, k = 5, 3
  values = rng.normal(size=(r, k, 3)).astype(np.float32)
  values[1] = values[1, 0]  # ties in min and max
  mask = np.arange(k)[None, :] < np.array([3, 3, 2, 1, 3])[:, None]
  row_mask = np.array([True, True, True, True, False])
  weights = jnp.asarray(rng.normal(size=(r, 2)).astype(np.float32))
  senders = np.arange(r * (k - 1)) + r
  receivers = np.repeat(np.arange(r), k - 1)

  def lists(params, values, recompute):
    y, _ = apply_module(spec, params, {}, (ListBatch(values, jnp.asarray(mask & row_mask[:, None])),),
                        Rows(jnp.asarray(row_mask), train=True, recompute=recompute))
    return jnp.sum(jnp.sin(y * weights))

  def edges(params, values, recompute):
    nodes = jnp.concatenate([values[:, 0], values[:, 1:].reshape(-1, 3)])
    edge_mask = jnp.asarray(mask[:, 1:].reshape(-1))
    nb = Neighbourhoods(nodes, jnp.asarray(senders), jnp.asarray(receivers), edge_mask)
    node_mask = jnp.concatenate([jnp.asarray(row_mask), jnp.zeros(r * (k - 1), bool)])
    y, _ = apply_module(spec, params, {}, (nb,), Rows(node_mask, train=True, recompute=recompute))
    return jnp.sum(jnp.sin(y[:r] * weights))

  def run(recompute):
    return [jax.jit(jax.value_and_grad(f, (0, 1)), static_argnums=2)(params, values, recompute)
            for f in (lists, edges)]

  remat, plain = run(True), run(False)
  # The recomputed kernel really is a checkpoint (its jaxpr holds one); the plain one is not.
  for f in (lists, edges):
    for recompute in (False, True):
      jaxpr = str(jax.make_jaxpr(lambda p, f=f, recompute=recompute: f(p, values, recompute))(params))
      assert ("checkpoint" in jaxpr or "remat" in jaxpr) == recompute
  for a, b in zip(remat, plain):
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6), a, b)
  assert float(jnp.abs(remat[1][1][1][1]).max()) > 0  # the tied row's entries get gradient


@pytest.mark.parametrize("program, recomputed", [
  (P.Repeat(3, P.Conv("g", F("nn_k"))), True), (P.Conv("g", F("nn_k")), False),
  (P.Fix(P.Conv("g", F("nn_k"))), False),
])
def test_only_a_kernel_inside_repeat_is_rematerialised(program, recomputed):
  """repeat's body keeps no per-pair activations (they are recomputed); a single conv_g keeps them, and
  so does fix's body (its backward pass recomputes one application at a time already)."""
  cp, variables, frozen = build(program, {"nn_k": f"List<{R2}> -> {R2}"}, config=ALL_AGGREGATIONS)
  x = to_batch([rand_graph(np.random.default_rng(0), (2,), 3, 5)])
  loss = lambda v: jnp.sum(cp.apply(v, frozen, x, train=True, rng=jax.random.key(0))[0].values)
  jaxpr = str(jax.make_jaxpr(jax.grad(loss))(variables))
  assert ("checkpoint" in jaxpr or "remat" in jaxpr) == recomputed


def test_edge_lists_agree_with_the_reference_interpreter():
  cp, variables, frozen = build(GS, GS_TYPES, config=ALL_AGGREGATIONS, seed=4)
  rng = np.random.default_rng(3)
  graphs = [rand_graph(rng, (3,), 1, 6, degree=5) for _ in range(4)]
  edges = edges_from_table(to_batch(graphs))
  assert [g.neighbours for g in unbatch(edges)] == [g.neighbours for g in graphs]
  y = cp.apply(variables, frozen, edges, train=False)
  for g, got in zip(graphs, unbatch(y)):
    want = reference_apply(cp, variables, frozen, g)
    np.testing.assert_allclose(np.array(got.values), np.array(want.values), rtol=1e-4, atol=1e-4)


def test_a_node_sees_only_its_own_graphs_edges():
  """Rows are separate graphs: an edge of row 0 into node 1 changes row 0's node 1 only (the flattened
  node axis offsets each row's indices)."""
  cp, variables, frozen = build(P.Conv("g", F("nn_k")), {"nn_k": f"List<{R2}> -> {R2}"}, seed=1)
  values = [np.arange(6, dtype=np.float32).reshape(3, 2)] * 2
  apart = pack_graphs(values, [[], []], [[], []], edges=2)
  joined = pack_graphs(values, [[2], []], [[1], []], edges=2)
  a, b = (np.asarray(cp.apply(variables, frozen, x, train=False).values) for x in (apart, joined))
  changed = np.any(a != b, axis=-1)
  assert changed.tolist() == [[False, True, False], [False, False, False]]


def test_other_kernels_on_edge_lists_ask_for_a_neighbour_table():
  program = P.Conv("g", P.Compose(F("nn_a"), F("nn_l")))
  cp, variables, frozen = build(program, {"nn_l": f"List<{R2}> -> {R3}", "nn_a": f"{R3} -> {R2}"})
  graphs = [RefGraph([np.ones(2, np.float32)] * 2, [[0, 1], [1, 0]])]
  edges = edges_from_table(to_batch(graphs))
  with pytest.raises(NotImplementedError, match="table_from_edges"):
    cp.apply(variables, frozen, edges, train=False)
  y = cp.apply(variables, frozen, table_from_edges(edges), train=False)
  assert np.asarray(y.values).shape == (1, 2, 2)


def test_conversions_keep_the_neighbour_lists():
  rng = np.random.default_rng(5)
  graphs = [rand_graph(rng, (2,), 1, 6, degree=4) for _ in range(6)]
  table = to_batch(graphs, length=9)
  edges = edges_from_table(table, edges=40)
  assert edges.senders.shape == (6, 40) and edges.senders.dtype == np.int32
  check_graphs(edges)
  back = table_from_edges(edges)
  assert [g.neighbours for g in unbatch(back)] == [g.neighbours for g in graphs]
  with pytest.raises(ValueError, match="cannot pad"):
    edges_from_table(table, edges=1)


def test_split_helpers_take_edge_lists_and_widen_their_indices():
  graphs = pack_graphs([np.array([3, 1, 2], np.uint16), np.array([0], np.uint16)], [[0, 1], []], [[1, 2], []],
                       nodes=4, edges=3)
  narrow = graphs._replace(senders=graphs.senders.astype(np.uint8),
                           receivers=graphs.receivers.astype(np.uint8))
  batch = take(narrow, np.array([1, 0]))
  assert isinstance(batch, EdgeGraphBatch)
  assert batch.values.dtype == batch.senders.dtype == batch.receivers.dtype == np.int32
  np.testing.assert_array_equal(batch.senders[1], [0, 1, 0])
  first = rows(narrow, slice(0, 1))
  assert isinstance(first, EdgeGraphBatch) and first.senders.dtype == np.uint8
  assert num_examples(graphs) == 2 and images_per_example(graphs) == 4


@pytest.mark.parametrize("senders, receivers, message", [
  ([[0, 1], [0, 5]], [[1, 0], [1, 0]], "graph 1: edge 1 has sender 5, not one of its 3 nodes"),
  ([[0, 1], [0, 1]], [[1, -1], [1, 0]], "graph 0: edge 1 has receiver -1, not one of its 2 nodes"),
])
def test_edge_indices_out_of_range_name_the_graph_and_the_index(senders, receivers, message):
  values = [np.zeros((2, 1), np.float32), np.zeros((3, 1), np.float32)]
  with pytest.raises(ValueError, match=message):
    pack_graphs(values, senders, receivers)


def test_malformed_edge_batches_are_refused():
  good = pack_graphs([np.zeros((2, 1), np.float32)], [[0]], [[1]], edges=2)
  with pytest.raises(ValueError, match="graph 0: its real edges are not a prefix"):
    check_graphs(good._replace(edge_mask=np.array([[False, True]])))
  with pytest.raises(ValueError, match="graph 0: its real nodes are not a prefix"):
    check_graphs(good._replace(mask=np.array([[False, True]])))
  with pytest.raises(ValueError, match=r"must all be \(B, E\)"):
    check_graphs(good._replace(senders=np.zeros((1, 3), np.int32)))
  with pytest.raises(ValueError, match="integer"):
    check_graphs(good._replace(senders=np.zeros((1, 2), np.float32)))
  with pytest.raises(ValueError, match="2 senders but 1 receivers"):
    pack_graphs([np.zeros((2, 1), np.float32)], [[0, 1]], [[1]])
  with pytest.raises(ValueError, match="cannot pad"):
    pack_graphs([np.zeros((2, 1), np.float32)], [[0, 1]], [[1, 0]], nodes=1)


def test_size_buckets_are_powers_of_two():
  assert [size_bucket(n) for n in (0, 1, 8, 9, 20, 33, 50, 64, 65)] == [8, 8, 8, 16, 32, 64, 64, 64, 128]
  assert size_bucket(3, minimum=1) == 4
  with pytest.raises(ValueError):
    size_bucket(-1)
