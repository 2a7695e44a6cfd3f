"""What a synthesis decides with, as one value: `SynthesisConfig` (the search strategy, the `Budget` with
its schedule, the search space, the module sizes, the training settings of each task kind and how many
of the best candidates keep their variables).

    config = SynthesisConfig(budget=Budget(candidates=20), module_config=ModuleConfig(mlp_hidden=64),
                             tune_configs={"count_digit": TuneConfig(epochs=8, batch_size=32)})
    result = hx.synthesize(task, library, config, seed=0)
    run = hx.synth.run_sequence(sequence, "runs/cs1", config)

It is made once, where a run is configured (`hx.evaluation.EvalConfig.synthesis`, from a preset and the
caller's changes; or by hand, as above), and taken as given by `hx.synthesize`, `hx.synth.run_sequence`
and `hx.synth.synthesize.retrain_winner`, which decide none of it again. Its one default that depends on
the task is the training settings of a task whose kind it does not list (`SynthesisConfig.tune_config`):
`hx.presets.task_tune_config` of the task (the paper's settings of its kind, or a user's task's own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hx.compile.modules.config import ModuleConfig
from hx.compile.tune_inputs import TuneConfig
from hx.synth.schedules import Schedule, ToEnd
from hx.synth.space import SearchSpace
from hx.synth.strategies import Strategy, TopDown, check_strategy

if TYPE_CHECKING:
  from hx.data import ArrayTaskSpec, TaskSpec

__all__ = ["Budget", "SynthesisConfig"]


@dataclasses.dataclass(frozen=True)
class Budget:
  """How much a synthesis may do. None means no limit.

  Attributes:
    candidates: programs to train at most (the paper restricts the counting and long sequences to 20
      evaluated programs).
    enumerated: partial programs the top-down search may expand at most.
    seconds: wall time; no new candidate starts after it (the one training finishes; a parallel
      executor's batch, or a halving rung, that started finishes).
    schedule: how the candidates train (`hx.synth.schedules`, `training_schedule`): None (the default)
      or `ToEnd()`, which it stands for: every candidate to the end (the task's epochs, the paper's
      way); a `Halving`: successive halving; an `Estimate`: every candidate estimated, the best few
      trained to the end; a `CheapFirst`: every candidate probed, the cheap ones and the costly ones
      ahead of them trained to the end, or with its `eta` in halving rungs. The last three are ours, the
      top-down strategy only. A `ToEnd()` given is kept as None, so that a budget's settings (its JSON
      in a run's settings.json) are the same either way.
  """
  candidates: int | None = 20
  enumerated: int | None = None
  seconds: float | None = None
  schedule: Schedule | None = None

  def __post_init__(self):
    for name in ("candidates", "enumerated", "seconds"):
      v = getattr(self, name)
      if v is not None and v <= 0:
        raise ValueError(f"Budget.{name} must be positive or None, got {v}")
    if self.schedule is not None and not callable(getattr(self.schedule, "run", None)):
      raise ValueError(f"Budget.schedule must be a schedule of hx.synth.schedules (ToEnd, Halving, "
                       f"CheapFirst, Estimate) or None, got {self.schedule!r}")
    if self.schedule == ToEnd():
      object.__setattr__(self, "schedule", None)  # the default, written as before schedules were objects

  @property
  def training_schedule(self) -> Schedule:
    """The schedule the candidates train under: `schedule`, or `ToEnd()` for None."""
    return ToEnd() if self.schedule is None else self.schedule


@dataclasses.dataclass(frozen=True)
class SynthesisConfig:
  """Everything a synthesis decides with (module docstring), checked when made.

  Attributes:
    strategy: the search strategy, an object (`hx.synth.TopDown()`, the default, or
      `hx.synth.Evolutionary(EvolutionConfig(...))`); its `check` refuses the budget or space it does not
      take.
    budget: candidates to train, partial programs to expand, wall time, and the schedule (every candidate
      to the end by default; `Halving`, `CheapFirst`, `Estimate`: `hx.synth.schedules`).
    space: what programs may be built (intermediate types, repeat counts, size and fresh limits, order).
    module_config: module sizes (an `hx.ModuleConfig`). The default, `hx.ModuleConfig()`, is the paper's
      (appendix C): an MLP with one hidden layer of 1,024 units, batch norm and dropout 0.5; a CNN of 32
      and 64 channels, 5x5 convolutions and 2x2 max-pooling; an LSTM of 100 units. These are large for a
      small data set or a laptop: the quick preset's sizes (an MLP of 64, a CNN of 8 and 16 channels, an
      LSTM of 32) are `hx.presets.EVALUATION_PRESETS["quick"].module_config`.
    tune_configs: (task kind, `hx.compile.TuneConfig`) pairs, sorted by kind: the training settings of
      each kind of task (a mapping given is kept as its sorted pairs; a task without a spec is listed
      under its name); empty: each task's own (`tune_config`).
    keep: how many of the best candidates keep their trained variables (and are named as the paper's
      tables name their top 3), at least 1.

  Raises:
    TypeError: a strategy that is no strategy object (a name such as "topdown" is the binaries' spelling
      of one, read in `hx.bin.spellings`).
    ValueError: a budget or space the strategy does not take, or a `keep` below 1.
  """
  strategy: Strategy = TopDown()
  budget: Budget = Budget()
  space: SearchSpace = SearchSpace()
  module_config: ModuleConfig = ModuleConfig()
  tune_configs: tuple[tuple[str, TuneConfig], ...] = ()
  keep: int = 3

  def __post_init__(self):
    if isinstance(self.tune_configs, Mapping):
      object.__setattr__(self, "tune_configs", tuple(sorted(self.tune_configs.items())))
    check_strategy(self.strategy, self.budget, self.space)
    if self.keep < 1:
      raise ValueError(f"SynthesisConfig.keep must be >= 1, got {self.keep}")

  def tune_config(self, task: Any) -> TuneConfig:
    """The training settings of `task` (an `hx.Task`, or any value with a `name` and a `spec`):
    `spec_tune_config` of its spec. A task without a spec (a value with the attributes `hx.synthesize`
    reads, and no `spec`) is a kind of its own, listed in `tune_configs` under its name.

    Raises:
      ValueError: as `spec_tune_config`, or the task has no spec and `tune_configs` does not list its
        name.
    """
    spec = getattr(task, "spec", None)
    if spec is None:
      table = dict(self.tune_configs)
      if task.name not in table:
        raise ValueError(f"task {task.name} has no spec to take training settings from: give them in "
                         f"SynthesisConfig.tune_configs under its name, {{{task.name!r}: TuneConfig(...)}}")
      return table[task.name]
    return self.spec_tune_config(spec, task.name)

  def spec_tune_config(self, spec: TaskSpec | ArrayTaskSpec | None, name: str | None = None) -> TuneConfig:
    """The training settings of a task of spec `spec` (an `hx.data.TaskSpec` or `ArrayTaskSpec`; None
    for a task without one), named `name` in messages: those of its kind in `tune_configs`; where that
    is empty, `hx.presets.task_tune_config(spec)` (its kind's under the paper preset, or a user's task's
    own).

    Raises:
      ValueError: `tune_configs` lists other kinds only.
    """
    table = dict(self.tune_configs)
    kind = getattr(spec, "kind", None)
    if kind in table:
      return table[kind]
    if table or spec is None:
      raise ValueError(f"SynthesisConfig.tune_configs has no training settings for task "
                       f"{name or getattr(spec, 'name', spec)} (kind {kind}); it has {', '.join(table)}")
    from hx.presets import task_tune_config

    return task_tune_config(spec)
