"""benchmarks/studies/authors_grid_kernel.py's grids: grouped by size with their padding dropped, each grid's
cells and targets those hx.data built."""

from __future__ import annotations

import numpy as np

from benchmarks.studies.authors_grid_kernel import by_side
from hx.data import Sources, TaskSizes, build_task, task_spec

SOURCES = Sources(standin_per_class=(30, 12, 12))
SIZES = TaskSizes(grids_train=((3, 60), (4, 40)), grids_val=((5, 10),), grids_test=((5, 40),))


def test_by_side_groups_the_grids_by_size_and_drops_the_padding():
  task = build_task(task_spec("shortest_path_street"), SOURCES, SIZES, 0)
  groups = by_side(task.train)
  assert sorted(groups) == [3, 4]
  assert [len(groups[s][0]) for s in (3, 4)] == [60, 40]
  idx = np.asarray(task.train.inputs.values)
  nodes = np.asarray(task.train.inputs.layouts.mask)[np.asarray(task.train.inputs.layout)].sum(-1)
  for side in (3, 4):
    cells, targets = groups[side]
    assert cells.shape == (len(cells), side * side) and targets.shape == (len(cells), side * side, 2)
    rows = np.flatnonzero(nodes == side * side)
    np.testing.assert_array_equal(cells, idx[rows, :side * side])
    np.testing.assert_array_equal(targets, np.asarray(task.train.targets, np.float32)[rows, :side * side])
  (only,) = by_side(task.test).items()
  assert only[0] == 5 and only[1][0].shape == (40, 25)
