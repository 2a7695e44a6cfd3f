"""The data-driven prior over library functions (`hx.synth.prior`): the probe's error on exact cases, and
on tasks trained for real, the earlier task a repeat relates to offered first."""

from __future__ import annotations

import numpy as np
import pytest

import hx
from hx.compile.values import ListBatch, Split
from hx.evaluation.config import ConfigError
from hx.synth.jsonfiles import jsonable
from hx.synth.prior import offered_library, probe_error, source_scores
from hx.synth.space import SearchSpace


def _split(idx, targets):
  return Split(np.asarray(idx), np.asarray(targets))


def test_features_that_are_the_targets_have_no_error_and_constant_ones_are_the_mean():
  rng = np.random.default_rng(0)
  y = rng.normal(size=(80, 1)).astype(np.float32)
  outputs = np.concatenate([y, y])  # row i and row 80 + i hold example i's target
  train, val = _split(np.arange(40), y[:40]), _split(np.arange(120, 160), y[40:])
  assert probe_error(outputs, train, val, per_element=False, ridge=1e-6) == pytest.approx(0.0, abs=1e-6)
  constant = np.ones((160, 3))
  # No feature varies: the fit is the training mean, exactly the baseline.
  assert probe_error(constant, train, val, per_element=False, ridge=1e-2) == pytest.approx(1.0, abs=1e-12)


def test_a_list_is_probed_by_the_sum_of_its_elements_and_classes_as_one_hot():
  rng = np.random.default_rng(1)
  is_three = (rng.random(50) < 0.4).astype(np.float64)[:, None]  # a probe's output per image
  values = rng.integers(0, 50, (60, 6))
  mask = np.arange(6)[None, :] < rng.integers(1, 7, 60)[:, None]  # real elements first
  counts = (is_three[values, 0] * mask).sum(1, keepdims=True).astype(np.float32)
  train = Split(ListBatch(values[:40], mask[:40]), counts[:40])
  val = Split(ListBatch(values[40:], mask[40:]), counts[40:])
  assert probe_error(is_three, train, val, per_element=False, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)
  # Per element: each list element's own target.
  per = np.where(mask, is_three[values, 0], 0.0)[..., None].astype(np.float32)
  elements = (Split(ListBatch(values[:40], mask[:40]), per[:40]),
              Split(ListBatch(values[40:], mask[40:]), per[40:]))
  assert probe_error(is_three, *elements, per_element=True, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)
  labels = rng.integers(0, 3, 60)
  one_hot = np.eye(3)[labels]
  outputs = np.zeros((60, 3))
  outputs[:] = one_hot  # row i is example i's class as one-hot
  classes = _split(np.arange(40), labels[:40]), _split(np.arange(40, 60), labels[40:])
  assert probe_error(outputs, *classes, per_element=False, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)


def _squares(rng, n):
  x = rng.normal(0, 0.2, (n, 1, 8, 8)).astype(np.float32)
  rows, cols = rng.integers(0, 6, n), rng.integers(0, 6, n)
  for i in range(n):
    x[i, 0, rows[i]:rows[i] + 3, cols[i]:cols[i] + 3] += 1.5
  return x, rows, cols


def _task(name, which, seed):
  """Is the square in the top half ("top") or in the left half ("left") of an 8x8 image."""
  rng = np.random.default_rng(seed)

  def split(n):
    x, rows, cols = _squares(rng, n)
    return x, ((rows if which == "top" else cols) + 1 < 4).astype(np.int64)

  return hx.Task.from_arrays(name, "Tensor<real>[1][8][8] -> Tensor<bool>[1]", split(200), split(100),
                             split(100), training={"epochs": 4, "batch_size": 32})


@pytest.fixture(scope="module")
def two_tasks():
  """The library after "is_top" and "is_left", each one fresh network trained for real."""
  library = None
  for seed, (name, which) in enumerate([("is_top", "top"), ("is_left", "left")]):
    library = hx.synthesize(_task(name, which, seed), library, budget=hx.Budget(candidates=1),
                            sequence="sq").library
  return library


def test_a_repeated_task_is_offered_its_earlier_instance_first(two_tasks):
  library = two_tasks
  left_again, top_again = _task("is_left_again", "left", 7), _task("is_top_again", "top", 8)
  scores = source_scores(library, left_again)
  assert scores["sq/is_left"] < 0.5 < scores["sq/is_top"]  # the other task's features predict nothing
  assert offered_library(library, left_again, 1).names == ("nn_sq_2",)
  assert offered_library(library, top_again, 1).names == ("nn_sq_1",)
  offered = offered_library(library, top_again, 1)
  assert offered.counters == library.counters  # names given after it continue the whole library's
  assert offered["nn_sq_1"] == library["nn_sq_1"]
  assert offered_library(library, top_again, 2) is library
  assert offered_library(library, top_again, None) is library
  with pytest.raises(ValueError, match="at least 1 earlier task"):
    offered_library(library, top_again, 0)


def test_a_bounded_search_extends_the_whole_library_and_says_what_it_was_offered(two_tasks):
  library = two_tasks
  result = hx.synthesize(_task("is_left_again", "left", 7), library, budget=hx.Budget(candidates=3),
                         space=SearchSpace(library_tasks=1), sequence="sq")
  assert result.offered == ("nn_sq_2",)
  used = {n for r in result.ranked for n in hx.lang.program.library_names(r.program)}
  assert used <= {"nn_sq_2"}  # nn_sq_1 was not offered
  assert set(library.names) <= set(result.library.names) and len(result.library) > len(library)
  unbounded = hx.synthesize(_task("is_left_again", "left", 7), library, budget=hx.Budget(candidates=1),
                            sequence="sq")
  assert unbounded.offered is None


def test_inputs_without_an_image_table_are_offered_the_latest_tasks(two_tasks):
  rng = np.random.default_rng(3)
  x = rng.normal(size=(60, 4)).astype(np.float32)
  vectors = hx.Task.from_arrays("vec", "Tensor<real>[4] -> Tensor<real>[1]", (x[:40], x[:40, :1]),
                                (x[40:], x[40:, :1]), (x[40:], x[40:, :1]))
  assert set(source_scores(two_tasks, vectors).values()) == {None}
  assert offered_library(two_tasks, vectors, 1).names == ("nn_sq_2",)  # the latest


def test_the_bound_is_a_search_setting_left_out_of_settings_at_its_default():
  assert "library_tasks" not in jsonable(SearchSpace())
  assert jsonable(SearchSpace(library_tasks=8))["library_tasks"] == 8
  for bad in (0, -1, 2.5, True):
    with pytest.raises(ValueError, match="library_tasks must be an integer >= 1"):
      SearchSpace(library_tasks=bad)
  config = hx.EvalConfig.make("cs1", search={"library_tasks": 3, "order": "cost"})
  assert config.space.library_tasks == 3 and config.space.order == "cost"
  with pytest.raises(ConfigError, match="unknown search setting.*the settings are order, authors_filter, "
                                        "library_tasks"):
    hx.EvalConfig.make("cs1", search={"libary_tasks": 3})
  with pytest.raises(ConfigError, match="search: library_tasks must be"):
    hx.EvalConfig.make("cs1", search={"library_tasks": 0})


def test_the_binary_reads_the_bound_from_its_search_flag():
  from hx.bin.run import parse_search

  assert parse_search("cost,library_tasks=8") == {"order": "cost", "library_tasks": 8}
  assert parse_search(None) == {}
  for bad in ("library_tasks=0", "library_tasks=x"):
    with pytest.raises(ValueError, match="library_tasks=.*expected an integer >= 1"):
      parse_search(bad)
