"""Executor settings as values (`hx.synth.executors`: `Local`, `Processes`, `Ray`): compared and refused
without starting any worker; `synthesize` takes them, or a running executor, and nothing else."""

import dataclasses

import pytest

from hx.synth.executors import (
  Local,
  LocalExecutor,
  Processes,
  Ray,
  check_executor,
  default_executor,
  start_executor,
)
from hx.synth.parallel import ProcessExecutor


def test_settings_are_values_that_start_nothing_until_asked():
  assert Local() == Local() and Processes(workers=2) == Processes(2) != Processes(workers=3)
  assert Processes() == Processes(workers=None, threads=None, lend=False, max_retries=2, job_timeout=None)
  assert Ray() == Ray(address=None, num_cpus=None, cpus_per_job=1, max_retries=2, init_options=None)
  assert hash(Ray(init_options={"runtime_env": {}})) == hash(Ray())  # a dict of ray.init options
  with pytest.raises(dataclasses.FrozenInstanceError):
    Processes().workers = 4
  pool = Processes(workers=2, threads=1, lend=True, max_retries=1, job_timeout=30.0).start()
  try:
    assert isinstance(pool, ProcessExecutor) and (pool.workers, pool.threads, pool.lend) == (2, 1, True)
    assert (pool.max_retries, pool.job_timeout) == (1, 30.0)
  finally:
    pool.close()  # no worker started: they start at the first jobs
  assert isinstance(Local().start(), LocalExecutor)


@pytest.mark.parametrize("make, message", [
    (lambda: Processes(workers=0), "bad Processes settings: workers=0, threads=None, max_retries=2"),
    (lambda: Processes(threads=-1), "bad Processes settings: workers=None, threads=-1, max_retries=2"),
    (lambda: Processes(max_retries=-1), "bad Processes settings: workers=None, threads=None, max_retries=-1"),
    (lambda: Processes(job_timeout=0), "Processes.job_timeout must be positive or None, got 0"),
    (lambda: Ray(cpus_per_job=0), "bad Ray settings: cpus_per_job=0, max_retries=2"),
    (lambda: Ray(max_retries=-1), "bad Ray settings: cpus_per_job=1, max_retries=-1"),
])
def test_settings_that_cannot_work_are_refused_when_made(make, message):
  with pytest.raises(ValueError) as err:
    make()
  assert str(err.value) == message


@pytest.mark.parametrize("given, spelled", [
    ("processes", " (the name 'processes' is how the binaries' --executor spells one)"),
    ("local", " (the name 'local' is how the binaries' --executor spells one)"),
    (Processes, ""),
    (4, ""),
])
def test_anything_else_is_a_type_error_naming_what_to_pass(given, spelled):
  with pytest.raises(TypeError) as err:
    start_executor(given)
  assert str(err.value) == ("executor must be hx.synth.Local(), hx.synth.Processes(...), hx.synth.Ray(...) "
                            f"or a running Executor, got {given!r}{spelled}")
  for fine in (None, Local(), Processes(), Ray(), LocalExecutor()):
    check_executor(fine)


def test_a_synthesis_refuses_an_executor_name_before_any_work():
  from hx.synth.synthesize import synthesize

  with pytest.raises(TypeError, match="executor must be hx.synth.Local()"):
    synthesize(None, None, executor="processes")


def test_the_default_settings_are_values_too():
  assert default_executor("tpu") == Local()
  assert default_executor("cpu", cores=4) == Processes(workers=2, threads=2)
