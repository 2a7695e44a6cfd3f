"""What an evaluation run is: the sequence, the methods, fractions, instances, budgets and sizes.

Two presets (`hx.presets.EVALUATION_PRESETS`, each a `Preset`): "paper" and "quick"; they, and where
each of their numbers comes from, are in `hx.presets`.

`EvalConfig.make` applies a preset and the caller's overrides and checks everything up front, so that a
bad setting is one clear error before any work starts.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from typing import TYPE_CHECKING, Mapping, Sequence, Union

from hx.baselines.networks import element_type
from hx.baselines.train import BASELINES, refusal
from hx.compile.modules.config import ModuleConfig
from hx.data import SEQUENCES, TaskSizes, TaskStream
from hx.data import Sequence as TaskSequence
from hx.data import sequence as paper_sequence
from hx.data.sources import Sources
from hx.lang.types import GraphType, function_parts
from hx.presets import EVALUATION_PRESETS, GRAPH_SEQUENCES, Preset, TuneSetting, task_tune_config
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.space import SearchSpace, paper_space
from hx.synth.strategies import Strategy, TopDown, check_strategy

if TYPE_CHECKING:
  from hx.compile.tuning import TuneConfig
  from hx.data import ArrayTaskSpec, TaskSpec
  from hx.presets import ModuleSetting
  from hx.synth.schedules.base import Schedule

__all__ = ["Preset", "EvalConfig", "ConfigError", "METHODS", "BASELINES", "GRAPH_SEQUENCES",
           "default_methods", "method_label"]

METHODS = ("houdini",) + BASELINES
"""The methods an evaluation can run: HOUDINI (one per synthesis strategy, `houdini_topdown`,
`houdini_evolutionary`) and the baselines of `hx.baselines`."""

_LABELS = {"houdini_topdown": "HOUDINI (top-down)", "houdini_evolutionary": "HOUDINI (evolutionary)",
           "standalone": "standalone", "llt": "low-level transfer", "pnn": "progressive NN",
           "standalone_with_fold": "standalone_with_fold", "replay": "experience replay", "ewc": "EWC"}


def method_label(method: str) -> str:
  """How plots and tables name a method."""
  return _LABELS.get(method, method)


BudgetSetting = Union[int, float, "Schedule", None]
"""The value of one `hx.synth.Budget` field a run changes (`BUDGET_KEYS`): candidates, enumerated
programs, seconds, or a schedule (`hx.synth.schedules`)."""


class ConfigError(ValueError):
  """A setting that cannot work; the message is one line that names it."""


def _space(preset: Preset, sequence: str, graphs: bool) -> SearchSpace:
  """HOUDINI's search space on `sequence`: the authors' search (`hx.synth.paper_space`, with the graph
  sequences' combinators where `graphs`) where the preset's search for it (`Preset.search_for`) is
  "paper", else the default space in the order it names."""
  search = preset.search_for(sequence)
  if search == "paper":
    return paper_space(graphs=graphs)
  return SearchSpace(order=search)


def _has_graphs(specs: Sequence[TaskSpec | ArrayTaskSpec]) -> bool:
  """Whether a task of `specs` takes a graph (a graph sequence: no progressive networks)."""
  return any(isinstance(function_parts(s.type)[0][0], GraphType) for s in specs)


def default_methods(sequence: str, graphs: bool | None = None) -> tuple[str, ...]:
  """HOUDINI and the baselines the paper compares on `sequence`: no PNN on the graph sequences ("it is
  nontrivial to extend them to work with graphs"; `graphs`: whether a user's sequence is one, default
  whether `sequence` is GS1 or GS2), standalone_with_fold on SS only."""
  methods = ["houdini", "standalone", "llt"]
  if not (sequence in GRAPH_SEQUENCES if graphs is None else graphs):
    methods.append("pnn")
  if sequence == "ss":
    methods.append("standalone_with_fold")
  return tuple(methods)


@dataclasses.dataclass(frozen=True)
class EvalConfig:
  """An evaluation run. Build it with `EvalConfig.make`, which checks it.

  Attributes:
    sequence: "cs1", "cs2", "cs3", "ss", "gs1", "gs2" or "ls", or a user's sequence's name.
    methods: method ids in run order: "houdini_<name>" first, one per strategy of `strategies` (its
      `Strategy.name`), then baselines (`BASELINES`).
    fractions: training fractions, ascending, in (0, 1].
    seeds: the sequence's instantiations (each seeds its classes, data and training).
    preset: the preset's name.
    tasks: how many of the sequence's tasks to run (from the first).
    budget: HOUDINI's synthesis budget per task (and fraction), as the sequence's default.
    budgets: the budget of each task of the sequence, in order (a preset may set one per task).
    space: HOUDINI's search space (order, candidate filter, intermediate types, combinators).
    module_config: module sizes, shared by every method.
    sizes: split sizes.
    sources: where the data comes from.
    tune_configs: (task kind, TuneConfig) per kind of the sequence, shared by every method.
    stream: a user's sequence (`hx.data.TaskStream`), whose tasks `instance` gives; None for the paper's.
    strategies: HOUDINI's search strategies (`hx.synth.strategies`: `TopDown()`, `Evolutionary(...)`),
      one per method houdini_<name>, with their settings.
  """
  sequence: str
  methods: tuple[str, ...]
  fractions: tuple[float, ...]
  seeds: tuple[int, ...]
  preset: str
  tasks: int
  budget: Budget
  budgets: tuple[Budget, ...]
  space: SearchSpace
  module_config: ModuleConfig
  sizes: TaskSizes
  sources: Sources
  tune_configs: tuple[tuple[str, TuneConfig], ...]
  stream: TaskStream | None = None
  strategies: tuple[Strategy, ...] = (TopDown(),)

  def instance(self, seed: int) -> TaskSequence:
    """The sequence's instantiation `seed` (its tasks, built on first use for the paper's)."""
    if self.stream is not None:
      return self.stream.instance(seed)
    return paper_sequence(self.sequence, seed, self.sources, self.sizes)

  @property
  def houdini(self) -> tuple[str, ...]:
    return tuple(m for m in self.methods if m.startswith("houdini_"))

  def strategy(self, method: str) -> Strategy:
    """The strategy of HOUDINI's `method` (houdini_<name>)."""
    return next(s for s in self.strategies if f"houdini_{s.name}" == method)

  def synthesis(self, method: str) -> SynthesisConfig:
    """What HOUDINI's `method` ("houdini_<strategy>") decides with on every task of the sequence, as one
    value (`hx.synth.SynthesisConfig`: the strategy, the sequence's default budget, the space, the module
    sizes, every kind's training settings, the three best candidates kept), which `hx.synth.run_sequence`
    takes as given, with `budgets` for each task's own."""
    return SynthesisConfig(strategy=self.strategy(method), budget=self.budget, space=self.space,
                           module_config=self.module_config, tune_configs=self.tune_configs, keep=3)

  def tune_config(self, kind: str) -> TuneConfig:
    return dict(self.tune_configs)[kind]

  @classmethod
  def make(cls, sequence: str | TaskStream, *, preset: str = "quick",
           methods: Sequence[str | Strategy] | None = None, fractions: Sequence[float] | None = None,
           seeds: Sequence[int] | None = None, tasks: int | None = None,
           budget: Budget | Mapping[str, BudgetSetting] | None = None,
           training: Mapping[str, TuneSetting] | None = None,
           module_overrides: Mapping[str, ModuleSetting] | None = None,
           examples: tuple[int, int, int] | None = None, sources: Sources = Sources(),
           search: Mapping[str, str | bool | int | float | None] | None = None) -> EvalConfig:
    """A checked configuration: the preset's defaults with these overrides.

    Args:
      sequence: the task sequence: a paper's name, or a user's `hx.data.TaskStream`.
      preset: "quick" or "paper".
      methods: from `METHODS`, or HOUDINI's search strategies as objects with their settings
        (`hx.synth.TopDown()`, `hx.synth.Evolutionary(...)`; the binaries read their names,
        `hx.bin.spellings`), each the method houdini_<name> (`Strategy.name`); "houdini" stands for
        `TopDown()`. None: `default_methods(sequence)`, less the baselines that cannot take a task of the
        sequence; empty: refused. E.g. `["houdini", "standalone"]`, or `[TopDown(),
        Evolutionary(EvolutionConfig(...)), "standalone"]` for HOUDINI once per strategy. A baseline named
        here that cannot take one of the tasks run is refused (`hx.baselines.refusal`); so is a budget or
        search space a strategy does not take (a schedule with the evolutionary search, say:
        `hx.synth.strategies.Strategy.check`).
      fractions, seeds: None: the preset's (empty: refused).
      tasks: run the first `tasks` tasks only (default all).
      budget: HOUDINI's synthesis budget per task. None: the preset's candidate programs of each task
        (`Preset.candidates_for`), no time limit, every candidate trained to the end. A `hx.synth.Budget`:
        every task's budget, as given (its `candidates`, None meaning no limit, `seconds`, `schedule` and
        `enumerated`). A mapping of some of those fields (`BUDGET_KEYS`): changes to the preset's budget,
        the others kept; so `{"seconds": 600, "schedule": Halving()}` keeps the preset's candidates of
        each task and `{"candidates": 8}` sets every task's (None: no limit). The schedules
        (`hx.synth.schedules`): None or `ToEnd()` (every candidate to the end), or `Halving`,
        `CheapFirst`, `Estimate` (the top-down strategy only).
      training: changes to every task kind's training settings (`TRAINING_KEYS`, the keyword arguments of
        `hx.presets.task_tune_config`), for every method: "epochs" (default the preset's), "batch_size",
        "learning_rate", "patience" (`TuneConfig.patience`; the paper's, None: every epoch; N: stop a
        training after N epochs without a better validation score), "bias_from_targets" (ours, on by
        default: a regression's fresh output layer starts at the training targets' mean; False: at 0, as
        in the authors' code). E.g. `{"epochs": 2, "patience": 3}`; a value None leaves the setting as
        it is.
      module_overrides: ModuleConfig fields to change, e.g. {"mlp_hidden": 16}.
      examples: (train, val, test) examples of the recognize and list tasks (default the preset's).
      sources: data sources.
      search: `SearchSpace` fields of HOUDINI's search to change from the preset's (`SEARCH_KEYS`:
        "order", "authors_filter", "library_tasks", "probed_tasks", "reused_programs", "reuse_tolerance",
        "reuse_standard_errors"),
        e.g. {"order": "cost", "library_tasks": 8}.

    Raises:
      ConfigError: anything that cannot work, in one line naming the setting.
    """
    stream = sequence if isinstance(sequence, TaskStream) else None
    if preset not in EVALUATION_PRESETS:
      raise ConfigError(f"unknown preset {preset!r}; the presets are {', '.join(EVALUATION_PRESETS)}")
    p = EVALUATION_PRESETS[preset]
    if stream is not None:
      key = stream.name
      if key in SEQUENCES:
        raise ConfigError(f"a user's sequence may not be named {key!r}, as the paper's {key.upper()}: "
                          "choose another name")
      try:
        specs = stream.instance((seeds or p.seeds)[0]).tasks
      except ValueError as err:
        raise ConfigError(str(err)) from None
    else:
      key = str(sequence).lower()
      if key not in SEQUENCES:
        raise ConfigError(f"unknown sequence {sequence!r}; the sequences are {', '.join(SEQUENCES)}")
      specs = paper_sequence(key, 0).tasks
    graphs = key in GRAPH_SEQUENCES or _has_graphs(specs)
    for name, given in (("methods", methods), ("fractions", fractions)):
      if given is not None and not len(given):  # an empty list is a mistake, not a request for the default
        raise ConfigError(f"{name} is empty: give at least one, or None for the default")
    names, strategies = _strategies(methods)
    ordered = _methods(key, names, strategies, graphs, specs)
    fractions, seeds, tasks = _runs(p, key, fractions, seeds, tasks, len(specs))
    changes = _training(training)
    default, budgets = _budgets(p, key, budget, len(specs))
    space = _search_space(p, key, search, graphs)
    _strategies_take(strategies, budgets, space)
    module_config, sizes = _sizes(p, key, module_overrides, examples)
    ordered = _baselines_taking(ordered, specs[:tasks], module_config, named=methods is not None)
    _check_sources(sources)
    return cls(sequence=key, methods=ordered, fractions=fractions, seeds=seeds, preset=preset,
               tasks=tasks, budget=default, budgets=budgets, space=space, module_config=module_config,
               sizes=sizes, sources=sources, tune_configs=_tune_configs(p, specs, changes), stream=stream,
               strategies=strategies)


def _strategies(methods: Sequence[str | Strategy] | None) -> tuple[tuple[str, ...] | None,
                                                                 tuple[Strategy, ...]]:
  """`methods` as method names (None for the default) and HOUDINI's strategies, checked: "houdini" stands
  for `TopDown()`, what is no name must be a strategy object (and names "houdini"), each strategy
  name once (each is a method houdini_<name>); `(TopDown(),)` where HOUDINI does not run, as before
  strategies were given in `methods`."""
  if methods is None:
    return None, (TopDown(),)
  names: list[str] = []
  strategies: list[Strategy] = []
  for m in methods:
    if isinstance(m, str):
      if m == "houdini" and m not in names:
        strategies.append(TopDown())
      names.append(m)
      continue
    try:
      check_strategy(m, Budget(), SearchSpace())
    except (TypeError, ValueError) as err:
      raise ConfigError(f"methods: {err}") from None
    strategies.append(m)
    if "houdini" not in names:
      names.append("houdini")
  found = [s.name for s in strategies]
  if len(set(found)) != len(found):
    raise ConfigError(f"a strategy is named twice in {', '.join(found)}: each is the method houdini_<name>")
  return tuple(names), tuple(strategies) or (TopDown(),)


def _strategies_take(strategies: tuple[Strategy, ...], budgets: tuple[Budget, ...],
                     space: SearchSpace) -> None:
  """Each strategy's own refusal of a budget or the search space (`Strategy.check`), as a ConfigError."""
  for s in strategies:
    for b in budgets:
      try:
        s.check(b, space)
      except ValueError as err:
        raise ConfigError(str(err)) from None


def _methods(key: str, methods: tuple[str, ...] | None, strategies: tuple[Strategy, ...],
             graphs: bool, specs: Sequence[TaskSpec | ArrayTaskSpec]) -> tuple[str, ...]:
  """The methods in run order ("houdini_<strategy>" first, then the baselines), checked."""
  methods = methods if methods is not None else default_methods(key, graphs)
  for m in methods:
    if m not in METHODS:
      raise ConfigError(f"unknown method {m!r}; the methods are {', '.join(METHODS)}, or HOUDINI's "
                        "strategy objects (hx.synth.TopDown(), hx.synth.Evolutionary(...))")
  if len(set(methods)) != len(methods):
    raise ConfigError(f"a method is named twice in {', '.join(methods)}")
  if "pnn" in methods and graphs:
    k, spec = next(((k, s) for k, s in enumerate(specs) if _has_graphs([s])), (0, specs[0]))
    raise ConfigError(f"pnn is not defined for the graph sequence {key} (the paper does not compare "
                      f"progressive networks on graphs): task {k + 1}, {spec.name} : {spec.type}")
  if "standalone_with_fold" in methods:
    if key != "ss":
      raise ConfigError("standalone_with_fold is the SS sequence's baseline (the paper's appendix, "
                        f"'Summing Experiment'), not {key}'s")
    if "houdini" not in methods:
      raise ConfigError("standalone_with_fold trains HOUDINI's program from scratch: add houdini to the "
                        "methods")
  ordered = [f"houdini_{s.name}" for s in strategies if "houdini" in methods]
  return tuple(ordered + [m for m in BASELINES if m in methods])


def _baselines_taking(methods: tuple[str, ...], specs: Sequence[TaskSpec | ArrayTaskSpec],
                      module_config: ModuleConfig,
                      named: bool) -> tuple[str, ...]:
  """`methods` with each baseline checked against the tasks run (`specs`), before anything trains: one
  that cannot take a task is refused in one line naming it, the task and its type where the caller
  `named` the methods, else (the default methods) left out."""
  types = [s.type for s in specs]
  elements = [element_type(s.kind) for s in specs]
  kept = []
  for m in methods:
    refused = refusal(m, types, module_config, elements) if m in BASELINES else None
    if refused is None:
      kept.append(m)
    elif named:
      k, why = refused
      raise ConfigError(f"{m} cannot take task {k + 1}, {specs[k].name} : {specs[k].type}: {why}")
  return tuple(kept)


def _runs(p: Preset, key: str, fractions: Sequence[float] | None, seeds: Sequence[int] | None,
          tasks: int | None, n: int) -> tuple[tuple[float, ...], tuple[int, ...], int]:
  """The training fractions (ascending), instantiations and number of tasks, checked."""
  fractions = tuple(sorted({float(f) for f in (fractions if fractions is not None
                                                else p.default_fractions(key))}))
  bad = [f for f in fractions if not 0 < f <= 1]
  if bad:
    raise ConfigError(f"training fraction {bad[0]:g} is outside (0, 1]")
  seeds = tuple(seeds) if seeds is not None else p.seeds
  if not seeds or any(not isinstance(s, int) or s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
    raise ConfigError(f"seeds must be distinct non-negative integers, got {list(seeds)}")
  tasks = n if tasks is None else tasks
  if not 1 <= tasks <= n:
    raise ConfigError(f"--tasks must be in 1..{n} for {key}, got {tasks}")
  return fractions, seeds, tasks


BUDGET_KEYS = ("candidates", "enumerated", "seconds", "schedule")
"""The `hx.synth.Budget` fields a run may change from its preset's budget (`EvalConfig.make(budget=...)`)."""


def _budgets(p: Preset, key: str, budget: Budget | Mapping[str, BudgetSetting] | None,
             n: int) -> tuple[Budget, tuple[Budget, ...]]:
  """The sequence's default budget and each task's: the preset's candidates (`Preset.candidates_for`) with
  the caller's `budget` (every field of a `Budget`, the fields a mapping names), checked; candidates given
  are every task's."""
  if isinstance(budget, Budget):
    changes = {k: getattr(budget, k) for k in BUDGET_KEYS}
  else:
    changes = dict(budget or {})
    unknown = sorted(set(changes) - set(BUDGET_KEYS))
    if unknown:
      raise ConfigError(f"unknown budget setting(s) {', '.join(unknown)}; the settings are "
                        f"{', '.join(BUDGET_KEYS)}")
  try:
    default = dataclasses.replace(Budget(candidates=p.candidates_for(key)), **changes)
    budgets = tuple(default if "candidates" in changes
                    else dataclasses.replace(default, candidates=p.candidates_for(key, i))
                    for i in range(1, n + 1))
  except ValueError as err:  # Budget's message names the field
    raise ConfigError(str(err)) from None
  except TypeError as err:
    raise ConfigError(f"budget: {err}") from None
  return default, budgets


TRAINING_KEYS = ("epochs", "batch_size", "learning_rate", "patience", "bias_from_targets")
"""The training settings a run may change for every task kind (`EvalConfig.make(training=...)`): the
keyword arguments of `hx.presets.task_tune_config`."""


def _training(training: Mapping[str, TuneSetting] | None) -> dict[str, TuneSetting]:
  """The caller's changes to every kind's training settings (`TRAINING_KEYS`), checked: known settings,
  at least 1 epoch, a patience of at least 1 (the rest `TuneConfig` checks, `_tune_configs`)."""
  changes = dict(training or {})
  unknown = sorted(set(changes) - set(TRAINING_KEYS))
  if unknown:
    raise ConfigError(f"unknown training setting(s) {', '.join(unknown)}; the settings are "
                      f"{', '.join(TRAINING_KEYS)}")
  for name, v in changes.items():
    if v is None:
      continue
    if name == "bias_from_targets" and not isinstance(v, bool):
      raise ConfigError(f"training: bias_from_targets must be True or False, got {v!r}")
    if name != "bias_from_targets" and (isinstance(v, bool) or not isinstance(
        v, numbers.Real if name == "learning_rate" else numbers.Integral)):
      kind = "a number" if name == "learning_rate" else "an integer"
      raise ConfigError(f"training: {name} must be {kind}, got {v!r}")
    if name in ("epochs", "patience") and v < 1:
      raise ConfigError(f"{name} must be >= 1, got {v}")
  return changes


SEARCH_KEYS = ("order", "authors_filter", "library_tasks", "probed_tasks", "reused_programs",
               "reuse_tolerance", "reuse_standard_errors")
"""The `SearchSpace` fields a run may change from its preset's (`EvalConfig.make(search=...)`, hx-run's
--search)."""


def _search_space(p: Preset, key: str, search: Mapping[str, str | bool | int | float | None] | None,
                  graphs: bool) -> SearchSpace:
  """The preset's search space with the caller's changes (`SEARCH_KEYS`), checked."""
  space = _space(p, key, graphs)
  changes = dict(search or {})
  unknown = sorted(set(changes) - set(SEARCH_KEYS))
  if unknown:
    raise ConfigError(f"unknown search setting(s) {', '.join(unknown)}; the settings are "
                      f"{', '.join(SEARCH_KEYS)}")
  try:
    return dataclasses.replace(space, **changes)
  except (ValueError, TypeError) as err:
    raise ConfigError(f"search: {err}") from None


def _sizes(p: Preset, key: str, module_overrides: Mapping[str, ModuleSetting] | None,
           examples: tuple[int, int, int] | None) -> tuple[ModuleConfig, TaskSizes]:
  """The module sizes and split sizes with the caller's changes, checked."""
  try:
    module_config = dataclasses.replace(p.modules(key), **dict(module_overrides or {}))
  except (TypeError, ValueError) as err:
    raise ConfigError(f"module sizes: {err}") from None
  sizes = p.sizes
  if examples is not None:
    if len(examples) != 3 or min(examples) < 1:
      raise ConfigError(f"examples must be three positive counts (train, val, test), got {examples}")
    sizes = dataclasses.replace(sizes, binary=tuple(examples), lists=tuple(examples))
  return module_config, sizes


def _tune_configs(p: Preset, specs: Sequence[TaskSpec | ArrayTaskSpec],
                  changes: Mapping[str, TuneSetting]) -> tuple[tuple[str, TuneConfig], ...]:
  """(task kind, TuneConfig) for each kind of the sequence's tasks `specs`, as
  `hx.presets.task_tune_config` decides them under the preset `p` with the caller's `changes`
  (`TRAINING_KEYS`)."""
  try:
    return tuple((kind, task_tune_config(spec, p, **changes))
                 for kind, spec in sorted({s.kind: s for s in specs}.items()))
  except (TypeError, ValueError) as err:  # a user's task's own settings, or a change TuneConfig refuses
    raise ConfigError(str(err)) from None


def _check_sources(sources: Sources) -> None:
  """A data path that does not exist is refused now, not when its first task is built."""
  for flag in ("mnist", "smallnorb", "gtsrb"):
    v = getattr(sources, flag)
    if v is None or v == "tfds" or v.startswith("tfds:"):
      continue
    if not os.path.exists(v):
      raise ConfigError(f"--{flag}: {v} does not exist")
