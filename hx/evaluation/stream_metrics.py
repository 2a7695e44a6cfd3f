"""Metrics of a long stream's run (`hx.data.long_stream`), after CTrL's, from the run's records and directory:
here each method's row per task, and the helpers the other stream modules share.

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

Where the parts are: the rows per task here; the memory after each task in
`hx.evaluation.stream_memory` (`library_growth`, `memory_growth`); each winner re-scored after the
stream's last task in `hx.evaluation.stream_forgetting` (`rescore_winners`, `continual_forgetting`); what
the repeated tasks reuse and add to the library in `hx.evaluation.stream_repeats`; CTrL's summary
figures per method in `hx.evaluation.stream_summary` (`summary`); the plots in
`hx.evaluation.stream_plots`; stream.md in `hx.evaluation.stream_report` (`write_stream_report`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import TYPE_CHECKING, Iterable, Sequence

from hx.evaluation.records import work_seconds
from hx.synth.frontier import FrontierEntry

if TYPE_CHECKING:
  from hx.jsonread import JsonValue

__all__ = ["TaskRow", "task_rows"]


def _finite(x: JsonValue) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _best(rec: dict) -> FrontierEntry | None:
  """A record's best candidate (or its network), None where it ranked none."""
  return FrontierEntry.from_json(rec["ranked"][0]) if rec.get("ranked") else None


def _test(rec: dict) -> float | None:
  best = _best(rec)
  if best is None or best.outcome.status != "trained" or not _finite(best.outcome.test_score):
    return None
  return best.outcome.test_score


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
    best = _best(r)
    rows.append(TaskRow(
        index=r["task_index"], task=r["task"], method=r["method"], metric=r["metric"], test=test,
        transfer=test / base if test is not None and base is not None and base > 0 else None,
        wall_seconds=float(r["seconds"]["wall"]), work_seconds=work_seconds(r),
        candidates=len(r.get("ranked", [])) if houdini else 1,
        trained=int(r.get("candidates_trained", 0)) if houdini else 1,
        parameters=None if houdini else int(r.get("parameters", 0)),
        program=None if best is None else str(best.display), same_as=r.get("same_as"),
        rss_bytes=(r.get("process_memory") or {}).get("rss_bytes"),
        search_seconds=float(r["seconds"]["search"]) if houdini and "search" in r["seconds"] else None))
  return rows


def _method_rank(method: str) -> tuple[int, str]:
  rank = {"houdini_topdown": 0, "houdini_evolutionary": 1, "standalone": 2, "llt": 3, "pnn": 4, "replay": 5,
          "ewc": 6}
  return rank.get(method, 9), method


def _mean(values: Iterable[float | None]) -> float | None:
  got = [v for v in values if v is not None]
  return statistics.fmean(got) if got else None
