"""The binaries' spellings of strategies and executors (`hx.bin.spellings`): each name gives its object
(a strategy with its default settings, an executor with the keys given), nothing starts, and an unknown
name, key or value is one line naming what would do."""

import dataclasses

import pytest

import hx.bin.spellings as spellings
from hx.bin.spellings import (
  EXECUTOR_KEYS,
  EXECUTORS,
  STRATEGIES,
  parse_executor,
  strategies_from_names,
  strategy_from_name,
)
from hx.synth import Evolutionary, EvolutionConfig, Local, Processes, Ray, TopDown


def test_each_spelling_gives_its_strategy_with_its_defaults():
  assert list(STRATEGIES) == ["topdown", "evolutionary"]
  assert strategy_from_name("topdown") == TopDown()
  assert strategy_from_name(" evolutionary ") == Evolutionary(EvolutionConfig())
  assert all(strategy_from_name(name).name == name for name in STRATEGIES)
  assert strategies_from_names(["evolutionary", "", "topdown"]) == (Evolutionary(), TopDown())
  assert strategies_from_names([]) == ()


@pytest.mark.parametrize("name", ["random", "top-down", "TopDown", ""])
def test_an_unknown_spelling_is_one_line_naming_the_spellings(name):
  with pytest.raises(ValueError) as err:
    strategy_from_name(name)
  assert str(err.value) == f"unknown strategy {name!r}; the strategies are topdown, evolutionary"
  with pytest.raises(ValueError, match="the strategies are topdown, evolutionary"):
    strategies_from_names(["topdown", name or "x"])


def test_each_executor_spelling_gives_its_settings():
  assert parse_executor("local") == Local()
  assert parse_executor("processes") == Processes()
  assert parse_executor("processes:workers=4,threads=1,lend=true,max_retries=2") == Processes(
      workers=4, threads=1, lend=True, max_retries=2)
  assert parse_executor("processes:threads=0,job_timeout=none") == Processes(threads=0, job_timeout=None)
  assert parse_executor("processes:job_timeout=90") == Processes(job_timeout=90.0)
  assert parse_executor("ray") == Ray()
  assert parse_executor("ray:address=auto,max_retries=2") == Ray(address="auto", max_retries=2)
  assert parse_executor("ray:address=10.0.0.1:6379,num_cpus=8,cpus_per_job=2") == Ray(
      address="10.0.0.1:6379", num_cpus=8, cpus_per_job=2)
  assert set(EXECUTOR_KEYS) == {"auto", *EXECUTORS} and list(EXECUTORS) == ["local", "processes", "ray"]
  for name in EXECUTORS:  # every key is a field of its settings
    assert set(EXECUTOR_KEYS[name]) <= {f.name for f in dataclasses.fields(EXECUTORS[name])}


def test_auto_is_the_machines_default(monkeypatch):
  monkeypatch.setattr(spellings, "default_executor", lambda: Processes(workers=3, threads=2))
  assert parse_executor("auto") == Processes(workers=3, threads=2)


@pytest.mark.parametrize("text, message", [
    ("procs", "unknown executor 'procs'; the executors are auto, local, processes, ray"),
    ("processes:worker=2", "processes: unknown key 'worker'; its keys are workers, threads, lend, "
                           "max_retries, job_timeout"),
    ("processes:workers=2.5", "processes: workers='2.5' is not an integer or none"),
    ("processes:workers=0", "processes:workers=0: bad Processes settings: workers=0, threads=None, "
                            "max_retries=2"),
    ("processes:job_timeout=0", "processes:job_timeout=0: Processes.job_timeout must be positive or None, "
                                "got 0.0"),
    ("ray:cpus_per_job=none", "ray: cpus_per_job='none' is not an integer"),
    ("ray:cpus_per_job=0", "ray:cpus_per_job=0: bad Ray settings: cpus_per_job=0, max_retries=2"),
    ("auto:workers=2", "auto: unknown key 'workers'; it takes no keys"),
    ("local:workers=2", "local: unknown key 'workers'; it takes no keys"),
])
def test_a_bad_executor_text_is_one_line(text, message):
  with pytest.raises(ValueError) as err:
    parse_executor(text)
  assert str(err.value) == message
