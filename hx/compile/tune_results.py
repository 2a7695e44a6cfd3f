"""What `hx.compile.tuning.tune` gives back: a record per epoch (`EpochRecord`), the outcome
(`TuneResult`), and where a paused run stopped (`TuneState`, which `tune(..., resume=state)` continues
from).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import jax
import numpy as np

from hx.compile.losses import Objective

if TYPE_CHECKING:
  from collections.abc import Mapping

  import chex
  import optax

__all__ = ["EpochRecord", "TuneState", "TuneResult"]


@dataclasses.dataclass(frozen=True)
class EpochRecord:
  """One epoch: the mean training loss, the validation score and loss at its end, wall seconds of its
  training steps and of its validation passes (the one at its end, and those within it under
  `TuneConfig.val_every`)."""
  epoch: int
  train_loss: float
  val_score: float
  val_loss: float
  train_seconds: float
  val_seconds: float


@dataclasses.dataclass(frozen=True, eq=False)
class TuneState:
  """Where a paused `tune` stopped: pass it back as `tune(..., resume=state)` to continue.

  Arrays may be on the device or host NumPy (pickled to another process, say); `tune` copies them before
  training, so one state can be resumed more than once.

  Attributes:
    params, collections: the current trainable parameters and the other variable collections (e.g.
      {"batch_stats": ...}).
    opt_state: the optimiser's state (Adam's step count and moments) for `params`.
    epoch: full epochs done; step: training steps done of epoch `epoch + 1` (0 at an epoch boundary).
    loss_sum: float32 scalar, the summed training loss of those `step` steps (for the epoch's record).
    score: the validation score of the current parameters (the pause point's).
    best_variables, best_score, best_epoch: the best validation so far (None, inf, 0 if none).
    since_best: full epochs since the best one (for `patience`).
    history: the records of the epochs done.
    steps_run: training steps run in all.
    seed, batch_size, learning_rate: the settings it was trained with; resuming with others is an error.
    steps_per_epoch: training steps per epoch (ceil(training examples / batch_size)).
  """
  params: chex.ArrayTree
  collections: Mapping[str, chex.ArrayTree]
  opt_state: optax.OptState
  epoch: int
  step: int
  loss_sum: jax.typing.ArrayLike
  score: float
  best_variables: chex.ArrayTree | None
  best_score: float
  best_epoch: int
  since_best: int
  history: tuple[EpochRecord, ...]
  steps_run: int
  seed: int
  batch_size: int
  learning_rate: float

  steps_per_epoch: int

  @property
  def position(self) -> float:
    """Epochs trained so far, a partial epoch counted by its share of steps (e.g. 1.5)."""
    return self.epoch + self.step / self.steps_per_epoch

  def without_best(self) -> TuneState:
    """This state with no best epoch yet: resumed, the run keeps only the epochs it scores from now on
    (as after its validation data change, `hx.synth.schedules.halving`'s last rung on the whole split)."""
    return dataclasses.replace(self, best_variables=None, best_score=math.inf, best_epoch=0, since_best=0)

  def on_host(self) -> TuneState:
    """The same state with host NumPy arrays (to pickle it, or send it to another process)."""
    arrays = (self.params, self.collections, self.opt_state, self.loss_sum, self.best_variables)
    params, collections, opt_state, loss_sum, best = jax.tree.map(np.asarray, jax.device_get(arrays))
    return dataclasses.replace(self, params=params, collections=collections, opt_state=opt_state,
                               loss_sum=loss_sum, best_variables=best)


@dataclasses.dataclass
class TuneResult:
  """The outcome of one `tune`.

  A failed candidate (`failed` set: its loss or validation score became NaN or infinite) keeps the
  variables and scores of its best clean epoch, if one finished before the failure, or has none
  (variables None, val_score nan, test_score None). A search must rank every failed candidate below
  every clean one whatever its scores (check `failed` first): its training was cut short, and a
  candidate that diverges is not one to build on.

  Attributes:
    variables: the variables of the best clean validation epoch (None if no epoch finished cleanly).
    val_score: their validation score (metric: % error or RMSE; lower is better; nan if none).
    test_score: their test score, or None (no test split, or no clean epoch).
    best_epoch: the epoch (from 1) of `variables`; 0 if none.
    epochs_run: epochs trained (the failed one included).
    steps_run: training steps run in all (those of a failed epoch up to the check that caught it).
    history: one record per clean epoch.
    failed: None, or why the candidate failed (e.g. "loss became nan at epoch 3 step 17").
    objective: the objective it was trained and scored with (`from_logits` as Tune chose it).
    init_seconds, compile_seconds, train_seconds, eval_seconds: wall time of initialisation, of the
      compilations this call needed (0 when all executables were cached), of the training steps, and of
      the validation and test passes (of this call only, when it resumed a paused run).
    state: a `TuneState` to resume from when this call paused (`until` before `config.epochs`, and
      neither failed nor stopped early); None when training is over. A paused result has no test score.
  """
  variables: chex.ArrayTree | None
  val_score: float
  test_score: float | None
  best_epoch: int
  epochs_run: int
  history: list[EpochRecord]
  failed: str | None
  steps_run: int = 0
  objective: Objective | None = None
  init_seconds: float = 0.0
  compile_seconds: float = 0.0
  train_seconds: float = 0.0
  eval_seconds: float = 0.0
  state: TuneState | None = None
