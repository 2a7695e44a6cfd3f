"""Module templates: which template a type gets, sizes, activations, masked batch norm, dropout, and the
graph kernel's ability to express Bellman-Ford relaxation."""

from __future__ import annotations

import heapq

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.lower import compile_program
from hx.compile.modules import (
  ModuleConfig,
  NoTemplateError,
  Rows,
  UnresolvedTypeError,
  cnn_feature_size,
  cnn_layout,
  init_module,
  module_spec,
)
from hx.compile.reference import RefGraph, reference_apply, to_batch, unbatch
from hx.compile.values import ListBatch
from hx.lang import program as P
from hx.lang.types import TensorType, parse_type
from tests.compile.lowering_helpers import (
  CFG,
  IMG,
  jit_apply_module,
  products_and_precisions,
  relaxation_params,
)

T = parse_type


def test_paper_defaults():
  c = ModuleConfig()
  assert (c.mlp_hidden, c.cnn_channels, c.cnn_kernel, c.cnn_pool, c.lstm_hidden, c.conv_window) == (
    1024, (32, 64), 5, 2, 100, 1)
  with pytest.raises(ValueError, match="graph_aggregations"):
    ModuleConfig(graph_aggregations=("median",))
  with pytest.raises(ValueError, match="conv_window"):
    ModuleConfig(conv_window=0)
  with pytest.raises(ValueError, match="mlp_dropout"):
    ModuleConfig(mlp_dropout=1.0)


@pytest.mark.parametrize("text, template, activation", [
  ("Tensor<real>[1][28][28] -> Tensor<real>[1024]", "cnn", "none"),
  ("Tensor<real>[3][28][28] -> Tensor<bool>[10]", "cnn", "softmax"),
  ("Tensor<real>[1024] -> Tensor<bool>[1]", "mlp", "sigmoid"),
  ("Tensor<real>[1024] -> Tensor<bool>[10]", "mlp", "softmax"),
  ("Tensor<real>[4] -> Tensor<real>[2]", "mlp", "none"),
  ("Tensor<real>[2][3] -> Tensor<bool>[2][2]", "mlp", "sigmoid"),
  ("Tensor<real>[1] -> Tensor<bool>[1] -> Tensor<real>[1]", "mlp", "none"),
  ("List<Tensor<bool>[1]> -> Tensor<real>[1]", "lstm", "none"),
])
def test_template_follows_type(text, template, activation):
  s = module_spec(T(text))
  assert s.template == template and s.activation == activation
  assert s.type == T(text)
  assert hash(s) == hash(module_spec(T(text))) and s == module_spec(T(text))


def test_paper_cnn_has_no_output_layer_unless_the_type_asks():
  s = module_spec(T("Tensor<real>[1][28][28] -> Tensor<real>[1024]"))
  assert s["features"] == 64 * 4 * 4 and s["output_layer"] is False
  assert s["channels"] == (32, 64) and s["kernel"] == 5
  params, stats = init_module(s, jax.random.key(0))
  assert "out" not in params and stats == {}
  assert [c["w"].shape for c in params["convs"]] == [(5, 5, 1, 32), (5, 5, 32, 64)]
  x = jax.random.normal(jax.random.key(1), (2, 1, 28, 28))
  y, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(2, bool)))
  assert y.shape == (2, 1024) and float(y.min()) >= 0.0  # ReLU features
  head = module_spec(T("Tensor<real>[3][28][28] -> Tensor<real>[2]"))
  assert head["output_layer"] is True
  params, _ = init_module(head, jax.random.key(0))
  assert params["out"]["w"].shape == (1024, 2)
  assert cnn_feature_size(TensorType("real", (1, 12, 12)), (4, 8), 3, 2) == 8


@pytest.mark.parametrize("side, channels, kernel, features", [
    (28, (32, 64), 5, 4 * 4 * 64),  # the paper's images: the configured CNN, unchanged
    (12, (32,), 5, 4 * 4 * 32),     # two 5x5 blocks do not fit (12 -> 4 -> 0): one does
    (8, (32,), 5, 2 * 2 * 32),      # one 5x5 block: 8 -> 4 -> 2
    (4, (32,), 3, 1 * 1 * 32),
])
def test_small_images_get_a_smaller_cnn(side, channels, kernel, features):
  t = T(f"Tensor<real>[1][{side}][{side}] -> Tensor<bool>[1]")
  assert cnn_layout(t.arg, ModuleConfig()) == (channels, kernel, features)
  s = module_spec(t)
  assert (s["channels"], s["kernel"], s["features"]) == (channels, kernel, features)
  params, stats = init_module(s, jax.random.key(0))
  x = jnp.ones((3, 1, side, side))
  y, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(3, bool)))
  assert y.shape == (3, 1) and bool(jnp.all((y >= 0) & (y <= 1)))


def test_kernel_role_gets_the_graph_kernel():
  t = T("List<Tensor<real>[2]> -> Tensor<real>[2]")
  assert module_spec(t).template == "lstm"
  s = module_spec(t, role="kernel")
  assert s.template == "graph_kernel" and s["aggregations"] == ("min", "max", "mean")
  with pytest.raises(ValueError, match="role"):
    module_spec(t, role="step")


@pytest.mark.slow
def test_mlp_and_lstm_shapes_at_paper_sizes():
  s = module_spec(T("Tensor<real>[1] -> Tensor<real>[1024] -> Tensor<real>[1]"))
  params, stats = init_module(s, jax.random.key(0))
  assert params["hidden"]["w"].shape == (1025, 1024) and params["out"]["w"].shape == (1024, 1)
  assert stats["bn"]["mean"].shape == (1024,)
  s = module_spec(T("List<Tensor<bool>[1]> -> Tensor<real>[1]"))
  params, _ = init_module(s, jax.random.key(0))
  assert params["w_i"].shape == (1, 400) and params["w_h"].shape == (100, 400)
  for g in range(4):  # orthogonal recurrent weights per gate
    q = np.asarray(params["w_h"][:, g * 100:(g + 1) * 100])
    np.testing.assert_allclose(q.T @ q, np.eye(100), atol=1e-4)
  np.testing.assert_array_equal(params["b"][100:200], 1.0)


@pytest.mark.parametrize("text, why", [
  ("(Tensor<real>[2] -> Tensor<real>[2]) -> Tensor<real>[2]", "takes a function"),
  ("Tensor<real>[2] -> (Tensor<real>[2] -> Tensor<real>[2]) -> Tensor<real>[2]", "takes a function"),
  ("Graph<Tensor<real>[2]> -> Tensor<real>[2]", "graph"),
  ("Tensor<real>[2] -> Tensor<real>[1][28][28]", "image"),
  ("Tensor<real>[2] -> List<Tensor<real>[2]>", "result must be a tensor"),
  ("Tensor<real>[2]", "not a function"),
  ("Tensor<real>[1][3][3] -> Tensor<real>[2]", "too small"),
  ("List<Tensor<real>[1][28][28]> -> Tensor<real>[2]", "unsupported"),
  ("Tensor<real>[1] -> Tensor<real>[1] -> Tensor<real>[1] -> Tensor<real>[1]", "more than two"),
])
def test_types_without_template_are_refused(text, why):
  with pytest.raises(NoTemplateError, match=why) as info:
    module_spec(T(text), name="nn_x")
  assert "nn_x" in str(info.value) and str(T(text)) in str(info.value)
  assert isinstance(info.value, TypeError)


def test_type_variables_are_refused():
  with pytest.raises(UnresolvedTypeError, match="nn_y.*'a"):
    module_spec(T("Tensor<real>[2] -> 'a"), name="nn_y")


def test_activations_are_applied():
  x = jax.random.normal(jax.random.key(0), (5, 4))
  ones = jnp.ones(5, bool)
  for text, check in [
    ("Tensor<real>[4] -> Tensor<bool>[3]", lambda y: np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)),
    ("Tensor<real>[4] -> Tensor<bool>[1]", lambda y: np.all((y > 0) & (y < 1))),
  ]:
    s = module_spec(T(text), CFG)
    params, stats = init_module(s, jax.random.key(1))
    y, _ = jit_apply_module(s, params, stats, (x,), Rows(ones))
    assert y.shape == (5,) + s.output.shape
    assert check(np.asarray(y)) in (None, True)
  s = module_spec(T("Tensor<real>[4] -> Tensor<real>[3]"), CFG)
  params, stats = init_module(s, jax.random.key(1))
  y, _ = jit_apply_module(s, params, stats, (x,), Rows(ones))
  assert float(y.min()) < 0.0  # no activation on real outputs


def test_masked_batch_norm_ignores_masked_rows():
  s = module_spec(T("Tensor<real>[3] -> Tensor<real>[2]"), ModuleConfig(mlp_hidden=8, mlp_dropout=0.0))
  params, stats = init_module(s, jax.random.key(0))
  x = jax.random.normal(jax.random.key(1), (6, 3))
  junk = x.at[4:].set(1e3)
  mask = jnp.array([1, 1, 1, 1, 0, 0], bool)
  y_masked, s_masked = jit_apply_module(s, params, stats, (junk,), Rows(mask, train=True))
  y_sub, s_sub = jit_apply_module(s, params, stats, (x[:4],), Rows(jnp.ones(4, bool), train=True))
  np.testing.assert_allclose(y_masked[:4], y_sub, rtol=1e-5, atol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), s_masked, s_sub)
  # No real row at all: the running statistics stay where they were.
  _, s_none = jit_apply_module(s, params, stats, (x,), Rows(jnp.zeros(6, bool), train=True))
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), s_none, stats)


def test_dropout_mask_depends_only_on_the_row_key():
  s = module_spec(T("Tensor<real>[3] -> Tensor<real>[2]"), ModuleConfig(mlp_hidden=64, mlp_dropout=0.5))
  params, stats = init_module(s, jax.random.key(0))
  x = jax.random.normal(jax.random.key(1), (4, 3))
  keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(5), i))(jnp.arange(4))
  y, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(4, bool), keys, True))
  # Row 2 alone, with its own key, gets the same output (up to the batch statistics, fixed by
  # evaluating the same rows): compare a batch with rows reordered.
  perm = jnp.array([2, 0, 3, 1])
  y_perm, _ = jit_apply_module(s, params, stats, (x[perm],), Rows(jnp.ones(4, bool), keys[perm], True))
  np.testing.assert_allclose(y_perm, y[perm], rtol=1e-5, atol=1e-6)
  y_other, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(4, bool), keys[::-1], True))
  assert not np.allclose(y_other, y)


def test_cnn_spatial_dropout_drops_whole_channels():
  s = module_spec(T("Tensor<real>[1][16][16] -> Tensor<real>[32]"),
                  ModuleConfig(cnn_channels=(4, 8), cnn_kernel=3, cnn_dropout=0.5))  # 2x2x8 features
  assert s["output_layer"] is False
  params, stats = init_module(s, jax.random.key(0))
  x = jax.random.normal(jax.random.key(1), (8, 1, 16, 16))
  keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(3), i))(jnp.arange(8))
  y, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(8, bool), keys, True))
  y0, _ = jit_apply_module(s, params, stats, (x,), Rows(jnp.ones(8, bool)))
  y, y0 = np.asarray(y).reshape(8, 2, 2, 8), np.asarray(y0).reshape(8, 2, 2, 8)  # (H, W, C) order
  dropped = np.all(y == 0, axis=(1, 2)) & ~np.all(y0 == 0, axis=(1, 2))
  assert dropped.any()
  kept = ~np.all(y == 0, axis=(1, 2))
  np.testing.assert_allclose(y[kept.nonzero()[0], :, :, kept.nonzero()[1]],
                             2.0 * y0[kept.nonzero()[0], :, :, kept.nonzero()[1]], rtol=1e-5)


def test_lstm_reads_only_the_valid_prefix():
  s = module_spec(T("List<Tensor<real>[3]> -> Tensor<real>[2]"), CFG)
  params, stats = init_module(s, jax.random.key(0))
  v = jax.random.normal(jax.random.key(1), (2, 5, 3))
  mask = jnp.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
  y, _ = jit_apply_module(s, params, stats, (ListBatch(v, mask),), Rows(jnp.ones(2, bool)))
  y2, _ = jit_apply_module(s, params, stats, (ListBatch(v[:, :2], mask[:, :2]),), Rows(jnp.ones(2, bool)))
  np.testing.assert_allclose(y[0], y2[0], rtol=1e-5, atol=1e-6)
  assert not np.allclose(y[1], y2[1])


# --- Bellman-Ford ---------------------------------------------------------------------------------


def _grid(rows: int, cols: int) -> list[list[int]]:
  nbrs = []
  for r in range(rows):
    for c in range(cols):
      u = r * cols + c
      nbrs.append([u] + [rr * cols + cc for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
                         if 0 <= rr < rows and 0 <= cc < cols])
  return nbrs


def _dijkstra(neighbours: list[list[int]], cost: np.ndarray) -> np.ndarray:
  """Least sum of the costs of the nodes on a path from node 0 to each node, both ends included
  (hx.data.grids' convention): the fixed point of d(u) = min(d(u), w(u) + min_v d(v)), d(0) = w(0)."""
  dist = np.full(len(neighbours), np.inf)
  dist[0] = cost[0]
  queue = [(float(cost[0]), 0)]
  while queue:
    d, v = heapq.heappop(queue)
    if d > dist[v]:
      continue
    for u in neighbours[v][1:]:  # edges are symmetric in a grid
      if d + cost[u] < dist[u]:
        dist[u] = d + cost[u]
        heapq.heappush(queue, (dist[u], u))
  return dist


def test_graph_kernel_expresses_bellman_ford():
  config = ModuleConfig(graph_hidden=4, graph_message=2)
  kernel = module_spec(T("List<Tensor<real>[2]> -> Tensor<real>[2]"), config, role="kernel")
  rng = np.random.default_rng(0)
  graphs, want = [], []
  for rows, cols in ((3, 3), (2, 4), (4, 4)):
    nbrs = _grid(rows, cols)
    cost = rng.uniform(0.5, 3.0, len(nbrs)).astype(np.float32)
    d0 = np.full(len(nbrs), 100.0, np.float32)  # a bound above every distance
    d0[0] = cost[0]  # d(start) = cost(start)
    graphs.append(RefGraph([np.array([w, d], np.float32) for w, d in zip(cost, d0)], nbrs))
    want.append(_dijkstra(nbrs, cost))
  steps = 2 * 4  # more than the longest shortest path (in edges) of a 4x4 grid
  program = P.Repeat(steps, P.Conv("g", P.Lib("relax")))
  cp = compile_program(program, {}, config, {"relax": kernel})
  frozen = cp.make_frozen({"relax": {"params": relaxation_params(kernel), "batch_stats": {}}})
  x = to_batch(graphs, length=18, neighbours=6, fill=np.nan)
  y = cp.apply({"params": (), "batch_stats": ()}, frozen, x, train=False)
  for g, got, dist in zip(graphs, unbatch(y), want):
    got = np.array(got.values)
    np.testing.assert_allclose(got[:, 0], [v[0] for v in g.values], rtol=1e-6)  # costs carried along
    np.testing.assert_allclose(got[:, 1], dist, rtol=1e-5, atol=1e-5)
    ref = reference_apply(cp, {"params": (), "batch_stats": ()}, frozen, g)
    np.testing.assert_allclose(np.array(ref.values)[:, 1], dist, rtol=1e-5, atol=1e-5)
  # One step relaxes only the source's neighbours: the loop really iterates.
  one = compile_program(P.Conv("g", P.Lib("relax")), {}, config, {"relax": kernel})
  y1 = unbatch(one.apply({"params": (), "batch_stats": ()}, frozen, x, train=False))[0]
  assert np.sum(np.array(y1.values)[:, 1] < 100.0) == 1 + len(graphs[0].neighbours[0]) - 1


def _plain_cnn(convs, x, pool):
  """The CNN's blocks as written without hx's speed-ups: conv -> bias -> ReLU -> reduce_window max, with
  JAX's own gradients for all of them (select-and-scatter for the pooling)."""
  from jax import lax
  h = x
  for p in convs:
    h = lax.conv_general_dilated(h, p["w"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(h + p["b"])
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, pool, pool, 1), (1, pool, pool, 1), "VALID")
  return h


def _assert_vjps_close(f, g, args, cotangent_seed, rtol, atol):
  y_f, vjp_f = jax.vjp(f, *args)
  y_g, vjp_g = jax.vjp(g, *args)
  np.testing.assert_allclose(y_f, y_g, rtol=rtol, atol=atol)
  ct = jax.random.normal(jax.random.key(cotangent_seed), y_g.shape)
  chex.assert_trees_all_close(vjp_f(ct), vjp_g(ct), rtol=rtol, atol=atol)


@pytest.mark.parametrize("k, shape", [(2, (3, 8, 6, 2)),
                                      pytest.param(2, (2, 7, 5, 3), marks=pytest.mark.slow),
                                      pytest.param(3, (2, 9, 10, 2), marks=pytest.mark.slow)])
def test_max_pool_gradient_equals_select_and_scatter(k, shape):
  from jax import lax

  from hx.compile.conv_pool import max_pool as _max_pool

  def reference(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, k, k, 1), (1, k, k, 1), "VALID")

  x = jax.random.normal(jax.random.key(0), shape)
  # Ties: a window's gradient goes to its first maximum in row-major order, as with select-and-scatter.
  x = x.at[0].set(0.0).at[1, :4, :4].set(1.5).at[-1, ::2, 1::2].set(-0.25)
  def pool(x_):
    return _max_pool(x_, k)

  for f in (pool, jax.jit(pool)):
    y, vjp = jax.vjp(f, x)
    y_ref, vjp_ref = jax.vjp(reference, x)
    np.testing.assert_array_equal(y, y_ref)
    g = jax.random.normal(jax.random.key(1), y.shape)
    np.testing.assert_array_equal(vjp(g)[0], vjp_ref(g)[0])


@pytest.mark.slow
def test_cnn_blocks_equal_the_plain_cnn():
  """hx's CNN blocks (pooling before bias and ReLU, its pooling gradient) against the plain CNN: values
  and gradients with respect to the images, kernels and biases."""
  from hx.compile.cnn_blocks import _cnn_blocks

  keys = jax.random.split(jax.random.PRNGKey(3), 6)
  x = jax.random.normal(keys[0], (5, 13, 12, 2))  # odd sizes: floor pooling drops a row
  x = x.at[1].set(0.0).at[2, :6, :6].set(0.5)  # flat regions: tied pooling windows
  convs = ({"w": jax.random.normal(keys[1], (3, 3, 2, 4)) * 0.4, "b": jax.random.normal(keys[2], (4,)) * 0.3},
           {"w": jax.random.normal(keys[3], (2, 2, 4, 6)) * 0.4, "b": jax.random.normal(keys[4], (6,)) * 0.3})
  _assert_vjps_close(lambda x_, c: _cnn_blocks(c, x_, 2), lambda x_, c: _plain_cnn(c, x_, 2), (x, convs),
                     5, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(_cnn_blocks(convs, x, 2, train=False), _cnn_blocks(convs, x, 2, train=True))


@pytest.mark.slow
def test_cnn_training_slices_give_the_same_values_and_gradients(monkeypatch):
  """Under YNNPACK's convolutions the training CNN runs on slices of rows (unrolled); outputs and
  gradients are those of one call."""
  import hx.compile.cnn_blocks as cnn_blocks
  import hx.compile.modules as modules
  from hx.cpu_convolutions import YNNPACK_FLAGS

  monkeypatch.setenv("XLA_FLAGS", YNNPACK_FLAGS)

  s = module_spec(T("Tensor<real>[1][12][12] -> Tensor<real>[8]"), CFG)
  params, _ = init_module(s, jax.random.key(0))
  params = {"convs": tuple({"w": p["w"], "b": p["b"] + 0.1} for p in params["convs"])}
  x = jax.random.normal(jax.random.key(1), (23, 1, 12, 12))

  def run(params, x, train=True):
    y, _ = modules.apply_module(s, params, {}, (x,), Rows(jnp.ones(x.shape[0], bool), train=train))
    return y

  rows = {"n": 5}
  monkeypatch.setattr(cnn_blocks, "_cnn_slice_rows", lambda *_: rows["n"])
  assert cnn_blocks._cnn_slices(23, 5) == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
  jaxpr = jax.make_jaxpr(run)(params, x)
  assert str(jaxpr).count("conv_general_dilated") == 2 * 5
  sliced = jax.jit(run)
  rows["n"] = 100
  assert str(jax.make_jaxpr(lambda p, x_: run(p, x_))(params, x)).count("conv_general_dilated") == 2
  _assert_vjps_close(sliced, jax.jit(run), (params, x), 2, rtol=1e-5, atol=1e-6)
  # Inference is one call, whatever the number of rows; at most CNN_MAX_SLICES slices in training.
  rows["n"] = 5
  assert str(jax.make_jaxpr(lambda p, x_: run(p, x_, False))(params, x)).count("conv_general_dilated") == 2
  assert len(cnn_blocks._cnn_slices(10 * 5 * cnn_blocks.CNN_MAX_SLICES, 5)) == cnn_blocks.CNN_MAX_SLICES


@pytest.mark.slow
def test_cnn_trains_in_one_call_where_xla_runs_its_own_convolutions(monkeypatch):
  """Slices work around YNNPACK's convolutions (`hx.cpu_convolutions`); with XLA's own kernels (hx's
  default) the training CNN is one call, with the sliced call's values and gradients."""
  import hx.compile.cnn_blocks as cnn_blocks
  import hx.compile.modules as modules
  from hx.cpu_convolutions import OWN_FLAGS, YNNPACK_FLAGS

  s = module_spec(T("Tensor<real>[1][12][12] -> Tensor<real>[8]"), CFG)
  params, _ = init_module(s, jax.random.key(0))
  params = {"convs": tuple({"w": p["w"], "b": p["b"] + 0.1} for p in params["convs"])}
  x = jax.random.normal(jax.random.key(1), (23, 1, 12, 12))

  def run(params, x):
    y, _ = modules.apply_module(s, params, {}, (x,), Rows(jnp.ones(x.shape[0], bool), train=True))
    return y

  monkeypatch.setattr(cnn_blocks, "_cnn_slice_rows", lambda *_: 5)
  monkeypatch.setenv("XLA_FLAGS", YNNPACK_FLAGS)
  assert str(jax.make_jaxpr(run)(params, x)).count("conv_general_dilated") == 2 * 5
  sliced = jax.jit(run)
  monkeypatch.setenv("XLA_FLAGS", f"--xla_gpu_deterministic_ops=true {OWN_FLAGS}")
  whole = lambda p, x_: run(p, x_)  # a new function: JAX's trace caches do not see the environment
  assert str(jax.make_jaxpr(whole)(params, x)).count("conv_general_dilated") == 2
  _assert_vjps_close(sliced, jax.jit(whole), (params, x), 2, rtol=1e-5, atol=1e-6)


def test_cnn_slices_bound_the_window_buffer_not_the_image_count():
  """The paper's CNN on 28x28 images trains in slices of CNN_TRAIN_ROWS images (its second convolution's
  windows, 8x8 x 5x5x32 per image, are the larger); a CNN of 4 and 8 channels gets as many images as fit
  the same buffer of its first convolution's windows (24x24 x 5x5x1 per image): 1,280,000 // 14,400."""
  import hx.compile.cnn_blocks as cnn_blocks

  def convs(c1, c2):
    return ({"w": jnp.zeros((5, 5, 1, c1))}, {"w": jnp.zeros((5, 5, c1, c2))})

  assert cnn_blocks._cnn_slice_rows((750, 28, 28, 1), convs(32, 64), 2) == cnn_blocks.CNN_TRAIN_ROWS == 25
  assert cnn_blocks._cnn_slice_rows((750, 28, 28, 1), convs(4, 8), 2) == 88
  # Never fewer than CNN_TRAIN_ROWS images, however large the windows.
  assert cnn_blocks._cnn_slice_rows((10, 100, 100, 3), convs(64, 64), 2) == cnn_blocks.CNN_TRAIN_ROWS
  assert cnn_blocks._cnn_slices(750, 25) == [(i, i + 25) for i in range(0, 750, 25)]
  assert cnn_blocks._cnn_slices(750, 88) == [(i, min(i + 84, 750)) for i in range(0, 750, 84)]


def test_every_matmul_and_convolution_asks_for_float32_precision():
  # XLA's default on NVIDIA GPUs is TF32 for float32 products (1e-3 errors; wrong Bellman-Ford distances
  # on an H100): hx's modules ask for HIGHEST in the forward pass, and the gradients inherit it.
  from hx.compile.lower import compile_program
  from hx.lang.parser import parse

  types = {"nn_c": f"{IMG} -> Tensor<real>[8]", "nn_b": "Tensor<real>[8] -> Tensor<bool>[1]",
           "nn_a": "List<Tensor<bool>[1]> -> Tensor<real>[1]"}
  compiled = compile_program(parse("compose(nn_a, map_l(compose(nn_b, nn_c)))"),
                             {k: parse_type(v) for k, v in types.items()}, CFG)
  variables = compiled.init(jax.random.key(0))
  x = ListBatch(jnp.ones((2, 3, 1, 12, 12)), jnp.array([[True, True, False], [True, True, True]]))

  def loss(params):
    y, _ = compiled.apply({"params": params, "batch_stats": variables["batch_stats"]}, (), x, train=True,
                          rng=jax.random.key(1))
    return jnp.sum(y ** 2)

  found = products_and_precisions(jax.grad(loss), variables["params"])
  kinds = {name for name, _ in found}
  assert kinds == {"dot_general", "conv_general_dilated"}, kinds
  assert len(found) >= 12  # CNN 2 convolutions, MLP 2 and LSTM 2 matmuls, and their gradients
  assert all(p == "(Precision.HIGHEST, Precision.HIGHEST)" for _, p in found), found


@pytest.mark.parametrize("field, value", [("cnn_channels", ()), ("cnn_channels", (4, 0)), ("mlp_hidden", 0),
                                          ("cnn_kernel", 0), ("cnn_pool", 0), ("lstm_hidden", -1),
                                          ("graph_hidden", 0), ("graph_message", 1.5)])
def test_module_sizes_that_build_no_network_are_refused(field, value):
  with pytest.raises(ValueError, match=field):
    ModuleConfig(**{field: value})
