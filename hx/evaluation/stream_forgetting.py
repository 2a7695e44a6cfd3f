"""Forgetting over a long stream's run (`hx.evaluation.stream_metrics`): each task's winner scored again
after the stream's last task.

HOUDINI (`rescore_winners`): each task's winning program, its fresh functions read as the library
functions they became (`nn_long_7` as `lib.nn_long_7`), compiled against the library saved after the
stream's last task and scored again on the task's test split. Library functions are frozen, so a
HOUDINI learner forgets nothing: the change is zero up to the rounding of another evaluation order, and
each function's version (a digest of its arrays) is the same in the final library as in the one saved
after its task. The standalone, low-level transfer and progressive baselines keep one network per task,
untouched by later tasks: nothing to re-score, their forgetting is zero by construction. Experience replay
and EWC share a trunk that later tasks train (`hx.baselines.continual`): the runner scores every task again
after the run's last one, with the final trunks and the task's own head, into `rescored.json`
(`hx.evaluation.records.read_rescored`), which `continual_forgetting` reads. A method's forgetting
(`Forgetting.mean_change`) is CTrL's: the mean over the tasks before the last of the re-scored test score
minus the recorded one (error points, or RMSE; above 0 forgot), error and RMSE tasks apart.

HOUDINI's re-scores need the libraries, which are not committed: `keep_rescores` keeps them in
`<method>/seed_<S>/rescored.json` (the continual learners' file and form, each task's "program" and
"unchanged" in place of "network" and "shares_trunk"), and `kept_rescores` reads them back where the
libraries are absent, the same `Forgetting`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hx.evaluation.records import RESCORED_FILE, read_rescored, record_path, write_json
from hx.evaluation.stream_metrics import _finite, _mean, _test

if TYPE_CHECKING:
  import os

  from hx.evaluation.config import EvalConfig

__all__ = ["Rescored", "Forgetting", "rescore_winners", "keep_rescores", "kept_rescores",
           "continual_forgetting"]


@dataclasses.dataclass(frozen=True)
class Rescored:
  """One task's winner scored again at the end of the stream.

  Attributes:
    index, task: the task.
    program: the winner as the final library runs it (every function `lib.*`); a continual baseline's
      network's description.
    recorded: its test score when its task was learned (the record's).
    rescored: its test score on the final library (HOUDINI) or with the final trunk and its own head
      (replay, EWC; a graph network, which shares nothing trained, not scored again: its recorded score).
    change: rescored - recorded.
    unchanged: every library function it uses has, in the final library, the version (digest of its
      arrays) it had in the library saved after its task; for a continual baseline, it shares no trunk.
    metric: "error" or "rmse"; None where not known.
  """
  index: int
  task: str
  program: str
  recorded: float
  rescored: float
  change: float
  unchanged: bool
  metric: str | None = None


@dataclasses.dataclass(frozen=True)
class Forgetting:
  """`rescore_winners`'s result: one `Rescored` per task with a trained winner, and the largest |change|
  (0.0 for none)."""
  method: str
  instance: int
  after: int
  rows: tuple[Rescored, ...]

  @property
  def largest_change(self) -> float:
    return max((abs(r.change) for r in self.rows), default=0.0)

  @property
  def all_unchanged(self) -> bool:
    return all(r.unchanged for r in self.rows)

  def mean_change(self, metric: str) -> float | None:
    """CTrL's forgetting on the `metric` ("error" or "rmse") tasks: the mean change of the tasks before
    task `after` (the last has nothing after it); None where there is none."""
    return _mean(r.change for r in self.rows if r.metric == metric and r.index < self.after)


def rescore_winners(config: EvalConfig, directory: os.PathLike | str, method: str | None = None,
                    instance: int | None = None) -> Forgetting:
  """Scores every recorded task's winner of `method` again with the library saved after the run's last
  recorded task (module docstring), on the task's test split, with its training settings' evaluation.

  Args:
    config: the run's `hx.EvalConfig` (its tasks, module sizes and training settings).
    directory: the run's directory.
    method: a HOUDINI method of the run (default the first).
    instance: the instantiation (default the run's first).

  Raises:
    ValueError: the run has no HOUDINI method, or no saved library.
    hx.synth.library.LibraryError: a saved library cannot be read.
  """
  from hx.compile.lower import compile_program
  from hx.compile.tuning import evaluate
  from hx.lang import program as P
  from hx.synth.frontier import FrontierEntry
  from hx.synth.library import Library

  method = method or (config.houdini[0] if config.houdini else None)
  if method is None:
    raise ValueError(f"the run {directory} has no HOUDINI method: nothing to re-score")
  instance = config.seeds[0] if instance is None else instance
  base = Path(directory) / method / f"seed_{instance}"
  saved = sorted(p for p in (base / "libraries").glob("after_*") if p.name[6:].isdigit())
  if not saved:
    raise ValueError(f"{base / 'libraries'} holds no saved library: the run has not finished a task")
  after = int(saved[-1].name[6:])
  final = Library.load(saved[-1])
  seq = config.instance(instance)
  largest = max(config.fractions)
  rows = []
  for index in range(1, after + 1):
    path = record_path(Path(directory), method, instance, index, largest)
    if path is None:
      continue
    rec = json.loads(path.read_text("utf-8"))
    recorded = _test(rec)
    if recorded is None:
      continue
    program = P.as_library(FrontierEntry.from_json(rec["ranked"][0]).display)
    used = P.library_names(program)
    compiled = compile_program(program, {}, config.module_config, final.specs())
    task = seq.build(index - 1)
    frozen = compiled.make_frozen(final.variables())
    score, _ = evaluate(compiled, {"params": (), "batch_stats": ()}, frozen, task.test, task.objective,
                        table=task.table, config=config.tune_config(task.spec.kind))
    own = base / "libraries" / f"after_{index:02d}"
    then = Library.load(own) if own.exists() else None
    unchanged = then is not None and all(then.versions().get(n) == final.versions()[n] for n in used)
    rows.append(Rescored(index, rec["task"], str(program), recorded, float(score), float(score) - recorded,
                         unchanged, rec["metric"]))
  return Forgetting(method, instance, after, tuple(rows))


def keep_rescores(directory: os.PathLike | str, forgetting: Forgetting, fraction: float) -> Path:
  """Keeps HOUDINI's re-scores (`rescore_winners`' `forgetting`, of the records at `fraction`) in
  `<method>/seed_<instance>/rescored.json` of the run in `directory`, for `kept_rescores`: {"method",
  "instance", "after", "fraction", "tasks": [{"index", "task", "metric", "program", "recorded",
  "rescored", "unchanged"}, ...]}; returns its path."""
  path = Path(directory) / forgetting.method / f"seed_{forgetting.instance}" / RESCORED_FILE
  write_json(path, {"method": forgetting.method, "instance": forgetting.instance, "after": forgetting.after,
                    "fraction": fraction,
                    "tasks": [{"index": r.index, "task": r.task, "metric": r.metric, "program": r.program,
                               "recorded": r.recorded, "rescored": r.rescored, "unchanged": r.unchanged}
                              for r in forgetting.rows]})
  return path


def kept_rescores(directory: os.PathLike | str, method: str, instance: int) -> Forgetting | None:
  """HOUDINI's re-scores as `keep_rescores` kept them, the `Forgetting` `rescore_winners` returned; None
  where none were kept.

  Raises:
    ValueError: the file is not readable or lacks a field (its path named).
  """
  got = read_rescored(directory, method, instance)
  if got is None:
    return None
  try:
    rows = tuple(Rescored(int(t["index"]), t["task"], t["program"], float(t["recorded"]),
                          float(t["rescored"]), float(t["rescored"]) - float(t["recorded"]),
                          bool(t["unchanged"]), t.get("metric")) for t in got["tasks"])
  except (KeyError, TypeError, ValueError) as err:
    path = Path(directory) / method / f"seed_{instance}" / RESCORED_FILE
    raise ValueError(f"{path}: not HOUDINI's re-scores ({err!r}): delete it and make the report again "
                     "where the run's libraries are") from None
  return Forgetting(method, instance, int(got["after"]), rows)


def continual_forgetting(directory: os.PathLike | str, method: str, instance: int) -> Forgetting | None:
  """A continual baseline's (`method`, "replay" or "ewc") re-scores after the run's last task, as the
  runner wrote them (`hx.evaluation.records.read_rescored`), or None where it has not written them. A
  task re-scored as None (a graph network: it shares nothing trained) counts its recorded score, changed
  by nothing; a task with no recorded score is left out.

  Raises:
    ValueError: the file is not readable or lacks a field (its path named).
  """
  got = read_rescored(directory, method, instance)
  if got is None:
    return None
  rows = []
  for t in got["tasks"]:
    if not _finite(t.get("recorded")):
      continue
    recorded = float(t["recorded"])
    rescored = float(t["rescored"]) if _finite(t.get("rescored")) else recorded
    rows.append(Rescored(int(t["index"]), t["task"], t.get("network") or "", recorded, rescored,
                         rescored - recorded, not t.get("shares_trunk", False), t.get("metric")))
  return Forgetting(method, instance, int(got["after"]), tuple(rows))


def _forgettings(forgetting: Forgetting | Sequence[Forgetting] | None) -> tuple[Forgetting, ...]:
  if forgetting is None:
    return ()
  return (forgetting,) if isinstance(forgetting, Forgetting) else tuple(forgetting)
