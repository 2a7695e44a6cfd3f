"""benchmarks/studies/curve_replay.py against what it models: halving replayed on given curves, on the
curves of a real full run (the epochs and winner of a real halving run), and early stopping cut where
Tune really stops."""

from __future__ import annotations

import pytest

from benchmarks.studies.curve_replay import replay, stop_by_patience
from hx.compile import TuneConfig
from hx.synth.executors import Local
from hx.synth.schedules.halving import Halving
from tests.synth.test_parallel import name, run


def test_replay_follows_the_schedule_on_given_curves():
  # Four candidates, 4 epochs, rungs (1, 4), (2, 2), (4, 1). After epoch 1: c (1.0) and a (2.0) lead;
  # after epoch 2 a (0.5) beats c (0.9) and alone trains to the end, although d would have ended best.
  curves = [[2.0, 0.5, 0.4, 0.3], [5.0, 4.0, 3.0, 2.0], [1.0, 0.9, 0.8, 0.7], [9.0, 0.2, 0.1, 0.0]]
  assert replay(curves, Halving(first=1, eta=2), 4) == (4, 1, 2, 1)
  # A candidate that stopped early keeps its place but trains no further; a failed one (no curve)
  # never goes on, and the next best takes its place.
  assert replay([[2.0, 0.5], [5.0, 4.0, 3.0, 2.0], [1.0, 0.9, 0.8, 0.7], [9.0, 0.2, 0.1, 0.0]],
                Halving(first=1, eta=2), 4) == (2, 1, 2, 1)
  assert replay([[], [5.0, 4.0, 3.0, 2.0], [1.0, 0.9, 0.8, 0.7], [9.0, 0.2, 0.1, 0.0]],
                Halving(first=1, eta=2), 4) == (0, 2, 4, 1)
  with pytest.raises(ValueError, match="inside an epoch"):
    replay(curves, Halving(first=0.5, eta=2), 4)
  with pytest.raises(ValueError, match="more than the run's 3"):
    replay(curves, Halving(first=1, eta=2), 3)


def test_equal_time_cannot_be_replayed():
  with pytest.raises(ValueError, match="equal epochs"):
    replay([[1.0, 0.5]], Halving(first=1, eta=2, equal="time"), 2)


@pytest.mark.slow
def test_a_full_runs_curves_replay_a_real_halving_run():
  """The uninterrupted curves replay the schedule: the same epochs per candidate, the same winner."""
  config = TuneConfig(epochs=4, batch_size=50)
  full = run(Local(), candidates=4, config=config)
  halved = run(Local(), candidates=4, schedule=Halving(first=1, eta=2), config=config)
  in_order = sorted(full.entries, key=lambda x: x.order)
  replayed = replay([x.val_history for x in in_order], Halving(first=1, eta=2), config.epochs)
  assert replayed == tuple({x.order: x.outcome.epochs_run for x in halved.entries}[x.order] for x in in_order)
  assert sorted(replayed) == [1, 1, 2, 4]
  winner = min(range(4), key=lambda i: (min(in_order[i].val_history[:replayed[i]]), i))
  assert name(in_order[winner]) == name(halved.best)


def test_stop_by_patience_cuts_a_full_curve_where_tune_stops():
  from hx.compile.tuning import tune
  from tests.compile.test_tune import MSE, Linear, _regression

  assert stop_by_patience([3.0, 2.0, 2.0, 2.5, 1.0], 2) == (3.0, 2.0, 2.0, 2.5)  # equal is no better
  assert stop_by_patience([3.0, 2.0, 2.0, 2.5, 1.0], 3) == (3.0, 2.0, 2.0, 2.5, 1.0)
  assert stop_by_patience([3.0, 2.0], None) == (3.0, 2.0) and stop_by_patience([], 1) == ()
  with pytest.raises(ValueError, match="patience must be >= 1"):
    stop_by_patience([1.0], 0)
  # What Tune really does: a noisy run (a large step) trained to the end, and again with patience.
  data, model = _regression(), Linear(4, 1)
  config = TuneConfig(learning_rate=0.5, batch_size=32, epochs=30)
  full = [r.val_score for r in tune(model, model.frozen(), data, MSE, config).history]
  stopped_somewhere = False
  for patience in (1, 2, 3):
    cut = tune(model, model.frozen(), data, MSE, TuneConfig(learning_rate=0.5, batch_size=32, epochs=30,
                                                             patience=patience))
    assert tuple(r.val_score for r in cut.history) == stop_by_patience(full, patience)
    stopped_somewhere |= cut.epochs_run < 30
  assert stopped_somewhere
