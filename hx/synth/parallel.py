"""Executors that train candidates in parallel: worker processes on this machine, or Ray tasks.

    executor = ProcessExecutor(workers=2, threads=1)     # hx.synth.Processes(workers=2, threads=1).start()
    executor = RayExecutor(address="auto")               # hx.synth.Ray(address="auto").start()

Both implement `hx.synth.executors.Executor`: `run(context, jobs)` yields one `JobResult` per job, in
the order they finish, and `close()`. What they share:

- The task's data and the library travel once per task, not once per candidate: a process worker receives
  the pickled `TaskContext` once and keeps it (on its device) for every job of that task; a Ray cluster
  holds it once in its object store, and each Ray worker process fetches it once and keeps it.
- Each job compiles its candidate (in a new worker, from JAX's persistent compilation cache: see
  `hx.compile.cache`) and trains it with Tune, exactly as `LocalExecutor` does (`run_job`), with the
  job's own seed: results do not depend on which worker ran a job, or when.
- Faults: a worker that dies or is killed while training a job (out of memory, a signal, a lost
  machine) is replaced and the job is started again on another worker, up to `max_retries` more times;
  then the job is reported failed, with the reason ("worker process died (signal SIGKILL) 3 times").
  A job never goes missing and `run` never waits on a dead worker. An exception inside a job is not
  retried (it would happen again): the job is reported failed with the exception.
- Threads: XLA:CPU sizes its thread pool by the CPUs the process may run on (its affinity mask; jax
  0.10's `XLA_FLAGS` thread options do not bound it: measured, see benchmarks/RESULTS.md), so a process
  worker is pinned to `threads` cores of its own before JAX starts, and N workers do not each start a
  pool as large as the machine. Under `ProcessExecutor(lend=True)` each worker's pool has a thread per
  core of the executor, its threads pinned to its own cores, and widened to idle workers' cores while
  no job waits.
- Determinism: a job's result depends only on its seed and on the number of XLA threads of the process
  that trains it. XLA:CPU splits large reductions (the CNN's weight gradient, a matmul over every image
  of the batch) between its threads, so one thread and two add in different orders: measured on the
  count_digit candidates, workers of one core give scores equal to a two-core local run to about 7
  significant digits (the same ranking), and workers of two cores give them bit for bit; Ray's and the
  process pool's one-core workers agree bit for bit (benchmarks/RESULTS.md). The tests check that
  processes and Ray give the local results bit for bit on programs without a CNN.

Ray is optional (`pip install 'hx[ray]'`); this module imports it only when a `RayExecutor` is made.
"""

from __future__ import annotations

import collections
import dataclasses
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
import traceback
import uuid
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from hx.atomic import WriteFailed
from hx.synth.jobs import Job, JobResult, TaskContext, failed_result, run_job

if TYPE_CHECKING:
  from multiprocessing.connection import Connection

  import chex
  import ray

  from hx.compile.memo import PrefixTables

__all__ = ["ProcessExecutor", "RayExecutor", "default_process_options", "available_cpus"]

_Restored = tuple[TaskContext, "Mapping[str, chex.ArrayTree]", "PrefixTables"]
"""A task's context as a worker holds it (`_restore`): with the library's variables on the device and the
frozen-prefix tables its candidates share."""


def available_cpus() -> list[int]:
  """The CPUs this process may run on (its affinity mask), sorted."""
  try:
    return sorted(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    return list(range(os.cpu_count() or 1))


def default_process_options(cores: int | None = None) -> dict[str, int]:
  """`ProcessExecutor` options of `hx.synth.executors.default_executor` for a machine of `cores` cores
  (default: those this process may use): workers of 2 cores each, as one paper-sized candidate keeps about
  two cores busy (see `default_executor` for the measurements)."""
  cores = len(available_cpus()) if cores is None else cores
  threads = min(2, max(1, cores))
  return {"workers": max(1, cores // threads), "threads": threads}


# --- Moving a task's context to another process -----------------------------------------------------

def _portable(context: TaskContext) -> TaskContext:
  """`context` with host (NumPy) data and a library in a picklable form, for another process."""
  import jax
  import numpy as np

  data = jax.tree.map(np.asarray, jax.device_get(context.ready.data))
  library = context.library
  if library is not None:
    # hx.Library keeps a read-only name index that pickle cannot copy: send its entries' fields and
    # rebuild it (which checks every entry again) on the other side.
    library = ("hx.Library", tuple((e.name, e.spec, e.provenance, e.structure, e.leaves)
                                   for e in library.entries), library.counters)
  return context.with_data(data, library=library)


def _restore(context: TaskContext) -> _Restored:
  """A context received from `_portable`, with its data and the library's variables on the device, and
  the frozen-prefix tables (`hx.compile.memo.PrefixTables`) its candidates share in this process."""
  import jax

  from hx.compile.memo import PrefixTables
  from hx.synth.library import Entry, Library

  library = context.library
  if isinstance(library, tuple) and library and library[0] == "hx.Library":
    library = Library(tuple(Entry(*fields) for fields in library[1]), library[2])
  context = context.with_data(context.ready.data.on_device(), library=library)
  frozen = jax.device_put(library.variables()) if library is not None else {}
  return context, frozen, PrefixTables()


def _run_safely(context: TaskContext, job: Job, frozen: Mapping[str, chex.ArrayTree], prefixes: PrefixTables
                ) -> JobResult | WriteFailed:
  """`run_job`, with any other exception reported as a failed job (a worker must not die of one); a write
  the system refused (`hx.atomic.WriteFailed`: a full disk) is returned, for the parent to raise: it is
  the run's to stop, not the candidate's to fail."""
  start = time.perf_counter()
  try:
    return run_job(context, job, frozen, prefixes)
  except WriteFailed as err:
    return err
  except Exception as err:  # noqa: BLE001 -- reported with its traceback, not swallowed
    tb = traceback.format_exc(limit=8)
    return failed_result(job, f"{type(err).__name__}: {err}\n{tb}", time.perf_counter() - start)


def _death_reason(exitcode: int | None) -> str:
  if exitcode is not None and exitcode < 0:
    try:
      return f"signal {signal.Signals(-exitcode).name}"
    except ValueError:
      return f"signal {-exitcode}"
  return f"exit code {exitcode}"


# --- Worker processes on this machine ------------------------------------------------------------------

def pin_threads(pid: int, cpus: Sequence[int]) -> None:
  """Pins every thread of process `pid` to `cpus` (a thread that ends meanwhile is skipped). Threads it
  starts later inherit the mask of the thread that starts them."""
  for tid in os.listdir(f"/proc/{pid}/task"):
    try:
      os.sched_setaffinity(int(tid), set(cpus))
    except (ProcessLookupError, FileNotFoundError):
      pass


def worker_main(fd: int, cpus: Sequence[int] | None, pool: Sequence[int] | None = None) -> None:
  """A process worker (`python -m hx.synth.worker FD CPUS [POOL]`): pins itself to `cpus` before JAX
  makes its thread pool, then serves messages on the connection at file descriptor `fd`. With `pool`,
  JAX makes its backend (and its thread pool) on `pool`'s cores first, and every thread is then pinned
  to `cpus` (`ProcessExecutor(lend=True)`).

  Messages: ("context", id) followed by the pickled context as bytes; ("job", id, job) -> ("result",
  JobResult or WriteFailed); ("stop",). Only the latest context is kept (one task at a time).
  """
  from multiprocessing.connection import Connection

  if cpus and pool:
    import jax

    os.sched_setaffinity(0, set(pool))
    jax.devices()  # XLA:CPU's client and its thread pool, sized by the mask: measured, see `lend`
    pin_threads(os.getpid(), cpus)
  elif cpus:
    os.sched_setaffinity(0, set(cpus))
  conn = Connection(fd)
  contexts: dict[str, _Restored] = {}
  while True:
    try:
      message = conn.recv()
    except (EOFError, OSError):
      return
    if message[0] == "stop":
      return
    if message[0] == "context":
      blob = conn.recv_bytes()
      contexts.clear()
      contexts[message[1]] = _restore(pickle.loads(blob))
      continue
    _, context_id, job = message
    context, frozen, prefixes = contexts[context_id]
    result = _run_safely(context, job, frozen, prefixes)
    try:
      conn.send(("result", result))
    except (BrokenPipeError, OSError):
      return


@dataclasses.dataclass(eq=False)
class _Worker:
  process: subprocess.Popen
  conn: Connection
  cpus: tuple[int, ...] | None
  context_id: str | None = None
  job: Job | None = None
  started: float = 0.0
  mask: tuple[int, ...] | None = None  # the cores its threads run on now (`lend`)


def _package_root() -> str:
  import hx

  return os.path.dirname(os.path.dirname(os.path.abspath(hx.__file__)))


class ProcessExecutor:
  """Trains jobs in `workers` processes on this machine, each pinned to `threads` cores.

  Workers start at the first `run` (each a new interpreter running `python -m hx.synth.worker`: JAX
  cannot be forked, and a new interpreter does not re-run the caller's script as multiprocessing's
  spawn would) and serve every later task until `close()`; a worker that dies is replaced.

  Args:
    workers: processes (default: one per core this process may use, divided by `threads`).
    threads: cores each worker may run on, and so the size of its XLA thread pool (default: the cores
      divided by `workers`, at least 1). Worker i gets cores i*threads .. (i+1)*threads - 1 (wrapping
      around when workers * threads exceeds the cores); 0: do not pin (each worker may use every core).
    max_retries: times a job is started again after its worker died under it.
    job_timeout: seconds a job may run before its worker is killed (and the job retried); None: no limit.
    lend: lend idle workers' cores to busy ones. Every worker's XLA thread pool is then sized by all the
      pool's cores (it starts on them, and is pinned to its own `threads` cores once JAX's backend
      exists); while no job waits and some workers are idle, the busy ones run on their cores and the
      idle ones'. Ours, for the last rungs of successive halving, which train one candidate while the
      other cores idle (on GS2's shortest path, minutes of a 20-minute search; what lending saved there:
      benchmarks/notes/2026-11-24-gs2-reference-and-lending.md). Unlike a new
      wide worker (tried: its start and its copy of the task cost what it gained), the borrower keeps
      its data and tables. A job's arithmetic is then that of a pool of that many threads, whichever
      cores it runs on (the thread count decides it: see Determinism in the module docstring), and no
      longer the one-thread workers' of `lend=False`: on GS2 the winner's scores moved, not only in their
      last digits (benchmarks/notes/2026-11-24-gs2-reference-and-lending.md).
  """

  def __init__(self, workers: int | None = None, threads: int | None = None, max_retries: int = 2,
               job_timeout: float | None = None, lend: bool = False):
    cpus = available_cpus()
    if (workers is not None and workers < 1) or (threads is not None and threads < 0) or max_retries < 0:
      raise ValueError(f"bad ProcessExecutor settings: workers={workers}, threads={threads}, "
                       f"max_retries={max_retries}")
    if workers is None:
      workers = max(1, len(cpus) // threads) if threads else len(cpus)
    if threads is None:
      threads = max(1, len(cpus) // workers)
    if job_timeout is not None and job_timeout <= 0:
      raise ValueError(f"job_timeout must be positive or None, got {job_timeout}")
    self.workers, self.threads = workers, threads
    self.max_retries, self.job_timeout = max_retries, job_timeout
    self.lend = lend and bool(threads) and workers > 1
    self._cpus = cpus
    self._pool: list[_Worker | None] = [None] * workers
    self._context: TaskContext | None = None
    self._context_id: str | None = None
    self._blob: bytes | None = None
    self._failed_starts = 0

  @property
  def parallelism(self) -> int:
    return self.workers

  def busy(self) -> list[tuple[int, int, float]]:
    """(process id, job index, seconds since it started) of each worker training a job now (for
    monitoring, and for tests that kill a worker mid-candidate)."""
    now = time.monotonic()
    return [(w.process.pid, w.job.index, now - w.started) for w in list(self._pool)
            if w is not None and w.job is not None]

  def _slot_cpus(self, slot: int) -> tuple[int, ...] | None:
    if not self.threads:
      return None
    return tuple(self._cpus[(slot * self.threads + k) % len(self._cpus)] for k in range(self.threads))

  def _pool_cpus(self) -> tuple[int, ...]:
    return tuple(sorted({c for slot in range(self.workers) for c in self._slot_cpus(slot)}))

  def _lend(self, pending: bool) -> None:
    """Under `lend`: each busy worker runs on its cores and, while no job waits, the idle workers'."""
    if not self.lend:
      return
    busy = [w for w in self._pool if w is not None and w.job is not None]
    idle = set() if pending else set(self._pool_cpus()).difference(
        c for w in busy for c in w.cpus)
    for worker in busy:
      mask = tuple(sorted(set(worker.cpus) | idle))
      if mask != worker.mask:
        try:
          pin_threads(worker.process.pid, mask)
        except (FileNotFoundError, ProcessLookupError):
          continue  # it died: the run loop sees its closed connection
        worker.mask = mask

  def _start(self, slot: int) -> _Worker:
    # A socket pair: the worker gets one end as an inherited file descriptor; its end of the pair closes
    # when it dies, which wakes `wait` here (EOF), so a dead worker is noticed at once.
    ours, theirs = multiprocessing.Pipe(duplex=True)
    cpus = self._slot_cpus(slot)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "hx.synth.worker", str(theirs.fileno()),
               ",".join(map(str, cpus)) if cpus else "-"]
    if self.lend:
      command.append(",".join(map(str, self._pool_cpus())))
    process = subprocess.Popen(command, pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
    theirs.close()
    worker = _Worker(process, ours, cpus, mask=cpus)
    self._pool[slot] = worker
    return worker

  def _publish(self, context: TaskContext) -> None:
    if context is not self._context:
      # Pickled once per task; each worker receives the same bytes once.
      self._blob = pickle.dumps(_portable(context), protocol=pickle.HIGHEST_PROTOCOL)
      self._context, self._context_id = context, uuid.uuid4().hex

  def _stop(self, slot: int) -> str:
    """Ends the worker in `slot` (killing it if it still runs); returns why it ended."""
    worker = self._pool[slot]
    self._pool[slot] = None
    if worker is None:
      return "no worker"
    if worker.process.poll() is None:
      worker.process.kill()
    try:
      code = worker.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
      code = None
    worker.conn.close()
    return _death_reason(code)

  def run(self, context: TaskContext, jobs: Sequence[Job]) -> Iterator[JobResult]:
    self._publish(context)
    pending = collections.deque(jobs)
    attempts: dict[int, int] = collections.Counter()
    deaths: dict[int, list[str]] = collections.defaultdict(list)
    try:
      while pending or any(w is not None and w.job is not None for w in self._pool):
        self._hand_out(pending, attempts)
        busy = {slot: w for slot, w in enumerate(self._pool) if w is not None and w.job is not None}
        if not busy:
          continue
        self._lend(bool(pending))
        timeout = None
        if self.job_timeout is not None:
          timeout = max(0.0, min(w.started + self.job_timeout for w in busy.values()) - time.monotonic())
        ready = set(wait([w.conn for w in busy.values()], timeout=timeout))
        yield from self._collect(busy, ready, pending, attempts, deaths)
    finally:
      # The caller stopped early (or an error): workers still training a job of this run are killed, so
      # the next run starts with idle workers.
      for slot, worker in enumerate(self._pool):
        if worker is not None and worker.job is not None:
          self._stop(slot)

  def _hand_out(self, pending: collections.deque, attempts: dict[int, int]) -> None:
    """Hands a job of `pending` to every idle worker (starting workers that are not running), counting
    its attempts; a worker that died before it could take its job is replaced and the job kept."""
    for slot in range(self.workers):
      if not pending:
        break
      worker = self._pool[slot] or self._start(slot)
      if worker.job is not None:
        continue
      job = pending.popleft()
      try:
        if worker.context_id != self._context_id:
          worker.conn.send(("context", self._context_id))
          worker.conn.send_bytes(self._blob)
          worker.context_id = self._context_id
        worker.conn.send(("job", self._context_id, job))
      except (BrokenPipeError, ConnectionResetError, OSError):
        # It died before it could take the job, which never started: replace the worker.
        pending.appendleft(job)
        reason = self._stop(slot)
        self._failed_starts += 1
        if self._failed_starts > 3 * self.workers:
          raise RuntimeError(f"hx worker processes die before taking a job ({reason}); see their "
                             "output above") from None
        continue
      attempts[job.index] += 1
      worker.job, worker.started = job, time.monotonic()

  def _collect(self, busy: dict[int, _Worker], ready: set, pending: collections.deque,
               attempts: dict[int, int], deaths: dict[int, list[str]]) -> Iterator[JobResult]:
    """The results of the `busy` workers whose connections are `ready`; a job whose worker died or ran
    past the job timeout goes back to `pending`, or fails once past its retries."""
    for slot, worker in busy.items():
      job = worker.job
      died: str | None = None
      if worker.conn in ready:
        try:
          _, result = worker.conn.recv()
        except (EOFError, OSError):
          died = self._stop(slot)
        else:
          worker.job = None
          self._failed_starts = 0
          if isinstance(result, WriteFailed):  # a full disk stops the run, in the parent as in `local`
            raise result
          yield dataclasses.replace(result, attempts=attempts[job.index])
          continue
      elif self.job_timeout is not None and time.monotonic() - worker.started >= self.job_timeout:
        self._stop(slot)
        died = f"killed after the job timeout of {self.job_timeout:g} s"
      if died is None:
        continue
      deaths[job.index].append(died)
      if attempts[job.index] > self.max_retries:
        yield failed_result(job, f"worker process died ({'; '.join(deaths[job.index])}) "
                                 f"{attempts[job.index]} times", attempts=attempts[job.index])
      else:
        pending.appendleft(job)

  def close(self) -> None:
    for slot, worker in enumerate(self._pool):
      if worker is None:
        continue
      try:
        worker.conn.send(("stop",))
        worker.process.wait(timeout=10)
      except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
        pass
      self._stop(slot)
    self._context = self._blob = None

  def __enter__(self) -> ProcessExecutor:
    return self

  def __exit__(self, *exc: object) -> None:
    self.close()

  def __del__(self) -> None:
    # Workers must not outlive an executor nobody closed.
    try:
      for worker in self._pool:
        if worker is not None and worker.process.poll() is None:
          worker.process.kill()
    except Exception:  # noqa: BLE001 -- interpreter shutdown
      pass


# --- Ray ---------------------------------------------------------------------------------------------

# In a Ray worker process: the contexts it has fetched (by id), on its device, with the library's
# variables; the latest only, as a worker serves one task at a time.
_RAY_CONTEXTS: dict[str, _Restored] = {}
_RAY_PINNED = False


def _pin_ray_worker(threads: int) -> None:
  """Pins this Ray worker process to `threads` cores of its own (before JAX makes its thread pool).

  Ray assigns CPUs as counts, not as cores, so each worker claims a slot with an exclusive lock on
  /tmp/hx-ray-cpu-slot-<i> (released by the kernel when the process dies) and takes the cores of
  that slot, as ProcessExecutor's worker i does.
  """
  global _RAY_PINNED
  if _RAY_PINNED or not threads:
    return
  import fcntl
  import tempfile

  cpus = available_cpus()
  slots = max(1, len(cpus) // threads)
  for slot in range(slots):
    handle = open(os.path.join(tempfile.gettempdir(), f"hx-ray-cpu-slot-{slot}"), "a")  # noqa: SIM115
    try:
      fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
      handle.close()
      continue
    globals()["_RAY_SLOT_LOCK"] = handle  # kept open for the life of the process
    os.sched_setaffinity(0, {cpus[(slot * threads + k) % len(cpus)] for k in range(threads)})
    break
  _RAY_PINNED = True


def _ray_train(boxed_context: list, context_id: str, job: Job, threads: int) -> JobResult | WriteFailed:
  """The Ray task: one job, with the task's context fetched from the object store once per worker.

  The context's reference comes inside a list so that Ray does not fetch it for every task.
  """
  import ray

  _pin_ray_worker(threads)
  if context_id not in _RAY_CONTEXTS:
    _RAY_CONTEXTS.clear()
    _RAY_CONTEXTS[context_id] = _restore(ray.get(boxed_context[0]))
  context, frozen, prefixes = _RAY_CONTEXTS[context_id]
  return _run_safely(context, job, frozen, prefixes)


def _check_reachable(address: str, timeout: float = 10.0) -> None:
  """Raises ConnectionError naming `address` when nothing listens there (ray.init would retry for
  minutes). "auto" and "ray://" addresses are left to Ray (it fails fast for them)."""
  import socket

  if address == "auto" or "://" in address:
    return
  host, _, port = address.rpartition(":")
  if not host or not port.isdigit():
    raise ValueError(f"a Ray address is 'auto' or HOST:PORT (e.g. 10.0.0.1:6379), got {address!r}")
  try:
    socket.create_connection((host, int(port)), timeout=timeout).close()
  except OSError as err:
    raise ConnectionError(f"no Ray cluster answers at address {address!r} ({err}). Start its head with "
                          "`ray start --head --port=6379` on that machine, or pass no address for a "
                          "local Ray.") from None


class RayExecutor:
  """Trains each job as a Ray task: on a local Ray, or on a cluster across machines.

  Args:
    address: None: start a local Ray (unless this process is connected to one already) with `num_cpus`
      CPUs; "auto": join the cluster started on this machine (`ray start --head`); "HOST:PORT": join
      the cluster whose head is there.
    num_cpus: CPUs of a local Ray (default: every core this process may use); ignored with an address.
    cpus_per_job: Ray CPUs each job holds (its worker is pinned to that many cores of its machine).
    max_retries: times Ray starts a job again after its worker process or machine died under it.
    init_options: more `ray.init` arguments (e.g. {"runtime_env": {...}}).

  Raises:
    ImportError: Ray is not installed.
    ConnectionError: no Ray cluster answers at `address`.
  """

  def __init__(self, address: str | None = None, num_cpus: int | None = None, cpus_per_job: int = 1,
               max_retries: int = 2, init_options: dict[str, Any] | None = None):
    try:
      import ray
    except ImportError as err:
      raise ImportError("hx.synth.Ray() needs Ray: pip install 'hx[ray]' (or pip install ray)") from err
    if cpus_per_job < 1 or max_retries < 0:
      raise ValueError(f"bad RayExecutor settings: cpus_per_job={cpus_per_job}, max_retries={max_retries}")
    self._ray = ray
    self._owns = False
    if not ray.is_initialized():
      options = dict(init_options or {})
      options.setdefault("logging_level", "warning")
      options.setdefault("log_to_driver", True)
      if address is None:
        # "local": always a new Ray of our own, even where `ray start` left a cluster running.
        options.setdefault("num_cpus", num_cpus or len(available_cpus()))
        options.setdefault("include_dashboard", False)
      else:
        _check_reachable(address)
      try:
        ray.init(address="local" if address is None else address, **options)
      except (ConnectionError, RuntimeError, TimeoutError) as err:
        where = "a new local Ray" if address is None else f"the Ray cluster at address {address!r}"
        raise ConnectionError(f"cannot reach {where}: {err}. Start one with `ray start --head` (and "
                              "`ray start --address=HEAD:6379` on the other machines), or pass no "
                              "address for a local Ray.") from err
      self._owns = True
    self.address, self.cpus_per_job, self.max_retries = address, cpus_per_job, max_retries
    self._remote = ray.remote(_ray_train).options(num_cpus=cpus_per_job, max_retries=max_retries,
                                                  retry_exceptions=False)
    self._context: TaskContext | None = None
    self._context_ref: ray.ObjectRef | None = None
    self._context_id: str | None = None

  @property
  def parallelism(self) -> int:
    """Jobs the cluster runs at once (its CPUs divided by `cpus_per_job`, at least 1)."""
    cpus = self._ray.cluster_resources().get("CPU", 1)
    return max(1, int(cpus // self.cpus_per_job))

  def _publish(self, context: TaskContext) -> None:
    if context is not self._context:
      # Once per task: the cluster's workers read this one copy from the object store.
      self._context_ref = self._ray.put(_portable(context))
      self._context, self._context_id = context, uuid.uuid4().hex

  def run(self, context: TaskContext, jobs: Sequence[Job]) -> Iterator[JobResult]:
    ray = self._ray
    self._publish(context)
    started = time.perf_counter()
    refs = {self._remote.remote([self._context_ref], self._context_id, job, self.cpus_per_job): job
            for job in jobs}
    pending = list(refs)
    try:
      while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
          job = refs[ref]
          try:
            result = ray.get(ref)
          except ray.exceptions.RayError as err:
            # Ray retried the job max_retries times (a worker or node died under it each time).
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            yield failed_result(job, f"Ray worker lost {self.max_retries + 1} times ({type(err).__name__}: "
                                     f"{reason})", time.perf_counter() - started, self.max_retries + 1)
            continue
          if isinstance(result, WriteFailed):  # a full disk stops the run, as in `local`
            raise result
          yield result
    finally:
      for ref in pending:
        ray.cancel(ref, force=True)

  def close(self) -> None:
    self._context = self._context_ref = None
    if self._owns and self._ray.is_initialized():
      self._ray.shutdown()
      self._owns = False

  def __enter__(self) -> RayExecutor:
    return self

  def __exit__(self, *exc: object) -> None:
    self.close()
