"""Every candidate to the end: the paper's schedule, and `Budget`'s default.

    result = hx.synthesize(task, library, hx.SynthesisConfig(budget=Budget(candidates=20)))  # ToEnd()

Each candidate trains for the task's epochs (`TuneConfig.epochs`, less where early stopping,
`TuneConfig.patience`, stops it), in the search's order, and nothing is estimated.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar, Iterable, Mapping, Sequence

from hx.synth.jobs import Job, JobResult, TaskContext, job_seed
from hx.synth.schedules.base import ScheduleResult, Train, never
from hx.synth.space import Candidate

__all__ = ["ToEnd"]


@dataclasses.dataclass(frozen=True)
class ToEnd:
  """The schedule that trains every candidate to the end (`Budget.schedule`'s default; text `to_end`).

  The candidates go to the executor as the search proposes them, in batches it can run at once (`run`'s
  `batch`): under a time budget the search stops proposing once the time is up, and no candidate is
  enumerated beyond those trained.
  """

  NAME: ClassVar[str] = "to_end"
  KEYS: ClassVar[Mapping[str, str]] = {}

  def run(self, candidates: Iterable[Candidate], context: TaskContext, seed: int, train: Train,
          out_of_time: Callable[[], bool] = never, *, first_index: int = 0,
          batch: int | None = None) -> ScheduleResult:
    """Trains `candidates` to the end (`hx.synth.schedules.Schedule.run`): `batch` at a time, taken
    from `candidates` as it yields them, until `out_of_time` after a full batch; the rest (a batch
    short of full) unless the time is up. batch None: all of them at once."""
    results: list[JobResult] = []

    def train_batch(batch_of: Sequence[Candidate]) -> None:
      start = first_index + len(results)
      jobs = [Job(start + i, c, job_seed(seed, c)) for i, c in enumerate(batch_of)]
      got = {r.job.index: r for r in train(context, jobs)}
      results.extend(got[j.index] for j in jobs)

    pending: list[Candidate] = []
    for candidate in candidates:
      pending.append(candidate)
      if batch is not None and len(pending) >= batch:
        train_batch(pending)
        pending = []
        if out_of_time():
          return ScheduleResult(tuple(results))
    if pending and (batch is None or not out_of_time()):
      train_batch(pending)
    return ScheduleResult(tuple(results))
