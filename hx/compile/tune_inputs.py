"""What `hx.compile.tuning.tune` is given: the program it trains (`Tunable`), the training settings
(`TuneConfig`) and the task's data (`TuneData`). The training loop they drive is described in
`hx.compile.tuning`'s module docstring.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, NamedTuple, Protocol

import jax

from hx.lang.values import Split

if TYPE_CHECKING:
  from collections.abc import Hashable

  import chex

  from hx.lang.values import Array, Batch

__all__ = ["Tunable", "TuneConfig", "TuneData"]


class Tunable(Protocol):
  """What `tune` needs of a compiled program (hx.compile.lower.CompiledProgram provides it)."""
  key: Hashable

  def init(self, rng: jax.Array) -> chex.ArrayTree: ...

  def apply(self, variables: chex.ArrayTree, frozen: chex.ArrayTree, x: Batch, *, train: bool,
            rng: jax.Array | None) -> Batch | tuple[Batch, chex.ArrayTree]: ...

  # Optional: `penalty(params, state, frozen, rng) -> scalar`, added to every training step's loss
  # (`hx.compile.executables.make_train_step`; its structure is part of `key`).


@dataclasses.dataclass(frozen=True)
class TuneConfig:
  """Training settings. The per-task values (epochs, batch size, learning rate) and where each comes
  from are in `hx.presets.training_settings`; these defaults are the authors' code's optimiser (Adam 1e-3,
  batches of 150) and the paper's 20 epochs of the list tasks.

  Attributes:
    learning_rate: Adam's step size.
    batch_size: examples per training step.
    epochs: passes over the training set at most.
    patience: stop after this many epochs without a better validation score; None: run all epochs.
    seed: seeds initialisation, shuffling and dropout.
    eval_images: most images (list elements, graph nodes: padded rows through the per-element networks)
      evaluated at once, to bound evaluation memory: a chunk holds max(1, eval_images // L) examples of
      L images each, and a split of n examples is cut into equal chunks of at most that many.
    fuse_eval: evaluate all chunks of a split in one call (`lax.map`); None: yes except on CPU.
    nan_check_every: the host looks at the device's non-finite-loss flag every this many training steps
      (and at the end of every epoch): a candidate whose loss turns NaN or infinite stops within this many
      steps. Each look is one scalar read that waits for the steps before it to finish (the host stops
      queueing steps ahead for that moment), so a look every step would serialise the loop; one every
      few dozen steps keeps the stall rare.
    pack_lists: for list and graph inputs, run the per-element networks of a map over the input
      (map_l over its elements, map_g over its nodes) on the real elements or nodes only
      (`hx.compile.lower`'s `apply(pack=...)`), in training and in evaluation. Before training, Tune
      finds the most real elements any batch of the run will hold (the epochs' permutations are known
      from the seed) and compiles the step for that many (`pack_capacity`); for a split it evaluates, the
      most any evaluation chunk holds (`eval_pack_capacity`; a run's validation and test splits, when
      shaped alike, share the larger, hence one executable); both rounded up to a sixteenth of the
      padded batch or chunk, so that runs and splits of similar fill share one executable. Same losses,
      gradients, batch statistics and scores up to rounding; lists of 2-5 padded to 5 save about a
      quarter of the CNN's work, validation lists of 6-8 padded to 8 an eighth, random graphs of 30-50
      nodes padded to 64 about a third. False: every element, padding included (as before).
    bias_from_targets: for an "mse" objective with one output per example (not per list element or
      graph node) and a program whose output is a fresh module's linear output layer
      (`CompiledProgram.output_slot`: `nn_1`, `compose(nn_a, map_l(...))`), that layer's bias starts at
      the mean of the training targets instead of 0 (`initial_variables`). Ours, not the paper's (which
      says nothing of initialisation) nor the authors' (PyTorch's `nn.Linear` bias starts near 0): Adam
      moves a parameter about one learning rate per step, so a bias starting at 0 for targets such as
      regress_mnist's (cost, initial distance) pairs (mean about (3.8, 56)) or sum_digits' sums spends
      thousands of steps walking to their scale (`benchmarks/regressor_training.py`, RESULTS.md).
      False: every bias starts at 0, as the module templates initialise them.
    val_every: also score the validation split every this share of the whole run's training steps
      (`epochs` x steps per epoch, rounded to a whole number of steps, at least 1), counted from the
      run's start whatever pauses it makes, besides at the end of every epoch; the best parameters are
      kept wherever they were scored (`best_epoch` is then the epoch in progress). 0.01 is the authors'
      code's schedule, which scores validation every 1% of the training iterations; a training whose
      validation score jumps within an epoch (GS2's learned relaxation: benchmarks/RESULTS.md) then keeps
      its best point instead of the epoch's end. Each score is one validation pass. None: at the end of
      every epoch only (the paper's "epoch where the validation error was minimized").
    min_steps: a run on n training examples takes at least this many optimiser steps: `for_examples(n)`
      raises `epochs` to ceil(min_steps / steps per epoch) where it is fewer (steps per epoch:
      ceil(n / batch_size)). Ours (the quick preset's): on a small training fraction a few epochs of one
      step each leave a network's score to the luck of its initialisation, and a comparison of methods
      with it. 0: `epochs` as given (the paper's). Callers that size a run for a task apply it
      (`hx.synth.task_context`, the baselines, `hx.bin.train`); `tune` itself runs `epochs`.
  """
  learning_rate: float = 1e-3
  batch_size: int = 150
  epochs: int = 20
  patience: int | None = None
  seed: int = 0
  eval_images: int = 8192
  fuse_eval: bool | None = None
  nan_check_every: int = 50
  pack_lists: bool = True
  bias_from_targets: bool = True
  val_every: float | None = None
  min_steps: int = 0

  def __post_init__(self):
    for name in ("batch_size", "eval_images", "nan_check_every"):
      if getattr(self, name) < 1:
        raise ValueError(f"TuneConfig.{name} must be >= 1, got {getattr(self, name)}")
    if self.min_steps < 0:
      raise ValueError(f"TuneConfig.min_steps must be >= 0, got {self.min_steps}")
    if self.epochs < 0:
      raise ValueError(f"TuneConfig.epochs must be >= 0, got {self.epochs}")
    if self.learning_rate < 0:
      raise ValueError(f"TuneConfig.learning_rate must be >= 0, got {self.learning_rate}")
    if self.patience is not None and self.patience < 1:
      raise ValueError(f"patience must be >= 1 or None, got {self.patience}")
    if self.val_every is not None and not 0 < self.val_every <= 1:
      raise ValueError(f"TuneConfig.val_every must be in (0, 1] (a share of the run's steps) or None, got "
                       f"{self.val_every}")

  def steps_per_epoch(self, n: int) -> int:
    """Optimiser steps in an epoch of a training split of `n` examples: ceil(n / batch_size), at least 1
    (the last batch filled up, see `hx.compile.tuning`'s module docstring)."""
    return max(1, math.ceil(n / self.batch_size))

  def for_examples(self, n: int) -> TuneConfig:
    """These settings for a training split of `n` examples: `epochs` raised to meet `min_steps`."""
    steps = self.steps_per_epoch(n)
    epochs = max(self.epochs, math.ceil(self.min_steps / steps))
    return self if epochs == self.epochs else dataclasses.replace(self, epochs=epochs)


class TuneData(NamedTuple):
  """A task's data as Tune consumes it (see `hx.compile.values`); a pytree.

  Attributes:
    train, val: Splits; inputs hold int32 indices into `table` (or the values themselves if `table` is
      None).
    test: optional Split, scored once at the end.
    table: `(num_images, *image_shape)` images, or None when the inputs are the values.
  """
  train: Split
  val: Split
  test: Split | None = None
  table: Array | None = None

  def on_device(self) -> TuneData:
    """The same data as device arrays; do this once per task so candidates do not copy it again."""
    return jax.device_put(self)
