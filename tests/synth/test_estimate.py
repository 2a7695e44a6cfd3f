"""`hx.synth.schedules.estimate`: the estimates' arithmetic on small exact cases, and the schedule that trains
only the best-estimated candidates to the end, on CS1 data `hx.data` builds and programs the compiler
builds."""

import dataclasses
import math

import jax
import numpy as np
import pytest
from scipy import stats

from hx.compile import ModuleConfig, TuneConfig, compile_program, make_frozen
from hx.compile.memo import frozen_prefix
from hx.compile.tuning import initial_variables
from hx.compile.values import ListBatch, gather, take
from hx.data import TaskSizes, sequence
from hx.lang import parse
from hx.lang.types import parse_type
from hx.synth import Budget, Estimate, Evolutionary, Library, SynthesisConfig, Trained, synthesize
from hx.synth.schedules.estimate import (
  compact_table,
  fit_head,
  head_features,
  head_slot,
  logistic_fit,
  ridge_fit,
  short_run_epochs,
  spearman,
  subsample_split,
  validation_subsample,
)
from hx.synth.space import SearchSpace

TINY = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), lstm_hidden=8, mlp_dropout=0.0, cnn_dropout=0.0)
IMAGE_TO_BOOL = parse_type("Tensor<real>[1][28][28] -> Tensor<bool>[1]")
FEATURES = parse_type("Tensor<real>[1][28][28] -> Tensor<real>[1024]")


def test_ridge_without_penalty_is_numpys_least_squares_with_an_intercept():
  rng = np.random.default_rng(0)
  h = rng.normal(size=(40, 6))
  y = rng.normal(size=(40, 2))
  w, b = ridge_fit(h, y, 0.0)
  expected = np.linalg.lstsq(np.concatenate([h, np.ones((40, 1))], 1), y, rcond=None)[0]
  np.testing.assert_allclose(w, expected[:6], atol=1e-10)
  np.testing.assert_allclose(b, expected[6], atol=1e-10)


def test_ridge_is_the_penalised_normal_equations_whichever_gram_matrix_solves_it():
  rng = np.random.default_rng(1)
  for n, d in ((50, 5), (5, 50)):  # the d x d and the n x n system
    h = rng.normal(size=(n, d)) * 3.0
    y = rng.normal(size=n)
    w, b = ridge_fit(h, y, 0.1)
    hc = h - h.mean(0)
    lam = 0.1 * np.sum(hc * hc) / n
    expected = np.linalg.solve(hc.T @ hc + lam * np.eye(d), hc.T @ (y - y.mean()))
    np.testing.assert_allclose(w[:, 0], expected, atol=1e-9)
    np.testing.assert_allclose(b, y.mean() - h.mean(0) @ expected, atol=1e-9)
    # Scale-free: features 10 times larger give the same predictions.
    w10, b10 = ridge_fit(10 * h, y, 0.1)
    np.testing.assert_allclose(10 * h @ w10 + b10, h @ w + b, atol=1e-9)


def test_logistic_fit_reaches_the_penalised_optimum():
  rng = np.random.default_rng(2)
  h = rng.normal(size=(200, 4))
  t = (h @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 + rng.normal(size=200) > 0).astype(np.float64)
  ridge = 0.01
  w, b = logistic_fit(h, t, ridge, steps=25)
  x = np.concatenate([h, np.ones((200, 1))], 1)
  theta = np.concatenate([w[:, 0], b])
  hc = h - h.mean(0)
  lam = ridge * np.sum(hc * hc) / 200
  p = 1 / (1 + np.exp(-x @ theta))
  grad = x.T @ (p - t) + np.append(lam * theta[:4], 0.0)
  assert np.max(np.abs(grad)) < 1e-8
  # More steps from the same start never end at a worse penalised loss.
  w1, b1 = logistic_fit(h, t, ridge, steps=1)

  def loss(w, b):
    z = h @ w[:, 0] + b[0]
    return np.sum(np.logaddexp(0, z) - t * z) + 0.5 * lam * np.sum(w * w)

  assert loss(w, b) <= loss(w1, b1) + 1e-12


def test_the_validation_subsample_is_fixed_by_its_seed():
  a = validation_subsample(2100, 300, seed=7)
  assert a.shape == (300,) and len(set(a.tolist())) == 300
  assert np.all(np.diff(a) > 0) and a.min() >= 0 and a.max() < 2100
  np.testing.assert_array_equal(a, validation_subsample(2100, 300, seed=7))
  assert not np.array_equal(a, validation_subsample(2100, 300, seed=8))
  np.testing.assert_array_equal(validation_subsample(50, 300, seed=7), np.arange(50))
  np.testing.assert_array_equal(validation_subsample(50, None, seed=7), np.arange(50))
  with pytest.raises(ValueError):
    validation_subsample(50, 0, seed=7)


def test_spearman_is_scipys_on_finite_pairs():
  rng = np.random.default_rng(3)
  a, b = rng.normal(size=12), rng.normal(size=12)
  b[3] = b[5]  # a tie
  assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
  assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
  assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
  assert spearman([1, 2, math.nan, 4, 5], [1, 2, 0, 3, 4]) == pytest.approx(1.0)
  assert math.isnan(spearman([1, 2], [1, 2]))


def test_a_short_run_trains_a_share_of_the_steps_within_bounds():
  assert short_run_epochs(Estimate(share=0.1, max_steps=300), 20, 2) == pytest.approx(2.0)  # 4 steps
  assert short_run_epochs(Estimate(share=0.1, max_steps=300), 20, 80) == pytest.approx(160 / 80)
  assert short_run_epochs(Estimate(share=0.5, max_steps=300), 20, 80) == pytest.approx(300 / 80)
  assert short_run_epochs(Estimate(share=0.01, max_steps=300), 1, 10) == pytest.approx(0.1)  # >= 1 step


def test_bad_schedules_are_refused():
  for bad in (dict(keep=0), dict(method="guess"), dict(share=0.0), dict(share=1.5), dict(max_steps=0),
              dict(val_examples=0), dict(ridge=-1.0), dict(logistic_steps=-1)):
    with pytest.raises(ValueError):
      Estimate(**bad)


# ---------------------------------------------------------------------------------------------------
# On CS1's data and compiled programs.

@pytest.fixture(scope="module")
def cs1():
  """CS1's count_digit at tiny sizes, and a library holding a (frozen, untrained) recognizer
  compose(nn_t_1, nn_t_2): an MLP on a CNN's 1,024 features."""
  seq = sequence("cs1", seed=0, sizes=TaskSizes(binary=(60, 30, 30), lists=(90, 40, 40)))
  task = seq.build(2)
  compiled = compile_program(parse("compose(nn_1, nn_2)"),
                             {"nn_1": parse_type("Tensor<real>[1024] -> Tensor<bool>[1]"), "nn_2": FEATURES},
                             TINY)
  variables = compiled.init(jax.random.key(0))
  library = Library().add(Trained(compiled, variables), sequence="t", task="recognize").library
  return task, library


def _head(task, library):
  program = parse("compose(nn_1, map_l(compose(lib.nn_t_1, lib.nn_t_2)))")
  types = {"nn_1": parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]")}
  names, rest = frozen_prefix(program)
  compiled = compile_program(rest, types, TINY, library.specs())
  return program, types, names, compiled


def test_compact_table_selects_the_same_images(cs1):
  task, _ = cs1
  val = subsample_split(task.val, validation_subsample(40, 10, seed=0))
  table, (train, val2) = compact_table(task.table, [task.train, val])
  assert table.shape[0] < task.table.shape[0]
  for before, after in ((task.train, train), (val, val2)):
    idx = np.arange(5)
    want = gather(task.table, take(before.inputs, idx))
    got = gather(table, take(after.inputs, idx))
    np.testing.assert_array_equal(np.asarray(got.values), np.asarray(want.values))
    np.testing.assert_array_equal(np.asarray(got.mask), np.asarray(want.mask))
    np.testing.assert_array_equal(after.targets, before.targets)


def test_a_fresh_lstm_on_a_frozen_recognizer_is_a_head_and_a_fresh_cnn_is_not(cs1):
  task, library = cs1
  _, _, names, compiled = _head(task, library)
  assert names == ("nn_t_1", "nn_t_2") and head_slot(compiled, prefixed=True) == 0
  other = compile_program(parse("compose(nn_1, map_l(compose(lib.nn_t_1, nn_2)))"),
                          {"nn_1": parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]"), "nn_2": FEATURES},
                          TINY, library.specs())
  assert head_slot(other) is None  # two fresh functions
  alone = compile_program(parse("nn_1"), {"nn_1": parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]")},
                          TINY)
  assert head_slot(alone) is None  # nothing frozen below it


def test_the_head_is_affine_in_its_features_and_the_fit_is_their_least_squares(cs1):
  from hx.compile.memo import apply_prefix

  task, library = cs1
  _, _, names, compiled = _head(task, library)
  table, (train,) = compact_table(task.table, [task.train])  # the prefix over the rows used only
  task = dataclasses.replace(task, train=train)
  table = apply_prefix(names, library.specs(), library.variables(), table)
  frozen = make_frozen(compiled, library.variables())
  variables = initial_variables(compiled, TuneConfig(seed=3))
  h = head_features(compiled, variables, frozen, task.train.inputs, table, logits=False)
  assert h.shape == (90, 8)  # lstm_hidden features per list
  # In chunks of 32 (the last one filled from the start and cut): the same features.
  np.testing.assert_allclose(head_features(compiled, variables, frozen, task.train.inputs, table,
                                           logits=False, chunk=32), h, rtol=1e-5, atol=1e-6)
  x = gather(table, jax.tree.map(np.asarray, task.train.inputs))
  y = np.asarray(compiled.apply(variables, frozen, x, train=False))
  out = variables["params"][0]["out"]
  np.testing.assert_allclose(y, h @ np.asarray(out["w"]) + np.asarray(out["b"]), atol=1e-5)
  fitted = fit_head(compiled, variables, frozen, task.train, table, task.objective, ridge=0.0,
                    logistic_steps=0)
  w, b = ridge_fit(h, np.asarray(task.train.targets), 0.0)
  np.testing.assert_allclose(np.asarray(fitted["params"][0]["out"]["w"]), w, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(np.asarray(fitted["params"][0]["out"]["b"]), b, rtol=1e-5, atol=1e-5)
  # Only the output layer moved.
  for k in ("w_i", "w_h", "b"):
    np.testing.assert_array_equal(np.asarray(fitted["params"][0][k]), np.asarray(variables["params"][0][k]))


def test_a_bool_heads_fit_takes_logits(cs1):
  """A recognizer head on the library's CNN features: the logistic fit's logits are its features' affine
  function, and it scores the training split better than chance."""
  from hx.compile import evaluate
  from hx.compile.memo import apply_prefix

  seq = sequence("cs1", seed=0, sizes=TaskSizes(binary=(200, 60, 60), lists=(30, 20, 20)))
  task = seq.build(0)
  _, library = cs1
  program = parse("compose(nn_1, lib.nn_t_2)")
  names, rest = frozen_prefix(program)
  compiled = compile_program(rest, {"nn_1": parse_type("Tensor<real>[1024] -> Tensor<bool>[1]")}, TINY,
                             library.specs())
  assert head_slot(compiled, bool(names)) == 0
  table, (train,) = compact_table(task.table, [task.train])
  task = dataclasses.replace(task, train=train)
  table = apply_prefix(names, library.specs(), library.variables(), table)
  frozen = make_frozen(compiled, library.variables())
  variables = initial_variables(compiled, TuneConfig(seed=0))
  fitted = fit_head(compiled, variables, frozen, task.train, table, task.objective, ridge=1e-3,
                    logistic_steps=8)
  h = head_features(compiled, variables, frozen, task.train.inputs, table, logits=True)
  x = gather(table, np.asarray(task.train.inputs))
  logits = np.asarray(compiled.apply(fitted, frozen, x, train=False, logits=True))
  out = fitted["params"][0]["out"]
  np.testing.assert_allclose(logits, h @ np.asarray(out["w"]) + np.asarray(out["b"]), atol=1e-3)
  error, _ = evaluate(compiled, fitted, frozen, task.train, task.objective, table=table)
  base = 100 * min(np.mean(task.train.targets), 1 - np.mean(task.train.targets))
  assert error < base


def _synth(task, library, schedule, candidates=5):
  config = SynthesisConfig(budget=Budget(candidates=candidates, schedule=schedule),
                           space=SearchSpace(order="authors"), module_config=TINY,
                           tune_configs={task.spec.kind: TuneConfig(epochs=2, batch_size=30)})
  return synthesize(task, library, config, seed=0)


@pytest.mark.slow
def test_the_schedule_trains_exactly_the_best_k_short_run_estimates():
  """On sums of numbers (no images, no library: every candidate gets the short run)."""
  from tests.synth.test_synthesize import sum_task

  task = sum_task(n=200)
  config = TuneConfig(epochs=3, learning_rate=1e-2, batch_size=50)
  r = synthesize(task, None, SynthesisConfig(
      budget=Budget(candidates=3, schedule=Estimate(keep=1, val_examples=50)), module_config=TINY,
      tune_configs={task.name: config}), seed=0)
  assert [x.outcome.status for x in r.entries] == ["trained", "estimated", "estimated"]
  trained, estimated = r.entries[:1], r.entries[1:]
  assert all(x.outcome.epochs_run == 3 and x.test_score is not None for x in trained)
  assert all(x.outcome.epochs_run == 0 and math.isnan(x.val_score) and x.test_score is None
             for x in estimated)
  assert max(x.estimate for x in trained) <= min(x.estimate for x in estimated)
  # A short run: 10% of 3 epochs x 4 steps, rounded: 1 step, a quarter of an epoch.
  assert all(x.estimate_method == "short" and x.estimate_epochs == 0.25 for x in r.entries)
  assert sorted(x.order for x in r.entries) == [0, 1, 2]


@pytest.mark.slow
def test_the_schedule_trains_exactly_the_best_k_estimates_and_reports_the_rest(cs1):
  task, library = cs1
  r = _synth(task, library, Estimate(keep=2, method="head", val_examples=15))
  assert len(r.entries) == 5 and r.candidates_trained == 5
  trained = [x for x in r.entries if x.outcome.status == "trained"]
  estimated = [x for x in r.entries if x.outcome.status == "estimated"]
  assert len(trained) == 2 and len(estimated) == 3
  assert all(x.outcome.epochs_run == 2 and x.test_score is not None and math.isfinite(x.val_score)
             for x in trained)
  assert all(math.isnan(x.val_score) and x.test_score is None and x.outcome.epochs_run == 0
             for x in estimated)
  assert all("not trained to the end" in x.outcome.reason for x in estimated)
  # The trained are the two lowest estimates; the estimated rank after them by their estimate.
  assert max(x.estimate for x in trained) <= min(x.estimate for x in estimated)
  assert [x.estimate for x in estimated] == sorted(x.estimate for x in estimated)
  assert [x.rank for x in r.entries] == [1, 2, 3, 4, 5]
  assert sorted(x.order for x in r.entries) == [0, 1, 2, 3, 4]
  assert any(x.estimate_method == "head" for x in r.entries)
  assert all(x.estimate_epochs == 0 for x in r.entries if x.estimate_method == "head")
  assert all(x.estimate_epochs > 0 for x in r.entries if x.estimate_method == "short")
  assert r.estimate_seconds > 0 and r.best is r.entries[0]


@pytest.mark.slow
def test_the_candidates_trained_to_the_end_are_those_of_training_every_candidate(cs1):
  """Same seed, from scratch: the estimate-led schedule's trained candidates have the very scores the
  every-candidate schedule gives them; keep=None trains all of them, in the estimate's order."""
  task, library = cs1
  # By place in the search's order: two candidates may print alike (their fresh types differ).
  full = {x.order: x for x in _synth(task, library, None).entries}
  led = _synth(task, library, Estimate(keep=2, method="short", val_examples=15))
  assert sum(x.outcome.status == "trained" for x in led.entries) == 2
  for x in led.entries:
    if x.outcome.status == "trained":
      assert x.val_score == pytest.approx(full[x.order].val_score, rel=1e-5)
      assert x.test_score == pytest.approx(full[x.order].test_score, rel=1e-5)
  every = _synth(task, library, Estimate(keep=None, method="short", val_examples=15))
  assert all(x.outcome.status == "trained" for x in every.entries) and len(every.entries) == 5
  assert {x.order: x.estimate for x in every.entries} == {x.order: x.estimate for x in led.entries}


def test_estimates_are_for_top_down_only():
  with pytest.raises(ValueError, match="top-down"):
    SynthesisConfig(strategy=Evolutionary(), budget=Budget(candidates=2, schedule=Estimate()),
                    module_config=TINY)


def test_a_list_batch_subsample_keeps_the_splits_form():
  values = np.arange(12).reshape(4, 3)
  split_in = ListBatch(values, values > 2)
  from hx.compile.values import Split

  sub = subsample_split(Split(split_in, np.arange(4.0)), np.array([1, 3]))
  assert isinstance(sub.inputs, ListBatch)
  np.testing.assert_array_equal(sub.inputs.values, values[[1, 3]])
  np.testing.assert_array_equal(sub.targets, [1.0, 3.0])
  assert dataclasses.is_dataclass(Estimate())
