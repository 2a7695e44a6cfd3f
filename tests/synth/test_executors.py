"""Executors named as text (`hx.synth.executors.parse_executor`), without starting any worker."""

import pytest

import hx.synth.executors as executors
from hx.synth.executors import EXECUTOR_KEYS, EXECUTORS, LocalExecutor, make_executor, parse_executor


def test_text_gives_make_executors_name_and_options():
  assert parse_executor("local") == ("local", {})
  assert parse_executor("processes:workers=4,threads=1,lend=true,max_retries=2") == (
      "processes", {"workers": 4, "threads": 1, "lend": True, "max_retries": 2})
  assert parse_executor("processes:threads=0,job_timeout=none") == ("processes", {"threads": 0,
                                                                                 "job_timeout": None})
  assert parse_executor("ray:address=auto,max_retries=2") == ("ray", {"address": "auto", "max_retries": 2})
  assert parse_executor("ray:address=10.0.0.1:6379") == ("ray", {"address": "10.0.0.1:6379"})
  name, options = parse_executor("local")
  assert isinstance(make_executor(name, **options), LocalExecutor)
  assert set(EXECUTOR_KEYS) == {"auto", *EXECUTORS}


def test_auto_is_the_machines_default(monkeypatch):
  monkeypatch.setattr(executors, "default_executor", lambda: ("processes", {"workers": 3, "threads": 2}))
  assert parse_executor("auto") == ("processes", {"workers": 3, "threads": 2})


@pytest.mark.parametrize("text, message", [
    ("procs", "unknown executor 'procs'; the executors are auto, local, processes, ray"),
    ("processes:worker=2", "processes: unknown key 'worker'; its keys are workers, threads, lend, "
                           "max_retries, job_timeout"),
    ("processes:workers=2.5", "processes: workers='2.5' is not an integer or none"),
    ("ray:cpus_per_job=none", "ray: cpus_per_job='none' is not an integer"),
    ("auto:workers=2", "auto: unknown key 'workers'; it takes no keys"),
])
def test_bad_text_is_one_line(text, message):
  with pytest.raises(ValueError) as err:
    parse_executor(text)
  assert str(err.value) == message
