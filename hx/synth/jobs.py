"""One candidate's training: a `Job` (a candidate and its seed), the `TaskContext` every job of a task
shares, and `run_job`, which trains a job with Tune and gives its `JobResult`.

Executors (`hx.synth.executors.LocalExecutor`, `hx.synth.parallel.ProcessExecutor` and `RayExecutor`) run
many jobs, each through `run_job`; this module is what they share, so that they need not import one
another.

Every job's seed is derived from the synthesis seed and the candidate's equivalence class
(`job_seed`), never from the order in which jobs run or the worker that runs them, so any executor gives
the same result for a job, given the same number of XLA threads per worker (see `hx.synth.parallel` on
why the thread count can change the last digits of a CNN candidate's scores).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
import zlib
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hx.canonical_json import canonical_json
from hx.compile.fitting import Outcome, Prepared, out_of_memory, seeded, train
from hx.lang import program as P
from hx.lang.types import Type
from hx.synth.space import Candidate

if TYPE_CHECKING:
  import chex

  from hx.compile.checkpoint import Checkpoint
  from hx.compile.lower import CompiledProgram
  from hx.compile.memo import PrefixTables
  from hx.compile.modules import ModuleConfig
  from hx.compile.tune_results import TuneResult, TuneState
  from hx.compile.tuning import TuneData
  from hx.synth.library import Library

__all__ = ["TaskContext", "Checkpoints", "task_key", "Job", "JobResult", "job_seed", "continued",
           "step_costs", "train_program", "run_job", "failed_result"]

@dataclasses.dataclass(frozen=True, eq=False)
class TaskContext:
  """What every candidate of one task shares: the task being trained, and what a synthesis adds.

  Attributes:
    ready: the task ready to train on (`hx.compile.fitting.prepare`): its `hx.compile.TuneData` (train,
      val, test splits and image table), the `hx.compile.Objective` candidates are trained and scored
      with, and the `hx.compile.TuneConfig` (epochs, batch size, ...; its seed is replaced per job).
    library: the `hx.Library` the candidates may call.
    module_config: the `hx.compile.ModuleConfig` fresh functions are built with.
    checkpoints: where candidates are saved as they train (`Checkpoints`), or None.
  """
  ready: Prepared
  library: Library | None
  module_config: ModuleConfig
  checkpoints: Checkpoints | None = None

  def with_data(self, data: TuneData, **changes: object) -> TaskContext:
    """This context with the task's data `data` (and any other fields `changes`)."""
    return dataclasses.replace(self, ready=dataclasses.replace(self.ready, data=data), **changes)


@dataclasses.dataclass(frozen=True)
class Checkpoints:
  """Where a task's candidates are saved as they train, so that a synthesis interrupted midway resumes
  them (`hx.compile.checkpoint`): a candidate trained to the end is written to `directory` every
  `every_seconds` and when it finishes (under successive halving, in its last rung only: the earlier
  rungs pause and resume in memory). Run again, a finished candidate's file gives its result without
  training, and an unfinished one's continues where it was saved, to the result of an uninterrupted run.

  A candidate's file is named by the hash of the canonical JSON of what it trains (`key`,
  `hx.canonical_json.content_key`) and holds that JSON, checked when it is read back. A candidate checkpointed
  or kept by an hx that named files by reprs (before a run directory's layout version 2,
  `hx.synth.run_directory`) is not found under its new name and is trained again.

  Attributes:
    directory: one file per candidate (`for_job`); must be reachable from every worker (on a cluster,
      a shared file system).
    task_key: what the task is (`task_key`: {"task": its name, "data": a fingerprint of its data}); a
      candidate's key adds its program, fresh types, seeded training settings, module settings, the
      library and its schedule.
    every_seconds: how often a training candidate is saved.
    scores: where each candidate trained to the end also leaves its outcome without variables, a small
      JSON file (`hx.synth.kept`), used when its checkpoint file is gone; None: none.
  """
  directory: str
  task_key: Mapping[str, str]
  every_seconds: float = 120.0
  scores: str | None = None

  def for_job(self, job: Job, context: TaskContext) -> Checkpoint:
    """The `hx.compile.checkpoint.Checkpoint` of `job` in `context`: its key names the library's functions
    with their versions (weights' hashes)."""
    from hx.compile.checkpoint import checkpoint_in

    library = context.library.versions() if context.library is not None else {}
    return checkpoint_in(self.directory, self.key(job, context, dict(library)), self.every_seconds)

  def kept_for(self, job: Job, context: TaskContext) -> tuple[str, str] | None:
    """(path, key) of `job`'s kept outcome (`hx.synth.kept`; the key is the canonical JSON of `key`), or
    None without a `scores` directory. The key names the library's functions, not their weights' hashes,
    so that it survives a library rebuilt on another machine."""
    from hx.synth.kept import kept_path

    if self.scores is None:
      return None
    key = canonical_json(self.key(job, context, list(context.library.names) if context.library is not None
                                  else []))
    return os.fspath(kept_path(self.scores, key)), key

  def key(self, job: Job, context: TaskContext, library: dict[str, str] | list[str]) -> dict[str, object]:
    """What `job` trains, as a plain dict: the task and its data's fingerprint (`task_key`), the program,
    the fresh functions' types, the seeded training settings (`hx.compile.TuneConfig`), the module
    settings (`hx.compile.ModuleConfig`), `library` (its functions' versions, or names) and the schedule
    (`Job.schedule`, None for a run to the end). Its canonical JSON (`hx.canonical_json`) is the key of the
    job's checkpoint and kept files; every field of each settings dataclass is in it."""
    return {**self.task_key, "program": str(job.candidate.program),
            "fresh": {k: str(t) for k, t in job.candidate.fresh_types.items()},
            "training": seeded(context.ready, job.seed), "modules": context.module_config,
            "library": library, "schedule": job.schedule}


def task_key(name: str, data: TuneData) -> dict[str, str]:
  """{"task": `name`, "data": a fingerprint of `data` (every array's dtype, shape and bytes)}: the task part
  of a checkpoint key, so that a directory of checkpoints is never resumed on other data."""
  from hx.compile.checkpoint import fingerprint

  return {"task": name, "data": fingerprint(data)}


@dataclasses.dataclass(frozen=True)
class Job:
  """One candidate to train.

  Attributes:
    index: its place in the search's order.
    candidate: the program and its fresh functions' types.
    seed: seeds its training (`job_seed`).
    until: pause after this many epochs (a float; `hx.compile.tune`'s `until`); None: train to the end.
    resume: a paused run's `hx.compile.TuneState` (host arrays) to continue from; None: start afresh.
    schedule: the schedule it is part of (the schedule's value: `hx.synth.schedules.Halving`,
      `CheapFirst`), or None. A run paused inside an epoch scores an extra validation there, so such a
      candidate's checkpoint is keyed by it (`Checkpoints.key`, every field of it).
  """
  index: int
  candidate: Candidate
  seed: int
  until: float | None = None
  resume: TuneState | None = dataclasses.field(default=None, compare=False, repr=False)
  schedule: Any = None


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class JobResult:
  """An executor's report of one job: the job, and its training's `hx.compile.fitting.Outcome` (status,
  scores, host variables, epochs, times, a paused run's state, the epochs' history), read as it is
  (`r.outcome.val_score`).

  It stays beside the outcome, rather than a (job, outcome) pair, for what only an executor knows of a
  job: how often it was started and whether its outcome was restored rather than trained. It is never
  written or read back: a synthesis reports its candidates as `hx.synth.frontier.FrontierEntry`.

  Attributes:
    job: the job.
    outcome: its training (its `seconds`: wall time of the whole job, compiling the program included).
    attempts: how many times it was started (more than 1 when a worker died under it).
    restored: its outcome comes from a kept file (`hx.synth.kept`), without variables; not trained here.
  """
  job: Job
  outcome: Outcome
  attempts: int = 1
  restored: bool = False

  @property
  def candidate(self) -> Candidate:
    return self.job.candidate

  def with_outcome(self, **changes: object) -> JobResult:
    """This result with its outcome's fields `changes` replaced (a copy; nothing else changes)."""
    return dataclasses.replace(self, outcome=dataclasses.replace(self.outcome, **changes))


def continued(before: JobResult | None, after: JobResult) -> JobResult:
  """`after`, a run resumed from `before`'s paused state (None: it started afresh), with the times and
  attempts of both: a paused and resumed candidate's result as a schedule reports it."""
  if before is None:
    return after
  b, a = before.outcome, after.outcome
  return dataclasses.replace(after.with_outcome(
      compile_seconds=b.compile_seconds + a.compile_seconds, train_seconds=b.train_seconds + a.train_seconds,
      eval_seconds=b.eval_seconds + a.eval_seconds, seconds=b.seconds + a.seconds),
      attempts=before.attempts + after.attempts - 1)


def step_costs(results: Sequence[JobResult | None]) -> list[float | None]:
  """Per result, its training seconds per optimiser step, or None where there is none (no result, failed,
  or no step ran): what the schedules that price candidates (`Halving(equal="time")`, `CheapFirst`) read."""
  return [r.outcome.train_seconds / r.outcome.steps_run
          if r is not None and r.outcome.ok and r.outcome.steps_run > 0 else None for r in results]


def job_seed(seed: int, candidate: Candidate) -> int:
  """The training seed of `candidate` in a synthesis seeded with `seed` (independent of order): a hash of
  the seed and its equivalence class (`Candidate.seed_key`: its key, with a sequence's library functions
  named after the sequence's `library_seed` where `hx.synth.space.with_library_seed` set it)."""
  return zlib.crc32(repr((seed, candidate.seed_key)).encode()) & 0x7FFFFFFF


def train_program(program: P.Program, fresh_types: Mapping[str, Type], context: TaskContext, *,
                  seed: int, frozen_variables: Mapping[str, chex.ArrayTree] | None = None,
                  prefixes: PrefixTables | None = None, until: float | None = None,
                  resume: TuneState | None = None, checkpoint: Checkpoint | None = None
                  ) -> tuple[CompiledProgram, TuneResult]:
  """Compiles `program` (its fresh functions of the given types) and trains it
  (`hx.compile.fitting.train`).

  Library functions the program applies first to every input image (its frozen prefix,
  `hx.compile.memo.frozen_prefix`) are applied once to the task's image table instead of once per image
  per step, and the rest of the program is trained on the result: the same fresh functions, parameters,
  losses and scores, up to rounding.

  Args:
    program: a complete program; its `lib.` functions must be in `context.library`.
    fresh_types: each fresh function's type (no type variables).
    context: the task's data, objective, library and settings.
    seed: the training seed (initialisation, shuffling, dropout).
    frozen_variables: the library's variables already on the device (name -> {"params",
      "batch_stats"}); default: taken from the library.
    prefixes: an `hx.compile.memo.PrefixTables` to share prefix tables between candidates; default: one
      for this call only.
    until, resume: pause after `until` epochs, continue a paused run (see `hx.compile.tune`).
    checkpoint: an `hx.compile.checkpoint.Checkpoint` to save the run to and resume it from (used only
      when the run trains to the end, `until` None; from `resume` or its file, whichever is further).

  Returns:
    (compiled, tune_result): the `hx.compile.CompiledProgram` trained (the program without its frozen
    prefix, if it has one: its fresh slots are the program's, so its variables are the program's) and
    the `hx.compile.TuneResult`.
  """
  from hx.compile import compile_program, make_frozen
  from hx.compile.memo import PrefixTables, frozen_prefix
  from hx.synth.library import Library

  library = context.library if context.library is not None else Library()
  names, rest = frozen_prefix(program) if context.ready.data.table is not None else ((), program)
  if names:
    prefixes = prefixes if prefixes is not None else PrefixTables()
    # Only the rows the task's splits read: at small training fractions a few thousand of the table's
    # tens of thousands of images.
    table = prefixes.table_for(library, names, context.ready.data)
    context = context.with_data(context.ready.data._replace(table=table))
  compiled = compile_program(rest, fresh_types, context.module_config, library.specs())
  variables = frozen_variables if frozen_variables is not None else library.variables()
  return compiled, train(compiled, context.ready, seed=seed, frozen=make_frozen(compiled, variables),
                         until=until, resume=resume, checkpoint=checkpoint)


def failed_result(job: Job, reason: str, seconds: float = 0.0, attempts: int = 1) -> JobResult:
  """A job that produced nothing, with the reason (what an executor reports for a job it lost)."""
  return JobResult(job=job, outcome=Outcome(status="failed", reason=reason, seconds=seconds),
                   attempts=attempts)


def run_job(context: TaskContext, job: Job, frozen_variables: Mapping[str, chex.ArrayTree] | None = None,
            prefixes: PrefixTables | None = None) -> JobResult:
  """Trains one job; an error while compiling or training becomes a failed result with the reason, running
  out of memory too (`hx.compile.fitting.out_of_memory`; a search goes on to its next candidate), but a
  checkpoint file that cannot be used raises its `hx.compile.checkpoint.CheckpointError`, and a write the
  system refuses its `hx.atomic.WriteFailed`."""
  from hx.compile.checkpoint import CheckpointError
  from hx.synth.kept import load_kept, save_kept

  start = time.perf_counter()
  c = job.candidate
  # Outside the try below: a fault here is the files' or the code's, not the candidate's.
  checkpoint = context.checkpoints.for_job(job, context) if context.checkpoints is not None else None
  kept = None
  if checkpoint is not None and job.until is None:
    kept = context.checkpoints.kept_for(job, context)
    # Its checkpoint file, when there is one, holds the variables too: resumed from there.
    outcome = load_kept(*kept) if kept is not None and not os.path.exists(checkpoint.path) else None
    if outcome is not None:
      return JobResult(job=job, outcome=outcome, restored=True)
  try:
    _, r = train_program(c.program, c.fresh_types, context, seed=job.seed,
                         frozen_variables=frozen_variables, prefixes=prefixes, until=job.until,
                         resume=job.resume, checkpoint=checkpoint)
  except CheckpointError:
    raise  # a file to look at, not a candidate that failed
  except (ValueError, TypeError, NotImplementedError, FloatingPointError) as err:
    return failed_result(job, f"{type(err).__name__}: {err}", time.perf_counter() - start)
  except (MemoryError, RuntimeError) as err:
    reason = out_of_memory(err)
    if reason is None:
      raise
    gc.collect()  # the failed candidate's buffers, before the next candidate allocates its own
    return failed_result(job, reason, time.perf_counter() - start)
  outcome = Outcome.of(r, time.perf_counter() - start)
  if kept is not None and outcome.state is None and not os.path.exists(kept[0]):
    save_kept(*kept, outcome)  # once: a finished checkpoint read again reports only this call's seconds
  return JobResult(job=job, outcome=outcome)
