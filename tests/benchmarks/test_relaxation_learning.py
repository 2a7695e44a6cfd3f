"""benchmarks/studies/relaxation_learning.py's exact cell states: read back from the grids hx.data builds,
they are every used image's regression target, and exact Bellman-Ford on them gives the grids' distance
targets."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies.regressor_floor import CELL_COST_VALUES
from benchmarks.studies.relaxation_learning import (
  exact_states,
  jitter_costs,
  misread_costs,
  scale_costs,
  split_rows,
)
from hx.data import Sources, TaskSizes, build_task, regression_targets, task_spec
from hx.data.grids import least_costs
from hx.data.tasks import KINDS, _images

SOURCES = Sources(standin_per_class=(30, 12, 12))
SIZES = TaskSizes(grids_train=((3, 60), (4, 40)), grids_val=((5, 10),), grids_test=((5, 40),))


@pytest.mark.parametrize("grid_task", ["shortest_path_street",
                                       pytest.param("shortest_path_mnist", marks=pytest.mark.slow)])
def test_exact_states_are_the_regression_targets_of_the_grids_images(grid_task):
  task = build_task(task_spec(grid_task), SOURCES, SIZES, 0)
  states = exact_states(task)
  assert states.shape == (np.asarray(task.table).shape[0], 2)
  truth = regression_targets(_images(KINDS[grid_task].images, SOURCES).labels)
  for split, ((side, _),) in ((task.val, SIZES.grids_val), (task.test, SIZES.grids_test)):
    idx = np.asarray(split.inputs.values).astype(np.int64)[:, :side * side]
    np.testing.assert_array_equal(states[idx], truth[idx])
    distances = least_costs(states[idx][..., 0].reshape(-1, side, side)).reshape(len(idx), -1)
    np.testing.assert_array_equal(distances, np.asarray(split.targets, np.float32)[:, :side * side, 1])
  # Every image on a real node of any split (the training grids mix sizes, padded to one).
  used = np.unique(np.concatenate([
      np.asarray(s.inputs.values).astype(np.int64)[np.asarray(s.inputs.layouts.mask)[np.asarray(s.inputs.layout)]]
      for s in (task.train, task.val, task.test)]))
  np.testing.assert_array_equal(states[used], truth[used])


def test_misread_costs_change_exactly_the_share_asked_of_the_rows_given_and_nothing_else():
  rng = np.random.default_rng(3)
  costs = rng.choice(CELL_COST_VALUES, 400).astype(np.float32)
  states = np.stack([costs, np.full(400, 65.0, np.float32)], -1)
  rows = np.arange(100, 300)
  out = misread_costs(states, 0.25, rows, seed=1)
  changed = np.flatnonzero(out[:, 0] != states[:, 0])
  assert len(changed) == 50 and np.all((changed >= 100) & (changed < 300))
  assert set(out[changed, 0].tolist()) <= set(CELL_COST_VALUES)  # another cell cost, never the true one
  np.testing.assert_array_equal(out[:, 1], states[:, 1])
  np.testing.assert_array_equal(misread_costs(states, 0.25, rows, seed=1), out)  # seeded
  np.testing.assert_array_equal(misread_costs(states, 0.0, rows), states)
  adjacent = misread_costs(states, 1.0, np.arange(400), seed=2, to="adjacent")
  assert np.all(np.abs(adjacent[:, 0] - states[:, 0]) == 2)  # the next cost up or down, never further
  assert set(adjacent[states[:, 0] == 1, 0].tolist()) == {3.0}
  assert set(adjacent[states[:, 0] == 5, 0].tolist()) == {3.0, 7.0}


def test_split_rows_are_the_images_of_real_cells():
  task = build_task(task_spec("shortest_path_street"), SOURCES, SIZES, 0)
  (side, _), = SIZES.grids_test
  idx = np.asarray(task.test.inputs.values).astype(np.int64)
  np.testing.assert_array_equal(split_rows(task.test), np.unique(idx[:, :side * side]))


def test_jitter_moves_only_the_costs_of_the_rows_given():
  states = np.stack([np.full(1000, 5.0, np.float32), np.full(1000, 65.0, np.float32)], -1)
  out = jitter_costs(states, 0.5, np.arange(500), seed=0)
  np.testing.assert_array_equal(out[500:], states[500:])
  np.testing.assert_array_equal(out[:, 1], states[:, 1])
  assert abs(float(np.std(out[:500, 0])) - 0.5) < 0.05 and abs(float(np.mean(out[:500, 0])) - 5.0) < 0.05


def test_scale_multiplies_only_the_costs_of_the_rows_given():
  states = np.stack([np.array([1, 3, 5, 9], np.float32), np.full(4, 65.0, np.float32)], -1)
  out = scale_costs(states, 0.5, np.array([1, 3]))
  np.testing.assert_array_equal(out, [[1, 65], [1.5, 65], [5, 65], [4.5, 65]])


def test_grid_errors_are_the_exact_kernels_misses_and_split_by_start_finds_the_grids_without_a_source():
  """On hx.data's street grids with the hand-set relaxation kernel: grid_errors is the squared distance
  error of 10 exact rounds (regressor_floor.relax) at every real node, 0 at padding; a start whose
  initial distance is set to the bound is counted as misread, and its grid carries the error."""
  from benchmarks.studies.regressor_floor import relax
  from benchmarks.studies.relaxation_learning import grid_errors, split_by_start
  from tests.integration.test_shortest_paths import NO_WEIGHTS, _relaxation

  task = build_task(task_spec("shortest_path_street"), SOURCES, SIZES, 0)
  states = exact_states(task)
  program, frozen = _relaxation(10)
  split, side = task.test, SIZES.grids_test[0][0]
  idx = np.asarray(split.inputs.values).astype(np.int64)[:, :side * side]
  target = np.asarray(split.targets, np.float32)[:, :side * side, 1]

  def expected(s):
    d = relax(s[idx][..., 0].reshape(-1, side, side), s[idx][..., 1].reshape(-1, side, side), 10)
    return (d.reshape(len(idx), -1) - target) ** 2

  errors = grid_errors(program, NO_WEIGHTS, frozen, states, split, chunk=7)
  assert errors.shape == np.asarray(split.targets).shape[:2]
  np.testing.assert_allclose(errors[:, :side * side], expected(states), atol=1e-3)
  np.testing.assert_array_equal(errors[:, side * side:], 0.0)
  clean = split_by_start(errors, states, split)
  assert clean["start_misread"] == 0 and clean["misread_mse_share"] == 0.0
  assert clean["rmse"] == pytest.approx(np.sqrt(expected(states).mean()), abs=1e-3)

  # Grid 3's start image read at the bound: no source in grid 3 (or in any grid sharing that image).
  missed = states.copy()
  missed[idx[3, 0], 1] = 65.0
  hit = idx[:, 0] == idx[3, 0]
  errors = grid_errors(program, NO_WEIGHTS, frozen, missed, split)
  np.testing.assert_allclose(errors[:, :side * side], expected(missed), atol=1e-3)
  b = split_by_start(errors, missed, split)
  assert b["start_misread"] == int(hit.sum()) >= 1
  assert b["misread_mse_share"] == pytest.approx(errors[hit].sum() / errors.sum())
  assert b["misread_mse_share"] > 0.5
  assert b["rmse_rest"] == pytest.approx(np.sqrt(expected(missed)[~hit].mean()), abs=1e-3)


def test_split_by_costs_separates_the_grids_with_a_misread_cost_and_scores_the_floor_on_each():
  """The exact states are all clean and the hand-set kernel's 10 rounds score the floor there; a cost read
  wrong in one image moves exactly the grids that use it to the other part, where the exact relaxation on
  the misread cost (the floor) is off."""
  from benchmarks.studies.relaxation_learning import grid_errors, split_by_costs
  from tests.integration.test_shortest_paths import NO_WEIGHTS, _relaxation

  task = build_task(task_spec("shortest_path_street"), SOURCES, SIZES, 0)
  truth = exact_states(task)
  program, frozen = _relaxation(24)  # enough rounds for any 5x5 path: the kernel is the exact relaxation
  split = task.test
  errors = grid_errors(program, NO_WEIGHTS, frozen, truth, split)
  c = split_by_costs(errors, truth, truth, split)
  assert c["clean_share"] == 1.0 and c["rmse_clean"] == pytest.approx(0.0, abs=1e-3)
  assert c["exact_clean"] == 0.0 and np.isnan(c["rmse_rest"]) and np.isnan(c["exact_rest"])
  idx = np.asarray(split.inputs.values).astype(np.int64)[:, :25]
  image = idx[2, 12]  # the centre of grid 2
  wrong = truth.copy()
  wrong[image, 0] = 9.0 if truth[image, 0] != 9.0 else 1.0
  hit = np.any(idx == image, axis=1)
  errors = grid_errors(program, NO_WEIGHTS, frozen, wrong, split)
  c = split_by_costs(errors, wrong, truth, split)
  assert c["clean_share"] == pytest.approx(1 - hit.mean())
  assert c["rmse_clean"] == pytest.approx(0.0, abs=1e-3) and c["exact_clean"] == 0.0
  # The exact relaxation on the misread cost is the same kernel, run to convergence: the two agree.
  assert c["exact_rest"] > 0.1 and c["rmse_rest"] == pytest.approx(c["exact_rest"], rel=1e-3)


def test_module_config_replaces_only_the_fields_given():
  from benchmarks.synthesis import module_config
  from hx.compile import ModuleConfig

  assert module_config() == ModuleConfig()
  got = module_config(graph_kernel="slots", graph_keep=1, graph_update=None,
                      graph_aggregations=["min", "sum"])
  assert got == ModuleConfig(graph_kernel="slots", graph_keep=1, graph_aggregations=("min", "sum"))
  with pytest.raises(TypeError):
    module_config(graph_width=3)
