"""The absl flags that say where candidates train and on what schedule, shared by the binaries: one flag
each, its value a name and settings, `NAME:KEY=VALUE,...` (`hx.synth.options`).

    from hx.bin.executor_flags import executor_from_flags, schedule_from_flags
    executor = executor_from_flags()      # an Executor; close() it when done
    budget = Budget(candidates=20, schedule=schedule_from_flags())

    --executor=processes:workers=4,threads=1,lend=true,max_retries=2   (hx.bin.spellings.parse_executor)
    --schedule=halving:eta=4,first=2,val=200                           (hx.synth.schedules.parse_schedule)

--executor=auto (the default) is `hx.synth.executors.default_executor()`: the calling process on an
accelerator and on CPUs of up to 2 cores (on the 2-core machine two workers of one core were not faster
than one process of two: benchmarks/RESULTS.md), worker processes of 2 cores each on larger CPUs.
--schedule=to_end (the default) trains every candidate to the end, the paper's way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from absl import flags

from hx.bin.checks import FlagError

if TYPE_CHECKING:
  from hx.synth.executors import Executor
  from hx.synth.schedules import CheapFirst, Estimate, Halving, ToEnd

__all__ = ["executor_from_flags", "schedule_from_flags"]

_EXECUTOR = flags.DEFINE_string(
    "executor", "auto", "Where candidates train: auto, local, processes[:KEY=VALUE,...] or "
    "ray[:KEY=VALUE,...] (keys: BUILD.md, \"Executors and schedules\").")
_SCHEDULE = flags.DEFINE_string(
    "schedule", "to_end", "How candidates train: to_end (the paper's), halving, cheap_first or estimate, "
    "[:KEY=VALUE,...] (keys: BUILD.md, \"Executors and schedules\").")


def executor_from_flags() -> Executor:
  """The Executor --executor describes (`hx.bin.spellings.parse_executor`), started.

  Raises:
    FlagError: --executor names no executor, or a key or value it does not take.
    ValueError, ImportError, ConnectionError: the executor cannot start (settings it refuses, no Ray, no
      cluster at the address).
  """
  from hx.bin.spellings import parse_executor

  try:
    settings = parse_executor(_EXECUTOR.value)
  except ValueError as err:
    raise FlagError(f"--executor: {err}") from None
  return settings.start()


def schedule_from_flags() -> ToEnd | Halving | CheapFirst | Estimate:
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
