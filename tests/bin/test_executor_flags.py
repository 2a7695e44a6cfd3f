"""--executor and --schedule (hx.bin.executor_flags), without starting any worker."""

import pytest
from absl import flags
from absl.testing import flagsaver

from hx.bin import executor_flags
from hx.bin.checks import FlagError
from hx.synth.executors import LocalExecutor
from hx.synth.parallel import ProcessExecutor
from hx.synth.schedules import CheapFirst, Estimate, Halving, ToEnd


def setup_module():
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()


def test_executor_from_flags():
  with flagsaver.flagsaver(executor="local"):
    assert isinstance(executor_flags.executor_from_flags(), LocalExecutor)
  with flagsaver.flagsaver(executor="processes:workers=3,threads=1,max_retries=1"):
    pool = executor_flags.executor_from_flags()
    assert isinstance(pool, ProcessExecutor) and (pool.workers, pool.threads, pool.max_retries) == (3, 1, 1)
    assert not pool.lend
  with flagsaver.flagsaver(executor="processes:workers=2,threads=1,lend=true"):
    pool = executor_flags.executor_from_flags()
    assert pool.lend and pool.max_retries == 2  # a key left out keeps the executor's default
  with flagsaver.flagsaver(executor="auto"):
    chosen = executor_flags.executor_from_flags()
    assert isinstance(chosen, (LocalExecutor, ProcessExecutor))  # by the machine's backend and cores
    chosen.close()
  with flagsaver.flagsaver(executor="processes:workers=2,job_timeout=60"):
    pool = executor_flags.executor_from_flags()  # started: its workers start at its first jobs
    assert (pool.workers, pool.job_timeout) == (2, 60.0)
    pool.close()


@pytest.mark.parametrize("text, message", [
    ("process", "--executor: unknown executor 'process'; the executors are auto, local, processes, ray"),
    ("processes:workers=x", "--executor: processes: workers='x' is not an integer or none"),
    ("processes:cores=2", "--executor: processes: unknown key 'cores'; its keys are workers, threads, lend, "
                          "max_retries, job_timeout"),
    ("local:workers=2", "--executor: local: unknown key 'workers'; it takes no keys"),
    ("auto:workers=2", "--executor: auto: unknown key 'workers'; it takes no keys"),
    ("processes:lend=maybe", "--executor: processes: lend='maybe' is not true or false"),
    ("processes:workers=0", "--executor: processes:workers=0: bad Processes settings: workers=0, "
                            "threads=None, max_retries=2"),
])
def test_a_bad_executor_is_one_flag_error(text, message):
  with flagsaver.flagsaver(executor=text):
    with pytest.raises(FlagError) as err:
      executor_flags.executor_from_flags()
  assert str(err.value) == message


def test_schedule_from_flags():
  assert executor_flags.schedule_from_flags() == ToEnd()  # the default: every candidate to the end
  with flagsaver.flagsaver(schedule="halving:first=0.5,eta=2"):
    assert executor_flags.schedule_from_flags() == Halving(first=0.5, eta=2)
  # The flag's defaults are Halving's own (first 2 epochs, eta 4).
  with flagsaver.flagsaver(schedule="halving"):
    assert executor_flags.schedule_from_flags() == Halving() == Halving(first=2.0, eta=4)
  with flagsaver.flagsaver(schedule="halving:val=300,equal=time,reference=median"):
    assert executor_flags.schedule_from_flags() == Halving(val_examples=300, equal="time", reference="median")
  with flagsaver.flagsaver(schedule="cheap_first:probe=40,keep=none,keep_at=none,free=true,eta=2"):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, keep=None, keep_at=None,
                                                              free=True, eta=2)
  with flagsaver.flagsaver(schedule="cheap_first"):
    assert executor_flags.schedule_from_flags() == CheapFirst() == CheapFirst(80, keep=3, keep_at=2)
  with flagsaver.flagsaver(schedule="estimate:method=head,keep=8"):
    assert executor_flags.schedule_from_flags() == Estimate(method="head", keep=8)


@pytest.mark.parametrize("text, message", [
    ("halvin", "--schedule: unknown schedule 'halvin'; the schedules are to_end, halving, cheap_first, "
               "estimate"),
    ("halving:val=0", "--schedule: halving:val=0: Halving.val_examples must be >= 1 or None, got 0"),
    ("halving:eta=1", "--schedule: halving:eta=1: Halving needs eta >= 2 and min_keep >= 1"),
    ("halving:eta=x", "--schedule: halving: eta='x' is not an integer"),
    ("cheap_first:probe=0", "--schedule: cheap_first:probe=0: CheapFirst.probe_steps must be >= 1, got 0"),
    ("cheap_first:first=1", "--schedule: cheap_first: unknown key 'first'; its keys are probe, cheap, keep, "
                            "eta, keep_at, free"),
    ("cheap_first:keep=-1", "--schedule: cheap_first:keep=-1: CheapFirst.keep must be >= 1 or None, got -1"),
    ("to_end:eta=2", "--schedule: to_end: unknown key 'eta'; it takes no keys"),
])
def test_a_bad_schedule_is_one_flag_error(text, message):
  with flagsaver.flagsaver(schedule=text):
    with pytest.raises(FlagError) as err:
      executor_flags.schedule_from_flags()
  assert str(err.value).startswith(message) and "\n" not in str(err.value)
