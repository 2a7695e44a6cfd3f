"""Metrics of a long stream's run (`hx.data.long_stream`), after CTrL's, from the run's records and directory.

    rows = task_rows(load_records("runs/long"))              # per method and task: score, transfer, cost
    growth = library_growth("runs/long")                     # HOUDINI's library after each task
    forgetting = rescore_winners(config, "runs/long")        # every winner again, on the final library
    write_stream_report(config, "runs/long", plan)           # plots/stream_*.png and stream.md

What is measured, per method and task (at the run's largest training fraction, the one HOUDINI's
library grows from; one instantiation, the run's first unless named):

- the test score (classification error in %, or RMSE) and the forward transfer: the score over the
  standalone network's on the same task (below 1: better than the network trained for the task alone;
  `hx.evaluation.report`'s ratio);
- the cost: the wall seconds of the call that wrote the record, the work seconds
  (`hx.evaluation.records.work_seconds`), and for HOUDINI the candidates its search considered (every
  ranked one: trained, failed or equivalent) and those it trained;
- the memory after the task: HOUDINI's library (functions, parameters, bytes of its saved arrays, from
  `libraries/after_TT/library.json`); a baseline's networks so far (one per task; bytes of their saved
  variables, `networks/after_TT/network.json`, else 4 bytes a parameter); experience replay's and EWC's
  trunks, heads and what they keep per task (memories, Fishers and anchors; their records'
  "continual_memory").

Forgetting (`rescore_winners`): each task's winning program, its fresh functions read as the library
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

CTrL's summary figures (Veniat, Denoyer and Ranzato, ICLR 2021), per method (`summary`): the average
final score over the tasks (<A>; here error and RMSE apart, as they do not average together), the
transfer on the repeated tasks (CTrL's S^-, S^in, S^out streams measure it on their last task, a repeat
of the first; here every repeat of `hx.data.streams.RELATIONS`, averaged per relation: against the
standalone network, and against the method's own score on the task repeated), the forgetting (where a
run has experience replay or EWC, a column of the summary; HOUDINI's re-scores have their own section),
and the memory at the end with its growth per task (<M>).
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path
from typing import Any, Iterable, Sequence

from hx.atomic import write_atomically, write_text
from hx.baselines.continual import CONTINUAL
from hx.evaluation.config import method_label
from hx.evaluation.records import load_records, read_rescored, record_path, work_seconds

__all__ = ["TaskRow", "LibraryPoint", "MemoryPoint", "Rescored", "Forgetting", "MethodSummary", "Reuse",
           "REPEATS", "reuse_on_repeats", "Growth", "growth_by_relation", "repeats_growth", "task_rows",
           "process_memory_after",
           "library_growth", "network_growth", "memory_growth", "rescore_winners", "continual_forgetting",
           "KEEPS_NETWORKS", "interval", "summary", "plot_stream",
           "stream_section", "write_stream_report"]


def _finite(x: Any) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _test(rec: dict) -> float | None:
  best = rec["ranked"][0] if rec.get("ranked") else None
  if best is None or best.get("status") != "trained" or not _finite(best.get("test")):
    return None
  return float(best["test"])


@dataclasses.dataclass(frozen=True)
class TaskRow:
  """One method on one task.

  Attributes:
    index: the task's place in the stream, from 1.
    task: its name.
    method: the method's id ("houdini_topdown", "standalone", ...).
    metric: "error" (%) or "rmse".
    test: the test score; None where nothing trained.
    transfer: test over the standalone network's test on the task; None without both.
    wall_seconds: wall time of the call that wrote the record.
    work_seconds: compiling, training and scoring summed over calls and workers (`work_seconds`).
    candidates: HOUDINI's candidates considered (ranked); 1 for a baseline (its network).
    trained: candidates trained (HOUDINI's record's `candidates_trained`); 1 for a baseline.
    parameters: a baseline's trained parameters; None for HOUDINI (its library's are in `library_growth`).
    program: the winning program (HOUDINI's named form) or the network's description.
    same_as: a baseline whose record is another's (LLT on a first task: "standalone"); else None.
    rss_bytes: the resident memory of the process that wrote the record, once it was done
      (`hx.process_memory`); None in records written before it was recorded.
    search_seconds: HOUDINI's search (the record's "search": the prior's choice of library and the
      enumeration, no training); None for a baseline.
  """
  index: int
  task: str
  method: str
  metric: str
  test: float | None
  transfer: float | None
  wall_seconds: float
  work_seconds: float
  candidates: int
  trained: int
  parameters: int | None
  program: str | None
  same_as: str | None = None
  rss_bytes: int | None = None
  search_seconds: float | None = None


def _largest(records: Sequence[dict]) -> float:
  return max(r["fraction"] for r in records)


def _instance(records: Sequence[dict], instance: int | None) -> int:
  return min(r["instance"] for r in records) if instance is None else instance


def task_rows(records: Sequence[dict], instance: int | None = None) -> list[TaskRow]:
  """Every method's row per task (see `TaskRow`), at the largest fraction, for `instance` (default the
  smallest recorded), sorted by task and method.

  Raises:
    ValueError: no record.
  """
  if not records:
    raise ValueError("no record: nothing to measure")
  largest, instance = _largest(records), _instance(records, instance)
  mine = [r for r in records if r["fraction"] == largest and r["instance"] == instance]
  alone = {r["task_index"]: _test(r) for r in mine if r["method"] == "standalone"}
  rows = []
  for r in sorted(mine, key=lambda r: (r["task_index"], _method_rank(r["method"]))):
    test = _test(r)
    base = alone.get(r["task_index"])
    houdini = r["method"].startswith("houdini_")
    best = r["ranked"][0] if r.get("ranked") else {}
    rows.append(TaskRow(
        index=r["task_index"], task=r["task"], method=r["method"], metric=r["metric"], test=test,
        transfer=test / base if test is not None and base is not None and base > 0 else None,
        wall_seconds=float(r["seconds"]["wall"]), work_seconds=work_seconds(r),
        candidates=len(r.get("ranked", [])) if houdini else 1,
        trained=int(r.get("candidates_trained", 0)) if houdini else 1,
        parameters=None if houdini else int(r.get("parameters", 0)),
        program=best.get("named") or best.get("program"), same_as=r.get("same_as"),
        rss_bytes=(r.get("process_memory") or {}).get("rss_bytes"),
        search_seconds=float(r["seconds"]["search"]) if houdini and "search" in r["seconds"] else None))
  return rows


def _method_rank(method: str) -> tuple[int, str]:
  rank = {"houdini_topdown": 0, "houdini_evolutionary": 1, "standalone": 2, "llt": 3, "pnn": 4, "replay": 5,
          "ewc": 6}
  return rank.get(method, 9), method


# ---------------------------------------------------------------------------------------------------
# Memory.

@dataclasses.dataclass(frozen=True)
class LibraryPoint:
  """HOUDINI's library after task `index`: its functions, their parameters, and the bytes of their saved
  arrays (`library.json`'s "bytes", the msgpack files)."""
  index: int
  functions: int
  parameters: int
  bytes: int


@dataclasses.dataclass(frozen=True)
class MemoryPoint:
  """What a method keeps after task `index`: `parameters` and `bytes` in all (every network or library
  function it holds then)."""
  index: int
  method: str
  parameters: int
  bytes: int


def _parameters(structure: Any) -> int:
  """The scalars in a library entry's "structure" (nested containers of {"array": {dtype, shape}})."""
  if isinstance(structure, dict):
    if set(structure) == {"array"} and isinstance(structure["array"], dict):
      return math.prod(structure["array"]["shape"])
    return sum(_parameters(v) for v in structure.values())
  if isinstance(structure, list):
    return sum(_parameters(v) for v in structure)
  return 0


def library_growth(directory: Any, method: str = "houdini_topdown", instance: int = 0) -> list[LibraryPoint]:
  """The library after each task whose library the run saved (`<method>/seed_<instance>/libraries/
  after_TT/library.json`), in task order; read from the manifests, no array loaded.

  Raises:
    ValueError: a manifest that is not readable JSON (its path named).
  """
  out = []
  folders = [f for f in (Path(directory) / method / f"seed_{instance}" / "libraries").glob("after_*")
             if f.name[6:].isdigit()]
  for folder in sorted(folders, key=lambda f: int(f.name[6:])):  # after_100 after after_99, not after_10
    path = folder / "library.json"
    try:
      manifest = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as err:
      raise ValueError(f"{path}: not a readable library manifest ({err})") from None
    entries = manifest["entries"]
    parameters = sum(_parameters(e["structure"]) for e in entries)
    size = sum(int(e["bytes"]) for e in entries)
    out.append(LibraryPoint(int(folder.name[6:]), len(entries), parameters, size))
  return out


def network_growth(records: Sequence[dict], directory: Any, method: str, instance: int | None = None
                   ) -> list[MemoryPoint]:
  """A baseline's networks kept after each task (one per task, all kept): parameters from the records,
  bytes from the saved networks (`networks/after_TT/network.json`), or 4 a parameter where one is not
  there (float32). Experience replay and EWC keep one trunk per kind and a head per task, with their
  memories or Fishers: counted from their records' "continual_memory" where every record has it."""
  instance = _instance(records, instance)
  largest = _largest(records)
  mine = sorted((r for r in records if r["method"] == method and r["instance"] == instance
                 and r["fraction"] == largest), key=lambda r: r["task_index"])
  if mine and all("continual_memory" in r for r in mine):
    return _continual_growth(mine, method)
  out, parameters, size = [], 0, 0
  for r in mine:
    parameters += int(r.get("parameters", 0))
    meta = Path(directory) / method / f"seed_{instance}" / "networks" / f"after_{r['task_index']:02d}" / \
        "network.json"
    try:
      size += int(json.loads(meta.read_text("utf-8"))["bytes"])
    except (OSError, ValueError, KeyError):
      size += 4 * int(r.get("parameters", 0))
    out.append(MemoryPoint(r["task_index"], method, parameters, size))
  return out


def _continual_growth(mine: Sequence[dict], method: str) -> list[MemoryPoint]:
  """Experience replay's or EWC's memory after each task, from its records' "continual_memory"
  (`hx.baselines.continual.footprint`): every head so far, the latest trunk of each kind (float32, 4 bytes
  a parameter), and what each task kept (replay's memories, EWC's Fishers and anchors)."""
  out, heads, kept, trunks = [], 0, 0, {}
  for r in mine:
    m = r["continual_memory"]
    heads += int(m["head_parameters"])
    kept += int(m["kept_bytes"])
    if m.get("trunk") is not None:
      trunks[m["trunk"]] = int(m["trunk_parameters"])
    parameters = heads + sum(trunks.values())
    out.append(MemoryPoint(r["task_index"], method, parameters, 4 * parameters + kept))
  return out


def memory_growth(records: Sequence[dict], directory: Any, instance: int | None = None) -> list[MemoryPoint]:
  """Every method's memory after each task: HOUDINI's library (`library_growth`), each baseline's
  networks (`network_growth`)."""
  instance = _instance(records, instance)
  out = []
  for method in sorted({r["method"] for r in records}, key=_method_rank):
    if method.startswith("houdini_"):
      out += [MemoryPoint(p.index, method, p.parameters, p.bytes)
              for p in library_growth(directory, method, instance)]
    else:
      out += network_growth(records, directory, method, instance)
  return out


# ---------------------------------------------------------------------------------------------------
# Forgetting.

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


def rescore_winners(config: Any, directory: Any, method: str | None = None,
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
  from hx.lang import parse
  from hx.lang import program as P
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
    program = P.as_library(parse(rec["ranked"][0]["named"] or rec["ranked"][0]["program"]))
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


def continual_forgetting(directory: Any, method: str, instance: int) -> Forgetting | None:
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


# ---------------------------------------------------------------------------------------------------
# Summary.

@dataclasses.dataclass(frozen=True)
class MethodSummary:
  """One method over the stream (CTrL's summary figures; module docstring).

  Attributes:
    method: the method's id.
    tasks: tasks recorded.
    mean_error, mean_rmse: the average final test score over the error tasks (%), and over the RMSE
      tasks; None where there is none. The final scores are the re-scored ones where given (HOUDINI's,
      replay's and EWC's: CTrL's average accuracy after the last task).
    mean_transfer: the mean forward transfer over the tasks with one (None for standalone).
    transfer_by_relation: (relation, mean transfer against standalone, mean ratio to the method's own
      score on the task repeated, tasks) per relation present; the ratios None where none.
    final_parameters, final_bytes: the memory after the last task.
    bytes_per_task: the memory's growth per task (final bytes over tasks).
    wall_seconds, work_seconds: summed over tasks (records that are another's not counted).
    forgetting_error, forgetting_rmse: CTrL's forgetting (`Forgetting.mean_change`) on the error tasks
      (points) and the RMSE tasks where the method was re-scored; 0.0 for a method that keeps every
      task's network untouched (`KEEPS_NETWORKS`); None where not measured.
    error_interval, rmse_interval: the half-width of a 95% interval of mean_error and mean_rmse over the
      tasks (`interval`); None under two tasks.
  """
  method: str
  tasks: int
  mean_error: float | None
  mean_rmse: float | None
  mean_transfer: float | None
  transfer_by_relation: tuple[tuple[str, float | None, float | None, int], ...]
  final_parameters: int | None
  final_bytes: int | None
  bytes_per_task: float | None
  wall_seconds: float
  work_seconds: float
  forgetting_error: float | None = None
  forgetting_rmse: float | None = None
  error_interval: float | None = None
  rmse_interval: float | None = None


KEEPS_NETWORKS = ("standalone", "llt", "pnn", "standalone_with_fold")
"""The baselines that keep one network per task, which no later task changes: their forgetting is zero by
construction (nothing to re-score)."""


REPEATS = ("less_data", "new_data", "new_output", "new_input")
"""The relations of a task to an earlier one whose functions it may reuse (`hx.data.streams.RELATIONS`)."""


@dataclasses.dataclass(frozen=True)
class Reuse:
  """What a HOUDINI method's winners reuse on the stream's repeated tasks (`REPEATS`).

  Attributes:
    method: the HOUDINI method's id.
    repeats: the repeated tasks recorded (index, the index of the task it repeats).
    calls_library: those whose winner calls a library function.
    calls_earlier: those whose winner calls a function that the repeated task's winner computes with
      (one it trained, or a library function it called).
  """
  method: str
  repeats: tuple[tuple[int, int], ...]
  calls_library: tuple[int, ...]
  calls_earlier: tuple[int, ...]


def reuse_on_repeats(rows: Sequence[TaskRow], plan: Sequence[Any], method: str) -> Reuse:
  """`Reuse` of `method`'s winners (their named programs: a function they trained written bare, a
  library one as lib.<name>) on the tasks `plan` marks as repeats of an earlier one."""
  from hx.lang import parse
  from hx.lang import program as P

  programs = {r.index: parse(r.program) for r in rows
              if r.method == method and r.program and r.test is not None}
  repeats, library, earlier = [], [], []
  for t in plan:
    if t.relation not in REPEATS or t.of is None or t.index not in programs:
      continue
    repeats.append((t.index, t.of))
    called = set(P.library_names(programs[t.index]))
    if called:
      library.append(t.index)
    first = programs.get(t.of)
    if first is not None and called & (set(P.fresh_names(first)) | set(P.library_names(first))):
      earlier.append(t.index)
  return Reuse(method, tuple(repeats), tuple(library), tuple(earlier))


@dataclasses.dataclass(frozen=True)
class Growth:
  """What HOUDINI's library gained, per relation of the task to the stream (`hx.data.streams.RELATIONS`).

  Attributes:
    relation: the relation.
    tasks: its tasks with a library saved before and after them.
    added: the bytes each of them added (library after it minus library before), in task order.
    nothing: how many added no function.
  """
  relation: str
  tasks: tuple[int, ...]
  added: tuple[int, ...]
  nothing: int

  @property
  def mean(self) -> float:
    """Bytes added per task."""
    return statistics.fmean(self.added) if self.added else 0.0

  def halves(self) -> tuple[float, float] | None:
    """Bytes added per task over the relation's first half of tasks and over its second half (its
    growth is sub-linear in its tasks when the second is the smaller); None under 4 tasks."""
    n = len(self.added)
    if n < 4:
      return None
    return statistics.fmean(self.added[:n // 2]), statistics.fmean(self.added[n // 2:])


def growth_by_relation(library: Sequence[LibraryPoint], plan: Sequence[Any]) -> list[Growth]:
  """`Growth` per relation present in `plan` (in order of first appearance), from the library after each
  task (`library_growth`); the first task counts from an empty library."""
  after = {p.index: p for p in library}
  by: dict[str, list[tuple[int, int, bool]]] = {}
  for t in plan:
    if t.index not in after or (t.index > 1 and t.index - 1 not in after):
      continue
    before = after.get(t.index - 1, LibraryPoint(0, 0, 0, 0))
    now = after[t.index]
    added = (t.index, now.bytes - before.bytes, now.functions == before.functions)
    by.setdefault(t.relation, []).append(added)
  return [Growth(r, tuple(i for i, _, _ in v), tuple(b for _, b, _ in v), sum(n for _, _, n in v))
          for r, v in by.items()]


def repeats_growth(growth: Sequence[Growth]) -> Growth | None:
  """The `Growth` of every task that repeats an earlier one (`REPEATS`' relations together, in task
  order), labelled "every repeat"; None where the stream has none. Its halves say whether the library
  grows sub-linearly in the tasks where the stream repeats a domain."""
  got = sorted((i, b) for g in growth if g.relation in REPEATS for i, b in zip(g.tasks, g.added))
  if not got:
    return None
  nothing = sum(g.nothing for g in growth if g.relation in REPEATS)
  return Growth("every repeat", tuple(i for i, _ in got), tuple(b for _, b in got), nothing)


def _mean(values: Iterable[float | None]) -> float | None:
  got = [v for v in values if v is not None]
  return statistics.fmean(got) if got else None


def interval(values: Iterable[float | None]) -> float | None:
  """The half-width of a 95% interval of the mean of `values` (None left out) over the tasks: 1.96 standard
  errors (the normal approximation: a stream's methods have tens of tasks of each metric; under 30 it is
  narrower than Student's t would give); None under two values."""
  got = [v for v in values if v is not None]
  return 1.96 * statistics.stdev(got) / math.sqrt(len(got)) if len(got) >= 2 else None


def summary(rows: Sequence[TaskRow], memory: Sequence[MemoryPoint] = (), plan: Sequence[Any] | None = None,
            forgetting: Forgetting | Sequence[Forgetting] | None = None) -> list[MethodSummary]:
  """Each method's `MethodSummary` from its rows, memory, the stream's plan (`hx.data.stream_plan`: each
  task's relation and the task it repeats; without it, no per-relation transfer) and the re-scores of the
  methods re-scored (one `Forgetting` or several, one per method)."""
  by_method = {f.method: f for f in _forgettings(forgetting)}
  by_index = {t.index: t for t in plan or ()}
  out = []
  for method in sorted({r.method for r in rows}, key=_method_rank):
    mine = [r for r in rows if r.method == method]
    again = by_method.get(method)
    rescored = {r.index: r.rescored for r in again.rows} if again is not None else {}
    final = {r.index: rescored.get(r.index, r.test) for r in mine}
    if again is not None:
      lost = (again.mean_change("error"), again.mean_change("rmse"))
    elif method in KEEPS_NETWORKS:
      lost = (0.0 if any(r.metric == "error" for r in mine) else None,
              0.0 if any(r.metric == "rmse" for r in mine) else None)
    else:
      lost = (None, None)
    scores = {r.index: r for r in mine}
    relations = []
    if by_index:
      for relation in dict.fromkeys(t.relation for t in plan):
        tasks = [r for r in mine if r.index in by_index and by_index[r.index].relation == relation]
        if not tasks:
          continue
        own = []
        for r in tasks:
          of = by_index[r.index].of
          earlier = scores.get(of).test if of in scores else None
          own.append(r.test / earlier if r.test is not None and earlier else None)
        against = None if method == "standalone" else _mean(r.transfer for r in tasks)
        relations.append((relation, against, _mean(own), len(tasks)))
    points = sorted((p for p in memory if p.method == method), key=lambda p: p.index)
    last = points[-1] if points else None
    counted = [r for r in mine if not r.same_as]
    out.append(MethodSummary(
        method=method, tasks=len(mine),
        mean_error=_mean(final[r.index] for r in mine if r.metric == "error"),
        mean_rmse=_mean(final[r.index] for r in mine if r.metric == "rmse"),
        error_interval=interval(final[r.index] for r in mine if r.metric == "error"),
        rmse_interval=interval(final[r.index] for r in mine if r.metric == "rmse"),
        mean_transfer=None if method == "standalone" else _mean(r.transfer for r in mine),
        transfer_by_relation=tuple(relations),
        final_parameters=last.parameters if last else None, final_bytes=last.bytes if last else None,
        bytes_per_task=last.bytes / last.index if last else None,
        wall_seconds=sum(r.wall_seconds for r in counted), work_seconds=sum(r.work_seconds for r in counted),
        forgetting_error=lost[0], forgetting_rmse=lost[1]))
  return out


# ---------------------------------------------------------------------------------------------------
# Plots and text.

def plot_stream(directory: Any, rows: Sequence[TaskRow], memory: Sequence[MemoryPoint],
                library: Sequence[LibraryPoint] = ()) -> list[Path]:
  """Writes plots/stream_scores.png (test scores and transfer against the task's index),
  plots/stream_cost.png (wall seconds, candidates considered and trained) and plots/stream_memory.png
  (library functions; every method's bytes) into `directory`; returns their paths."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  out_dir = Path(directory) / "plots"
  out_dir.mkdir(parents=True, exist_ok=True)
  methods = sorted({r.method for r in rows}, key=_method_rank)
  # One colour and marker per method in every panel (the baselines' memory curves can coincide).
  style = {m: dict(color=f"C{i}", marker="osd^v"[i % 5]) for i, m in enumerate(methods)}
  paths = []
  for name, draw in (("stream_scores.png", _plot_scores), ("stream_cost.png", _plot_cost),
                     ("stream_memory.png", _plot_memory)):
    fig = draw(plt, methods, style, rows, memory, library)
    fig.tight_layout()
    paths.append(out_dir / name)
    write_atomically(paths[-1], lambda f, fig=fig: fig.savefig(f, format="png", dpi=100))
    plt.close(fig)
  return paths


def _legends(axes: Any) -> None:
  for ax in axes:
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=7)


def _plot_scores(plt: Any, methods: list[str], style: dict, rows: Sequence[TaskRow], memory: Any,
                 library: Any) -> Any:
  fig, axes = plt.subplots(3, 1, figsize=(9, 8.5), sharex=True)
  for method in methods:
    mine = [r for r in rows if r.method == method]
    for ax, metric in zip(axes[:2], ("error", "rmse")):
      pts = [(r.index, r.test) for r in mine if r.metric == metric and r.test is not None]
      if pts:
        ax.plot(*zip(*pts), ls="none", ms=3.5, alpha=0.8, label=method_label(method), **style[method])
    pts = [(r.index, r.transfer) for r in mine if r.transfer is not None]
    if pts and method != "standalone":
      axes[2].plot(*zip(*pts), ls="none", ms=3.5, alpha=0.8, label=method_label(method), **style[method])
  axes[0].set_ylabel("test error (%)")
  axes[1].set_ylabel("test RMSE")
  axes[2].set_ylabel("transfer (÷ standalone)")
  axes[2].axhline(1.0, color="grey", lw=0.8)
  axes[2].set_xlabel("task")
  _legends(axes)
  fig.suptitle("Each task's test score and forward transfer", fontsize=10)
  return fig


def _plot_cost(plt: Any, methods: list[str], style: dict, rows: Sequence[TaskRow], memory: Any,
               library: Any) -> Any:
  fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
  for method in methods:
    mine = [r for r in rows if r.method == method and not r.same_as]
    axes[0].plot([r.index for r in mine], [r.wall_seconds for r in mine], ms=3, lw=0.8,
                 label=method_label(method), **style[method])
    if method.startswith("houdini_"):
      axes[1].plot([r.index for r in mine], [r.candidates for r in mine], "o-", ms=3, lw=0.8,
                   label=f"{method_label(method)}: considered")
      axes[1].plot([r.index for r in mine], [r.trained for r in mine], "s--", ms=3, lw=0.8,
                   label=f"{method_label(method)}: trained")
  axes[0].set_ylabel("wall seconds")
  axes[1].set_ylabel("candidates")
  axes[1].set_xlabel("task")
  _legends(axes)
  fig.suptitle("Each task's cost", fontsize=10)
  return fig


def _plot_memory(plt: Any, methods: list[str], style: dict, rows: Any, memory: Sequence[MemoryPoint],
                 library: Sequence[LibraryPoint]) -> Any:
  fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
  if library:
    axes[0].plot([p.index for p in library], [p.functions for p in library], "o-", ms=3, lw=0.8)
  axes[0].set_ylabel("library functions")
  for method in methods:
    pts = sorted((p.index, p.bytes / 1e6) for p in memory if p.method == method)
    if pts:
      axes[1].plot(*zip(*pts), ms=3, lw=0.8, alpha=0.8, label=method_label(method), **style[method])
  axes[1].set_ylabel("memory (MB)")
  axes[1].set_xlabel("task")
  _legends(axes[1:])
  fig.suptitle("Memory after each task: HOUDINI's library, the baselines' networks", fontsize=10)
  return fig


def _score(metric: str, x: float | None) -> str:
  if x is None:
    return "-"
  return f"{x:.2f}%" if metric == "error" else f"{x:.3f}"


def _ratio(x: float | None) -> str:
  return "-" if x is None else f"{x:.2f}"


def process_memory_after(rows: Sequence[TaskRow]) -> dict[int, int]:
  """Task index -> the resident bytes of the run's process after the task (the largest of its methods'
  records; tasks whose records hold none left out)."""
  out: dict[int, int] = {}
  for r in rows:
    if r.rss_bytes is not None:
      out[r.index] = max(out.get(r.index, 0), r.rss_bytes)
  return out


def _process_memory_lines(rows: Sequence[TaskRow], early: int = 20) -> list[str]:
  """The process's resident memory after task `early` (or the first recorded past it) and after the last
  task, with their ratio: whether a long run's memory stays bounded. A run resumed in a new process starts
  its memory afresh, so the ratio is of one process's only where no resumption falls between them."""
  after = process_memory_after(rows)
  if not after:
    return []
  last = max(after)
  first = min((i for i in after if i >= early), default=min(after))
  return ["### Memory of the process", "",
          f"Resident memory of the run's process after task {first}: {after[first] / 1e6:.0f} MB; after task "
          f"{last}: {after[last] / 1e6:.0f} MB (**{after[last] / after[first]:.2f}x**).", ""]


def _search_lines(rows: Sequence[TaskRow], early: tuple[int, int] = (10, 20)) -> list[str]:
  """A HOUDINI method's search seconds and wall seconds per task: the median over tasks `early`, the
  median over as many last tasks, and the last task's, each against the early median."""
  mine = sorted((r for r in rows if r.search_seconds is not None), key=lambda r: r.index)
  first = [r for r in mine if early[0] <= r.index <= early[1]]
  if not first or mine[-1].index <= early[1]:
    return []
  last = mine[-len(first):]

  def row(what: str, get: Any) -> str:
    a, b, c = (statistics.median(get(r) for r in first), statistics.median(get(r) for r in last),
               get(mine[-1]))
    times = "" if a <= 0 else f" ({b / a:.2f}x; {c / a:.2f}x)"
    return f"| {what} | {a:.2f} | {b:.2f} | {c:.2f}{times} |"

  return ["### Cost per task as the library grows", "",
          f"{method_label(mine[0].method)}'s seconds per task: median over tasks {early[0]}-{early[1]}, "
          f"median over tasks {last[0].index}-{last[-1].index}, and task {mine[-1].index} (each ÷ the "
          "first).", "",
          "| seconds | early | late | last |", "|---|---|---|---|",
          row("search (the prior's choice and the enumeration)", lambda r: r.search_seconds),
          row("wall (search, training, scoring)", lambda r: r.wall_seconds), ""]


def _reuse_lines(reuse: Reuse | None, plan: Sequence[Any] = ()) -> list[str]:
  if reuse is None or not reuse.repeats:
    return []
  n = len(reuse.repeats)
  relation = {t.index: t.relation for t in plan}
  per = [f"{r} {sum(relation.get(i) == r for i in reuse.calls_earlier)} of "
         f"{sum(relation.get(i) == r for i, _ in reuse.repeats)}"
         for r in REPEATS if any(relation.get(i) == r for i, _ in reuse.repeats)]
  return ["### Reuse on the repeated tasks", "",
          f"Of the {n} tasks that repeat an earlier one ({', '.join(REPEATS)}), "
          f"{method_label(reuse.method)}'s winner calls a library function on "
          f"**{len(reuse.calls_library)}**, and a function the repeated task's winner computes with on "
          f"**{len(reuse.calls_earlier)}** (tasks {', '.join(map(str, reuse.calls_earlier)) or 'none'})"
          + (f"; per relation: {', '.join(per)}." if per else "."), ""]


def _transfer_lines(summaries: Sequence[MethodSummary]) -> list[str]:
  """Transfer per relation: per method, the mean score ÷ standalone's and ÷ its own on the task repeated."""
  if not any(s.transfer_by_relation for s in summaries):
    return []
  methods = [s.method for s in summaries]
  lines = ["### Transfer per relation", "",
           "Mean over the tasks of each relation: the score ÷ the standalone network's, and ÷ the "
           "method's own score on the task it repeats (CTrL's S^- is less_data, S^in new_input, S^out "
           "new_output, S^pl distractor).", "",
           "| relation | tasks | " + " | ".join(f"{method_label(m)} ÷ standalone | ÷ own earlier"
                                               for m in methods) + " |",
           "|---|---|" + "---|---|" * len(methods)]
  relations = list(dict.fromkeys(r for s in summaries for r, *_ in s.transfer_by_relation))
  for relation in relations:
    cells, count = [], 0
    for s in summaries:
      got = {r: (a, b, n) for r, a, b, n in s.transfer_by_relation}.get(relation, (None, None, 0))
      count = max(count, got[2])
      cells.append(f"{_ratio(got[0])} | {_ratio(got[1])}")
    lines.append(f"| {relation} | {count} | " + " | ".join(cells) + " |")
  lines.append("")
  return lines


def _growth_lines(growth: Sequence[Growth]) -> list[str]:
  if not growth:
    return []
  lines = ["### The library's growth per relation", "",
           "KB HOUDINI's library gained per task of each relation (its arrays' bytes after the task minus "
           "before), the tasks that added no function, and KB per task over the relation's first half of "
           "tasks against its second half (sub-linear growth: the second smaller).", "",
           "| relation | tasks | KB per task | added nothing | first half | second half |",
           "|---|---|---|---|---|---|"]
  every = repeats_growth(growth)
  for g in [*growth, *([every] if every is not None else [])]:
    halves = g.halves()
    cells = ("-", "-") if halves is None else (f"{halves[0] / 1e3:.1f}", f"{halves[1] / 1e3:.1f}")
    lines.append(f"| {g.relation} | {len(g.tasks)} | {g.mean / 1e3:.1f} | {g.nothing} | {cells[0]} | "
                 f"{cells[1]} |")
  return lines + [""]


def _forgetting_cell(s: MethodSummary) -> str:
  """A summary's forgetting: error points / RMSE, signed (above 0 forgot); "-" where not measured."""
  parts = [f"{x:+.2f}" if metric == "error" else f"{x:+.3f}"
           for metric, x in (("error", s.forgetting_error), ("rmse", s.forgetting_rmse)) if x is not None]
  return " / ".join(parts) or "-"


def _forgetting_lines(forgetting: Sequence[Forgetting]) -> list[str]:
  """The forgetting section: HOUDINI's winners re-scored on the final library; each continual baseline's
  tasks re-scored with the final trunks."""
  lines = []
  for f in forgetting:
    if f.method.startswith("houdini_"):
      lines.append(f"Every winner of {method_label(f.method)} re-scored on the library saved after task "
                   f"{f.after} (its functions frozen): {len(f.rows)} programs, largest change of a test "
                   f"score **{f.largest_change:.3g}**; every function they use has the version it had after "
                   f"its task: **{'yes' if f.all_unchanged else 'no'}**.")
      continue
    earlier = [r for r in f.rows if r.index < f.after]
    kept = sum(r.unchanged for r in earlier)
    parts = [f"error tasks {x:+.2f} points" if m == "error" else f"RMSE tasks {x:+.3f}"
             for m in ("error", "rmse") if (x := f.mean_change(m)) is not None]
    lines.append(f"Every earlier task of {method_label(f.method)} re-scored after task {f.after} with the "
                 f"final trunks and its own head ({len(earlier)} tasks; {kept} share no trunk, graph tasks "
                 f"over the frozen regressor, and are not scored again): mean change of the test score "
                 f"**{'; '.join(parts) or 'none'}**, largest {f.largest_change:.3g} (above 0: forgotten).")
  return ["### Forgetting", "", *[x for line in lines for x in (line, "")]] if lines else []


def stream_section(rows: Sequence[TaskRow], summaries: Sequence[MethodSummary],
                   library: Sequence[LibraryPoint] = (), plan: Sequence[Any] | None = None,
                   forgetting: Forgetting | Sequence[Forgetting] | None = None) -> list[str]:
  """The markdown section of a stream's metrics: the summary per method, transfer per relation,
  forgetting, the process's memory, the library's growth per relation, the cost per task as the library
  grows, reuse on the repeated tasks, the plots and one line per task. Where a continual baseline ran
  (`hx.baselines.CONTINUAL`: the methods whose earlier tasks can change) the summary is CTrL's whole: a
  forgetting column, and each mean score with its 95% interval over the tasks (`interval`); a report
  without one keeps the layout it was committed in."""
  methods = [s.method for s in summaries]
  lost = any(m in CONTINUAL for m in methods)
  lines = ["## The stream: CTrL's summary figures", "",
           "Per method over the stream's tasks (largest training fraction): the average final test score "
           "(error tasks and RMSE tasks apart), the mean forward transfer (score ÷ standalone's, below 1 "
           "better), " + ("each mean with its 95% interval over the tasks (± 1.96 standard errors), "
                          "the forgetting (each earlier task's final test score minus its score when "
                          "learned, mean over the tasks before the last: error points / RMSE; 0 by "
                          "construction for a method that keeps every task's network or freezes its "
                          "library), " if lost else "")
           + "the memory kept at the end and its growth per task, and the time.", "",
           "| method | tasks | mean error | mean RMSE | mean transfer | " + ("forgetting | " if lost else "")
           + "memory (MB) | KB per task | wall s | work s |",
           "|---|---|---|---|---|" + ("---|" if lost else "") + "---|---|---|---|"]
  for s in summaries:
    memory = "-" if s.final_bytes is None else f"{s.final_bytes / 1e6:.2f}"
    per = "-" if s.bytes_per_task is None else f"{s.bytes_per_task / 1e3:.1f}"
    error, rmse = _score("error", s.mean_error), _score("rmse", s.mean_rmse)
    if lost:  # CTrL's layout: each mean with its 95% interval over the tasks
      error += "" if s.error_interval is None or s.mean_error is None else f" ± {s.error_interval:.2f}"
      rmse += "" if s.rmse_interval is None or s.mean_rmse is None else f" ± {s.rmse_interval:.3f}"
    lines.append(f"| {method_label(s.method)} | {s.tasks} | {error} | {rmse} | {_ratio(s.mean_transfer)} | "
                 + (f"{_forgetting_cell(s)} | " if lost else "") + f"{memory} | {per} | "
                 f"{s.wall_seconds:.0f} | {s.work_seconds:.0f} |")
  lines.append("")
  lines += _transfer_lines(summaries)
  lines += _forgetting_lines(_forgettings(forgetting))
  lines += _process_memory_lines(rows)
  lines += _growth_lines(growth_by_relation(library, plan) if plan else [])
  lines += _search_lines(rows)
  houdini = next((m for m in methods if m.startswith("houdini_")), None)
  lines += _reuse_lines(reuse_on_repeats(rows, plan, houdini) if plan and houdini else None, plan or ())
  lines += ["![scores](plots/stream_scores.png)", "", "![cost](plots/stream_cost.png)", "",
            "![memory](plots/stream_memory.png)", "", "### Per task", ""]
  relation = {t.index: (t.relation + (f" of {t.of}" if t.of else "")) for t in plan or ()}
  sizes = {p.index: f"{p.functions} / {p.parameters:,} / {p.bytes / 1e3:.0f}" for p in library}
  head = "| # | task | relation | " + " | ".join(method_label(m) for m in methods)
  head += " | transfer | wall s | candidates (trained) | library: functions / parameters / KB |"
  lines += [head, "|---|---|---|" + "---|" * len(methods) + "---|---|---|---|"]
  for index in sorted({r.index for r in rows}):
    mine = {r.method: r for r in rows if r.index == index}
    first = next(iter(mine.values()))
    h = mine.get(houdini)
    cells = [_score(first.metric, mine[m].test) if m in mine else "" for m in methods]
    lines.append(f"| {index} | {first.task} | {relation.get(index, '')} | " + " | ".join(cells) + " | "
                 + (f"{_ratio(h.transfer)} | {h.wall_seconds:.0f} | {h.candidates} ({h.trained}) | "
                    if h else "- | - | - | ") + f"{sizes.get(index, '-')} |")
  return lines + [""]


def write_stream_report(config: Any, directory: Any, plan: Sequence[Any] | None = None,
                        rescore: bool = True) -> Path:
  """Measures the run in `directory` (every function above), writes the plots and `stream.md`
  (`stream_section`, after a title) into it; returns stream.md's path.

  Args:
    config: the run's `hx.EvalConfig` (for re-scoring).
    directory: the run's directory.
    plan: the stream's `hx.data.stream_plan` (for the relations), or None.
    rescore: re-score HOUDINI's winners (`rescore_winners`; needs the run's libraries and data). Replay's
      and EWC's re-scores are read from the run (`continual_forgetting`), whatever `rescore` says.

  Raises:
    ValueError: the directory holds no record.
  """
  directory = Path(directory)
  records = load_records(directory) if directory.is_dir() else []
  if not records:
    raise ValueError(f"{directory} holds no evaluation records")
  rows = task_rows(records)
  instance = _instance(records, None)
  houdini = next((m for m in sorted({r["method"] for r in records}) if m.startswith("houdini_")), None)
  library = library_growth(directory, houdini, instance) if houdini else []
  memory = memory_growth(records, directory, instance)
  forgetting = [rescore_winners(config, directory, houdini, instance)] if rescore and library else []
  forgetting += [f for m in CONTINUAL if (f := continual_forgetting(directory, m, instance)) is not None]
  summaries = summary(rows, memory, plan, forgetting)
  plot_stream(directory, rows, memory, library)
  lines = [f"# The {records[0]['sequence']} stream: {len({r.index for r in rows})} tasks", ""]
  lines += stream_section(rows, summaries, library, plan, forgetting)
  path = directory / "stream.md"
  write_text(path, "\n".join(lines))
  return path
