"""`hx.synth.SynthesisConfig` (hx/synth/config.py): what a synthesis decides with, as one value checked when
made, and `hx.synthesize`'s and `run_sequence`'s taking it whole."""

import types

import numpy as np
import pytest

import hx
from hx.compile import ModuleConfig, TuneConfig
from hx.data import task_spec
from hx.presets import task_tune_config
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.schedules import Halving
from hx.synth.strategies import Evolutionary, TopDown
from tests.synth.test_synthesize import sum_task

RECOGNIZE = types.SimpleNamespace(name="recognize_digit(3)", spec=task_spec("recognize_digit(3)"))


def test_it_is_exported_where_users_look_and_budget_moved_beside_it():
  import importlib

  S = importlib.import_module("hx.synth.synthesize")  # the module: `hx.synth.synthesize` is the function
  assert hx.SynthesisConfig is hx.synth.SynthesisConfig is SynthesisConfig
  assert hx.Budget is hx.synth.Budget is S.Budget is Budget


def test_the_defaults_are_the_papers_search():
  config = SynthesisConfig()
  assert config.strategy == TopDown() and config.budget == Budget(candidates=20)
  assert config.module_config == ModuleConfig() and config.tune_configs == () and config.keep == 3


def test_a_mapping_of_training_settings_is_kept_as_pairs_sorted_by_kind():
  one, two = TuneConfig(epochs=1), TuneConfig(epochs=2)
  config = SynthesisConfig(tune_configs={"recognize_digit": one, "count_digit": two})
  assert config.tune_configs == (("count_digit", two), ("recognize_digit", one))
  assert config == SynthesisConfig(tune_configs={"count_digit": two, "recognize_digit": one})
  hash(config)  # a value: frozen and hashable, as the pairs are


def test_a_tasks_training_settings_are_those_of_its_kind():
  one, two = TuneConfig(epochs=1), TuneConfig(epochs=2)
  config = SynthesisConfig(tune_configs={"recognize_digit": one, "count_digit": two})
  assert config.tune_config(RECOGNIZE) is one
  with pytest.raises(ValueError, match=r"no training settings for task recognize_digit\(3\) \(kind "
                                       r"recognize_digit\); it has count_digit"):
    SynthesisConfig(tune_configs={"count_digit": two}).tune_config(RECOGNIZE)


def test_without_training_settings_each_task_trains_with_its_own():
  assert SynthesisConfig().tune_config(RECOGNIZE) == task_tune_config(RECOGNIZE.spec)
  rng = np.random.default_rng(0)
  split = lambda n: (rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 1)))  # noqa: E731
  mine = hx.Task.from_arrays("mine", "Tensor<real>[3] -> Tensor<real>[1]", split(8), split(4), split(4),
                             training={"epochs": 3, "batch_size": 4})
  assert SynthesisConfig().tune_config(mine) == TuneConfig(epochs=3, batch_size=4)


def test_a_task_without_a_spec_is_listed_under_its_name():
  task = sum_task(n=20)
  settings = TuneConfig(epochs=1)
  assert SynthesisConfig(tune_configs={"sum_numbers": settings}).tune_config(task) is settings
  for config in (SynthesisConfig(), SynthesisConfig(tune_configs={"count_digit": settings})):
    with pytest.raises(ValueError, match=r"task sum_numbers has no spec to take training settings from: give "
                                         r"them in SynthesisConfig.tune_configs under its name"):
      config.tune_config(task)


def test_what_the_strategy_does_not_take_is_refused_when_the_config_is_made():
  with pytest.raises(ValueError, match=r"a schedule \(Halving\) is for the top-down strategy"):
    SynthesisConfig(strategy=Evolutionary(), budget=Budget(schedule=Halving()))
  with pytest.raises(TypeError, match="strategy must be a strategy object"):
    SynthesisConfig(strategy="evolutionary")
  SynthesisConfig(strategy=TopDown(), budget=Budget(schedule=Halving()))  # the top-down search takes it


def test_keep_below_one_is_refused():
  with pytest.raises(ValueError, match="SynthesisConfig.keep must be >= 1, got 0"):
    SynthesisConfig(keep=0)


def test_synthesize_and_run_sequence_take_their_settings_as_one_config(tmp_path):
  task = sum_task(n=20)
  with pytest.raises(TypeError, match="unexpected keyword argument 'budget'"):
    hx.synthesize(task, hx.Library(), budget=Budget(candidates=1))
  with pytest.raises(TypeError, match="unexpected keyword argument 'tune_config'"):
    hx.synthesize(task, None, tune_config=TuneConfig(epochs=1))
  with pytest.raises(TypeError, match=r"hx.synth.SynthesisConfig\(strategy=.*got Budget"):
    hx.synthesize(task, None, Budget(candidates=1))
  with pytest.raises(TypeError, match=r"SynthesisConfig.*got dict"):
    hx.synthesize(task, None, {"budget": Budget(candidates=1)})
  sequence = hx.data.sequence("cs1", seed=0)
  for old in ({"budget": Budget(candidates=1)}, {"preset": "quick"}, {"tune_configs": {}}):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{next(iter(old))}'"):
      hx.synth.run_sequence(sequence, tmp_path / "run", **old)
  assert not (tmp_path / "run").exists()
