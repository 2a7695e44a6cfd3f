"""`hx.compile.release`: what a run gives back between tasks, and that giving it back changes no result."""

import numpy as np
import pytest

import hx
from hx.compile.executables import executable, release_unused_executables, tune_stats
from hx.compile.release import release_between_tasks


def _plus_one(name: str) -> None:
  executable(name, ("release-test",), lambda: (lambda x: x + 1), (), (np.ones(3, np.float32),))


def test_executables_unused_since_the_last_release_are_released_and_used_ones_kept():
  release_unused_executables()
  before = tune_stats()["cached_executables"]
  _plus_one("release_a")
  _plus_one("release_b")
  assert tune_stats()["cached_executables"] == before + 2
  assert release_unused_executables() == before  # both were used since the last release: kept
  _plus_one("release_a")
  assert release_unused_executables() == 1  # release_b was not
  assert tune_stats()["cached_executables"] == 1
  assert release_unused_executables() == 1 and tune_stats()["cached_executables"] == 0


@pytest.mark.slow
def test_a_task_trained_again_after_a_release_scores_the_same():
  rng = np.random.default_rng(0)

  def split(n):
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, x.sum(1, keepdims=True)

  task = hx.Task.from_arrays("sum3", "Tensor<real>[3] -> Tensor<real>[1]", split(64), split(16), split(16),
                             training={"epochs": 2, "batch_size": 16})
  first = hx.synthesize(task, config=hx.SynthesisConfig(budget=hx.Budget(candidates=1))).best
  release_between_tasks()
  again = hx.synthesize(task, config=hx.SynthesisConfig(budget=hx.Budget(candidates=1))).best
  assert (again.val_score, again.test_score) == (first.val_score, first.test_score)
