"""The cell states of the shortest-path grid tasks (GS1, GS2), as the GS2 studies read them.

A grid task's cell is an image whose regressor target is its initial Bellman-Ford state (cost, initial
distance): the cost one of `CELL_COST_VALUES`, the initial distance `START_DISTANCE` for the start (the
top-left cell) and `DISTANCE_BOUND` for every other cell (`hx.data.tasks`). `regressor_floor.py` (exact
Bellman-Ford on a regressor's costs) and `relaxation_learning.py` (how fast a learned relaxation learns
on such states) both read them through this module, so neither imports the other for them.
"""

from __future__ import annotations

import numpy as np

CELL_COST_VALUES = (1, 3, 5, 7, 9)


def round_costs(cost: np.ndarray) -> np.ndarray:
  """Each predicted cost (any shape) rounded to the nearest cell cost of `CELL_COST_VALUES`."""
  values = np.asarray(CELL_COST_VALUES, np.float32)
  return values[np.abs(np.asarray(cost)[..., None] - values).argmin(-1)]


def exact_states(task) -> np.ndarray:
  """(table rows, 2) float32: every image's true (cost, initial distance), read from the grid splits.

  Images on no grid keep (0, DISTANCE_BOUND); an image that is a start cell of one grid and another cell
  of another would be ambiguous, and is refused.
  """
  from hx.data.tasks import DISTANCE_BOUND, START_DISTANCE

  rows = int(np.asarray(task.table).shape[0])
  cost = np.zeros(rows, np.float32)
  start = np.zeros(rows, bool)
  other = np.zeros(rows, bool)
  for split in (task.train, task.val, task.test):
    idx = np.asarray(split.inputs.values).astype(np.int64)
    target = np.asarray(split.targets, np.float32)
    real = np.asarray(split.inputs.layouts.mask, bool)[np.asarray(split.inputs.layout)]
    cost[idx[real]] = target[..., 0][real]
    start[idx[:, 0]] = True
    rest = real.copy()
    rest[:, 0] = False
    other[idx[rest]] = True
  if np.any(start & other):
    raise ValueError(f"{int(np.sum(start & other))} images are a start cell in one grid and another cell "
                     "in another: their initial distance is ambiguous")
  distance = np.where(start, START_DISTANCE, DISTANCE_BOUND).astype(np.float32)
  return np.stack([cost, distance], axis=-1)

def split_rows(split) -> np.ndarray:
  """The table rows (image indices) the real cells of a grid split use, sorted, each once."""
  idx = np.asarray(split.inputs.values).astype(np.int64)
  real = np.asarray(split.inputs.layouts.mask, bool)[np.asarray(split.inputs.layout)]
  return np.unique(idx[real])
