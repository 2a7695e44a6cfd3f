"""Executors: where many candidates train (`hx.synth.jobs.run_job` trains one).

A synthesizer never trains a program itself. It hands `Job`s (a candidate and its seed) to an
`Executor` together with the `TaskContext` they share (the task's data, its objective, the library, the
module sizes and the training settings), and receives `JobResult`s. The executor decides where the
training happens:

  "local"      `LocalExecutor`: in the calling process, one candidate after another (the default);
  "processes"  `hx.synth.parallel.ProcessExecutor`: N worker processes on this machine, each with its own
               JAX pinned to its share of the cores;
  "ray"        `hx.synth.parallel.RayExecutor`: Ray tasks on a local Ray or a cluster (the `ray` extra).

`make_executor(name, ...)` builds one by name; `parse_executor` reads one written as text, as the
binaries' `--executor` takes it: `local`, `processes:workers=4,threads=1,lend=true,max_retries=2`,
`ray:address=auto,max_retries=2`, or `auto` (`default_executor`'s choice for this machine). A job may
also continue a paused candidate (`Job.resume`,
`Job.until`: successive halving trains survivors further rather than from the start).

`Job`, `JobResult`, `TaskContext`, `run_job` and the rest of one job's training live in `hx.synth.jobs`
(re-exported here), which the executors of this module and of `hx.synth.parallel` share; a job's result
does not depend on the executor that ran it (`hx.synth.jobs` on seeds).
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence

from hx.synth.jobs import (
  Checkpoints,
  Job,
  JobResult,
  TaskContext,
  failed_result,
  job_seed,
  run_job,
  task_key,
  train_program,
)
from hx.synth.options import read_options

__all__ = ["TaskContext", "Checkpoints", "task_key", "Job", "JobResult", "Executor", "LocalExecutor",
           "job_seed", "train_program", "run_job", "failed_result", "make_executor", "EXECUTORS",
           "default_executor", "EXECUTOR_KEYS", "parse_executor"]

EXECUTORS = ("local", "processes", "ray")

EXECUTOR_KEYS = {
    "auto": {},
    "local": {},
    "processes": {"workers": "int | None", "threads": "int | None", "lend": "bool", "max_retries": "int",
                  "job_timeout": "float | None"},
    "ray": {"address": "str | None", "num_cpus": "int | None", "cpus_per_job": "int", "max_retries": "int"},
}
"""Per executor name of `parse_executor`'s text, its keys (`make_executor`'s options) and their kinds
(`hx.synth.options`)."""


class Executor(Protocol):
  """Trains jobs. `run` may yield results in any order; every job gets exactly one result."""

  def run(self, context: TaskContext, jobs: Sequence[Job]) -> Iterator[JobResult]: ...

  def close(self) -> None: ...


class LocalExecutor:
  """Trains jobs one after another in the calling process (the default executor).

  The task's data and the library's variables are put on the device once per task (per context), not
  once per candidate, and frozen prefixes' tables are shared by the task's candidates.
  """

  def __init__(self):
    from hx.compile.memo import PrefixTables

    self._context: TaskContext | None = None
    self._frozen: Any = None
    self._prefixes = PrefixTables()

  def _prepare(self, context: TaskContext) -> None:
    import jax

    if context is not self._context:
      self._context = context
      self._frozen = jax.device_put(context.library.variables())

  parallelism = 1
  """Jobs it runs at once (a synthesizer hands over at least this many at a time when it can)."""

  def run(self, context: TaskContext, jobs: Sequence[Job]) -> Iterator[JobResult]:
    self._prepare(context)
    for job in jobs:
      yield run_job(context, job, self._frozen, self._prefixes)

  def close(self) -> None:
    self._context, self._frozen = None, None


def make_executor(executor: str | Executor | None = "local", **options: Any) -> Executor:
  """An executor by name ("local", "processes", "ray"), or `executor` itself if it is one.

  Args:
    executor: a name from `EXECUTORS`, an Executor (returned as it is; then `options` must be empty), or
      None for "local".
    options: the executor's constructor arguments: for "processes" `workers`, `threads`, `max_retries`,
      `job_timeout`, `lend` (`hx.synth.parallel.ProcessExecutor`); for "ray" `address` (e.g. "auto" or
      "10.0.0.1:6379"), `num_cpus`, `cpus_per_job`, `max_retries` (`hx.synth.parallel.RayExecutor`).

  Raises:
    ValueError: an unknown name, or options for an executor instance.
    ImportError: "ray" without Ray installed (install the `ray` extra: pip install 'hx[ray]').
  """
  if executor is None:
    executor = "local"
  if not isinstance(executor, str):
    if options:
      raise ValueError(f"options {sorted(options)} are for an executor name, not an executor instance")
    return executor
  if executor == "local":
    if options:
      raise ValueError(f"the local executor takes no options, got {sorted(options)}")
    return LocalExecutor()
  if executor == "processes":
    from hx.synth.parallel import ProcessExecutor

    return ProcessExecutor(**options)
  if executor == "ray":
    from hx.synth.parallel import RayExecutor

    return RayExecutor(**options)
  raise ValueError(f"unknown executor {executor!r}; the executors are {', '.join(EXECUTORS)}")


def default_executor(backend: str | None = None, cores: int | None = None) -> tuple[str, dict[str, Any]]:
  """The executor a binary should use when the user names none: (name, options) for `make_executor`.

  One candidate of the paper's sizes keeps about two cores busy (the count_digit candidate,
  benchmarks/RESULTS.md "Training throughput"), and on the 2-core machine two workers of one core were
  not faster than one process of two (benchmarks/notes/2026-11-21-synthesis-executors-halving.md): they
  compile separately, and a pinned worker cannot move off a core that other processes load. So:
  "local" on accelerators and on CPUs of up to 2 cores; on more cores, worker
  processes of 2 cores each (cores // 2 workers; not yet measured on such a machine: re-measure with
  benchmarks/synthesis.py --executors processes:WxT).

  Args:
    backend: JAX's backend ("cpu", "gpu", "tpu"); default: `jax.default_backend()`.
    cores: the cores this process may use; default: its affinity mask.
  """
  if backend is None:
    import jax

    backend = jax.default_backend()
  if backend != "cpu":
    return "local", {}
  from hx.synth.parallel import available_cpus, default_process_options

  options = default_process_options(cores if cores is not None else len(available_cpus()))
  if options["workers"] <= 1:
    return "local", {}
  return "processes", options


def parse_executor(text: str) -> tuple[str, dict[str, Any]]:
  """(name, options) for `make_executor` from `text`: `NAME` or `NAME:KEY=VALUE,...` (`EXECUTOR_KEYS`),
  e.g. `processes:workers=4,threads=1,lend=true`, `ray:address=auto`, `local`; `auto` (no keys) is
  `default_executor()` (which looks at this machine's backend and cores). A key not given keeps the
  executor's default (`hx.synth.parallel.ProcessExecutor`, `hx.synth.parallel.RayExecutor`).

  Raises:
    ValueError: one line naming the unknown executor, key or bad value and listing what would do.
  """
  name, options = read_options(text, EXECUTOR_KEYS, "executor")
  if name == "auto":
    return default_executor()
  return name, options
