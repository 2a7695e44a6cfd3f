"""benchmarks/studies/regressor_floor.py's exact kernel: from the true states it converges to hx.data's least
costs, and an error in the start's initial distance moves every distance of its grid by as much."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies.regressor_floor import cost_accuracy, relax
from hx.data.grids import least_costs
from hx.data.tasks import DISTANCE_BOUND, START_DISTANCE


def _grids(seed: int = 0, g: int = 50, n: int = 5):
  # Costs up to 7: every least cost of a 5x5 grid (at most 1 + 8 * 7) stays under the bound of 65 that
  # the other cells start from.
  costs = np.random.default_rng(seed).choice([1.0, 3.0, 5.0, 7.0], size=(g, n, n))
  costs[:, 0, 0] = 1.0  # the start's cost equals its initial distance
  start = np.full((g, n, n), DISTANCE_BOUND, np.float32)
  start[:, 0, 0] = START_DISTANCE
  return costs, start


def test_the_exact_kernel_from_the_true_states_converges_to_the_least_costs():
  costs, start = _grids()
  np.testing.assert_array_equal(relax(costs, start, None), least_costs(costs))
  # Ten rounds are not always enough on 5x5 grids (a cheapest path may wind), but never overshoot.
  ten = relax(costs, start, 10)
  assert np.all(ten >= least_costs(costs))
  assert np.array_equal(relax(costs, start, 1)[:, 0, 1], np.minimum(DISTANCE_BOUND, 1 + costs[:, 0, 1]))


def test_an_error_in_the_start_distance_shifts_its_whole_grid():
  costs, start = _grids(1)
  shifted = start.copy()
  shifted[:, 0, 0] += 2.0
  np.testing.assert_allclose(relax(costs, shifted, None), least_costs(costs) + 2.0)


def test_cost_accuracy_of_the_rows_given():
  truth = np.stack([np.array([1, 3, 5, 7, 9, 9], np.float32), np.full(6, 65.0, np.float32)], -1)
  outputs = truth.copy()
  outputs[:, 0] += np.array([0.4, -1.2, 0.0, 2.0, 0.0, 0.5], np.float32)  # rows 1 and 3 round wrong
  r = cost_accuracy(outputs, truth, np.array([0, 1, 2, 3]))
  assert r["images"] == 4 and r["cost_rounded_wrong"] == 0.5
  assert r["cost_rmse"] == pytest.approx(np.sqrt((0.16 + 1.44 + 0 + 4) / 4))
  assert cost_accuracy(outputs, truth, np.array([4, 5]))["cost_rounded_wrong"] == 0.0
