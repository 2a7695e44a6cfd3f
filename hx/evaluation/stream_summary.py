"""CTrL's summary figures of a long stream's run (Veniat, Denoyer and Ranzato, ICLR 2021), per method
(`summary`), from its rows (`hx.evaluation.stream_metrics`), memory and re-scores: the average final
score over the tasks (<A>; here error and RMSE apart, as they do not average together), the transfer on
the repeated tasks (CTrL's S^-, S^in, S^out streams measure it on their last task, a repeat of the first;
here every repeat of `hx.data.streams.RELATIONS`, averaged per relation: against the standalone network,
and against the method's own score on the task repeated), the forgetting (where a run has experience
replay or EWC, a column of the summary; HOUDINI's re-scores have their own section), and the memory at
the end with its growth per task (<M>).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import TYPE_CHECKING, Iterable, Sequence

from hx.evaluation.stream_forgetting import Forgetting, _forgettings
from hx.evaluation.stream_memory import MemoryPoint
from hx.evaluation.stream_metrics import TaskRow, _mean, _method_rank

if TYPE_CHECKING:
  from hx.data.streams import StreamTask

__all__ = ["MethodSummary", "KEEPS_NETWORKS", "interval", "summary"]


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


def interval(values: Iterable[float | None]) -> float | None:
  """The half-width of a 95% interval of the mean of `values` (None left out) over the tasks: 1.96 standard
  errors (the normal approximation: a stream's methods have tens of tasks of each metric; under 30 it is
  narrower than Student's t would give); None under two values."""
  got = [v for v in values if v is not None]
  return 1.96 * statistics.stdev(got) / math.sqrt(len(got)) if len(got) >= 2 else None


def summary(rows: Sequence[TaskRow], memory: Sequence[MemoryPoint] = (),
            plan: Sequence[StreamTask] | None = None,
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
