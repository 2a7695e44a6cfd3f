"""Training settings per task kind and preset (`hx.presets`), each with where it comes from."""

import subprocess
import sys

import pytest

from hx.data import KINDS, TaskSizes
from hx.presets import (
  EVALUATION_PRESETS,
  PRESETS,
  TrainingSettings,
  task_sizes,
  task_sizes_source,
  training_settings,
)


@pytest.mark.parametrize("kind, epochs, batch", [
    ("count_digit", 20, 150), ("count_toy", 20, 150), ("sum_digits", 20, 150),
    ("regress_speed", 1000, 10), ("regress_mnist", 1000, 10),
    ("shortest_path_street", 5, 150), ("shortest_path_mnist", 5, 150),
    ("recognize_digit", 30, 150), ("classify_digit", 30, 150),
])
def test_paper_preset(kind, epochs, batch):
  s = training_settings(kind)
  assert (s.epochs, s.batch_size, s.learning_rate, s.patience) == (epochs, batch, 1e-3, None)
  assert s.preset == "paper" and s.sizes == task_sizes("paper")
  # Only what the paper's text states is attributed to it: the epochs of the list, regression and graph
  # tasks; the optimiser and batch sizes come from the authors' code.
  assert s.source("learning_rate").startswith("authors' code")
  assert s.source("batch_size").startswith("authors' code")
  by_paper = kind.startswith(("count", "sum", "regress", "shortest"))
  assert s.source("epochs").startswith("paper, appendix C") == by_paper


def test_train_examples_follow_the_presets_sizes():
  assert training_settings("count_digit(3)").train_examples == 12000
  assert training_settings("count_digit", "authors").train_examples == 6000
  assert training_settings("shortest_path_mnist").train_examples == 1_070_000
  assert training_settings("recognize_toy").train_examples == 6000
  assert training_settings("regress_mnist").train_examples is None  # every image of the pool
  assert training_settings("classify_digit").train_examples is None


def test_authors_and_quick_presets():
  assert training_settings("count_toy", "authors").epochs == 30
  assert training_settings("shortest_path_street", "authors").epochs == 10
  assert training_settings("regress_speed", "authors").batch_size == 10
  for kind in KINDS:
    quick = training_settings(kind, "quick")
    assert quick.epochs <= 10 and quick.sizes == task_sizes("quick") and "ours" in quick.source("epochs")
    assert all(where for _, where in quick.sources)
  assert set(PRESETS) == {"paper", "authors", "quick"}


def test_tune_config_carries_the_settings():
  config = training_settings("count_digit").tune_config(seed=3)
  assert (config.epochs, config.batch_size, config.learning_rate, config.patience, config.seed) == (
      20, 150, 1e-3, None, 3)


def test_bad_kind_or_preset():
  with pytest.raises(ValueError, match="unknown task kind 'juggle'"):
    training_settings("juggle")
  with pytest.raises(ValueError, match="unknown preset 'fast'.*paper, authors, quick"):
    training_settings("count_digit", "fast")
  with pytest.raises(ValueError, match="patience"):
    TrainingSettings("count_digit", "paper", 1, 1, 1e-3, 0, TaskSizes(), None, ())
  with pytest.raises(KeyError, match="no source"):
    training_settings("count_digit").source("momentum")


def test_size_presets():
  paper, authors, quick = task_sizes("paper"), task_sizes("authors"), task_sizes("quick")
  assert paper == TaskSizes() and paper.lists == (12000, 2100, 2100) and authors.lists[0] == 6000
  assert paper.grids_train == authors.grids_train == ((3, 70_000), (4, 1_000_000))
  assert paper.grids_test == ((5, 10_000),) and authors.grids_val == ((5, 10_000),)
  assert quick.lists[0] < 2000 and sum(c for _, c in quick.grids_train) < 5000
  assert task_sizes_source("paper").startswith("paper, appendix C")
  assert task_sizes_source("authors").startswith("authors' code")
  assert "ours" in task_sizes_source("quick")
  for name in ("paper", "quick"):
    assert EVALUATION_PRESETS[name].sizes == task_sizes(name)
  with pytest.raises(ValueError, match="unknown preset 'laptop'"):
    task_sizes("laptop")
  with pytest.raises(ValueError, match="unknown preset 'laptop'"):
    task_sizes_source("laptop")


def test_settings_import_no_jax():
  code = ("import sys, hx.data, hx.presets; hx.presets.training_settings('count_digit'); "
          "hx.presets.task_sizes('authors'); "
          "print('jax' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


@pytest.mark.parametrize("kind", ["count_digit", "regress_mnist", "shortest_path_mnist", "recognize_digit"])
def test_only_the_authors_preset_scores_validation_within_epochs(kind):
  # The authors' code scores validation every 1% of the training iterations; the paper's words select
  # the best epoch; the quick preset is ours.
  authors = training_settings(kind, "authors")
  assert authors.val_every == 0.01 and authors.tune_config().val_every == 0.01
  assert authors.source("val_every").startswith("authors' code")
  for preset in ("paper", "quick"):
    s = training_settings(kind, preset)
    assert s.val_every is None and s.tune_config().val_every is None and s.source("val_every")


# ---------------------------------------------------------------------------------------------------
# `task_tune_config`: the one function that decides a run's training settings.

def test_task_tune_config_of_a_paper_task_is_its_training_table():
  from hx.data import task_spec
  from hx.presets import task_tune_config

  config = task_tune_config(task_spec("count_digit(3)"), "paper")
  assert (config.epochs, config.batch_size, config.learning_rate, config.min_steps) == (20, 150, 1e-3, 0)
  assert task_tune_config(task_spec("count_digit(3)"), "quick").epochs == 3  # hx-train's quick table


def test_task_tune_config_under_an_evaluation_preset_applies_its_epochs_batches_and_min_steps():
  from hx.data import task_spec
  from hx.presets import task_tune_config

  quick = EVALUATION_PRESETS["quick"]
  lists = task_tune_config(task_spec("count_digit(3)"), quick)
  assert (lists.epochs, lists.batch_size, lists.min_steps) == (8, 32, 30)
  recognize = task_tune_config(task_spec("recognize_digit(3)"), quick)
  assert (recognize.epochs, recognize.batch_size, recognize.min_steps) == (10, 150, 30)
  regress = task_tune_config(task_spec("regress_mnist"), quick)  # no group entry: the table's 10 epochs
  assert (regress.epochs, regress.batch_size) == (10, 32)
  # Epochs a caller names are trained as named: no floor of steps.
  named = task_tune_config(task_spec("count_digit(3)"), quick, epochs=2, patience=4, bias_from_targets=False)
  assert (named.epochs, named.min_steps, named.patience, named.bias_from_targets) == (2, 0, 4, False)
  paper = task_tune_config(task_spec("sum_digits"), EVALUATION_PRESETS["paper"])
  assert (paper.epochs, paper.batch_size, paper.min_steps) == (20, 150, 0)


def test_task_tune_config_of_a_users_task_keeps_its_own_settings_and_takes_the_callers_changes():
  import numpy as np

  from hx.data import task_from_arrays
  from hx.presets import task_tune_config

  x, y = np.zeros((8, 3), np.float32), np.zeros((8, 1), np.float32)
  task = task_from_arrays("mine", "Tensor<real>[3] -> Tensor<real>[1]", (x, y), (x, y), (x, y),
                          training={"epochs": 7, "batch_size": 4})
  for preset in ("paper", EVALUATION_PRESETS["quick"]):  # a preset's table is not a user's task's
    config = task_tune_config(task.spec, preset)
    assert (config.epochs, config.batch_size, config.min_steps) == (7, 4, 0)
  assert task_tune_config(task.spec, "paper", epochs=2, learning_rate=0.01).epochs == 2
  with pytest.raises(ValueError, match="task 'mine': training settings: .*epochs"):
    task_tune_config(task.spec, "paper", epochs=-1)
