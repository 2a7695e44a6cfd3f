"""fix(e): iterate to a fixed point in one loop; exact Bellman-Ford on large grids and graphs; the implicit
gradient against the unrolled one; padding; configuration."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.fixpoint import FixConfig, fixed_point, max_change
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig, module_spec
from hx.compile.reference import RefGraph, reference_apply, to_batch, unbatch
from hx.compile.values import GraphBatch, edges_from_table, pack_graphs
from hx.data.grids import least_costs, neighbour_table
from hx.lang import program as P
from hx.lang.parser import parse
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import CFG, build, rand_graph, relaxation_params

F = P.Fresh
R2, R3 = "Tensor<real>[2]", "Tensor<real>[3]"
BOUND = 1e4  # an initial distance above every least cost in these graphs
RELAX_CONFIG = ModuleConfig(graph_hidden=4, graph_message=2)
RELAX = module_spec(parse_type(f"List<{R2}> -> {R2}"), RELAX_CONFIG, role="kernel")


def _relaxation(program: P.Program, config: ModuleConfig = RELAX_CONFIG):
  cp = compile_program(program, {}, config, {"relax": RELAX})
  frozen = cp.make_frozen({"relax": {"params": relaxation_params(RELAX), "batch_stats": {}}})
  return jax.jit(lambda x: cp.apply({"params": (), "batch_stats": ()}, frozen, x, train=False))


def _grids(rng: np.random.Generator, n: int, count: int) -> tuple[GraphBatch, np.ndarray]:
  """count n x n grids of random costs (start cost 1) as (cost, initial distance) states, and their least
  costs (hx.data.grids' convention)."""
  costs = rng.choice([1, 3, 5, 7, 9], size=(count, n, n)).astype(np.float32)
  costs[:, 0, 0] = 1
  d0 = np.full((count, n * n), BOUND, np.float32)
  d0[:, 0] = 1
  nb, nm, m = neighbour_table(n)
  x = GraphBatch(np.stack([costs.reshape(count, -1), d0], -1), np.broadcast_to(nb, (count,) + nb.shape),
                 np.broadcast_to(nm, (count,) + nm.shape), np.broadcast_to(m, (count,) + m.shape))
  return x, least_costs(costs).reshape(count, -1)


def test_bellman_ford_under_fix_is_exact_on_12x12_grids_in_both_forms():
  x, want = _grids(np.random.default_rng(0), 12, 6)
  fix = _relaxation(P.Fix(P.Conv("g", P.Lib("relax"))))
  for form in (x, edges_from_table(x)):
    y = np.asarray(fix(form).values)
    np.testing.assert_array_equal(y[..., 1], want)
    np.testing.assert_array_equal(y[..., 0], x.values[..., 0])  # costs carried along
  # conv_g^10, the paper's form, cannot reach the far corner of a 12x12 grid: fix really iterates on.
  ten = np.asarray(_relaxation(P.Repeat(10, P.Conv("g", P.Lib("relax"))))(x).values)
  assert np.all(ten[:, -1, 1] == BOUND)


def test_bellman_ford_under_fix_is_exact_on_50_node_graphs_of_the_data():
  from hx.data.graphs import graph_least_costs, random_graph

  rng = np.random.default_rng(1)
  values, senders, receivers, want = [], [], [], []
  for kind in ("erdos_renyi", "geometric", "erdos_renyi", "geometric"):
    s, r = random_graph(rng, 50, kind)
    cost = rng.choice([1, 3, 5, 7, 9], size=50).astype(np.float32)
    cost[0] = 1
    d0 = np.full(50, BOUND, np.float32)
    d0[0] = 1
    values.append(np.stack([cost, d0], -1))
    senders.append(s)
    receivers.append(r)
    want.append(graph_least_costs(cost, s, r, 50))
  x = pack_graphs(values, senders, receivers, nodes=64, edges=512)
  y = np.asarray(_relaxation(P.Fix(P.Conv("g", P.Lib("relax"))))(x).values)
  np.testing.assert_array_equal(y[:, :50, 1], np.stack(want))


def test_the_cap_stops_a_loop_that_has_not_converged():
  x, want = _grids(np.random.default_rng(2), 6, 2)
  capped = dataclasses.replace(RELAX_CONFIG, fix=FixConfig(max_iterations=3))
  y = np.asarray(_relaxation(P.Fix(P.Conv("g", P.Lib("relax"))), capped)(x).values)
  three = np.asarray(_relaxation(P.Repeat(3, P.Conv("g", P.Lib("relax"))))(x).values)
  np.testing.assert_array_equal(y, three)
  assert not np.array_equal(y[..., 1], want)


def test_fixed_point_counts_its_iterations_and_ignores_padding():
  x0 = jnp.array([[0.0, 1e6], [4.0, 1e6]])
  weights = jnp.array([[True, False], [True, False]])  # the second column is padding, far from converged
  f = lambda theta, x, aux, state: (0.5 * x + theta, state + 1)
  y, state, iterations = fixed_point(f, 1.0, x0, (), 0, weights, FixConfig(tolerance=1e-3))
  np.testing.assert_allclose(y[:, 0], 2.0, atol=2e-3)
  assert int(iterations) == int(state) and 10 < int(iterations) < 20
  assert float(max_change(x0, y, weights)) == pytest.approx(2.0, abs=2e-3)


def _contraction_program(repeat: int | None):
  """map_g(nn_e) then a graph kernel iterated: to a fixed point, or `repeat` times."""
  body = P.Conv("g", F("nn_k"))
  loop = P.Fix(body) if repeat is None else P.Repeat(repeat, body)
  return P.Compose(loop, P.Map("g", F("nn_e")))


@pytest.mark.slow
@pytest.mark.parametrize("gradient", [pytest.param("implicit", marks=pytest.mark.slow), "unrolled"])
def test_the_gradient_equals_the_unrolled_one_on_a_contraction(gradient):
  """A graph kernel with small weights is a contraction: both loops converge, and fix's gradient (implicit:
  taken at the fixed point, no iteration stored; unrolled: through the iterations it ran, within its
  window) equals that of 60 unrolled iterations, for the kernel's weights and for the map before the loop
  (whose gradient is zero in the limit: a contraction forgets its start)."""
  fix_config = FixConfig(1e-7, 200, 1e-7, gradient=gradient, window=200)
  config = dataclasses.replace(CFG, mlp_dropout=0.0, fix=fix_config)
  types = {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}"}
  fix, variables, frozen = build(_contraction_program(None), types, config=config, seed=3)
  unrolled, _, _ = build(_contraction_program(60), types, config=config, seed=3)
  assert fix.fresh_slots == ("nn_k", "nn_e")
  params = variables["params"]
  params = (jax.tree.map(lambda w: 0.4 * w, params[0]), params[1])  # nn_k made contractive; nn_e as built
  rng = np.random.default_rng(4)
  x = edges_from_table(to_batch([rand_graph(rng, (3,), 2, 6) for _ in range(4)], length=7, fill=np.nan))
  weights = jnp.asarray(rng.normal(size=(4, 7, 2)).astype(np.float32))

  def loss(cp):
    def f(params):
      y, _ = cp.apply({"params": params, "batch_stats": variables["batch_stats"]}, frozen, x, train=True,
                      rng=jax.random.key(0))
      return jnp.sum(jnp.where(y.mask[..., None], jnp.sin(y.values * weights), 0.0))
    return jax.jit(jax.value_and_grad(f))(params)

  (l_fix, g_fix), (l_unrolled, g_unrolled) = loss(fix), loss(unrolled)
  np.testing.assert_allclose(l_fix, l_unrolled, rtol=1e-5)
  kernel_scale = max(float(jnp.abs(g).max()) for g in jax.tree.leaves(g_unrolled[0]))
  assert kernel_scale > 1e-2
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * kernel_scale),
               g_fix[0], g_unrolled[0])
  map_scale = max(float(jnp.abs(g).max()) for g in jax.tree.leaves(g_unrolled[1]))
  assert map_scale < 1e-4 * kernel_scale
  assert max(float(jnp.abs(g).max()) for g in jax.tree.leaves(g_fix[1])) < 1e-4 * kernel_scale


@pytest.mark.parametrize("gradient", ["implicit", "unrolled"])
def test_the_gradient_reaches_the_start_through_what_the_loop_keeps(gradient):
  """A map that keeps part of its input (x_a' = x_a, x_b' = c x_b + x_a): its fixed point (a, a / (1 - c))
  depends on the start; the implicit adjoint settles to that dependence, for the start and for c, and the
  unrolled gradient follows the iterations."""
  f = lambda c, x, aux, state: ((x[0], c * x[1] + x[0]), state)
  x0 = (jnp.array([1.0, 2.0]), jnp.array([0.0, 3.0]))
  config = FixConfig(1e-7, 500, 1e-7, gradient=gradient, window=500)

  def loss(c, x0, fix):
    if fix:
      y, _, _ = fixed_point(f, c, x0, (), (), (True, True), config)
    else:
      y = x0
      for _ in range(200):
        y, _ = f(c, y, None, ())
    return jnp.sum(y[1]) + 0.5 * jnp.sum(y[0])

  got, want = (jax.grad(loss, (0, 1))(0.5, x0, fix) for fix in (True, False))
  assert float(want[0]) == pytest.approx(12.0, rel=1e-5)  # d/dc of sum(a / (1 - c)) = 3 / 0.25
  np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
  for a, b in zip(got[1], want[1]):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _tanh_map(theta, x, aux, state):
  w, b = theta
  return jnp.tanh(x @ w + b), state


def _unrolled_loss(theta, x0, n):
  x = x0
  for _ in range(n):
    x, _ = _tanh_map(theta, x, None, ())
  return jnp.sum(jnp.sin(x))


def test_the_unrolled_gradient_is_exact_within_its_window_and_truncated_beyond():
  keys = jax.random.split(jax.random.key(0), 3)
  theta = (0.3 * jax.random.normal(keys[0], (5, 5)) / jnp.sqrt(5.0), jax.random.normal(keys[1], (5,)))
  x0 = jax.random.normal(keys[2], (3, 5))
  weights = jnp.ones((3, 1), bool)

  def fix_loss(config):
    def loss(theta, x0):
      y, _, _ = fixed_point(_tanh_map, theta, x0, (), (), weights, config)
      return jnp.sum(jnp.sin(y))
    return loss

  # A loop that stops at its cap after 3 applications: exactly 3 unrolled applications' gradient.
  capped = FixConfig(tolerance=0.0, max_iterations=3, gradient="unrolled", window=8)
  got, want = jax.grad(fix_loss(capped), (0, 1))(theta, x0), jax.grad(_unrolled_loss, (0, 1))(theta, x0, 3)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), got, want)
  # A converging loop, window larger than its iterations: the unrolled gradient of as many applications.
  config = FixConfig(tolerance=1e-7, max_iterations=500, gradient="unrolled", window=64)
  n = int(fixed_point(_tanh_map, theta, x0, (), (), weights, config)[2])
  assert 5 < n < 64
  got, want = jax.grad(fix_loss(config), (0, 1))(theta, x0), jax.grad(_unrolled_loss, (0, 1))(theta, x0, n)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), got, want)
  # Shorter windows differentiate only the last applications (the start gets what reaches the window's
  # first iterate): on this contraction the error shrinks as the window grows, and is not zero.
  errors = []
  for window in (2, 4, 8):
    got = jax.grad(fix_loss(dataclasses.replace(config, window=window)), (0, 1))(theta, x0)
    errors.append(max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(got),
                                                                      jax.tree.leaves(want))))
  assert errors[0] > errors[1] > errors[2] > 1e-6, errors


@pytest.mark.parametrize("gradient", [pytest.param("implicit", marks=pytest.mark.slow), "unrolled"])
def test_padding_changes_nothing_under_fix(gradient):
  config = dataclasses.replace(CFG, fix=FixConfig(1e-6, 200, 1e-6, gradient=gradient, window=200))
  types = {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}"}
  cp, variables, frozen = build(_contraction_program(None), types, config=config, seed=6)
  params = (jax.tree.map(lambda w: 0.4 * w, variables["params"][0]), variables["params"][1])
  rng = np.random.default_rng(7)
  graphs = [rand_graph(rng, (3,), 1, 5) for _ in range(3)]
  batches = [edges_from_table(to_batch(graphs, length=9, fill=np.nan), edges=50),
             to_batch(graphs, length=8, neighbours=6, fill=np.inf)]
  weights = jnp.asarray(rng.normal(size=(3, 9, 2)).astype(np.float32))
  results = []
  for x in batches:
    def loss(params, x=x):
      y, stats = cp.apply({"params": params, "batch_stats": variables["batch_stats"]}, frozen, x, train=True,
                          rng=jax.random.key(1))
      return jnp.sum(jnp.where(y.mask[..., None], y.values * weights[:, :y.values.shape[1]], 0.0)), (y, stats)
    (total, (y, stats)), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
    results.append((total, [np.asarray(y.values[b])[np.asarray(y.mask[b])] for b in range(3)], stats, grads))
  for total, ys, stats, grads in results[1:]:
    np.testing.assert_allclose(total, results[0][0], rtol=1e-5)
    for a, b in zip(ys, results[0][1]):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), stats, results[0][2])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5), grads, results[0][3])


def test_fix_agrees_with_the_reference_interpreter_and_runs_without_dropout():
  config = dataclasses.replace(CFG, fix=FixConfig(1e-6, 300))
  program = P.Compose(P.Fix(P.Map("l", F("nn_m"))), P.Map("l", F("nn_e")))
  cp, variables, frozen = build(program, {"nn_e": f"{R3} -> {R2}", "nn_m": f"{R2} -> {R2}"}, config=config)
  assert cp.config.mlp_dropout > 0
  small = jax.tree.map(lambda w: 0.3 * w, variables["params"][1])
  variables = {"params": (variables["params"][0], small), "batch_stats": variables["batch_stats"]}
  rng = np.random.default_rng(8)
  lists = [[rng.normal(size=3).astype(np.float32) for _ in range(k)] for k in (1, 3, 2)]
  y = cp.apply(variables, frozen, to_batch(lists, length=4), train=False)
  for got, example in zip(unbatch(y), lists):
    for a, b in zip(got, reference_apply(cp, variables, frozen, example)):
      np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
  # In training, dropout would make the map random (no fixed point): the loop body runs without it, so
  # two different dropout keys give the same result (nn_e is outside the loop: no dropout before it here).
  no_dropout_before = P.Fix(P.Map("l", F("nn_m")))
  cp2, variables2, frozen2 = build(no_dropout_before, {"nn_m": f"{R2} -> {R2}"}, config=config)
  x = to_batch([[rng.normal(size=2).astype(np.float32) for _ in range(3)]])
  y1, _ = cp2.apply(variables2, frozen2, x, train=True, rng=jax.random.key(1))
  y2, _ = cp2.apply(variables2, frozen2, x, train=True, rng=jax.random.key(2))
  np.testing.assert_array_equal(y1.values, y2.values)


def test_padded_rows_never_keep_the_loop_running_or_stop_it():
  """A padded batch row full of NaN (or of values that would never settle) does not count for convergence:
  the real rows come out as they do without it."""
  config = dataclasses.replace(CFG, fix=FixConfig(1e-6, 300))
  cp, variables, frozen = build(P.Fix(P.Map("l", F("nn_m"))), {"nn_m": f"{R2} -> {R2}"}, config=config)
  variables = {"params": jax.tree.map(lambda w: 0.3 * w, variables["params"]),
               "batch_stats": variables["batch_stats"]}
  rng = np.random.default_rng(10)
  x = to_batch([[rng.normal(size=2).astype(np.float32) for _ in range(k)] for k in (2, 3)], length=3)
  alone = np.asarray(cp.apply(variables, frozen, x, train=False).values)
  for junk in (np.nan, 1e30):
    padded = x._replace(values=np.concatenate([x.values, np.full((1, 3, 2), junk, np.float32)]),
                        mask=np.concatenate([x.mask, np.ones((1, 3), bool)]))
    y = cp.apply(variables, frozen, padded, train=False, mask=np.array([True, True, False]))
    np.testing.assert_allclose(np.asarray(y.values)[:2][x.mask], alone[x.mask], rtol=1e-6, atol=1e-6)


def test_fix_in_a_tensor_program_and_its_batch_statistics():
  """fix over a plain tensor (rows masked), an MLP with batch norm in training: the running statistics
  move once per iteration, and padded rows neither count for convergence nor for the statistics."""
  config = dataclasses.replace(CFG, mlp_dropout=0.0, fix=FixConfig(1e-5, 7))
  cp, variables, frozen = build(P.Fix(F("nn_m")), {"nn_m": f"{R2} -> {R2}"}, config=config)
  x = np.random.default_rng(9).normal(size=(5, 2)).astype(np.float32)
  junk = x.copy()
  junk[3:] = 1e3
  mask = np.array([1, 1, 1, 0, 0], bool)
  y, stats = cp.apply(variables, frozen, junk, train=True, rng=jax.random.key(0), mask=mask)
  y_sub, stats_sub = cp.apply(variables, frozen, x[:3], train=True, rng=jax.random.key(0))
  np.testing.assert_allclose(y[:3], y_sub, rtol=1e-5, atol=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), stats, stats_sub)
  assert not np.allclose(stats[0]["bn"]["mean"], variables["batch_stats"][0]["bn"]["mean"])


def test_the_fix_configuration_is_part_of_the_lowering_key():
  types = {"nn_k": parse_type(f"List<{R2}> -> {R2}")}
  fix = P.Fix(P.Conv("g", F("nn_k")))
  a = compile_program(fix, types, CFG)
  b = compile_program(fix, types, dataclasses.replace(CFG, fix=FixConfig(max_iterations=7)))
  assert a.key != b.key and a.apply is not b.apply
  repeat = P.Repeat(2, P.Conv("g", F("nn_k")))
  c = compile_program(repeat, types, CFG)
  d = compile_program(repeat, types, dataclasses.replace(CFG, fix=FixConfig(max_iterations=7)))
  assert c.key == d.key and c.apply is d.apply  # no fix: its configuration does not matter


def test_a_fix_body_is_never_a_terminal_call():
  types = {"nn_k": parse_type(f"List<{R2}> -> Tensor<bool>[2]")}
  cp = compile_program(P.Conv("g", F("nn_k")), types, CFG)
  assert cp.output_activation == "softmax"
  types = {"nn_k": parse_type(f"List<{R2}> -> {R2}"), "nn_m": parse_type(f"{R2} -> Tensor<bool>[2]")}
  cp = compile_program(P.Compose(P.Map("g", F("nn_m")), P.Fix(P.Conv("g", F("nn_k")))), types, CFG)
  assert cp.output_activation == "softmax"
  cp = compile_program(P.Fix(P.Conv("g", F("nn_k"))), types, CFG)
  assert cp.output_activation == "mixed"  # no terminal call: the loop's output is not logits


@pytest.mark.parametrize("kwargs, message", [
  (dict(tolerance=-1.0), "tolerances"), (dict(adjoint_tolerance=float("nan")), "tolerances"),
  (dict(max_iterations=0), "max_iterations"), (dict(max_iterations=2.5), "max_iterations"),
  (dict(gradient="exact"), "gradient must be one of"), (dict(window=0), "window"),
  (dict(train_horizon=(0, 5)), "train_horizon"), (dict(train_horizon=(6, 5)), "train_horizon"),
  (dict(train_horizon=(None, 5)), "train_horizon"), (dict(train_horizon=[2, 5]), "train_horizon"),
  (dict(train_horizon=(2.0, 5)), "train_horizon"), (dict(train_horizon=(3,)), "train_horizon"),
])
def test_fix_configuration_is_validated(kwargs, message):
  with pytest.raises(ValueError, match=message):
    FixConfig(**kwargs)


def _relaxations(x: GraphBatch, program: P.Program, config: ModuleConfig, train: bool, rng=None):
  cp = compile_program(program, {}, config, {"relax": RELAX})
  frozen = cp.make_frozen({"relax": {"params": relaxation_params(RELAX), "batch_stats": {}}})
  run = jax.jit(lambda x, key: cp.apply({"params": (), "batch_stats": ()}, frozen, x, train=train, rng=key))
  return lambda key=None: np.asarray((run(x, key)[0] if train else run(x, key)).values)


def test_the_training_horizon_caps_training_loops_at_a_drawn_count_and_inference_runs_on():
  """Hand-set Bellman-Ford on 8x8 grids (about 15 relaxations to converge): in training each call stops
  after n relaxations, n drawn from the horizon with the call's key; inference reaches the least costs."""
  x, want = _grids(np.random.default_rng(3), 8, 2)
  config = dataclasses.replace(RELAX_CONFIG, fix=FixConfig(train_horizon=(3, 8)))
  fix = P.Fix(P.Conv("g", P.Lib("relax")))
  step = _relaxation(P.Conv("g", P.Lib("relax")))
  by_count, v = {}, x
  for k in range(1, 10):
    v = step(v)
    by_count[k] = np.asarray(v.values)
  assert len({v.tobytes() for v in by_count.values()}) == len(by_count)  # each count tells itself apart
  train = _relaxations(x, fix, config, True)
  drawn = []
  for seed in range(12):
    y = train(jax.random.key(seed))
    drawn.append(next(k for k, v in by_count.items() if np.array_equal(v, y)))
    # The same key draws the same count (a resumed run trains as the straight one did).
    np.testing.assert_array_equal(y, train(jax.random.key(seed)))
  assert set(drawn) <= set(range(3, 9)) and len(set(drawn)) >= 3, drawn
  np.testing.assert_array_equal(_relaxations(x, fix, config, False)()[..., 1], want)
  # Without a horizon, training runs to convergence too.
  unbounded = dataclasses.replace(RELAX_CONFIG, fix=FixConfig(train_horizon=None))
  np.testing.assert_array_equal(_relaxations(x, fix, unbounded, True)(jax.random.key(0))[..., 1], want)


def test_a_fix_inside_a_fix_trains():
  """The inner loop runs in the outer one's body, which may not close over the call's key: it trains to
  its cap instead of a drawn horizon, with finite values and gradients."""
  config = dataclasses.replace(CFG, mlp_dropout=0.0, fix=FixConfig(max_iterations=5))
  cp, variables, frozen = build(P.Fix(P.Fix(F("nn_m"))), {"nn_m": f"{R2} -> {R2}"}, config=config)
  x = np.random.default_rng(2).normal(size=(3, 2)).astype(np.float32)
  key = jax.random.key(0)
  loss = lambda p: jnp.sum(cp.apply({**variables, "params": p}, frozen, x, train=True, rng=key)[0])
  value, grads = jax.value_and_grad(loss)(variables["params"])
  assert np.isfinite(value) and all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


def test_the_default_training_horizon_reaches_the_inference_cap():
  assert FixConfig().train_horizon == (16, None) and FixConfig().window == FixConfig().max_iterations
  assert FixConfig().horizon() == (16, 100)
  assert FixConfig(max_iterations=50).horizon() == (16, 50)
  assert FixConfig(max_iterations=7).horizon() == (7, 7)  # a cap below the horizon is the cap
  assert FixConfig(train_horizon=(3, 8), max_iterations=5).horizon() == (3, 5)
  assert FixConfig(train_horizon=None).horizon() is None


@pytest.mark.slow
def test_the_training_horizon_gradient_is_that_of_the_drawn_repeat():
  """A fresh kernel that never settles within the horizon: the training loss's gradient under fix equals
  the one of n applications in a row, for the n the call drew (exact: the horizon is inside the window)."""
  types = {"nn_k": f"List<{R2}> -> {R2}"}
  config = dataclasses.replace(CFG, graph_update="residual",
                               fix=FixConfig(tolerance=0.0, window=8, train_horizon=(2, 6)))
  rng = np.random.default_rng(4)
  x, want = _grids(rng, 4, 3)
  x = x._replace(values=x.values / 10)
  cp, variables, _ = build(P.Fix(P.Conv("g", F("nn_k"))), types, config=config)
  # Start away from the residual kernel's identity, so that every relaxation changes the state.
  variables = jax.tree.map(lambda a: a + 0.1 * jnp.asarray(rng.normal(size=a.shape), a.dtype), variables)
  conv = build(P.Conv("g", F("nn_k")), types, config=config)[0]

  @functools.partial(jax.jit, static_argnums=1)
  def repeated(params, n):
    v = x
    for _ in range(n):
      v = conv.apply({**variables, "params": params}, (), v, train=True, rng=jax.random.key(0))[0]
    return v.values

  def under_fix(params, key):
    return cp.apply({**variables, "params": params}, (), x, train=True, rng=key)[0].values

  loss = lambda y: jnp.mean(jnp.square(y[..., 1] - want / 10))
  loss_under_fix = jax.jit(jax.grad(lambda p, key: loss(under_fix(p, key))))
  loss_repeated = jax.grad(lambda p, n: loss(repeated(p, n)))
  for seed in (0, 1):
    key = jax.random.key(seed)
    y = np.asarray(jax.jit(under_fix)(variables["params"], key))
    (n,) = [k for k in range(2, 7) if np.allclose(repeated(variables["params"], k), y, rtol=1e-6, atol=1e-6)]
    got, expected = loss_under_fix(variables["params"], key), loss_repeated(variables["params"], n)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-7), got, expected)


def test_relaxation_reference_under_fix():
  graphs = [RefGraph([np.array([1.0, 1.0], np.float32), np.array([3.0, BOUND], np.float32),
                      np.array([5.0, BOUND], np.float32)], [[0, 1], [1, 0, 2], [2, 1]])]
  cp = compile_program(P.Fix(P.Conv("g", P.Lib("relax"))), {}, RELAX_CONFIG, {"relax": RELAX})
  frozen = cp.make_frozen({"relax": {"params": relaxation_params(RELAX), "batch_stats": {}}})
  ref = reference_apply(cp, {"params": (), "batch_stats": ()}, frozen, graphs[0])
  np.testing.assert_allclose(np.array(ref.values)[:, 1], [1.0, 4.0, 9.0])


RESIDUAL_CONFIG = dataclasses.replace(RELAX_CONFIG, graph_update="residual")


def test_a_residual_kernel_is_recorded_only_where_its_output_is_its_element():
  same = module_spec(parse_type(f"List<{R2}> -> {R2}"), RESIDUAL_CONFIG, role="kernel")
  other = module_spec(parse_type(f"List<{R2}> -> {R3}"), RESIDUAL_CONFIG, role="kernel")
  assert dict(same.hyper)["update"] == "residual"
  assert "update" not in dict(other.hyper)
  assert RELAX.hyper == module_spec(parse_type(f"List<{R2}> -> {R2}"), RELAX_CONFIG, role="kernel").hyper
  assert "update" not in dict(RELAX.hyper)  # the default's specs (and saved libraries) are unchanged
  with pytest.raises(ValueError, match="graph_update"):
    ModuleConfig(graph_update="gated")


@pytest.mark.parametrize("text", ["fix(conv_g(nn_k))",
                                  pytest.param("repeat(3, conv_g(nn_k))", marks=pytest.mark.slow)])
def test_a_fresh_residual_kernel_is_the_identity_in_both_forms(text):
  x, _ = _grids(np.random.default_rng(3), 4, 5)
  cp = compile_program(parse(text), {"nn_k": parse_type(f"List<{R2}> -> {R2}")}, RESIDUAL_CONFIG)
  variables = cp.init(jax.random.key(0))
  assert not np.any(np.asarray(variables["params"][0]["node_out"]["w"]))
  for form in (x, edges_from_table(x)):
    y = cp.apply(variables, (), form, train=False)
    np.testing.assert_array_equal(np.asarray(y.values), x.values)
  # Trained one step, the update is no longer zero: the kernel learns from its identity start.
  grads = jax.grad(lambda p: jnp.sum(cp.apply({**variables, "params": p}, (), x, train=True,
                                              rng=jax.random.key(1))[0].values[..., 1] ** 2))(
      variables["params"])
  assert np.any(np.asarray(grads[0]["node_out"]["w"]))


def test_bellman_ford_as_a_residual_update_is_exact_under_fix_on_12x12_grids():
  spec = module_spec(parse_type(f"List<{R2}> -> {R2}"), RESIDUAL_CONFIG, role="kernel")
  x, want = _grids(np.random.default_rng(4), 12, 4)
  cp = compile_program(P.Fix(P.Conv("g", P.Lib("relax"))), {}, RESIDUAL_CONFIG, {"relax": spec})
  frozen = cp.make_frozen({"relax": {"params": relaxation_params(spec), "batch_stats": {}}})
  for form in (x, edges_from_table(x)):
    y = np.asarray(cp.apply({"params": (), "batch_stats": ()}, frozen, form, train=False).values)
    np.testing.assert_array_equal(y[..., 1], want)
    np.testing.assert_array_equal(y[..., 0], x.values[..., 0])
