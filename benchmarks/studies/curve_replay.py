"""Successive halving and early stopping replayed on the learning curves of a run that trained every
candidate to the end, as `halving_replay.py` and `schedule_replay.py` read them.

A survivor of `hx.synth.schedules.halving.successive_halving` resumes exactly where it paused, so its
curve is the start of its uninterrupted one: one run that trains every candidate to the end (each
`FrontierEntry.val_history`) tells what any schedule with whole-epoch rungs would have chosen and trained.
`replay` computes it without training again; `stop_by_patience` cuts a full curve where
`TuneConfig.patience` would have stopped it, so the two together replay early stopping, alone or within
halving's rungs. The survivors at each rung are chosen by `hx.synth.schedules.halving`'s own ranking
(`_best`), so a replay chooses as the schedule does; tests/benchmarks/test_curve_replay.py holds both
functions to a real halving run and to Tune.
"""

from __future__ import annotations

import math
from typing import Sequence

from hx.synth.schedules.halving import Halving, _best


def replay(histories: Sequence[Sequence[float]], schedule: Halving, epochs: int) -> tuple[int, ...]:
  """The epochs each candidate would train under `schedule`, from learning curves of training them all.

  Because a survivor resumes exactly where it paused, its validation scores under halving are the first
  ones of its uninterrupted run, so the curves of one full run (`FrontierEntry.val_history`, in the search's
  order) say what any schedule would have done, without training again: which candidates go on at each
  rung (the same choice as `successive_halving`: the best score so far, ties to the earlier candidate)
  and how far each trains. A curve shorter than `epochs` is a candidate that stopped early: it trains no
  further than its curve. Pass an empty curve for a candidate that failed (a failed candidate never
  goes on, whatever its clean epochs scored).

  Args:
    histories: per candidate, its validation score after each full epoch, from the first.
    schedule: the schedule to replay; every rung must end on a whole epoch (validation scores are
      recorded per epoch).
    epochs: the epochs of a full run (the task's `TuneConfig.epochs`).

  Returns:
    Per candidate, the epochs it trains under `schedule` (as its `FrontierEntry.outcome.epochs_run` would
    report). With `val_score = min(history[:n])` for those n epochs, the synthesis's winner is the lowest.

  Raises:
    ValueError: a rung ending inside an epoch, or a curve longer than `epochs`.
  """
  if schedule.equal != "epochs":
    raise ValueError(f"replay needs a schedule of equal epochs: {schedule} gives rungs by the costs of "
                     "steps, which learning curves do not record")
  for i, h in enumerate(histories):
    if len(h) > epochs:
      raise ValueError(f"candidate {i}'s curve has {len(h)} epochs, more than the run's {epochs}")
  rungs = schedule.rungs(epochs, len(histories))
  for rung in rungs:
    if rung.until != int(rung.until):
      raise ValueError(f"a rung of {schedule} ends at {rung.until} epochs, inside an epoch: curves "
                       "recorded per epoch cannot replay it")
  trained = [0] * len(histories)
  active = list(range(len(histories)))
  for k, rung in enumerate(rungs):
    if k > 0:
      scores = [min(h[:n]) if n else math.inf for h, n in zip(histories, trained)]
      active = [i for i in _best(scores, rung.keep) if trained[i] < len(histories[i])]
    for i in active:
      trained[i] = min(int(rung.until), len(histories[i]))
  return tuple(trained)


def stop_by_patience(curve: Sequence[float], patience: int | None) -> tuple[float, ...]:
  """The start of a full run's learning curve that the same candidate trains with
  `TuneConfig.patience = patience`: Tune stops after `patience` epochs in a row without a validation
  score below the best so far (an equal score is no better), so the curve ends at that epoch. With
  `replay`, what early stopping (alone, or within halving's rungs) would have trained and chosen, from
  one full run's curves. None: no early stopping, the whole curve."""
  if patience is None:
    return tuple(curve)
  if patience < 1:
    raise ValueError(f"patience must be >= 1 or None, got {patience}")
  best, since = math.inf, 0
  for i, v in enumerate(curve):
    if v < best:
      best, since = v, 0
    else:
      since += 1
      if since >= patience:
        return tuple(curve[:i + 1])
  return tuple(curve)
