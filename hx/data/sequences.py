"""The paper's seven task sequences (its figure "Tasks and task sequences"), instantiated from a seed.

    CS1  recognize_digit(d1), recognize_digit(d2), count_digit(d1), count_digit(d2)
    CS2  recognize_digit(d1), count_digit(d1), count_digit(d2), recognize_digit(d2)
    CS3  recognize_digit(d), count_digit(d), count_toy(t), recognize_toy(t)
    SS   classify_digit, sum_digits
    GS1  regress_speed, shortest_path_street
    GS2  regress_mnist, shortest_path_mnist, shortest_path_street
    LS   count_digit(d1), count_toy(t1), recognize_toy(t2), recognize_digit(d2), count_toy(t3),
         count_digit(d2), count_toy(t2), recognize_digit(d1), count_digit(d3)

The paper averages five instantiations of each sequence with random digit classes d and toy classes t.
Seeds 0-4 give the authors' five instantiations (`AUTHORS_CLASSES`, from their public code,
capergroup/houdini, `HOUDINI/Eval/CS_LS.py`): for CS1 and CS2 the digit pairs (0,1), (3,4), (5,7), (2,9),
(6,8); for CS3 the (digit, toy) pairs (0,1), (3,2), (5,3), (2,0), (9,4); for LS the nine classes
(7,4,0,9,2,9,0,7,2), (1,0,1,5,4,5,1,1,8), (9,1,2,1,3,1,2,9,3), (6,2,3,8,1,8,3,6,5), (4,3,4,7,0,7,4,4,0).
Other seeds draw at random: distinct digits within a sequence, distinct toys too.

LS repeats classes on purpose (the paper: "randomly generated, and then slightly amended in order to
evaluate all lifelong learning concepts"): in every one of the authors' instantiations task 6 counts the
digit task 4 recognized, task 7 counts the toy task 3 recognized, and task 8 recognizes the digit task 1
counted, so the template above names those classes twice and every seed keeps the pattern. Tasks 2, 5
and 7 count toys, as the paper's definition of LS and the authors' code have it (the paper's LS program
tables label them count_digit; `hx.lang.paper.PaperProgram.task` follows the definition).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np

from hx.data.sources import Sources
from hx.data.task import Task
from hx.data.tasks import TaskSizes, TaskSpec, build_task

if TYPE_CHECKING:
  from hx.data.task import ArrayTaskSpec

__all__ = ["SEQUENCES", "AUTHORS_DIGIT_PAIRS", "AUTHORS_CLASSES", "PAPER_LIBRARY_SEEDS", "Sequence",
           "TaskStream", "sequence", "check_library_seed"]

SEQUENCES: dict[str, tuple[str, ...]] = {
    "cs1": ("recognize_digit(d1)", "recognize_digit(d2)", "count_digit(d1)", "count_digit(d2)"),
    "cs2": ("recognize_digit(d1)", "count_digit(d1)", "count_digit(d2)", "recognize_digit(d2)"),
    "cs3": ("recognize_digit(d)", "count_digit(d)", "count_toy(t)", "recognize_toy(t)"),
    "ss": ("classify_digit", "sum_digits"),
    "gs1": ("regress_speed", "shortest_path_street"),
    "gs2": ("regress_mnist", "shortest_path_mnist", "shortest_path_street"),
    "ls": ("count_digit(d1)", "count_toy(t1)", "recognize_toy(t2)", "recognize_digit(d2)", "count_toy(t3)",
           "count_digit(d2)", "count_toy(t2)", "recognize_digit(d1)", "count_digit(d3)"),
}
"""Each sequence's tasks, with the paper's class variables (d, d1, ... for digits; t, t1, ... for toys)."""

AUTHORS_DIGIT_PAIRS = ((0, 1), (3, 4), (5, 7), (2, 9), (6, 8))

AUTHORS_CLASSES: dict[str, tuple[dict[str, int], ...]] = {
    "cs1": tuple({"d1": a, "d2": b} for a, b in AUTHORS_DIGIT_PAIRS),
    "cs2": tuple({"d1": a, "d2": b} for a, b in AUTHORS_DIGIT_PAIRS),
    "cs3": tuple({"d": d, "t": t} for d, t in ((0, 1), (3, 2), (5, 3), (2, 0), (9, 4))),
    "ls": tuple({"d1": c[0], "t1": c[1], "t2": c[2], "d2": c[3], "t3": c[4], "d3": c[8]}
                for c in ((7, 4, 0, 9, 2, 9, 0, 7, 2), (1, 0, 1, 5, 4, 5, 1, 1, 8),
                          (9, 1, 2, 1, 3, 1, 2, 9, 3), (6, 2, 3, 8, 1, 8, 3, 6, 5),
                          (4, 3, 4, 7, 0, 7, 4, 4, 0))),
}
"""The authors' five instantiations (seeds 0-4) of the sequences they fixed, as class variable values
(module docstring); LS's nine classes are written in task order there and map onto its six variables."""

PAPER_LIBRARY_SEEDS: dict[str, str] = {
    "cs1": "cs1", "cs2": "cs2", "cs3": "cs3", "ss": "ss", "gs1": "gs1", "gs2": "gs2", "ls": "ls"}
"""Each paper sequence's `Sequence.library_seed`: its own name. A candidate's training seed hashes the
names of the library functions it calls (`hx.synth.jobs.job_seed`), `nn_<sequence>_<k>`; before the field
existed the sequence's name stood there, and the committed records under benchmarks/reproduction were
made so. These values keep those seeds, and so those records' results."""


def check_library_seed(value: object, where: str) -> int | str:
  """`value` if it can be a `Sequence.library_seed`: an integer >= 0, or lower case letters, digits and _.

  Raises:
    ValueError: anything else, naming `where` (the sequence) and the value.
  """
  if isinstance(value, bool) or not (isinstance(value, int) and value >= 0 or isinstance(value, str)
                                     and re.fullmatch(r"[a-z0-9_]+", value)):
    raise ValueError(f"{where}: library_seed must be an integer >= 0 or lower case letters, digits and _, "
                     f"got {value!r}")
  return value


@dataclasses.dataclass(frozen=True)
class Sequence:
  """A task sequence instantiated for a seed: a list of tasks you can print, and build one at a time.

  The paper's sequences (`sequence`) build their tasks from data sets on first use; a user's
  (`Sequence.of`) holds its tasks already built, from the user's arrays or any `hx.data.Task`.

  Attributes:
    name: "cs1", ..., "ls", or a user's name (an identifier: library functions are named after it).
    seed: the instantiation's seed (it also seeds the tasks' data and every training).
    classes: each class variable's value, e.g. {"d1": 0, "d2": 1} (none for a user's sequence).
    tasks: the task specs, in order (each a `TaskSpec`; for a user's tasks, their `spec`).
    sources, sizes: where the paper's tasks' data comes from and how big their splits are.
    built: a user's sequence's tasks, in order; None for the paper's (built by `build_task`).
    library_seed: what the sequence's library functions stand for in the training seed of a candidate
      that calls them (`hx.synth.space.with_library_seed`): `nn_<library_seed>_<k>` in place of their
      names `nn_<name>_<k>`, so that a sequence's results do not depend on its name. 0 for a user's
      sequence by default (give another to vary those trainings, as the instantiation's seed varies all
      of them); the paper's sequences' own names (`PAPER_LIBRARY_SEEDS`), with which their committed
      records were made.
  """
  name: str
  seed: int
  classes: tuple[tuple[str, int], ...]
  tasks: tuple[TaskSpec | ArrayTaskSpec, ...]
  sources: Sources = Sources()
  sizes: TaskSizes = TaskSizes()
  built: tuple[Task, ...] | None = dataclasses.field(default=None, repr=False, compare=False)
  library_seed: int | str = 0

  def __post_init__(self):
    check_library_seed(self.library_seed, f"sequence {self.name}")

  @classmethod
  def of(cls, name: str, tasks: Iterable[Task], seed: int = 0, library_seed: int | str = 0) -> Sequence:
    """A sequence of the user's tasks (e.g. `hx.Task.from_arrays`'s), in order, for instantiation `seed`;
    `library_seed` as the attribute (its name never seeds anything).

    Raises:
      ValueError: no task, a name that is not an identifier, a value that is not a task, two tasks of
        one name (records and training settings are keyed by it), or a bad `library_seed`.
    """
    tasks = tuple(tasks)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(name)):
      raise ValueError(f"a sequence's name must be lower case letters, digits and _ (library functions are "
                       f"named nn_<sequence>_<k>), got {name!r}")
    if not tasks:
      raise ValueError(f"sequence {name}: no task")
    for i, t in enumerate(tasks, 1):
      if not isinstance(t, Task):
        raise ValueError(f"sequence {name}: task {i} is a {type(t).__name__}, not an hx.Task")
      if t.fraction != 1.0:
        raise ValueError(f"sequence {name}: task {i} ({t.name}) is at fraction {t.fraction:g}; give the "
                         "full tasks (runs take the fractions)")
    # A user's task is keyed by its name (records, training settings); the paper's kinds repeat freely.
    kinds = [t.spec.kind for t in tasks]
    own = [k for t, k in zip(tasks, kinds) if not isinstance(t.spec, TaskSpec)]
    twice = sorted({k for k in own if kinds.count(k) > 1})
    if twice:
      raise ValueError(f"sequence {name}: two tasks are named {twice[0]!r}; give each task its own name")
    return cls(name, seed, (), tuple(t.spec for t in tasks), built=tasks, library_seed=library_seed)

  def __len__(self) -> int:
    return len(self.tasks)

  def build(self, i: int) -> Task:
    """Task i (0-based) with its data (built on first use, then cached)."""
    if self.built is not None:
      return self.built[i]
    return build_task(self.tasks[i], self.sources, self.sizes, self.seed)

  def __str__(self) -> str:
    classes = ", ".join(f"{k}={v}" for k, v in self.classes)
    lines = [f"{self.name.upper()} (seed {self.seed}{'; ' + classes if classes else ''})"]
    first: dict[tuple[str, int | None], int] = {}
    for i, t in enumerate(self.tasks, 1):
      dataset = "toy" if t.kind.endswith("_toy") else "digit"
      again = first.setdefault((dataset, t.cls), i) if t.cls is not None else i
      note = f"  (the {dataset} of task {again})" if again != i else ""
      lines.append(f"  Task {i}: {t}{note}")
    kinds = {t.kind for t in self.tasks}
    if self.sources.smallnorb is None and kinds & {"count_toy", "recognize_toy"}:
      lines.append("  toys: smallnorb-synthetic (a rendered stand-in, not smallNORB)")
    if self.sources.gtsrb is None and kinds & {"regress_speed", "shortest_path_street"}:
      lines.append("  signs: gtsrb-synthetic (a rendered stand-in, not GTSRB)")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True, eq=False)
class TaskStream:
  """A user's task sequence for every instantiation: `instance(seed)` is its `Sequence` for a seed.

  Attributes:
    name: the sequence's name (as `Sequence.of`).
    tasks: the tasks (the same for every seed; the seed then varies the trainings only), or a function of
      the seed giving them (e.g. drawing classes or examples with it).
    library_seed: every instance's `Sequence.library_seed` (default 0): the sequence's results do not
      depend on its name.
  """
  name: str
  tasks: tuple[Task, ...] | Callable[[int], Iterable[Task]]
  library_seed: int | str = 0

  def __post_init__(self):
    check_library_seed(self.library_seed, f"sequence {self.name}")
    # Each seed's instance is built once: a function of the seed may draw or load its data, and a run
    # asks for an instance several times (its configuration, settings file and each method).
    object.__setattr__(self, "_instances", {})
    if not callable(self.tasks):
      object.__setattr__(self, "tasks", tuple(self.tasks))
      self.instance(0)  # checked now, not at the first run

  def instance(self, seed: int) -> Sequence:
    """The sequence for instantiation `seed` (built on first use, then kept)."""
    if seed not in self._instances:
      tasks = self.tasks(seed) if callable(self.tasks) else self.tasks
      self._instances[seed] = Sequence.of(self.name, tasks, seed, self.library_seed)
    return self._instances[seed]

  def __len__(self) -> int:
    return len(self.instance(0))

  def __repr__(self) -> str:
    return f"TaskStream({self.name}: {', '.join(str(t) for t in self.instance(0).tasks)})"


def _variables(names: tuple[str, ...], prefix: str) -> list[str]:
  found = []
  for n in names:
    for v in re.findall(r"\((" + prefix + r"\d*)\)", n):
      if v not in found:
        found.append(v)
  return found


def sequence(name: str, seed: int = 0, sources: Sources = Sources(),
             sizes: TaskSizes = TaskSizes()) -> Sequence:
  """The task sequence `name` ("cs1", "cs2", "cs3", "ss", "gs1", "gs2", "ls") instantiated for `seed`."""
  key = name.lower()
  if key not in SEQUENCES:
    raise KeyError(f"unknown task sequence {name!r}; the sequences are {', '.join(SEQUENCES)}")
  templates = SEQUENCES[key]
  rng = np.random.default_rng([seed, sum(map(ord, key))])
  digit_vars, toy_vars = _variables(templates, "d"), _variables(templates, "t")
  if key in AUTHORS_CLASSES and 0 <= seed < len(AUTHORS_CLASSES[key]):
    fixed = AUTHORS_CLASSES[key][seed]
    classes = {v: fixed[v] for v in digit_vars + toy_vars}
  else:
    digit_values = [int(v) for v in rng.choice(10, size=len(digit_vars), replace=False)]
    toy_values = [int(v) for v in rng.choice(5, size=len(toy_vars), replace=False)]
    classes = dict(zip(digit_vars, digit_values)) | dict(zip(toy_vars, toy_values))
  specs = []
  for template in templates:
    m = re.fullmatch(r"([a-z_]+)(?:\(([a-z]\d*)\))?", template)
    specs.append(TaskSpec(m.group(1), classes[m.group(2)] if m.group(2) else None))
  return Sequence(key, seed, tuple(classes.items()), tuple(specs), sources, sizes,
                  library_seed=PAPER_LIBRARY_SEEDS[key])
