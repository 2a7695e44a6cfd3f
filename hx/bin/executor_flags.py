"""The absl flags that say where candidates train and on what schedule, shared by the binaries: one flag
each, its value a name and settings, `NAME:KEY=VALUE,...` (`hx.synth.options`).

    from hx.bin.executor_flags import executor_from_flags, schedule_from_flags
    executor = executor_from_flags()      # an Executor; close() it when done
    budget = Budget(candidates=20, schedule=schedule_from_flags())

    --executor=processes:workers=4,threads=1,lend=true,max_retries=2   (hx.synth.executors.parse_executor)
    --schedule=halving:eta=4,first=2,val=200                           (hx.synth.schedules.parse_schedule)

--executor=auto (the default) is `hx.synth.executors.default_executor()`: the calling process on an
accelerator and on CPUs of up to 2 cores (on the 2-core machine two workers of one core were not faster
than one process of two: benchmarks/RESULTS.md), worker processes of 2 cores each on larger CPUs.
--schedule=to_end (the default) trains every candidate to the end, the paper's way.
"""

from __future__ import annotations

from typing import Any

from absl import flags

from hx.bin.checks import FlagError

__all__ = ["executor_from_flags", "schedule_from_flags"]

_EXECUTOR = flags.DEFINE_string(
    "executor", "auto",
    "Where HOUDINI's candidates train: auto (hx.synth.executors.default_executor: this process on up to 2 "
    "cores and on accelerators, workers of 2 cores on larger CPUs), local (this process), "
    "processes[:workers=N,threads=N,lend=true,max_retries=2,job_timeout=S] (worker processes on this "
    "machine; threads: cores per worker, 0 no pinning; lend: idle workers' cores lent to busy ones, "
    "hx.synth.parallel.ProcessExecutor), ray[:address=auto|HOST:PORT,num_cpus=N,cpus_per_job=1,"
    "max_retries=2] (Ray tasks; no address: a local Ray with every core). A key left out keeps its "
    "default; none is None.")
_SCHEDULE = flags.DEFINE_string(
    "schedule", "to_end",
    "How HOUDINI's candidates train (hx.synth.schedules): to_end (every candidate to the end, the "
    "paper's), halving[:first=2,eta=4,equal=epochs|time,reference=geomean|median,val=N] (successive "
    "halving: rungs of equal epochs or time; val: the rungs before the last score N validation "
    "examples), cheap_first[:probe=80,keep=3,keep_at=2,free=false,eta=N] (every candidate probed for "
    "`probe` optimiser steps, the cheap ones and the costly ones ahead of them trained to the end; keep: "
    "how many cheap ones, none for all; keep_at: the epochs where they are compared, none for the probe; "
    "eta: the costly ones in halving rungs), estimate[:method=short|head,keep=4,share=0.1,max_steps=300,"
    "val=300] (every candidate estimated, the best trained to the end). A key left out keeps its "
    "default; none is None. None but to_end is the paper's; benchmarks/RESULTS.md compares them.")


def executor_from_flags() -> Any:
  """The Executor --executor describes (`hx.synth.executors.parse_executor`, `make_executor`).

  Raises:
    FlagError: --executor names no executor, or a key or value it does not take.
    ValueError, ImportError, ConnectionError: the executor cannot start (settings it refuses, no Ray, no
      cluster at the address).
  """
  from hx.synth.executors import make_executor, parse_executor

  try:
    name, options = parse_executor(_EXECUTOR.value)
  except ValueError as err:
    raise FlagError(f"--executor: {err}") from None
  return make_executor(name, **options)


def schedule_from_flags() -> Any:
  """The schedule --schedule describes (`hx.synth.schedules.parse_schedule`): `ToEnd()` by default.

  Raises:
    FlagError: --schedule names no schedule, or a key or value it does not take, or settings the
      schedule refuses (an eta below 2, say).
  """
  from hx.synth.schedules import parse_schedule

  try:
    return parse_schedule(_SCHEDULE.value)
  except ValueError as err:
    raise FlagError(f"--schedule: {err}") from None
