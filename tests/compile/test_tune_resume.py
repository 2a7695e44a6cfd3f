"""Pausing and resuming Tune (`until=`, `resume=`): what successive halving builds on."""

from __future__ import annotations

import dataclasses
import math
import pickle

import jax
import numpy as np
import pytest

from hx.compile.tuning import TuneConfig, TuneData, tune
from hx.compile.values import Split
from tests.compile.test_tune import MSE, Linear, _regression

CONFIG = TuneConfig(learning_rate=0.05, batch_size=32, epochs=4)


def _leaves_equal(a, b):
  la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
  assert len(la) == len(lb)
  for x, y in zip(la, lb):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_one_epoch_then_one_resumed_epoch_equals_two_epochs():
  data = _regression()
  model = Linear(4, 1)
  config = dataclasses.replace(CONFIG, epochs=2)
  whole = tune(model, model.frozen(), data, MSE, config)
  first = tune(model, model.frozen(), data, MSE, config, until=1)
  assert first.state is not None and first.state.epoch == 1 and first.state.step == 0
  assert first.test_score is None and first.epochs_run == 1 and len(first.history) == 1
  assert first.val_score == first.state.score == first.history[0].val_score
  rest = tune(model, model.frozen(), data, MSE, config, resume=first.state)
  assert rest.state is None and rest.epochs_run == 2
  _leaves_equal(rest.variables, whole.variables)
  assert (rest.val_score, rest.test_score, rest.best_epoch) == (whole.val_score, whole.test_score,
                                                                 whole.best_epoch)
  assert ([(r.train_loss, r.val_score, r.val_loss) for r in rest.history]
          == [(r.train_loss, r.val_score, r.val_loss) for r in whole.history])
  assert rest.steps_run == whole.steps_run


def test_a_pause_mid_epoch_continues_the_same_steps_and_survives_pickling():
  data = _regression(n_train=320)  # 10 steps per epoch
  model = Linear(4, 1)
  # Pausing at 1.5 and 2 epochs gives the parameters one run reaches at the end of epoch 2 (the
  # same steps on the same batches with the same keys), and the epoch's record is the same.
  straight = tune(model, model.frozen(), data, MSE, CONFIG, until=2)
  half = tune(model, model.frozen(), data, MSE, CONFIG, until=1.5)
  assert (half.state.epoch, half.state.step, half.state.position) == (1, 5, 1.5)
  assert math.isfinite(half.state.score) and half.state.steps_run == 15
  # A state is host-transportable: NumPy leaves, pickled, as an executor sends it to another worker.
  state = pickle.loads(pickle.dumps(half.state.on_host()))
  assert isinstance(state.params["w"], np.ndarray)
  on = tune(model, model.frozen(), data, MSE, CONFIG, resume=state, until=2)
  assert on.state.epoch == 2 and on.state.step == 0
  _leaves_equal((on.state.params, on.state.collections, on.state.opt_state),
                (straight.state.params, straight.state.collections, straight.state.opt_state))
  assert ([r.train_loss for r in on.history] == [r.train_loss for r in straight.history])
  # The same state resumed twice gives the same result (tune copies it before donating buffers).
  again = tune(model, model.frozen(), data, MSE, CONFIG, resume=state, until=2)
  _leaves_equal(again.state.params, on.state.params)


def test_a_pause_is_at_least_one_step_and_until_past_the_end_finishes():
  data = _regression(n_train=320)
  model = Linear(4, 1)
  tiny = tune(model, model.frozen(), data, MSE, CONFIG, until=0.01)
  assert tiny.state.steps_run == 1 and tiny.state.step == 1
  more = tune(model, model.frozen(), data, MSE, CONFIG, resume=tiny.state, until=0.01)
  assert more.state.steps_run == 2
  done = tune(model, model.frozen(), data, MSE, CONFIG, until=100)
  assert done.state is None and done.epochs_run == CONFIG.epochs and done.test_score is not None


def test_patience_and_failures_end_a_run_without_a_state():
  data = _regression()
  model = Linear(4, 1)
  stopped = tune(model, model.frozen(), data, MSE, TuneConfig(learning_rate=0.0, epochs=10, patience=2),
                 until=3)
  assert stopped.state is None and stopped.epochs_run == 3
  bad = tune(model, model.frozen(float("nan")), data, MSE, CONFIG, until=1)
  assert bad.state is None and bad.failed is not None


def test_resuming_with_other_settings_is_refused():
  data = _regression()
  model = Linear(4, 1)
  first = tune(model, model.frozen(), data, MSE, CONFIG, until=1)
  with pytest.raises(ValueError, match="seed, batch_size, learning_rate"):
    tune(model, model.frozen(), data, MSE, dataclasses.replace(CONFIG, seed=3), resume=first.state)
  with pytest.raises(ValueError, match="variables or resume"):
    tune(model, model.frozen(), data, MSE, CONFIG, resume=first.state, variables=first.variables)
  with pytest.raises(ValueError, match="until"):
    tune(model, model.frozen(), data, MSE, CONFIG, until=0)
  fewer = TuneData(Split(data.train.inputs[:40], data.train.targets[:40]), data.val, data.test)
  with pytest.raises(ValueError, match="steps per epoch"):
    tune(model, model.frozen(), fewer, MSE, CONFIG, resume=first.state)


def test_a_watcher_sees_every_finished_epoch_of_a_paused_and_resumed_run():
  from hx.compile.tuning import epochs_watched

  data = _regression()
  model = Linear(4, 1)
  seen = []
  with epochs_watched(lambda *epoch: seen.append(epoch)):
    first = tune(model, model.frozen(), data, MSE, CONFIG, until=1.5)  # a pause inside epoch 2
    rest = tune(model, model.frozen(), data, MSE, CONFIG, resume=first.state)
  assert seen == [(r.epoch, 4, r.val_score) for r in rest.history] and len(seen) == 4
  tune(model, model.frozen(), data, MSE, CONFIG)
  assert len(seen) == 4  # outside the block: nothing
