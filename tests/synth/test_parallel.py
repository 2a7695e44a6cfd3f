"""Executors by name, worker processes, Ray, faults, and successive halving, on the scalar sum task.

Every executor must give the same ranked programs and scores as the local one for a seed; a worker
killed in the middle of a candidate must cost a retry, never a lost or hung synthesis. Tests that start a
Ray cluster are skipped where Ray is not installed.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import threading
import time

import chex
import jax
import numpy as np
import pytest

from hx.compile import TuneConfig, TuneData
from hx.compile.fitting import Prepared
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import (
  Job,
  Local,
  LocalExecutor,
  Processes,
  Ray,
  TaskContext,
  default_executor,
  job_seed,
  run_job,
  start_executor,
)
from hx.synth.parallel import ProcessExecutor, _portable, _restore, available_cpus
from hx.synth.schedules.halving import Halving, Rung
from hx.synth.strategies import Evolutionary
from hx.synth.synthesize import synthesize
from tests.synth.test_synthesize import TINY, sum_task

CONFIG = TuneConfig(epochs=3, batch_size=50)


def name(x):
  """A ranked candidate's program with its fresh functions' types (one program may have several)."""
  return str(x.program) + " " + "; ".join(f"{k}: {t}" for k, t in sorted(x.fresh_types.items()))


def essence(result):
  """What must not depend on the executor: ranked programs with their exact scores and epochs."""
  return [(name(x), x.outcome.status, x.val_score, x.test_score, x.outcome.epochs_run)
          for x in result.entries]


def run(executor, candidates=4, schedule=None, n=300, seed=1, config=CONFIG):
  settings = SynthesisConfig(budget=Budget(candidates=candidates, schedule=schedule), module_config=TINY,
                             tune_configs={"sum_numbers": config})
  return synthesize(sum_task(n=n), None, settings, seed=seed, executor=executor)


class Killer:
  """Kills (SIGKILL) a process that has trained one of our jobs for at least `after` seconds, `times`
  times; `find()` lists (pid, job tag, seconds running) of the busy workers."""

  def __init__(self, find, times=1, after=0.3):
    self.find, self.times, self.after = find, times, after
    self.killed: list[tuple[int, object]] = []
    self.done = threading.Event()
    self.thread = threading.Thread(target=self._loop, daemon=True)

  def _loop(self):
    while not self.done.is_set() and len(self.killed) < self.times:
      for pid, tag, seconds in self.find():
        if seconds >= self.after and pid not in [k[0] for k in self.killed]:
          try:
            os.kill(pid, signal.SIGKILL)
          except ProcessLookupError:
            continue
          self.killed.append((pid, tag))
          break
      time.sleep(0.02)

  def __enter__(self):
    self.thread.start()
    return self

  def __exit__(self, *exc):
    self.done.set()
    self.thread.join(timeout=5)


# --- Names, defaults, schedules (no training) --------------------------------------------------------

def test_executor_settings_start_their_executors_and_clear_errors():
  local, started = start_executor(Local())
  assert isinstance(local, LocalExecutor) and started
  default, started = start_executor(None)
  assert isinstance(default, LocalExecutor) and started
  mine = LocalExecutor()
  assert start_executor(mine) == (mine, False)  # a running one is its caller's to close
  pool, started = start_executor(Processes(workers=3, threads=1, max_retries=1))
  assert isinstance(pool, ProcessExecutor) and started and pool.parallelism == 3 and pool.max_retries == 1
  pool.close()  # never started: nothing to stop
  with pytest.raises(TypeError, match="executor must be hx.synth.Local"):
    start_executor("processes")
  with pytest.raises(ValueError, match="bad ProcessExecutor"):
    ProcessExecutor(workers=0)


def test_default_executor_is_local_up_to_two_cores_and_workers_of_two_cores_beyond():
  assert default_executor("gpu") == Local()
  assert default_executor("cpu", cores=1) == Local()
  assert default_executor("cpu", cores=2) == Local()
  assert default_executor("cpu", cores=16) == Processes(workers=8, threads=2)
  assert default_executor("cpu", cores=5) == Processes(workers=2, threads=2)
  assert default_executor() in (Local(), Processes(**_two_core_workers()))  # this machine


def _two_core_workers() -> dict:
  from hx.synth.parallel import default_process_options

  return default_process_options()


def test_halving_rungs():
  assert Halving(first=1, eta=3).rungs(20, 20) == (Rung(1, 20), Rung(3, 6), Rung(9, 2), Rung(20, 1))
  # The defaults (first rung 2 epochs, eta 4: see hx.synth.schedules.halving): 82 candidate-epochs of 400.
  default = Halving().rungs(20, 20)
  assert default == (Rung(2, 20), Rung(8, 5), Rung(20, 1))
  untils = [0.0] + [r.until for r in default]
  assert sum((untils[i + 1] - untils[i]) * r.keep for i, r in enumerate(default)) == 82
  assert Halving(first=0.5, eta=2, min_keep=2).rungs(3, 5) == (Rung(0.5, 5), Rung(1, 2), Rung(2, 2),
                                                               Rung(3, 2))
  assert Halving(first=5).rungs(4, 7) == (Rung(4, 7),)  # the first rung is already the end
  assert Halving().rungs(20, 0) == ()
  with pytest.raises(ValueError, match="first"):
    Halving(first=0)
  with pytest.raises(ValueError, match="eta"):
    Halving(eta=1)


def test_halving_is_for_the_topdown_strategy():
  with pytest.raises(ValueError, match="top-down"):
    SynthesisConfig(strategy=Evolutionary(), budget=Budget(schedule=Halving()))


def test_an_unreachable_ray_address_is_named():
  pytest.importorskip("ray", reason="Ray is not installed (the 'ray' extra)")
  from hx.synth.parallel import RayExecutor

  with pytest.raises(ConnectionError, match="127.0.0.1:9"):
    RayExecutor(address="127.0.0.1:9")
  with pytest.raises(ValueError, match="HOST:PORT"):
    RayExecutor(address="head-node")
  with pytest.raises(ValueError, match="HOST:PORT"):
    Ray(address="head-node").start()  # the settings start nothing until asked


# --- Training ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_context_crosses_to_another_process_with_its_library():
  task = sum_task(n=120)
  one = SynthesisConfig(budget=Budget(candidates=1), module_config=TINY,
                        tune_configs={"sum_numbers": TuneConfig(epochs=1, batch_size=60)})
  first = synthesize(task, None, one)
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  context = TaskContext(Prepared(data, task.objective, CONFIG), first.library, TINY)
  back, frozen, prefixes = _restore(pickle.loads(pickle.dumps(_portable(context))))
  assert back.library == first.library and back.library.version == first.library.version
  assert set(frozen) == set(first.library.names)
  np.testing.assert_array_equal(np.asarray(back.ready.data.train.targets), np.asarray(task.train.targets))
  # A job trains the same there as here.
  candidate = first.entries[0]
  from hx.synth.space import Candidate
  c = Candidate(candidate.program, tuple(candidate.fresh_types.items()), 0.0, ("k",))
  job = Job(0, c, job_seed(0, c))
  here, there = run_job(context, job).outcome, run_job(back, job, frozen, prefixes).outcome
  assert (here.val_score, here.test_score) == (there.val_score, there.test_score)


@pytest.mark.slow
def test_halving_trains_less_and_survivors_score_as_if_trained_straight():
  config = TuneConfig(epochs=4, batch_size=50)
  full = run(Local(), candidates=4, config=config)
  halved = run(Local(), candidates=4, schedule=Halving(first=1, eta=2), config=config)
  assert halved.candidates_trained == 4
  epochs = sorted(x.outcome.epochs_run for x in halved.entries)
  # Rungs (1 epoch, 4 candidates), (2, 2), (4, 1): 4 + 2 + 2 = 8 candidate-epochs instead of 16.
  assert epochs == [1, 1, 2, 4] and sum(x.outcome.epochs_run for x in full.entries) == 16
  straight = {name(x): x for x in full.entries}
  finished = [x for x in halved.entries if x.outcome.epochs_run == config.epochs]
  assert finished and finished[0] is halved.entries[0]
  for x in finished:  # resumed exactly: the same scores as one uninterrupted run
    same = straight[name(x)]
    assert (x.val_score, x.test_score) == (same.val_score, same.test_score)
  # Paused candidates were never scored on the test split, and rank below those trained further.
  assert all(x.test_score is None for x in halved.entries if x.outcome.epochs_run < config.epochs)
  assert halved.best.test_score is not None
  # Every candidate's learning curve under halving is the start of its uninterrupted one.
  for x in full.entries:
    assert len(x.val_history) == x.outcome.epochs_run and min(x.val_history) == x.val_score
  for x in halved.entries:
    assert x.val_history == straight[name(x)].val_history[:x.outcome.epochs_run]


@pytest.mark.slow
def test_worker_processes_give_the_local_results():
  local = run(Local())
  with ProcessExecutor(workers=2, threads=1) as pool:
    parallel = run(pool)
    assert essence(parallel) == essence(local)
    # Bit for bit: the kept candidates' trained variables too (workers run one XLA thread, this process
    # two: these programs' kernels do not depend on the thread count).
    kept = [(a.outcome.variables, b.outcome.variables) for a, b in zip(local.entries, parallel.entries)
            if a.outcome.variables]
    assert len(kept) == 3
    for a, b in kept:
      assert jax.tree.structure(a) == jax.tree.structure(b)
      chex.assert_trees_all_equal(a, b)
    # The workers stay up for the next task (another context), and give its local results too.
    again = run(pool, candidates=2, seed=2, n=200)
  assert essence(again) == essence(run(Local(), candidates=2, seed=2, n=200))


def _threads(pid):
  """{thread name: [its cores, per thread]} of process `pid`."""
  out = {}
  for tid in os.listdir(f"/proc/{pid}/task"):
    try:
      with open(f"/proc/{pid}/task/{tid}/comm") as f:
        out.setdefault(f.read().strip(), []).append(tuple(sorted(os.sched_getaffinity(int(tid)))))
    except (FileNotFoundError, ProcessLookupError):
      pass
  return out


@pytest.mark.slow
@pytest.mark.skipif(len(available_cpus()) < 2, reason="lending needs two cores")
def test_lending_workers_run_a_lone_job_on_every_core_with_a_pool_of_every_core():
  cpus = tuple(available_cpus()[:2])
  config = TuneConfig(epochs=8, batch_size=50)
  lone_threads, pair_masks = [], []
  stop = threading.Event()
  with ProcessExecutor(workers=2, threads=1, lend=True) as pool:
    def watch():
      while not stop.is_set():
        busy = [w for w in list(pool._pool) if w is not None and w.job is not None]
        if len(busy) == 1:
          lone_threads.append(_threads(busy[0].process.pid))
        elif len(busy) == 2:
          pair_masks.append(sorted(w.mask for w in busy))
        time.sleep(0.02)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
      lone = run(pool, candidates=1, config=config)
      two = run(pool, candidates=4, config=config)
    finally:
      stop.set()
      watcher.join(timeout=5)
    # XLA's pool in a worker has a thread per core of the executor, though the worker is pinned to one.
    assert all(len(_threads(w.process.pid)["tf_XLAEigen"]) == 2 for w in pool._pool)
  # A job alone ran on both cores, every thread of its worker; two at once, each on its own core.
  assert any(all(m == cpus for ms in t.values() for m in ms) for t in lone_threads), lone_threads[-1:]
  assert [(cpus[0],), (cpus[1],)] in pair_masks, pair_masks[-3:]
  assert essence(lone) == essence(run(Local(), candidates=1, config=config))
  assert essence(two) == essence(run(Local(), candidates=4, config=config))


@pytest.mark.slow
def test_worker_processes_save_candidates_where_this_process_finds_them(tmp_path, monkeypatch):
  import hx.compile.checkpoint as ck

  local = run(Local())
  four = SynthesisConfig(budget=Budget(candidates=4), module_config=TINY,
                         tune_configs={"sum_numbers": CONFIG})
  with ProcessExecutor(workers=2, threads=1) as pool:
    saved = synthesize(sum_task(n=300), None, four, seed=1, executor=pool, checkpoint_dir=tmp_path)
  assert essence(saved) == essence(local) and len(os.listdir(tmp_path)) == 4
  # The workers' files have the keys this process computes: a local run finds every result in them.
  def no_training(*args, **kwargs):
    raise AssertionError("trained again")
  monkeypatch.setattr(ck, "tune", no_training)
  again = synthesize(sum_task(n=300), None, four, seed=1, checkpoint_dir=tmp_path)
  assert essence(again) == essence(local)


@pytest.mark.slow
def test_worker_processes_with_halving_move_paused_candidates_between_workers():
  schedule = Halving(first=0.5, eta=2)
  local = run(Local(), candidates=5, schedule=schedule)
  with ProcessExecutor(workers=2, threads=1) as pool:
    assert essence(run(pool, candidates=5, schedule=schedule)) == essence(local)


@pytest.mark.slow
def test_a_killed_worker_process_is_replaced_and_its_job_retried():
  local = run(Local(), config=TuneConfig(epochs=6, batch_size=50))
  with ProcessExecutor(workers=2, threads=1, max_retries=2) as pool:
    with Killer(pool.busy, times=1) as killer:
      result = run(pool, config=TuneConfig(epochs=6, batch_size=50))
    assert len(killer.killed) == 1
    assert essence(result) == essence(local)
    # The pool is whole again for the next run.
    assert essence(run(pool, config=TuneConfig(epochs=6, batch_size=50))) == essence(local)


@pytest.mark.slow
def test_a_job_whose_worker_dies_past_its_retries_is_failed_with_the_reason():
  with ProcessExecutor(workers=2, threads=1, max_retries=0) as pool:
    with Killer(pool.busy, times=1) as killer:
      result = run(pool, config=TuneConfig(epochs=6, batch_size=50))
  assert len(killer.killed) == 1
  failed = [x for x in result.entries if x.outcome.status == "failed"]
  assert len(failed) == 1 and len(result.entries) == 4
  assert failed[0].outcome.reason == "worker process died (signal SIGKILL) 1 times"
  assert failed[0] is result.entries[-1] and math.isnan(failed[0].val_score)


@pytest.mark.slow
def test_a_hung_job_is_killed_after_the_job_timeout_and_reported():
  with ProcessExecutor(workers=1, threads=1, max_retries=1, job_timeout=0.05) as pool:
    result = run(pool, candidates=2)
  assert [x.outcome.status for x in result.entries] == ["failed", "failed"]
  assert all(x.outcome.reason.startswith("worker process died (killed after the job timeout of 0.05 s; ")
             and x.outcome.reason.endswith("2 times") for x in result.entries)


# --- Ray -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster():
  """A local Ray of 2 CPUs for this module's tests."""
  pytest.importorskip("ray", reason="Ray is not installed (the 'ray' extra: pip install 'hx[ray]')")
  from hx.synth.parallel import RayExecutor

  owner = RayExecutor(num_cpus=2)
  yield owner
  owner.close()


def _ray_busy():
  """(pid, None, seconds seen busy) of this test's Ray workers running our task now (Ray titles a worker
  "ray::_ray_train" while it runs that function). Only descendants of this process: the local Ray
  this module started, never another user's."""
  import psutil

  out, now = [], time.monotonic()
  for p in psutil.Process(os.getpid()).children(recursive=True):
    try:
      cmd = " ".join(p.cmdline() or ())
    except psutil.Error:
      continue
    if cmd.startswith("ray::_ray_train"):
      out.append((p.pid, None, now - _ray_busy.since.setdefault(p.pid, now)))
    else:
      _ray_busy.since.pop(p.pid, None)
  return out


_ray_busy.since = {}


@pytest.mark.slow
def test_ray_gives_the_local_results(ray_cluster):
  assert ray_cluster.parallelism == 2
  assert essence(run(ray_cluster)) == essence(run(Local()))
  schedule = Halving(first=0.5, eta=2)
  assert essence(run(ray_cluster, candidates=5, schedule=schedule)) == essence(
      run(Local(), candidates=5, schedule=schedule))


@pytest.mark.slow
def test_ray_retries_a_job_whose_worker_was_killed(ray_cluster):
  from hx.synth.parallel import RayExecutor

  # Jobs of a second or more (warm Ray workers have the executables): long enough to be caught.
  config = TuneConfig(epochs=20, batch_size=50)
  local = run(Local(), n=1200, config=config)
  executor = RayExecutor(max_retries=2)  # joins the module's Ray
  with Killer(_ray_busy, times=1, after=0.2) as killer:
    result = run(executor, n=1200, config=config)
  assert len(killer.killed) == 1
  assert essence(result) == essence(local)


@pytest.mark.slow
def test_ray_reports_a_job_lost_past_its_retries(ray_cluster):
  from hx.synth.parallel import RayExecutor

  executor = RayExecutor(max_retries=0)
  with Killer(_ray_busy, times=1, after=0.2) as killer:
    result = run(executor, n=1200, config=TuneConfig(epochs=20, batch_size=50))
  assert len(killer.killed) == 1 and len(result.entries) == 4
  failed = [x for x in result.entries if x.outcome.status == "failed"]
  assert len(failed) == 1 and failed[0].outcome.reason.startswith("Ray worker lost 1 times")
