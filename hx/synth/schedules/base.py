"""What every schedule shares: the `Schedule` protocol, its `ScheduleResult`, and a candidate's `Scored`
estimate (the schedules are in `hx.synth.schedules`)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Mapping, Protocol, Sequence

from hx.synth.jobs import Job, JobResult, TaskContext
from hx.synth.space import Candidate

__all__ = ["Schedule", "ScheduleResult", "Scored", "Train", "never", "as_estimates"]

Train = Callable[[TaskContext, list[Job]], list[JobResult]]
"""Trains jobs in a context (through the synthesis's executor) and returns one result per job, in any
order: what a schedule trains with."""


def never() -> bool:
  """The `out_of_time` of a search without a time budget."""
  return False


@dataclasses.dataclass(frozen=True, eq=False)
class Scored:
  """One candidate's estimate.

  Attributes:
    value: the estimated validation score (the task's metric on the subsample; lower is better), nan
      when there is none.
    method: "short" or "head": the estimate it got (a candidate that is no head gets "short" under
      the "head" method); "halving" for a candidate `Halving(val_examples=...)` stopped before its last
      rung (its best score on the validation subsample); "probe" for one `CheapFirst` stopped (its best
      validation score when it stopped).
    seconds: the estimate's wall time (for a short run: compiling, training and scoring it).
    epochs: epochs of training the estimate ran (0 for the closed form).
    reason: why there is no estimate (the short run failed, say), else None.
    run: the short run's result (its times), or None.
  """
  value: float
  method: str
  seconds: float
  epochs: float
  reason: str | None = None
  run: JobResult | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class ScheduleResult:
  """What a schedule's `run` returns.

  Attributes:
    results: one `JobResult` per candidate it was given (or, where it ran out of time, per candidate
      it started), in the candidates' order: trained to the end ("trained" or "failed"), or stopped
      before the end ("estimated": nan validation score, no test score).
    estimates: per job index, the `Scored` estimate of each candidate stopped before the end (under
      `Estimate`, of every candidate).
  """
  results: tuple[JobResult, ...]
  estimates: Mapping[int, Scored] = dataclasses.field(default_factory=dict)


class Schedule(Protocol):
  """How a synthesis trains the candidates its search proposes (`Budget.schedule`): every one to the end
  (`ToEnd`, the paper's way), or some only part of the way (`Halving`, `CheapFirst`, `Estimate`)."""

  def run(self, candidates: Iterable[Candidate], context: TaskContext, seed: int, train: Train,
          out_of_time: Callable[[], bool] = never, *, first_index: int = 0,
          batch: int | None = None) -> ScheduleResult:
    """Trains `candidates` and returns their results.

    Args:
      candidates: the candidates, in the search's order (job `first_index + i` is candidate i); a
        schedule that trains in that order (`ToEnd`) takes them as they come, the others all first.
      context: the task's context (`hx.synth.synthesize.task_context`).
      seed: the synthesis seed (`hx.synth.jobs.job_seed` gives each candidate's).
      train: trains jobs in a context (`Train`).
      out_of_time: true once the search's time is up: checked between the schedule's phases, no
        further phase starts.
      first_index: the index of the first candidate's job.
      batch: where a schedule trains the candidates in order, how many it hands `train` at once,
        checking `out_of_time` after each full batch; None: all at once, unchecked. The schedules that
        train in phases hand each phase over whole and ignore it.
    """
    ...


def as_estimates(results: Sequence[JobResult], stopped: Mapping[int, float],
                 method: str) -> dict[int, Scored]:
  """Each candidate a schedule stopped before the end (job index -> its last score), as its estimate:
  `method`, with the time and epochs its result records."""
  by_index = {r.job.index: r for r in results}
  return {i: Scored(v, method, by_index[i].outcome.seconds, by_index[i].outcome.epochs_run)
          for i, v in stopped.items()}
