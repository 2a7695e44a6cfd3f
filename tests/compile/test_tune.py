"""Tune, losses and the compilation cache, on tiny hand-written compiled programs (seconds on CPU)."""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hx.compile import cache
from hx.compile.batching import epoch_order, eval_chunks
from hx.compile.executables import cached_executables, make_train_step
from hx.compile.losses import Objective, finish_metric, item_loss, item_metric, objective_for_type
from hx.compile.tuning import (
  TrainState,
  TuneConfig,
  TuneData,
  clear_tune_caches,
  evaluate,
  initial_variables,
  tune,
  tune_stats,
)
from hx.compile.values import ListBatch, Split
from hx.lang.types import GraphType, ListType, TensorType


@functools.cache
def _linear_apply(out: str):
  """One apply function per architecture, as CompiledProgram promises (same key -> same object).

  y = act(x @ (w + frozen_w) + b) over the last axis, for x (B, d) or (B, L, d); a running mean of x is
  the 'batch_stats' collection, so the state path is exercised.
  """
  def apply(variables, frozen, x, *, train, rng):
    if isinstance(x, ListBatch):  # map over the elements, a list output
      res = apply(variables, frozen, x.values, train=train, rng=rng)
      return (x._replace(values=res[0]), res[1]) if train else x._replace(values=res)
    p = variables["params"]
    h = x @ (p["w"] + frozen["w"]) + p["b"]
    if train:
      # A little dropout-like noise keyed by rng, so the rng path matters for determinism.
      h = h + 1e-3 * jax.random.normal(rng, h.shape)
    y = {"real": h, "bool": jax.nn.sigmoid(h), "class": jax.nn.softmax(h, axis=-1)}[out]
    if train:
      mean = variables["batch_stats"]["mean"]
      flat = x.reshape(-1, x.shape[-1])
      return y, {"batch_stats": {"mean": 0.9 * mean + 0.1 * flat.mean(0)}}
    return y
  return apply


class Linear:
  """A CompiledProgram-like linear model (see hx.compile.tuning.Tunable)."""

  def __init__(self, d_in: int, d_out: int, out: str = "real"):
    self.d_in, self.d_out = d_in, d_out
    self.key = ("linear", d_in, d_out, out)
    self.apply = _linear_apply(out)

  def init(self, rng):
    return {"params": {"w": 0.1 * jax.random.normal(rng, (self.d_in, self.d_out)),
                       "b": jnp.zeros((self.d_out,))},
            "batch_stats": {"mean": jnp.zeros((self.d_in,))}}

  def frozen(self, value: float = 0.0):
    return {"w": jnp.full((self.d_in, self.d_out), value, jnp.float32)}


def _regression(n_train=300, n_val=100, n_test=100, d=4, seed=0):
  rng = np.random.default_rng(seed)
  w = rng.normal(size=(d, 1)).astype(np.float32)
  def split(n):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return Split(x, x @ w + 0.5)
  return TuneData(split(n_train), split(n_val), split(n_test))


MSE = Objective("mse", "rmse")
FAST = TuneConfig(learning_rate=0.05, batch_size=32, epochs=15)
# The evaluation executable's name: off the CPU, tune fuses a split's chunks into one call by default.
_EVAL = "eval" if jax.default_backend() == "cpu" else "eval_fused"


def test_regression_learns_and_keeps_best_validation():
  data = _regression()
  model = Linear(4, 1)
  result = tune(model, model.frozen(), data, MSE, FAST)
  assert result.failed is None
  assert result.epochs_run == 15 and len(result.history) == 15
  baseline = float(np.std(data.test.targets))
  assert result.test_score is not None and result.test_score < 0.05 * baseline
  val_scores = [r.val_score for r in result.history]
  assert result.val_score == min(val_scores)
  assert result.best_epoch == 1 + int(np.argmin(val_scores))
  # The returned variables are the best epoch's: scoring them again gives the recorded score.
  again, _ = evaluate(model, result.variables, model.frozen(), data.val, MSE)
  assert again == pytest.approx(result.val_score, rel=1e-5)
  assert result.history[-1].train_loss < result.history[0].train_loss
  assert set(result.variables) == {"params", "batch_stats"}
  assert result.variables["params"]["w"].shape == (4, 1)
  # The running mean was updated by the steps (x has mean ~0 but the initial mean is exactly 0).
  assert float(jnp.abs(result.variables["batch_stats"]["mean"]).sum()) > 0


def test_train_state_is_the_carry_a_training_step_takes_and_returns():
  model, data = Linear(4, 1), _regression()
  variables, tx = model.init(jax.random.key(0)), optax.adam(0.05)
  params, collections = variables["params"], {"batch_stats": variables["batch_stats"]}
  carry = TrainState.begin(params, collections, tx.init(params), 1.5)
  assert [x.dtype for x in carry[3:]] == [jnp.float32, jnp.int32, jnp.float32]
  assert (float(carry.loss_sum), int(carry.bad_step), float(carry.bad_loss)) == (1.5, -1, 0.0)
  assert carry.variables == {"params": params, "batch_stats": variables["batch_stats"]}
  step = jax.jit(make_train_step(model.apply, MSE, tx, 32))
  order = epoch_order(jax.random.key(0), 0, 300, 320)
  x, t = data.train.inputs, data.train.targets
  after = step(carry, model.frozen(), None, x, t, order, jnp.int32(0), jax.random.key(1))
  assert isinstance(after, TrainState) and jax.tree.structure(after) == jax.tree.structure(carry)
  idx = np.asarray(order[:32])
  want = np.mean((x[idx] @ np.asarray(params["w"]) - t[idx]) ** 2)  # b = 0; training noise is 1e-3
  assert float(after.loss_sum) - 1.5 == pytest.approx(want, rel=1e-2)
  assert int(after.bad_step) == -1 and not np.array_equal(after.params["w"], params["w"])
  # The first non-finite loss of the epoch is remembered (step 2's), and later clean steps keep it.
  bad = t.copy()
  bad[np.asarray(order[64:96])] = np.nan
  for s in range(4):
    after = step(after, model.frozen(), None, x, bad if s == 2 else t, order, jnp.int32(s), jax.random.key(1))
  assert int(after.bad_step) == 2 and np.isnan(float(after.bad_loss)) and np.isnan(float(after.loss_sum))
  fresh = after.next_epoch()
  assert (float(fresh.loss_sum), int(fresh.bad_step), float(fresh.bad_loss)) == (0.0, -1, 0.0)
  assert fresh.params is after.params and fresh.opt_state is after.opt_state


def test_cached_executables_are_listed_by_name():
  clear_tune_caches()
  model = Linear(4, 1)
  tune(model, model.frozen(), _regression(), MSE, dataclass_replace(FAST, epochs=1))
  steps = cached_executables("train_step")
  assert len(steps) == 1 == tune_stats()["compiles"]["train_step"]
  assert len(cached_executables(_EVAL)) == tune_stats()["compiles"][_EVAL] and cached_executables("x") == []
  assert callable(steps[0]) and hasattr(steps[0], "cost_analysis")


def test_deterministic_for_a_seed():
  data = _regression()
  model = Linear(4, 1)
  a = tune(model, model.frozen(), data, MSE, FAST)
  b = tune(model, model.frozen(), data, MSE, FAST)
  c = tune(model, model.frozen(), data, MSE, dataclass_replace(FAST, seed=1))
  chex.assert_trees_all_equal(a.variables, b.variables)
  assert [r.val_score for r in a.history] == [r.val_score for r in b.history]
  assert not np.array_equal(np.asarray(a.variables["params"]["w"]), np.asarray(c.variables["params"]["w"]))


def test_initial_variables_are_those_tune_starts_from():
  data = _regression()
  model = Linear(4, 1)
  given = tune(model, model.frozen(), data, MSE, FAST, variables=initial_variables(model, FAST))
  default = tune(model, model.frozen(), data, MSE, FAST)
  chex.assert_trees_all_equal(given.variables, default.variables)
  other = initial_variables(model, dataclass_replace(FAST, seed=1))
  assert not np.array_equal(np.asarray(other["params"]["w"]),
                            np.asarray(initial_variables(model, FAST)["params"]["w"]))


def dataclass_replace(config, **changes):
  import dataclasses
  return dataclasses.replace(config, **changes)


def test_candidates_with_the_same_structure_share_executables():
  clear_tune_caches()
  data = _regression().on_device()
  model_a, model_b = Linear(4, 1), Linear(4, 1)  # two programs, same structure (same key)
  config = dataclass_replace(FAST, epochs=2)
  tune(model_a, model_a.frozen(0.0), data, MSE, config)
  first = tune_stats()
  # Different frozen library values (another library function of the same architecture), another seed.
  tune(model_b, model_b.frozen(0.3), data, MSE, dataclass_replace(config, seed=5))
  second = tune_stats()
  assert first["compiles"] == {"train_step": 1, _EVAL: 1}
  assert second["compiles"] == first["compiles"]
  assert second["traces"] == first["traces"] == {"train_step": 1, "eval": 1}
  # A different architecture compiles its own.
  other = Linear(4, 2)
  two_targets = TuneData(*(Split(s.inputs, np.repeat(s.targets, 2, axis=1)) for s in _regression()[:3]))
  tune(other, other.frozen(), two_targets, MSE, config)
  assert tune_stats()["compiles"]["train_step"] == 2


def test_nan_loss_fails_with_reason():
  data = _regression()
  model = Linear(4, 1)
  result = tune(model, model.frozen(float("nan")), data, MSE, FAST)
  assert result.failed == "loss became nan at epoch 1 step 1"
  assert result.test_score is None and result.variables is None and math.isnan(result.val_score)
  assert result.epochs_run == 1


def test_inf_loss_fails_with_reason_later():
  # Targets that overflow float32 when squared: the loss is inf from the first step.
  data = _regression()
  data = TuneData(Split(data.train.inputs, data.train.targets * 1e30), data.val, data.test)
  model = Linear(4, 1)
  result = tune(model, model.frozen(), data, MSE, FAST)
  assert result.failed == "loss became inf at epoch 1 step 1"


def test_patience_stops_early():
  data = _regression()
  model = Linear(4, 1)
  # A zero learning rate never improves after the first epoch.
  result = tune(model, model.frozen(), data, MSE, TuneConfig(learning_rate=0.0, epochs=10, patience=2))
  assert result.epochs_run == 3 and result.best_epoch == 1 and result.failed is None


def test_bce_and_ce_classification():
  rng = np.random.default_rng(1)
  x = rng.normal(size=(400, 3)).astype(np.float32)
  labels = (x[:, 0] + x[:, 1] > 0).astype(np.float32)[:, None]
  splits = [Split(x[i:i + 100], labels[i:i + 100]) for i in range(0, 400, 100)]
  data = TuneData(Split(x[:200], labels[:200]), splits[2], splits[3])
  model = Linear(3, 1, "bool")
  result = tune(model, model.frozen(), data, Objective("bce", "error"), FAST)
  assert result.failed is None and result.test_score < 10.0
  classes = (np.digitize(x[:, 0], [-0.5, 0.5])).astype(np.int32)  # 3 classes
  data = TuneData(Split(x[:200], classes[:200]), Split(x[200:300], classes[200:300]),
                  Split(x[300:], classes[300:]))
  model = Linear(3, 3, "class")
  result = tune(model, model.frozen(), data, Objective("ce", "error"), FAST)
  assert result.failed is None and result.test_score < 15.0


def test_image_table_gather_matches_values():
  # Inputs as indices into a table give exactly the training on the gathered values.
  rng = np.random.default_rng(2)
  table = rng.normal(size=(50, 4)).astype(np.float32)
  w = rng.normal(size=(4, 1)).astype(np.float32)
  def split(n):
    idx = rng.integers(0, 50, size=n).astype(np.int32)
    return Split(idx, table[idx] @ w)
  indexed = TuneData(split(200), split(60), split(60), table=table)
  direct = TuneData(*(Split(table[s.inputs], s.targets) for s in (indexed.train, indexed.val, indexed.test)))
  model = Linear(4, 1)
  a = tune(model, model.frozen(), indexed, MSE, FAST)
  b = tune(model, model.frozen(), direct, MSE, FAST)
  np.testing.assert_allclose(np.asarray(a.variables["params"]["w"]), np.asarray(b.variables["params"]["w"]),
                             rtol=1e-6)
  assert a.test_score == pytest.approx(b.test_score, rel=1e-6)


def _list_data(n, length, seed):
  """Per-element regression y = 2 x - 1 on lists of scalars; padding holds huge targets that would
  ruin the score if they were scored."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, length, 1)).astype(np.float32)
  lengths = rng.integers(1, length + 1, size=n)
  mask = np.arange(length)[None, :] < lengths[:, None]
  y = np.where(mask[..., None], 2 * x - 1, 1e6).astype(np.float32)
  return Split(ListBatch(x, mask), y)


def test_list_outputs_are_scored_only_under_the_mask():
  data = TuneData(_list_data(300, 5, 0), _list_data(100, 5, 1), _list_data(100, 7, 2))
  model = Linear(1, 1)
  objective = objective_for_type(ListType(TensorType("real", (1,))))
  assert objective.per_element
  result = tune(model, model.frozen(), data, objective, FAST)
  assert result.failed is None
  assert result.test_score < 0.05


def test_fused_and_chunked_evaluation_agree():
  data = _regression(n_val=250)
  model = Linear(4, 1)
  variables = model.init(jax.random.key(0))
  scores = [evaluate(model, variables, model.frozen(), data.val, MSE,
                     config=TuneConfig(eval_images=b, fuse_eval=f))
            for b, f in ((1000, False), (60, False), (60, True))]
  assert scores[0][0] == pytest.approx(scores[1][0], rel=1e-5) == pytest.approx(scores[2][0], rel=1e-5)
  assert scores[0][1] == pytest.approx(scores[2][1], rel=1e-5)
  x, t = data.val
  y = x @ np.asarray(variables["params"]["w"])
  assert scores[0][0] == pytest.approx(float(np.sqrt(np.mean((y - t) ** 2))), rel=1e-5)


def test_epoch_order_fills_the_last_batch_from_the_permutation():
  order = np.asarray(epoch_order(jax.random.key(0), 0, 10, 12))
  assert sorted(order[:10].tolist()) == list(range(10))
  np.testing.assert_array_equal(order[10:], order[:2])
  assert not np.array_equal(order, np.asarray(epoch_order(jax.random.key(0), 1, 10, 12)))
  chunks = eval_chunks(250, 60)
  assert chunks.shape == (5, 50) and (chunks >= 0).sum() == 250
  assert eval_chunks(7, 60).tolist() == [list(range(7))]


# ----------------------------------------------------------------------------------------------------
# Losses and metrics.

def test_losses_match_hand_computation():
  y = jnp.array([[0.9], [0.2], [0.6]])
  t = jnp.array([[1.0], [0.0], [0.0]])
  bce = Objective("bce", "error")
  np.testing.assert_allclose(item_loss(bce, y, t), -np.log([0.9, 0.8, 0.4]), rtol=1e-6)
  wrong, count = item_metric(bce, y, t)
  assert finish_metric(bce, float(wrong.sum()), float(count.sum())) == pytest.approx(100 / 3)
  probs = jnp.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
  ce = Objective("ce", "error")
  np.testing.assert_allclose(item_loss(ce, probs, jnp.array([0, 1])), -np.log([0.7, 0.3]), rtol=1e-6)
  wrong, _ = item_metric(ce, probs, jnp.array([0, 1]))
  np.testing.assert_array_equal(wrong, [0.0, 1.0])
  # A confident mistake gives a large but finite loss.
  assert np.isfinite(item_loss(bce, jnp.array([[0.0]]), jnp.array([[1.0]]))).all()


def test_rmse_component_and_elements():
  y = jnp.array([[[1.0, 2.0], [3.0, 5.0]]])  # (B=1, N=2, 2)
  t = jnp.array([[[0.0, 2.0], [0.0, 1.0]]])
  objective = Objective("mse", "rmse", metric_component=1, per_element=True)
  sq, count = item_metric(objective, y, t)
  np.testing.assert_allclose(sq, [[0.0, 16.0]])
  np.testing.assert_allclose(count, [[1.0, 1.0]])
  np.testing.assert_allclose(item_loss(objective, y, t), [[0.5, 12.5]])
  whole = Objective("mse", "rmse")
  sq, count = item_metric(whole, y, t)
  assert finish_metric(whole, float(sq.sum()), float(count.sum())) == pytest.approx(math.sqrt(26 / 4))


def test_objective_for_type():
  assert objective_for_type(TensorType("bool", (1,))) == Objective("bce", "error")
  assert objective_for_type(TensorType("bool", (10,))) == Objective("ce", "error")
  assert objective_for_type(TensorType("real", (1,))) == Objective("mse", "rmse")
  assert objective_for_type(GraphType(TensorType("real", (2,))), metric_component=1) == Objective(
      "mse", "rmse", 1, True)
  with pytest.raises(ValueError):
    Objective("l1", "rmse")
  with pytest.raises(ValueError):
    Objective("ce", "error", metric_component=0)


# ----------------------------------------------------------------------------------------------------
# The persistent compilation cache.

@pytest.fixture
def restore_cache_config(monkeypatch):
  names = ("jax_compilation_cache_dir", "jax_enable_compilation_cache",
           "jax_persistent_cache_min_compile_time_secs")
  before = {k: getattr(jax.config, k) for k in names}
  yield monkeypatch
  cache._reset_jax_cache()
  for k, v in before.items():
    jax.config.update(k, v)
  cache._forget_configuration()
  cache.ensure_compilation_cache()


def test_cache_directory_from_env(restore_cache_config, tmp_path):
  restore_cache_config.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "jaxcache"))
  restore_cache_config.delenv(cache.CACHE_ENABLE_ENV, raising=False)
  assert cache.default_cache_dir() == tmp_path / "jaxcache"
  cache._reset_jax_cache()
  jax.config.update("jax_compilation_cache_dir", None)
  cache._forget_configuration()
  assert cache.ensure_compilation_cache() == tmp_path / "jaxcache"
  assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jaxcache")
  assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
  jax.jit(lambda x: x * 3.0 + 1.0).lower(jnp.ones((7, 3))).compile()
  assert any((tmp_path / "jaxcache").iterdir()), "nothing was written to the cache directory"
  cache.disable_compilation_cache()
  assert cache.compilation_cache_dir() is None and not jax.config.jax_enable_compilation_cache
  # Once decided, ensure does not turn it back on.
  assert cache.ensure_compilation_cache() is None


def test_cache_off_by_env(restore_cache_config):
  restore_cache_config.setenv(cache.CACHE_ENABLE_ENV, "0")
  cache._forget_configuration()
  assert cache.ensure_compilation_cache() is None
  assert not jax.config.jax_enable_compilation_cache


def test_default_cache_dir_is_per_user(monkeypatch, tmp_path):
  monkeypatch.delenv(cache.CACHE_DIR_ENV, raising=False)
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert cache.default_cache_dir() == tmp_path / "hx" / "jax"
  monkeypatch.delenv("XDG_CACHE_HOME")
  monkeypatch.setenv("HOME", str(tmp_path / "home"))
  assert cache.default_cache_dir() == tmp_path / "home" / ".cache" / "hx" / "jax"


# ----------------------------------------------------------------------------------------------------
# With real lowered programs (hx.compile.lower).

def _positive_counts(rng) -> TuneData:
  """200/50/50 lists of 1-4 reals (padded to 4) labelled with how many are positive, on the device."""
  def split(n):
    x = rng.normal(size=(n, 4, 1)).astype(np.float32)
    mask = np.arange(4)[None, :] < rng.integers(1, 5, size=n)[:, None]
    return Split(ListBatch(x, mask), np.sum((x[..., 0] > 0) & mask, 1, keepdims=True).astype(np.float32))
  return TuneData(split(200), split(50), split(50)).on_device()


@pytest.mark.slow
def test_real_programs_calling_different_library_functions_share_executables_and_are_deterministic():
  from hx.compile.lower import compile_program
  from hx.compile.modules import ModuleConfig, init_module, module_spec
  from hx.lang.parser import parse
  from hx.lang.types import FunctionType

  real1, bool1 = TensorType("real", (1,)), TensorType("bool", (1,))
  config = ModuleConfig(mlp_hidden=8, lstm_hidden=8)  # dropout 0.5 and batch norm stay on
  lstm = module_spec(FunctionType(ListType(bool1), real1), config)
  library = {"nn_f1": lstm, "nn_f2": lstm}
  library_params = {}
  for i, name in enumerate(library):
    params, stats = init_module(lstm, jax.random.key(100 + i))
    library_params[name] = {"params": params, "batch_stats": stats}
  fresh_types = {"nn_b": FunctionType(real1, bool1), "nn_c": FunctionType(real1, bool1)}
  a = compile_program(parse("compose(lib.nn_f1, map_l(nn_b))"), fresh_types, config, library)
  b = compile_program(parse("compose(lib.nn_f2, map_l(nn_c))"), fresh_types, config, library)
  assert a.key == b.key and a.apply is b.apply

  data = _positive_counts(np.random.default_rng(3))
  tune_config = TuneConfig(batch_size=50, epochs=2)
  clear_tune_caches()
  first = tune(a, a.make_frozen(library_params), data, MSE, tune_config)
  again = tune(a, a.make_frozen(library_params), data, MSE, tune_config)
  other = tune(b, b.make_frozen(library_params), data, MSE, tune_config)
  assert tune_stats()["compiles"] == {"train_step": 1, _EVAL: 1}
  assert tune_stats()["traces"] == {"train_step": 1, "eval": 1}
  assert first.failed is None and other.failed is None
  chex.assert_trees_all_equal(first.variables, again.variables)
  assert first.test_score == again.test_score
  # Another frozen function gives another model (same seed, same fresh initialisation).
  assert first.val_score != other.val_score


def test_a_program_of_library_functions_only_is_scored_without_training():
  from hx.compile.lower import compile_program
  from hx.compile.modules import ModuleConfig, init_module, module_spec
  from hx.lang.parser import parse
  from hx.lang.types import FunctionType

  real1, bool1 = TensorType("real", (1,)), TensorType("bool", (1,))
  config = ModuleConfig(mlp_hidden=8, lstm_hidden=8)
  library = {"nn_f": module_spec(FunctionType(ListType(bool1), real1), config),
             "nn_g": module_spec(FunctionType(real1, bool1), config)}
  library_params = {}
  for i, (name, spec) in enumerate(library.items()):
    params, stats = init_module(spec, jax.random.key(200 + i))
    library_params[name] = {"params": params, "batch_stats": stats}
  program = compile_program(parse("compose(lib.nn_f, map_l(lib.nn_g))"), {}, config, library)
  frozen = program.make_frozen(library_params)
  assert not jax.tree.leaves(program.init(jax.random.key(0)))

  data = _positive_counts(np.random.default_rng(5))
  clear_tune_caches()
  r = tune(program, frozen, data, MSE, TuneConfig(batch_size=50, epochs=3))
  # Nothing to train: no step is compiled or run, and the scores are the program's as it is.
  assert "train_step" not in tune_stats()["compiles"]
  assert r.failed is None and r.epochs_run == 0 and r.steps_run == 0 and r.history == []
  assert r.state is None and r.train_seconds == 0.0
  assert r.val_score == evaluate(program, r.variables, frozen, data.val, MSE)[0]
  assert r.test_score == evaluate(program, r.variables, frozen, data.test, MSE)[0]
  assert math.isfinite(r.val_score) and r.val_score > 0
  # A paused schedule (successive halving) gets the finished result at once.
  paused = tune(program, frozen, data, MSE, TuneConfig(batch_size=50, epochs=3), until=0.5)
  assert paused.state is None and paused.steps_run == 0 and paused.val_score == r.val_score


# ----------------------------------------------------------------------------------------------------
# NaN within a bounded number of steps, and after a good epoch.

@functools.cache
def _counting_apply(bad_after: int):
  """A linear model whose training output turns NaN from its (bad_after + 1)-th training step on: a step
  counter lives in its 'batch_stats' collection, carried from step to step and epoch to epoch."""
  def apply(variables, frozen, x, *, train, rng):
    p = variables["params"]
    y = x @ p["w"] + p["b"]
    if not train:
      return y
    count = variables["batch_stats"]["count"]
    y = jnp.where(count >= bad_after, jnp.nan, y)
    return y, {"batch_stats": {"count": count + 1}}
  return apply


class Counting:
  def __init__(self, bad_after: int):
    self.key = ("counting", bad_after)
    self.apply = _counting_apply(bad_after)

  def init(self, rng):
    return {"params": {"w": 0.1 * jax.random.normal(rng, (4, 1)), "b": jnp.zeros((1,))},
            "batch_stats": {"count": jnp.zeros((), jnp.int32)}}


def test_nan_after_a_good_epoch_stops_within_the_check_interval_and_keeps_the_good_epoch():
  data = _regression(n_train=1000)  # 100 steps an epoch with batches of 10
  model = Counting(bad_after=103)  # the 104th step overall, epoch 2 step 4, is the first NaN
  config = TuneConfig(learning_rate=0.05, batch_size=10, epochs=5, nan_check_every=5)
  result = tune(model, None, data, MSE, config)
  assert result.failed == "loss became nan at epoch 2 step 4"
  # Stopped at the first check after the NaN (step 5 of epoch 2), not at the end of epoch 2 (step 200).
  assert result.steps_run == 105 and result.epochs_run == 2
  # The variables and scores are epoch 1's, the only clean epoch; the test split is scored for them.
  assert result.best_epoch == 1 and len(result.history) == 1
  assert result.val_score == result.history[0].val_score
  again, _ = evaluate(model, result.variables, None, data.val, MSE)
  assert again == pytest.approx(result.val_score, rel=1e-6)
  test, _ = evaluate(model, result.variables, None, data.test, MSE)
  assert result.test_score == pytest.approx(test, rel=1e-6)
  # With the default interval (50) the same candidate stops at step 50 of epoch 2.
  result = tune(model, None, data, MSE, dataclass_replace(config, nan_check_every=50))
  assert result.failed == "loss became nan at epoch 2 step 4" and result.steps_run == 150
  with pytest.raises(ValueError, match="nan_check_every"):
    TuneConfig(nan_check_every=0)


def test_nan_in_the_first_epoch_leaves_no_variables():
  data = _regression(n_train=1000)
  result = tune(Counting(bad_after=7), None, data, MSE,
                TuneConfig(batch_size=10, epochs=3, nan_check_every=4))
  assert result.failed == "loss became nan at epoch 1 step 8" and result.steps_run == 8
  assert result.variables is None and math.isnan(result.val_score) and result.test_score is None
  assert result.best_epoch == 0 and result.history == []


# ----------------------------------------------------------------------------------------------------
# Evaluation chunks are bounded by images, not examples.

@functools.cache
def _shape_recording_apply():
  seen = []

  def apply(variables, frozen, x, *, train, rng):
    seen.append(tuple(x.values.shape))  # at trace time: the chunk's static shape
    p = variables["params"]
    y = x.values @ p["w"] + p["b"]
    return x._replace(values=y)

  apply.seen = seen
  return apply


def test_evaluation_chunks_are_bounded_by_images():
  class Recording:
    key = "recording"
    apply = staticmethod(_shape_recording_apply())

  model = Recording()
  split = _list_data(100, 10, 0)  # 100 lists of 10 (padded) elements: 1,000 images
  variables = {"params": {"w": jnp.ones((1, 1)), "b": jnp.zeros((1,))}}
  objective = objective_for_type(ListType(TensorType("real", (1,))))
  for eval_images, chunk in ((200, 20), (1000, 100), (35, 3), (5, 1)):
    model.apply.seen.clear()
    clear_tune_caches()
    score, _ = evaluate(model, variables, None, split, objective,
                        config=TuneConfig(eval_images=eval_images, fuse_eval=False))
    assert model.apply.seen == [(chunk, 10, 1)], (eval_images, model.apply.seen)
    x, t = split
    want = np.sqrt(np.mean((x.values[x.mask] - t[x.mask]) ** 2))
    assert score == pytest.approx(float(want), rel=1e-5)


# ----------------------------------------------------------------------------------------------------
# Tune's behaviours on a compiled hx program (an LSTM: no batch norm, no dropout, so a zero learning rate
# really leaves the model unchanged).

def _lstm_program():
  from hx.compile.lower import compile_program
  from hx.compile.modules import ModuleConfig
  from hx.lang.parser import parse
  from hx.lang.types import parse_type

  types = {"nn_a": parse_type("List<Tensor<real>[2]> -> Tensor<real>[1]")}
  return compile_program(parse("nn_a"), types, ModuleConfig(lstm_hidden=8))


def _list_sums(n, seed, nan_at=None):
  """Lists of 1-5 2-d elements; the target is the sum of the first components."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, 5, 2)).astype(np.float32)
  mask = np.arange(5)[None, :] < rng.integers(1, 6, size=n)[:, None]
  y = np.sum(np.where(mask, x[..., 0], 0.0), axis=1, keepdims=True).astype(np.float32)
  if nan_at is not None:
    x[nan_at, 0, 1] = np.nan  # a real element of one example
  return Split(ListBatch(x, mask), y)


def test_compiled_program_keeps_the_best_validation_epoch():
  program = _lstm_program()
  train = _list_sums(200, 0)
  # Training fits minus the sum that validation and test want: the more it trains, the worse it scores,
  # so the best validation epoch is the first, with later epochs clearly worse.
  data = TuneData(train._replace(targets=-train.targets), _list_sums(60, 1), _list_sums(60, 2))
  result = tune(program, (), data, MSE, TuneConfig(learning_rate=0.01, batch_size=20, epochs=4))
  assert result.failed is None and result.epochs_run == 4 and result.steps_run == 40
  val_scores = [r.val_score for r in result.history]
  assert val_scores == sorted(val_scores) and val_scores[-1] > 1.2 * val_scores[0], val_scores
  assert result.val_score == val_scores[0] and result.best_epoch == 1
  again, _ = evaluate(program, result.variables, (), data.val, MSE)
  assert again == pytest.approx(result.val_score, rel=1e-5)
  test, _ = evaluate(program, result.variables, (), data.test, MSE)
  assert result.test_score == pytest.approx(test, rel=1e-5)


def test_compiled_program_patience_and_determinism():
  program = _lstm_program()
  data = TuneData(_list_sums(200, 0), _list_sums(60, 1), _list_sums(60, 2))
  frozen_model = tune(program, (), data, MSE, TuneConfig(learning_rate=0.0, batch_size=20, epochs=10,
                                                        patience=2))
  assert frozen_model.epochs_run == 3 and frozen_model.best_epoch == 1 and frozen_model.failed is None
  assert len({r.val_score for r in frozen_model.history}) == 1
  config = TuneConfig(learning_rate=0.01, batch_size=20, epochs=3, seed=4)
  a, b = (tune(program, (), data, MSE, config) for _ in range(2))
  c = tune(program, (), data, MSE, dataclass_replace(config, seed=5))
  assert [r.val_score for r in a.history] == [r.val_score for r in b.history]
  assert [r.train_loss for r in a.history] == [r.train_loss for r in b.history]
  chex.assert_trees_all_equal(a.variables, b.variables)
  assert a.test_score == b.test_score and a.test_score != c.test_score


def test_compiled_program_with_a_nan_input_stops_within_the_check_interval():
  program = _lstm_program()
  data = TuneData(_list_sums(200, 0, nan_at=123), _list_sums(60, 1), _list_sums(60, 2))
  result = tune(program, (), data, MSE, TuneConfig(batch_size=10, epochs=3, nan_check_every=3))
  assert result.failed is not None and result.failed.startswith("loss became nan at epoch 1 step ")
  first_bad = int(result.failed.rsplit(" ", 1)[1])
  assert result.steps_run == min(20, 3 * math.ceil(first_bad / 3))  # 20 steps an epoch
  assert result.variables is None and math.isnan(result.val_score) and result.test_score is None


def test_min_steps_raises_the_epochs_of_a_small_training_split():
  from hx.compile import TuneConfig

  config = TuneConfig(epochs=3, batch_size=150, min_steps=30)
  assert config.for_examples(120).epochs == 30  # one step an epoch
  assert config.for_examples(1200).epochs == 4  # 8 steps an epoch: ceil(30 / 8)
  assert config.for_examples(6000).epochs == 3  # 40 steps an epoch already
  assert config.for_examples(6000) is config
  assert TuneConfig(epochs=3).for_examples(10).epochs == 3  # min_steps 0: the epochs as given
  with pytest.raises(ValueError, match="min_steps must be >= 0"):
    TuneConfig(min_steps=-1)
