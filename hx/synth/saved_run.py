"""A run directory loaded (`load_run`): its last library and each task's winning program over it, each
applied to new arrays by a `hx.synth.predict.Predictor`.

    run = hx.load_run("runs/squares")             # a run_sequence directory, or an evaluation's
    print(run)                                    # each task's winning program over the run's library
    y = run.predictor("count_top")(lists)

A run directory (`hx.synth.run_directory`) holds the records of every task, the library after each task
and the run's settings: `load_run` reads the last library saved, each task's winning program as the
library names its functions (every function of the program frozen in the library: `lib.nn_<seq>_<k>`;
read from the record by `hx.synth.frontier.Frontier.from_json`), and the module settings the run compiled
with. Its programs need nothing else: no task, no data.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from hx.lang import program as P
from hx.lang.types import Type, parse_type
from hx.synth.frontier import Frontier
from hx.synth.predict import DEFAULT_BATCH, Predictor, predictor

if TYPE_CHECKING:
  import os

  from hx.compile.modules import ModuleConfig
  from hx.synth.library import Library

__all__ = ["RunProgram", "SavedRun", "load_run"]


@dataclasses.dataclass(frozen=True)
class RunProgram:
  """One task's winning program in a saved run.

  Attributes:
    index: the task's place in the sequence (1-based).
    task: the task's name.
    type: the task's type.
    program: the winner as its library names its functions, each one frozen (`lib.nn_<seq>_<k>`).
    metric: the task's metric ("error", % of examples, or "rmse").
    validation, test: its recorded scores at the fraction the library was extended from.
    fraction: that fraction.
  """
  index: int
  task: str
  type: Type
  program: P.Program
  metric: str
  validation: float
  test: float | None
  fraction: float

  def __str__(self) -> str:
    test = "-" if self.test is None else f"{self.test:.4g}"
    return (f"{self.index:2d}. {self.task}: {self.program}  ({self.metric}: val {self.validation:.4g}, "
            f"test {test})")


@dataclasses.dataclass(frozen=True, eq=False)
class SavedRun:
  """A HOUDINI run directory loaded (`load_run`): its library and each task's winning program over it.

  Attributes:
    directory: the run directory (DIR/records, DIR/libraries, DIR/settings.json).
    sequence: the sequence's name.
    library: the library after the last task saved.
    programs: each finished task's winning program, in task order (a task whose search trained nothing
      has none).
    records: every record read (one per task and fraction), as JSON values.
    module_config: the module settings the run compiled its programs with.
  """
  directory: Path
  sequence: str
  library: Library
  programs: tuple[RunProgram, ...]
  records: tuple[dict, ...] = dataclasses.field(repr=False)
  module_config: ModuleConfig = dataclasses.field(repr=False)

  def program(self, task: str | int) -> RunProgram:
    """The winning program of `task`: its name, or its place in the sequence (1-based).

    Raises:
      KeyError: no finished task of that name or number (the message lists them).
    """
    for p in self.programs:
      if task in (p.task, p.index) and not isinstance(task, bool):
        return p
    known = ", ".join(f"{p.index} ({p.task})" for p in self.programs) or "none"
    raise KeyError(f"run {self.directory} has no program for task {task!r}; its tasks with one: {known}")

  def predictor(self, task: str | int, batch_size: int = DEFAULT_BATCH) -> Predictor:
    """The `Predictor` of `task`'s winning program (`program`)."""
    p = self.program(task)
    return predictor(p.program, self.library, module_config=self.module_config, batch_size=batch_size)

  def __str__(self) -> str:
    lines = [f"run {self.directory} ({self.sequence}): {len(self.library)} library functions"]
    return "\n".join(lines + [f"  {p}" for p in self.programs])


def load_run(directory: os.PathLike | str) -> SavedRun:
  """The HOUDINI run in `directory`, loaded: its last saved library, each finished task's winning program
  over it, its records and module settings (module docstring).

  Args:
    directory: a `run_sequence` directory (DIR/settings.json, DIR/records, DIR/libraries), or an
      evaluation's (`hx.evaluate`) holding exactly one HOUDINI run (DIR/houdini_<strategy>/seed_<s>);
      with several, name one of them.

  Raises:
    ValueError: no run there, or several (naming them), or no library saved yet.
    hx.synth.LibraryError / hx.synth.jsonfiles.JsonFileError: a library or record that cannot be read.
    hx.compile.UnregisteredModuleError: the library holds a user's module not registered in this process
      (`hx.compile.register_module` it first).
  """
  from hx.compile.modules.config import ModuleConfig
  from hx.synth.jsonfiles import from_jsonable, read_record, read_settings
  from hx.synth.library import Library
  from hx.synth.run_directory import SETTINGS_FILE

  root = _run_directory(Path(directory))
  settings, _ = read_settings(root / SETTINGS_FILE)
  config = from_jsonable(ModuleConfig, settings.get("module_config", {}),
                         f"{root / SETTINGS_FILE}: settings.module_config")
  libraries = sorted((root / "libraries").glob("after_*"))
  if not libraries:
    raise ValueError(f"run {root} has no library saved yet: it finishes its first task first")
  library = Library.load(libraries[-1])
  done = int(libraries[-1].name.split("_")[-1])
  records = [read_record(f) for f in sorted((root / "records").glob("*/fraction_*.json"))]
  programs = []
  for index in range(1, done + 1):
    mine = [r for r in records if r["task_index"] == index]
    if not mine:
      raise ValueError(f"run {root} saved a library after task {index} but holds no record of it")
    rec = max(mine, key=lambda r: r["fraction"])  # the library is extended from the largest fraction's
    entries = Frontier.from_json(rec).entries
    if not entries or entries[0].outcome.status != "trained":
      continue
    best = entries[0]
    programs.append(RunProgram(index, rec["task"], parse_type(rec["type"]), P.as_library(best.display),
                               rec["metric"], best.outcome.val_score, best.outcome.test_score,
                               float(rec["fraction"])))
  name = settings.get("sequence", records[0]["sequence"] if records else root.name)
  return SavedRun(root, name, library, tuple(programs), tuple(records), config)


def _run_directory(path: Path) -> Path:
  """`path` if it holds a HOUDINI run, else its one HOUDINI run (DIR/houdini_*/seed_*)."""
  if (path / "libraries").is_dir() or (path / "records").is_dir():
    return path
  runs = sorted(p for p in path.glob("houdini_*/seed_*") if (p / "records").is_dir())
  if len(runs) == 1:
    return runs[0]
  if not runs:
    raise ValueError(f"{path} holds no HOUDINI run (no records/ there, nor under houdini_*/seed_*/)")
  raise ValueError(f"{path} holds {len(runs)} HOUDINI runs; load one of them: "
                   f"{', '.join(str(r) for r in runs)}")

