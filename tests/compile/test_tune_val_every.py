"""Validation within epochs (`TuneConfig.val_every`): the points scored, the best kept, and patience."""

from __future__ import annotations

import chex
import numpy as np
import pytest

from hx.compile import scoring
from hx.compile.tuning import TuneConfig, tune
from tests.compile.test_tune import MSE, Linear, _regression

# 300 training examples in batches of 32: 10 steps an epoch, 30 in 3 epochs; val_every 0.1 scores after
# every 3rd step of the run (3, 6, ..., 27; 30 is the last step, scored as the end of epoch 3). At this
# learning rate the validation score is lowest in the middle of epoch 2 (after step 15), below every
# epoch's end: checked when this test was written, and asserted below so that the test keeps its point.
CONFIG = TuneConfig(learning_rate=0.05, batch_size=32, epochs=3)
POINTS = (3, 6, 9, 12, 15, 18, 21, 24, 27)


def _paused_chain(config: TuneConfig):
  """The same run paused at every point of POINTS (a pause scores its point) and run to its end: the
  scores at the points, and the final result."""
  data, model = _regression(), Linear(4, 1)
  state, scores = None, []
  for g in POINTS:
    state = tune(model, model.frozen(), data, MSE, config, resume=state, until=g / 10).state
    scores.append(state.score)
  return scores, tune(model, model.frozen(), data, MSE, config, resume=state)


def test_scoring_within_epochs_keeps_the_best_point_that_pausing_there_would_score():
  scores, chain = _paused_chain(CONFIG)
  ends = [r.val_score for r in chain.history]
  assert min(scores) < min(ends)  # the best point is inside an epoch (see CONFIG)
  data, model = _regression(), Linear(4, 1)
  plain = tune(model, model.frozen(), data, MSE, CONFIG)
  every = tune(model, model.frozen(), data, MSE, TuneConfig(**{**vars(CONFIG), "val_every": 0.1}))
  # Training is the same with or without the scoring in between (bit for bit: pausing is exact).
  assert [r.val_score for r in every.history] == [r.val_score for r in plain.history] == ends
  assert plain.val_score == min(ends)
  assert every.val_score == chain.val_score == min(scores)
  assert every.best_epoch == chain.best_epoch == 1 + POINTS[int(np.argmin(scores))] // 10
  chex.assert_trees_all_equal(every.variables, chain.variables)
  assert every.test_score == chain.test_score != plain.test_score


def test_each_point_is_one_validation_pass(monkeypatch):
  calls = []
  original = scoring._Evaluator.__call__

  def counting(self, variables):
    calls.append(self)
    return original(self, variables)

  monkeypatch.setattr(scoring._Evaluator, "__call__", counting)
  data, model = _regression(), Linear(4, 1)
  tune(model, model.frozen(), data, MSE, CONFIG)
  assert len(calls) == 3 + 1  # every epoch's end, and the test split once
  calls.clear()
  tune(model, model.frozen(), data, MSE, TuneConfig(**{**vars(CONFIG), "val_every": 0.1}))
  assert len(calls) == len(POINTS) + 3 + 1
  calls.clear()
  # A share rounding to less than a step scores after every step but each epoch's last.
  tune(model, model.frozen(), data, MSE, TuneConfig(**{**vars(CONFIG), "val_every": 0.001}))
  assert len(calls) == 3 * 9 + 3 + 1


def test_an_epoch_whose_best_point_is_inside_it_counts_as_an_improvement_for_patience():
  # Twice CONFIG's epochs with half its share: the same points in the first three epochs. Epoch 2 holds
  # the best (after step 15) but ends above it; epoch 3 does not improve: patience 1 stops after epoch 3.
  config = TuneConfig(**{**vars(CONFIG), "epochs": 6, "val_every": 0.05, "patience": 1})
  data, model = _regression(), Linear(4, 1)
  result = tune(model, model.frozen(), data, MSE, config)
  scores, chain = _paused_chain(CONFIG)
  assert result.epochs_run == 3 and result.best_epoch == 2
  assert result.val_score == min(scores)


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share):
  with pytest.raises(ValueError, match="val_every"):
    TuneConfig(val_every=share)
