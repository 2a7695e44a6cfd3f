"""Tune runs saved to disk and resumed (`hx.compile.checkpoint`): an interrupted run loses nothing saved."""

from __future__ import annotations

import dataclasses
import math
import os

import jax
import numpy as np
import pytest

import hx.compile.checkpoint as ck
from hx.compile import compile_program
from hx.compile.checkpoint import (
  Checkpoint,
  CheckpointError,
  load_checkpoint,
  save_checkpoint,
  tune_checkpointed,
)
from hx.compile.losses import objective_for_type
from hx.compile.tuning import TuneConfig, TuneResult, TuneState, tune
from hx.lang import infer, parse
from hx.lang.paper import default_type_variables
from hx.lang.types import FunctionType, TensorType
from tests.compile.test_tune import MSE, Linear, _regression
from tests.compile.test_tune_resume import _leaves_equal

CONFIG = TuneConfig(learning_rate=0.05, batch_size=32, epochs=5)


class Interrupt(Exception):
  pass


def _interrupt_after(monkeypatch, calls: int):
  """Makes checkpoint's tune raise on its (calls + 1)-th call, as a killed process would stop there."""
  real, count = ck.tune, [0]

  def tune_then_stop(*args, **kwargs):
    count[0] += 1
    if count[0] > calls:
      raise Interrupt()
    return real(*args, **kwargs)
  monkeypatch.setattr(ck, "tune", tune_then_stop)
  return count


def _same_result(a: TuneResult, b: TuneResult):
  _leaves_equal(a.variables, b.variables)
  assert (a.val_score, a.test_score, a.best_epoch, a.epochs_run, a.steps_run, a.failed) == (
      b.val_score, b.test_score, b.best_epoch, b.epochs_run, b.steps_run, b.failed)
  assert ([(r.epoch, r.train_loss, r.val_score, r.val_loss) for r in a.history]
          == [(r.epoch, r.train_loss, r.val_score, r.val_loss) for r in b.history])


def test_an_interrupted_run_resumes_from_its_file_to_the_uninterrupted_result(tmp_path, monkeypatch):
  data, model = _regression(), Linear(4, 1)
  straight = tune(model, model.frozen(), data, MSE, CONFIG)
  checkpoint = Checkpoint(tmp_path / "run.npz", key="linear seed 0", every_seconds=0)  # one epoch a chunk
  _interrupt_after(monkeypatch, 2)
  with pytest.raises(Interrupt):
    tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  saved = load_checkpoint(checkpoint.path, checkpoint.key, model, CONFIG)
  assert isinstance(saved, TuneState) and (saved.epoch, saved.step, len(saved.history)) == (2, 0, 2)
  assert [r.val_score for r in saved.history] == [r.val_score for r in straight.history[:2]]
  monkeypatch.undo()
  count = _interrupt_after(monkeypatch, 100)
  resumed = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  assert count[0] == 3  # epochs 3, 4, 5: nothing before the file's epoch 2 trained again
  _same_result(resumed, straight)
  assert resumed.objective == straight.objective
  assert [f for f in os.listdir(tmp_path)] == ["run.npz"]  # no temporary files left


def test_a_finished_file_gives_its_result_without_training(tmp_path, monkeypatch):
  data, model = _regression(), Linear(4, 1)
  checkpoint = Checkpoint(tmp_path / "sub" / "run.npz", key="k")
  first = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  assert first.test_score is not None and first.epochs_run == CONFIG.epochs
  assert isinstance(load_checkpoint(checkpoint.path, "k", model, CONFIG), TuneResult)
  count = _interrupt_after(monkeypatch, 0)  # any training would raise
  again = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  assert count[0] == 0
  _same_result(again, first)
  assert again.objective == first.objective


def test_a_resumed_run_reports_the_seconds_of_every_chunk_that_made_it(tmp_path, monkeypatch):
  # A run finished over two calls (two processes, on two days) reports what it cost in all, and
  # its finished file keeps that: records and the studies that replay them read these seconds.
  data, model = _regression(), Linear(4, 1)
  checkpoint = Checkpoint(tmp_path / "run.npz", key="k", every_seconds=0)
  real, spent, stop = ck.tune, [], [True]

  def timed(*args, **kwargs):
    if stop[0] and len(spent) == 2:
      raise Interrupt()
    r = real(*args, **kwargs)
    spent.append(r)
    return dataclasses.replace(r, init_seconds=1.0, compile_seconds=2.0, train_seconds=4.0, eval_seconds=8.0)
  monkeypatch.setattr(ck, "tune", timed)
  with pytest.raises(Interrupt):
    tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  spent.clear()
  stop[0] = False
  resumed = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)
  chunks = 2 + len(spent)  # the first call's two chunks, then this call's
  assert (resumed.init_seconds, resumed.compile_seconds, resumed.train_seconds, resumed.eval_seconds) == (
      1.0 * chunks, 2.0 * chunks, 4.0 * chunks, 8.0 * chunks)
  monkeypatch.undo()
  again = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, checkpoint)  # the finished file
  assert (again.init_seconds, again.compile_seconds, again.train_seconds, again.eval_seconds) == (
      resumed.init_seconds, resumed.compile_seconds, resumed.train_seconds, resumed.eval_seconds)


def test_failures_and_early_stops_are_finished_results_too(tmp_path):
  data, model = _regression(), Linear(4, 1)
  bad = dataclasses.replace(CONFIG, learning_rate=1e30)
  failed = tune_checkpointed(model, model.frozen(), data, MSE, bad, Checkpoint(tmp_path / "f.npz", "k", 0))
  assert failed.failed is not None
  loaded = load_checkpoint(tmp_path / "f.npz", "k", model, bad)
  assert isinstance(loaded, TuneResult) and loaded.failed == failed.failed
  assert (loaded.variables is None) == (failed.variables is None)
  assert math.isnan(loaded.val_score) == math.isnan(failed.val_score)
  patient = dataclasses.replace(CONFIG, epochs=50, patience=1, learning_rate=0.5)
  stopped = tune_checkpointed(model, model.frozen(), data, MSE, patient,
                              Checkpoint(tmp_path / "p.npz", "k", 0))
  straight = tune(model, model.frozen(), data, MSE, patient)
  assert stopped.epochs_run < 50
  _same_result(stopped, straight)


def test_a_compiled_program_with_batch_norm_resumes_bit_for_bit(tmp_path, monkeypatch):
  # compose(nn_1, nn_2) on vectors: two MLPs (batch statistics, dropout, tuple-of-slots variables).
  rng = np.random.default_rng(1)
  task = FunctionType(TensorType("real", (6,)), TensorType("real", (1,)))
  typing = infer(parse("compose(nn_1, nn_2)"), {}, task)
  compiled = compile_program(parse("compose(nn_1, nn_2)"), default_type_variables(typing.fresh))
  w = rng.normal(size=(6, 1)).astype(np.float32)
  from hx.compile.tuning import TuneData
  from hx.compile.values import Split

  def split(n):
    x = rng.normal(size=(n, 6)).astype(np.float32)
    return Split(x, x @ w)
  data = TuneData(split(200), split(60), split(60))
  objective = objective_for_type(task.result)
  config = TuneConfig(learning_rate=1e-3, batch_size=50, epochs=3)
  straight = tune(compiled, (), data, objective, config)
  checkpoint = Checkpoint(tmp_path / "mlp.npz", key="compose(nn_1, nn_2)", every_seconds=0)
  _interrupt_after(monkeypatch, 1)
  with pytest.raises(Interrupt):
    tune_checkpointed(compiled, (), data, objective, config, checkpoint)
  monkeypatch.undo()
  _same_result(tune_checkpointed(compiled, (), data, objective, config, checkpoint), straight)


def test_another_runs_file_is_refused_with_what_differs(tmp_path):
  data, model = _regression(), Linear(4, 1)
  path = tmp_path / "run.npz"
  paused = tune(model, model.frozen(), data, MSE, CONFIG, until=1).state
  save_checkpoint(path, "program A", paused)
  with pytest.raises(CheckpointError, match=r"run\.npz: saved for 'program A', not for 'program B'"):
    load_checkpoint(path, "program B", model, CONFIG)
  # Same key, another program's variables: the first array that does not fit is named.
  with pytest.raises(CheckpointError, match=r"params\['w'\] is float32\[4, 1\] where the program's is "
                                            r"float32\[3, 1\]"):
    load_checkpoint(path, "program A", Linear(3, 1), CONFIG)
  with pytest.raises(CheckpointError, match="params holds 2 arrays where the program's has"):
    load_checkpoint(path, "program A", _ThreeParams(), CONFIG)
  assert load_checkpoint(tmp_path / "none.npz", "program A", model, CONFIG) is None


class _ThreeParams(Linear):
  def __init__(self):
    super().__init__(4, 1)

  def init(self, rng):
    v = super().init(rng)
    return {**v, "params": {**v["params"], "c": np.zeros((1,), np.float32)}}


def test_a_file_that_is_not_a_checkpoint_is_named(tmp_path):
  model = Linear(4, 1)
  junk = tmp_path / "junk.npz"
  junk.write_bytes(b"not an archive")
  with pytest.raises(CheckpointError, match=r"junk\.npz: not a Tune checkpoint"):
    load_checkpoint(junk, "k", model, CONFIG)
  other = tmp_path / "other.npz"
  np.savez(other, meta=np.array('{"format": "something else"}'))
  with pytest.raises(CheckpointError, match=r"other\.npz: not a Tune checkpoint \(format 'something else'"):
    load_checkpoint(other, "k", model, CONFIG)


def test_a_failed_write_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
  data, model = _regression(), Linear(4, 1)
  path = tmp_path / "run.npz"
  one = tune(model, model.frozen(), data, MSE, CONFIG, until=1).state
  save_checkpoint(path, "k", one)
  two = tune(model, model.frozen(), data, MSE, CONFIG, resume=one, until=2).state

  def broken(f, **arrays):
    f.write(b"partial")
    raise OSError("disk full")
  monkeypatch.setattr(np, "savez", broken)
  with pytest.raises(OSError, match="disk full"):
    save_checkpoint(path, "k", two)
  monkeypatch.undo()
  assert os.listdir(tmp_path) == ["run.npz"]
  kept = load_checkpoint(path, "k", model, CONFIG)
  assert kept.epoch == 1
  _leaves_equal(kept.params, jax.device_get(one.params))


def test_chunks_grow_with_every_seconds(tmp_path, monkeypatch):
  data, model = _regression(), Linear(4, 1)
  config = dataclasses.replace(CONFIG, epochs=12)
  count = _interrupt_after(monkeypatch, 100)
  tune_checkpointed(model, model.frozen(), data, MSE, config, Checkpoint(tmp_path / "a.npz", "k", 0))
  assert count[0] == 12  # a file after every epoch
  count[0] = 0
  tune_checkpointed(model, model.frozen(), data, MSE, config, Checkpoint(tmp_path / "b.npz", "k", 1e6))
  assert count[0] == 2  # one epoch to measure the pace, then the rest in one chunk


def test_describe_checkpoint_says_how_far_a_run_has_come(tmp_path):
  from hx.compile.checkpoint import describe_checkpoint

  data, model = _regression(), Linear(4, 1)
  paused = tune(model, model.frozen(), data, MSE, CONFIG, until=2)
  save_checkpoint(tmp_path / "p.npz", "k", paused.state)
  d = describe_checkpoint(tmp_path / "p.npz")
  scores = [r.val_score for r in paused.history]
  assert (d["key"], d["kind"], d["epochs"], d["val_history"]) == ("k", "paused", 2, scores)
  assert d["best_val"] == min(scores) and d["best_epoch"] == 1 + scores.index(min(scores))
  done = tune_checkpointed(model, model.frozen(), data, MSE, CONFIG, Checkpoint(tmp_path / "f.npz", "k"))
  d = describe_checkpoint(tmp_path / "f.npz")
  assert (d["kind"], d["epochs"], d["best_epoch"], d["best_val"]) == ("finished", 5, done.best_epoch,
                                                                      done.val_score)
  (tmp_path / "x.npz").write_bytes(b"no")
  with pytest.raises(CheckpointError, match="not a Tune checkpoint"):
    describe_checkpoint(tmp_path / "x.npz")


def test_checkpoints_hold_the_state_of_the_optimiser_tune_trains_with():
  """One optimiser, built in one place (`tuning.optimizer`): Adam at the configured rate."""
  import optax

  from hx.compile.tuning import optimizer

  config = TuneConfig(learning_rate=0.25)
  params = {"w": np.arange(3.0, dtype=np.float32)}
  grads = {"w": np.array([1.0, -2.0, 0.5], np.float32)}
  ours, adam = optimizer(config), optax.adam(0.25)
  step, _ = ours.update(grads, ours.init(params), params)
  want, _ = adam.update(grads, adam.init(params), params)
  np.testing.assert_array_equal(step["w"], want["w"])
  assert jax.tree.structure(ours.init(params)) == jax.tree.structure(adam.init(params))
