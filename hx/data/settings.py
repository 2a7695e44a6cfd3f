"""Training settings per task kind, in one place: what the binaries use now and synthesis will use later.

    >>> from hx.data import training_settings
    >>> training_settings("count_digit")                 # the paper's: 20 epochs, Adam 1e-3, batches of 150
    >>> training_settings("shortest_path_mnist", "quick")  # ours: a short run for tests and laptops

Three presets (`PRESETS`):

  "paper"    the paper's text (appendix C, "Details of Experimental Setup") wherever it states a number:
             20 epochs for the list tasks, 1,000 for the regressions, 5 for the shortest-path tasks, and
             `TaskSizes.paper()` (12,000 training lists, 2,100 test examples; 70,000 3x3 + 1,000,000 4x4
             training grids, 10,000 5x5 test grids). The paper gives no optimiser, learning rate, batch
             size or epochs for the recognize and classify tasks: those come from the authors' code.
  "authors"  the authors' code (capergroup/houdini: `HOUDINI/Interpreter/Interpreter.py`,
             `HOUDINI/Eval/Task.py`, `CS_LS.py`, `GraphSeq.py`, `SummingSequence/EvaluatorSummingSeq.py`):
             Adam with learning rate 1e-3, batches of 150 (10 for the regressions), 30 epochs for the
             recognize, classify and list tasks, 1,000 for the regressions, 10 for the shortest-path
             tasks (GS2's street task ran 30), and `TaskSizes.authors()` (6,000 training lists).
  "quick"    ours, not the paper's: a few epochs on `TaskSizes.quick()`, for tests and laptop runs.

The random-graph tasks (`hx.data.GRAPH_FAMILIES`, ours) have no settings in the paper or the authors'
code: under "paper" and "authors" they train as those presets train the grid tasks (and say so in their
sources).

No preset stops early (`patience` None): the paper reports "the test error at the epoch where the
validation error was minimized", i.e. it selects the best validation epoch (Tune always does) but states
no patience, and the authors' code trains every epoch. Their code also scores the validation set every
1% of the training iterations: the "authors" preset does too (`val_every` 0.01,
`TuneConfig.val_every`); "paper" and "quick" score it at the end of every epoch, as the paper's words
say.

This module imports no JAX (the data layer must not); `TrainingSettings.tune_config` imports
hx.compile on use.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hx.data.tasks import GRAPH_FAMILIES, KINDS, PRESETS, TaskSizes

__all__ = ["TrainingSettings", "training_settings", "PRESETS"]

_PAPER = "paper, appendix C"
_AUTHORS = "authors' code"
_OURS = "hx 'quick' preset (ours)"
_GRAPHS = "hx's random-graph tasks (ours, not in the paper), trained as the grid tasks"


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

  def tune_config(self, **overrides: Any) -> Any:
    """A `hx.compile.TuneConfig` with these settings (and `overrides`, e.g. seed=1); imports JAX."""
    from hx.compile.tuning import TuneConfig

    fields = dict(learning_rate=self.learning_rate, batch_size=self.batch_size, epochs=self.epochs,
                  patience=self.patience, val_every=self.val_every)
    fields.update(overrides)
    return TuneConfig(**fields)


def _group(kind: str) -> str:
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
  group = _group(kind)
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
  epochs, epochs_source, batch, batch_source = _EPOCHS_AND_BATCH[preset][_group(base)]
  sizes = TaskSizes.preset(preset)
  sizes_source = {"paper": f"{_PAPER} (TaskSizes.paper())", "authors": f"{_AUTHORS} (TaskSizes.authors())",
                  "quick": f"{_OURS} (TaskSizes.quick())"}[preset]
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
               ("sizes", sizes_source), ("val_every", val_every_source)),
      val_every=val_every)
