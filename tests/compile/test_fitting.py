"""One trained model's outcome (`hx.compile.fitting.Outcome`): what records and kept candidates report."""

from __future__ import annotations

import dataclasses

from hx.compile.fitting import Outcome
from hx.compile.tuning import TuneConfig, tune
from tests.compile.test_tune import MSE, Linear, _regression


def _trained():
  model = Linear(4, 1)
  config = TuneConfig(learning_rate=0.05, batch_size=32, epochs=2)
  return tune(model, model.frozen(), _regression(), MSE, config)


def test_an_outcome_takes_the_call_wall_time_when_it_covers_the_run():
  r = dataclasses.replace(_trained(), init_seconds=0.5, compile_seconds=1.0, train_seconds=2.0,
                          eval_seconds=0.5)
  out = Outcome.of(r, 5.0)
  assert out.seconds == 5.0
  assert (out.compile_seconds, out.train_seconds, out.eval_seconds) == (1.0, 2.5, 0.5)  # init is training's


def test_a_resumed_run_outcome_counts_the_earlier_calls_wall_time_too():
  # A run resumed from its checkpoint reports the parts of every call that made it (hx.compile.checkpoint);
  # the last call alone took 0.2 s, the whole run at least the 9 s of its parts.
  r = dataclasses.replace(_trained(), init_seconds=1.0, compile_seconds=2.0, train_seconds=4.0,
                          eval_seconds=2.0)
  out = Outcome.of(r, 0.2)
  assert out.seconds == 9.0
  assert out.status == "trained" and out.epochs_run == 2


def test_a_job_result_holds_its_outcome_as_a_field_and_changes_it_as_a_copy():
  import pickle

  import pytest

  from hx.synth.jobs import JobResult

  outcome = Outcome.of(_trained(), 5.0)
  job = JobResult(job=None, outcome=outcome, attempts=2)
  assert job.outcome is outcome and not hasattr(job, "val_score")  # read as job.outcome.val_score
  with pytest.raises(dataclasses.FrozenInstanceError):
    job.outcome = outcome  # a change is a new value (with_outcome)
  changed = job.with_outcome(status="estimated", seconds=7.0)
  assert (changed.outcome.status, changed.outcome.seconds, changed.attempts, changed.outcome.val_score) == (
      "estimated", 7.0, 2, outcome.val_score)
  assert (job.outcome.status, job.outcome.seconds) == ("trained", 5.0)  # the original is unchanged
  back = pickle.loads(pickle.dumps(changed))  # executors send results between processes
  assert (back.outcome.status, back.outcome.seconds, back.attempts, back.outcome.val_score) == (
      "estimated", 7.0, 2, outcome.val_score)
  with pytest.raises(TypeError, match="no_such_field"):
    job.with_outcome(no_such_field=1)


def test_a_baseline_result_holds_its_outcome_and_names_its_scores():
  import pytest

  from hx.baselines import BaselineResult

  outcome = Outcome.of(_trained(), 5.0)
  result = BaselineResult(method="standalone", task="t", description="-", outcome=outcome, network=None,
                          parameters=5, frozen_parameters=0)
  assert (result.status, result.val_score, result.test_score) == \
      (outcome.status, outcome.val_score, outcome.test_score)
  assert not hasattr(result, "epochs_run")  # the rest of the training is read from `outcome`
  with pytest.raises(AttributeError):
    result.val_score = 0.0
