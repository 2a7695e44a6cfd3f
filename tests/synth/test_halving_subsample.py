"""Successive halving whose early rungs score a validation subsample (`Halving(val_examples=...)`),
trained for real on the summing task of tests/synth/test_synthesize.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import Local
from hx.synth.schedules.halving import Halving
from hx.synth.synthesize import synthesize
from tests.synth.test_parallel import CONFIG
from tests.synth.test_synthesize import TINY, sum_task

EPOCHS = 4
SCHEDULE = dict(first=1, eta=2)  # rungs: 4 candidates to 1 epoch, 2 to 2, 1 to 4


def _run(val_examples):
  config = dataclasses.replace(CONFIG, epochs=EPOCHS)
  budget = Budget(candidates=4, schedule=Halving(**SCHEDULE, val_examples=val_examples))
  return synthesize(sum_task(n=300), None, SynthesisConfig(budget=budget, module_config=TINY,
                                                           tune_configs={"sum_numbers": config}),
                    seed=3, executor=Local())


@pytest.mark.slow
def test_early_rungs_score_the_subsample_and_the_last_rung_all_of_the_validation_split():
  from hx.synth.jobs import Job, job_seed, run_job
  from hx.synth.synthesize import task_context
  from hx.synth.topdown import enumerate_programs

  sub = _run(40)
  best = sub.best.outcome
  assert best.status == "trained" and best.epochs_run == EPOCHS and best.test_score is not None
  # The survivor trained uninterrupted, every epoch scored on the whole split, with the seed the synthesis
  # gave it. Validation does not change training, so the survivor's parameters are that run's at every
  # epoch: its last two scores (the last rung began after 2 epochs, on the whole split) are that run's,
  # its first two (40 of the 200 validation sums) are not.
  task, config = sum_task(n=300), dataclasses.replace(CONFIG, epochs=EPOCHS)
  candidate = next(c for c in enumerate_programs(task.type, None, config=TINY, limit=4)
                   if str(c.program) == str(sub.best.program))
  whole = run_job(task_context(task, None, TINY, config), Job(0, candidate, job_seed(3, candidate)))
  np.testing.assert_allclose(sub.best.val_history[2:], whole.outcome.val_history[2:], rtol=1e-6)
  assert not np.allclose(sub.best.val_history[:2], whole.outcome.val_history[:2], rtol=1e-6)
  # Its best epoch is among those scored on the whole split.
  assert sub.best.val_score == pytest.approx(min(whole.outcome.val_history[2:]), rel=1e-6)
  assert sub.best.test_score == pytest.approx(whole.outcome.test_score, rel=1e-5)


@pytest.mark.slow
def test_the_candidates_halving_stopped_are_estimated_and_ranked_after_the_survivor():
  r = _run(40)
  statuses = [x.outcome.status for x in r.entries]
  assert statuses == ["trained", "estimated", "estimated", "estimated"], statuses
  for x in r.entries[1:]:
    assert x.estimate_method == "halving" and math.isfinite(x.estimate)
    assert math.isnan(x.val_score) and x.test_score is None and "stopped by halving after" in x.outcome.reason
    assert x.estimate_epochs in (1, 2)
  # One stopped after the second rung, two after the first; all ranked by their subsample scores.
  assert sorted(x.estimate_epochs for x in r.entries[1:]) == [1, 1, 2]


def test_the_schedule_is_checked_and_named_in_its_text():
  with pytest.raises(ValueError, match="val_examples"):
    Halving(val_examples=0)
  assert repr(Halving(first=1, eta=2, val_examples=300)) == (
      "Halving(first=1, eta=2, min_keep=1, equal='epochs', price=0.1, reference='geomean', val_examples=300)")
