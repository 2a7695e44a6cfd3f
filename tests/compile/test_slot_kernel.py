"""The slot kernel (`ModuleConfig.graph_kernel="slots"`, the authors' grid kernel): a network over a
neighbour list read slot by slot, so a grid cell's directions and a grid's corners are told apart."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from hx.compile import ModuleConfig
from hx.compile.values import GraphBatch, edges_from_table
from hx.data.grids import neighbour_table
from hx.lang import parse
from tests.compile.lowering_helpers import CFG, build, spec

SLOTS = dataclasses.replace(CFG, graph_kernel="slots", graph_slot_hidden=6, graph_slot_layers=2)
STATE = "Tensor<real>[2]"


def _grids(rng, n: int = 3, rows: int = 4) -> GraphBatch:
  nb, nm, m = neighbour_table(n)
  values = rng.normal(size=(rows, n * n, 2)).astype(np.float32)
  return GraphBatch(values, np.broadcast_to(nb, (rows,) + nb.shape), np.broadcast_to(nm, (rows,) + nm.shape),
                    np.broadcast_to(m, (rows, n * n)))


def _by_hand(params: dict, x: GraphBatch, residual: bool = False) -> np.ndarray:
  """The slot kernel on every node of x, in NumPy: empty slots read as zeros, then the mask bits."""
  p = jax.tree.map(np.asarray, params)
  vals, nb, nm = (np.asarray(a) for a in (x.values, x.neighbours, x.neighbour_mask))
  slots = np.where(nm[..., None], vals[np.arange(len(vals))[:, None, None], nb], 0.0)  # (R, N, K, 2)
  h = np.concatenate([slots.reshape(slots.shape[:2] + (-1,)), nm.astype(np.float32)], -1)
  for layer in p["hidden"]:
    h = np.maximum(h @ layer["w"] + layer["b"], 0.0)
  y = h @ p["out"]["w"] + p["out"]["b"]
  return vals + y if residual else y


def test_the_slots_config_gives_a_slot_kernel_and_the_default_stays_the_pair_kernel():
  s = spec(f"List<{STATE}> -> {STATE}", "kernel", SLOTS)
  assert s.template == "slot_kernel"
  assert (s["slots"], s["hidden"], s["layers"]) == (5, 6, 2)
  assert spec(f"List<{STATE}> -> {STATE}", "kernel").template == "graph_kernel"
  # Not a kernel: still an LSTM.
  assert spec(f"List<{STATE}> -> {STATE}", None, SLOTS).template == "lstm"
  with pytest.raises(ValueError, match="graph_kernel"):
    ModuleConfig(graph_kernel="conv")
  with pytest.raises(ValueError, match="graph_slots"):
    ModuleConfig(graph_slots=0)


def test_conv_g_with_a_slot_kernel_is_the_network_over_the_slots_in_direction_order():
  rng = np.random.default_rng(0)
  cp, variables, frozen = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=SLOTS)
  x = _grids(rng)
  y = np.asarray(cp.apply(variables, frozen, x, train=False).values)
  np.testing.assert_allclose(y, _by_hand(variables["params"][0], x), rtol=1e-5, atol=1e-5)
  # Directions are told apart: on a grid of equal cells the four corners get four different outputs
  # (each misses a different pair of directions); an order-invariant kernel gives them one.
  flat = x._replace(values=np.ones_like(x.values))
  y = np.asarray(cp.apply(variables, frozen, flat, train=False).values)[0]
  corners = y[[0, 2, 6, 8]]
  assert len({tuple(np.round(c, 5)) for c in corners}) == 4
  pairs, pv, pf = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"})
  y = np.asarray(pairs.apply(pv, pf, flat, train=False).values)[0]
  np.testing.assert_allclose(y[[2, 6, 8]], np.broadcast_to(y[0], (3, 2)), rtol=1e-6)


def test_what_sits_in_an_empty_slot_never_reaches_the_output():
  rng = np.random.default_rng(1)
  cp, variables, frozen = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=SLOTS)
  x = _grids(rng)
  other = np.array(x.neighbours)
  other[~np.asarray(x.neighbour_mask)] = 7  # empty slots pointing at another node
  a = cp.apply(variables, frozen, x, train=False).values
  b = cp.apply(variables, frozen, x._replace(neighbours=other), train=False).values
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_fresh_residual_slot_kernel_is_the_identity_and_repeat_keeps_the_input():
  config = dataclasses.replace(SLOTS, graph_update="residual")
  cp, variables, frozen = build(parse("repeat(3, conv_g(nn_k))"), {"nn_k": f"List<{STATE}> -> {STATE}"},
                                config=config)
  assert dict(cp.specs["nn_k"].hyper)["update"] == "residual"
  x = _grids(np.random.default_rng(2))
  fresh = cp.init(jax.random.key(0))
  np.testing.assert_array_equal(np.asarray(cp.apply(fresh, frozen, x, train=False).values), x.values)
  # With trained (random) weights it is the node's value plus the network's output.
  one, v1, f1 = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=config)
  y = np.asarray(one.apply(v1, f1, x, train=False).values)
  np.testing.assert_allclose(y, _by_hand(v1["params"][0], x, residual=True), rtol=1e-5, atol=1e-5)


def test_edge_lists_and_lists_of_another_length_are_refused_with_the_reason():
  cp, variables, frozen = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=SLOTS)
  x = _grids(np.random.default_rng(3))
  with pytest.raises(NotImplementedError, match="no slot order"):
    cp.apply(variables, frozen, edges_from_table(x), train=False)
  # conv_l's window has 3 elements (conv_window 1), not the 5 slots the kernel was built for.
  cl, cv, cf = build(parse("conv_l(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=SLOTS)
  from hx.compile.values import ListBatch

  lists = ListBatch(np.zeros((2, 4, 2), np.float32), np.ones((2, 4), bool))
  with pytest.raises(ValueError, match="5 slots"):
    cl.apply(cv, cf, lists, train=False)
  # Built for 3 slots it runs there.
  three = dataclasses.replace(SLOTS, graph_slots=3)
  cl, cv, cf = build(parse("conv_l(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=three)
  assert np.asarray(cl.apply(cv, cf, lists, train=False).values).shape == (2, 4, 2)


@pytest.mark.parametrize("update", ["replace", "residual"])
def test_a_kept_component_passes_through_and_the_network_predicts_the_rest(update):
  """graph_keep=1 (the authors' grid kernel: the cost passes through, the distance is predicted): the
  last layer has one output, the first component is the node's own, the second the network's (plus the
  node's under the residual update)."""
  config = dataclasses.replace(SLOTS, graph_keep=1, graph_update=update)
  s = spec(f"List<{STATE}> -> {STATE}", "kernel", config)
  assert dict(s.hyper)["keep"] == 1
  rng = np.random.default_rng(2)
  cp, variables, frozen = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=config)
  variables = jax.tree.map(lambda a: a + 0.1 * rng.normal(size=a.shape).astype(a.dtype), variables)
  assert variables["params"][0]["out"]["w"].shape == (6, 1)
  x = _grids(rng)
  y = np.asarray(cp.apply(variables, frozen, x, train=False).values)
  np.testing.assert_array_equal(y[..., 0], np.asarray(x.values)[..., 0])
  want = _by_hand(variables["params"][0], x)[..., 0]
  if update == "residual":
    want = want + np.asarray(x.values)[..., 1]
  np.testing.assert_allclose(y[..., 1], want, rtol=1e-5, atol=1e-5)


def test_the_pair_kernel_keeps_components_as_the_reference_interpreter_does():
  from hx.compile.reference import reference_apply, unbatch
  config = dataclasses.replace(CFG, graph_keep=1, graph_update="residual")
  cp, variables, frozen = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=config,
                                seed=3)
  rng = np.random.default_rng(3)
  variables = jax.tree.map(lambda a: a + 0.1 * rng.normal(size=a.shape).astype(a.dtype), variables)
  x = _grids(rng, rows=2)
  y = cp.apply(variables, frozen, x, train=False)
  for g, got in zip(unbatch(x), unbatch(y)):
    want = reference_apply(cp, variables, frozen, g)
    np.testing.assert_allclose(np.array(got.values), np.array(want.values), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.array(got.values)[:, 0], np.array(g.values)[:, 0])


def test_graph_keep_is_recorded_only_where_it_applies_and_must_leave_something_to_learn():
  keep = dataclasses.replace(CFG, graph_keep=1)
  assert "keep" not in dict(spec(f"List<{STATE}> -> Tensor<real>[3]", "kernel", keep).hyper)
  assert "keep" not in dict(spec(f"List<{STATE}> -> {STATE}", "kernel", CFG).hyper)
  with pytest.raises(TypeError, match="graph_keep=2 keeps every component"):
    spec(f"List<{STATE}> -> {STATE}", "kernel", dataclasses.replace(CFG, graph_keep=2))
  with pytest.raises(ValueError, match="graph_keep"):
    ModuleConfig(graph_keep=-1)


@pytest.mark.parametrize("update", ["replace", "residual"])
def test_slot_kernel_layers_start_as_pytorch_layers_do(update):
  """Weights and biases uniform in +-1/sqrt(fan in) (the authors' PyTorch defaults); a residual kernel's
  last layer at zero, so that it starts as the identity."""
  config = dataclasses.replace(SLOTS, graph_slot_hidden=64, graph_slot_layers=3, graph_update=update)
  cp = build(parse("conv_g(nn_k)"), {"nn_k": f"List<{STATE}> -> {STATE}"}, config=config)[0]
  p = cp.init(jax.random.key(0))["params"][0]  # as compiled (build's variables are perturbed)
  layers = list(p["hidden"]) + ([] if update == "residual" else [p["out"]])
  assert [lay["w"].shape[0] for lay in layers] == [15, 64, 64] + ([] if update == "residual" else [64])
  for layer in layers:
    bound = 1 / np.sqrt(layer["w"].shape[0])
    w, b = np.asarray(layer["w"]), np.asarray(layer["b"])
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound and abs(w.mean()) < 0.2 * bound  # spread over the range
    assert np.all(b != 0)
  if update == "residual":
    assert not np.any(np.asarray(p["out"]["w"])) and not np.any(np.asarray(p["out"]["b"]))
