"""Executors: where many candidates train (`hx.synth.jobs.run_job` trains one).

A synthesizer never trains a program itself. It hands `Job`s (a candidate and its seed) to an
`Executor` together with the `TaskContext` they share (the task's data, its objective, the library, the
module sizes and the training settings), and receives `JobResult`s. The executor decides where the
training happens. `hx.synthesize(executor=...)` takes its settings as a value, a small frozen dataclass
whose `start()` starts the running executor (as a budget takes its schedule), or a running one:

  `Local()`                 `LocalExecutor`: in the calling process, one candidate after another (the
                            default);
  `Processes(workers=...)`  `hx.synth.parallel.ProcessExecutor`: N worker processes on this machine,
                            each with its own JAX pinned to its share of the cores;
  `Ray(address=...)`        `hx.synth.parallel.RayExecutor`: Ray tasks on a local Ray or a cluster (the
                            `ray` extra).

The settings are values (compared, printed, passed around) that start nothing: worker processes start at
the running executor's first jobs, and Ray is joined by `Ray.start()`. `default_executor()` gives the
settings a binary uses on this machine. The binaries' `--executor` spells them as text (`local`,
`processes:workers=4,threads=1,lend=true,max_retries=2`, `ray:address=auto`, `auto`), read in
`hx.bin.spellings.parse_executor`. A job may also continue a paused candidate (`Job.resume`, `Job.until`:
successive halving trains survivors further rather than from the start).

`Job`, `JobResult`, `TaskContext`, `run_job` and the rest of one job's training live in `hx.synth.jobs`
(re-exported here), which the executors of this module and of `hx.synth.parallel` share; a job's result
does not depend on the executor that ran it (`hx.synth.jobs` on seeds).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Protocol, Sequence

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

if TYPE_CHECKING:
  import chex

  from hx.synth.parallel import ProcessExecutor, RayExecutor

__all__ = ["TaskContext", "Checkpoints", "task_key", "Job", "JobResult", "Executor", "ExecutorSettings",
           "LocalExecutor", "Local", "Processes", "Ray", "start_executor", "check_executor",
           "default_executor", "job_seed", "train_program", "run_job", "failed_result"]


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
    self._frozen: Mapping[str, chex.ArrayTree] | None = None
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


class ExecutorSettings(Protocol):
  """Where candidates train, as a value (`Local`, `Processes`, `Ray`): `hx.synthesize`'s `executor`."""

  def start(self) -> Executor:
    """The running executor of these settings (closed by whoever started it)."""
    ...


@dataclasses.dataclass(frozen=True)
class Local:
  """Candidates train in the calling process, one after another (`LocalExecutor`; the default)."""

  def start(self) -> LocalExecutor:
    return LocalExecutor()


@dataclasses.dataclass(frozen=True)
class Processes:
  """Candidates train in worker processes on this machine (`hx.synth.parallel.ProcessExecutor`, whose
  docstring says more of each setting).

  Attributes:
    workers: processes (None: one per core this process may use, divided by `threads`).
    threads: cores each worker may run on, and so its XLA thread pool's size (None: the cores divided by
      `workers`, at least 1; 0: no pinning).
    lend: lend idle workers' cores to busy ones (ours, for the last rungs of successive halving).
    max_retries: times a job is started again after its worker died under it.
    job_timeout: seconds a job may run before its worker is killed and the job retried (None: no limit).

  Raises:
    ValueError: workers below 1, threads or max_retries below 0, or a job_timeout that is not positive.
  """
  workers: int | None = None
  threads: int | None = None
  lend: bool = False
  max_retries: int = 2
  job_timeout: float | None = None

  def __post_init__(self):
    if (self.workers is not None and self.workers < 1) or (self.threads is not None and self.threads < 0) \
       or self.max_retries < 0:
      raise ValueError(f"bad Processes settings: workers={self.workers}, threads={self.threads}, "
                       f"max_retries={self.max_retries}")
    if self.job_timeout is not None and self.job_timeout <= 0:
      raise ValueError(f"Processes.job_timeout must be positive or None, got {self.job_timeout}")

  def start(self) -> ProcessExecutor:
    """A `hx.synth.parallel.ProcessExecutor` of these settings (its workers start at its first jobs)."""
    from hx.synth.parallel import ProcessExecutor

    return ProcessExecutor(workers=self.workers, threads=self.threads, max_retries=self.max_retries,
                           job_timeout=self.job_timeout, lend=self.lend)


@dataclasses.dataclass(frozen=True)
class Ray:
  """Candidates train as Ray tasks, on a local Ray or a cluster (`hx.synth.parallel.RayExecutor`; the
  `ray` extra).

  Attributes:
    address: None: a local Ray of `num_cpus` CPUs; "auto": the cluster started on this machine (`ray start
      --head`); "HOST:PORT": the cluster whose head is there.
    num_cpus: CPUs of a local Ray (None: every core this process may use); ignored with an address.
    cpus_per_job: Ray CPUs each job holds.
    max_retries: times Ray starts a job again after its worker process or machine died under it.
    init_options: more `ray.init` arguments (e.g. {"runtime_env": {...}}).

  Raises:
    ValueError: cpus_per_job below 1 or max_retries below 0.
  """
  address: str | None = None
  num_cpus: int | None = None
  cpus_per_job: int = 1
  max_retries: int = 2
  init_options: Mapping[str, Any] | None = dataclasses.field(default=None, hash=False)

  def __post_init__(self):
    if self.cpus_per_job < 1 or self.max_retries < 0:
      raise ValueError(f"bad Ray settings: cpus_per_job={self.cpus_per_job}, max_retries={self.max_retries}")

  def start(self) -> RayExecutor:
    """A `hx.synth.parallel.RayExecutor` of these settings: joins or starts Ray now.

    Raises:
      ImportError: Ray is not installed (pip install 'hx[ray]').
      ValueError, ConnectionError: an address that is not one, or where no Ray cluster answers.
    """
    from hx.synth.parallel import RayExecutor

    return RayExecutor(address=self.address, num_cpus=self.num_cpus, cpus_per_job=self.cpus_per_job,
                       max_retries=self.max_retries,
                       init_options=None if self.init_options is None else dict(self.init_options))


def _running(executor: Executor | ExecutorSettings | None) -> bool:
  return not isinstance(executor, type) and callable(getattr(executor, "run", None))


def check_executor(executor: Executor | ExecutorSettings | None) -> None:
  """TypeError, naming what to pass, where `executor` is neither None, executor settings (`Local()`,
  `Processes(...)`, `Ray(...)`) nor a running `Executor` (a name, say: the binaries' spelling)."""
  if executor is None or _running(executor):
    return
  if not isinstance(executor, type) and callable(getattr(executor, "start", None)):
    return
  spelled = (f" (the name {executor!r} is how the binaries' --executor spells one)"
             if isinstance(executor, str) else "")
  raise TypeError(f"executor must be hx.synth.Local(), hx.synth.Processes(...), hx.synth.Ray(...) or a "
                  f"running Executor, got {executor!r}{spelled}")


def start_executor(executor: Executor | ExecutorSettings | None) -> tuple[Executor, bool]:
  """The running executor `executor` stands for, and whether this call started it (then its caller
  closes it): settings are started, a running executor is returned as it is, None is `Local()`.

  Raises:
    TypeError: `executor` is none of these (`check_executor`).
  """
  check_executor(executor)
  if executor is None:
    return LocalExecutor(), True
  if _running(executor):
    return executor, False
  return executor.start(), True


def default_executor(backend: str | None = None, cores: int | None = None) -> Local | Processes:
  """The executor settings a binary uses when the user names none (--executor=auto).

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

  Returns:
    `Local()`, or `Processes(workers=..., threads=2)`.
  """
  if backend is None:
    import jax

    backend = jax.default_backend()
  if backend != "cpu":
    return Local()
  from hx.synth.parallel import available_cpus, default_process_options

  options = default_process_options(cores if cores is not None else len(available_cpus()))
  if options["workers"] <= 1:
    return Local()
  return Processes(**options)
