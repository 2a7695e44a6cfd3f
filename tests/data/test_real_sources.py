"""Tasks built from real-format sources (MNIST IDX, smallNORB binary, GTSRB ppm + csv fixtures).

Each fixture image is a constant whose value encodes its class, so a task's labels can be checked against
the images its indices point at, independently of the task code.
"""

import numpy as np
import pytest

from hx.compile.values import take
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.data.gtsrb import ROLES, write_ppm
from hx.data.idx import write_idx
from hx.data.smallnorb import write_norb_mat

SIZES = TaskSizes(binary=(40, 20, 20), lists=(16, 9, 9), grids_train=((3, 6), (4, 10)),
                  grids_val=((5, 4),), grids_test=((5, 4),))
COST = {1: 9, 2: 7, 4: 5, 5: 3, 7: 1, 26: 1, 14: 1}  # GTSRB class -> cell cost


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  root = tmp_path_factory.mktemp("real")
  # MNIST: 600 training images (the last 100 the validation pool), 100 test; pixel value 10 + 20 * label.
  mn = root / "mnist"
  mn.mkdir()
  for split, n in (("train", 600), ("t10k", 100)):
    y = (np.arange(n) % 10).astype(np.uint8)
    x = np.repeat((10 + 20 * y)[:, None, None], 28, 1).repeat(28, 2).astype(np.uint8)
    write_idx(str(mn / f"{split}-images-idx3-ubyte"), x)
    write_idx(str(mn / f"{split}-labels-idx1-ubyte"), y)
  # smallNORB: 50 training and 25 test pairs; left camera 10 + 40 * category, right camera 255.
  nb = root / "norb"
  nb.mkdir()
  for split, tag, n in (("training", "46789", 50), ("testing", "01235", 25)):
    cat = (np.arange(n) % 5).astype(np.int32)
    dat = np.full((n, 2, 96, 96), 255, np.uint8)
    dat[:, 0] = (10 + 40 * cat)[:, None, None]
    for kind, a in (("dat", dat), ("cat", cat), ("info", np.zeros((n, 4), np.int32))):
      write_norb_mat(str(nb / f"smallnorb-5x{tag}x9x18x6x2x96x96-{split}-{kind}.mat"), a)
  # GTSRB: the seven role classes and a distractor (class 3), 5 tracks x 2 images each, plus a test set.
  gt = root / "gtsrb"
  classes = sorted(COST) + [3]
  for c in classes:
    d = gt / "Final_Training" / "Images" / f"{c:05d}"
    d.mkdir(parents=True)
    lines = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for t in range(5):
      for i in range(2):
        write_ppm(str(d / f"{t:05d}_{i:05d}.ppm"), np.full((40, 36, 3), 5 * c, np.uint8))
        lines.append(f"{t:05d}_{i:05d}.ppm;36;40;3;3;32;36;{c}")
    (d / f"GT-{c:05d}.csv").write_text("\n".join(lines) + "\n")
  d = gt / "Final_Test" / "Images"
  d.mkdir(parents=True)
  lines = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
  for i, c in enumerate(classes * 3):
    write_ppm(str(d / f"{i:05d}.ppm"), np.full((30, 30, 3), 5 * c, np.uint8))
    lines.append(f"{i:05d}.ppm;30;30;3;3;26;26;{c}")
  (d / "GT-final_test.csv").write_text("\n".join(lines) + "\n")
  return root


def _sources(root):
  return Sources(mnist=str(root / "mnist"), smallnorb=str(root / "norb"), gtsrb=str(root / "gtsrb"))


def _labels_from_table(task, idx, values):
  """Class of each image index, read off the table: the fixture's constant `values` per class map
  monotonically to the normalized row means."""
  means = task.table[idx].reshape(idx.size, -1).mean(axis=1)
  order = np.argsort(values)
  levels = np.unique(np.round(task.table.reshape(len(task.table), -1).mean(axis=1), 4))
  assert len(levels) == len(values)  # one constant level per class in the table
  rank = np.searchsorted(levels, np.round(means, 4))
  return np.asarray(order)[rank].reshape(idx.shape)


def test_recognize_and_count_digit_from_idx(root):
  src = _sources(root)
  task = build_task(task_spec("recognize_digit(4)"), src, SIZES)
  assert not task.synthetic and task.datasets == ("mnist",) and "synthetic" not in task.name
  for split in (task.train, task.val, task.test):
    digit = _labels_from_table(task, split.inputs, np.arange(10))
    np.testing.assert_array_equal(split.targets[:, 0], digit == 4)
  count = build_task(task_spec("count_digit(7)"), src, SIZES)
  for split in (count.train, count.val, count.test):
    digit = _labels_from_table(count, split.inputs.values, np.arange(10))
    np.testing.assert_array_equal(split.targets[:, 0], ((digit == 7) & split.inputs.mask).sum(axis=1))


def test_pools_of_the_idx_split(root):
  """Training examples use the first 500 training images, validation the last 100, test the test file."""
  task = build_task(task_spec("classify_digit"), _sources(root), SIZES)
  assert sorted(task.train.inputs.tolist()) == list(range(500))
  assert sorted(task.val.inputs.tolist()) == list(range(500, 600))
  assert sorted(task.test.inputs.tolist()) == list(range(600, 700))
  np.testing.assert_array_equal(task.train.targets, task.train.inputs % 10)


def test_toys_from_smallnorb_binary(root):
  task = build_task(task_spec("count_toy(2)"), _sources(root), SIZES)
  assert not task.synthetic and task.datasets == ("smallnorb",)
  assert task.table.shape[1:] == (1, 28, 28)
  for split in (task.train, task.val, task.test):
    toy = _labels_from_table(task, split.inputs.values, np.arange(5))
    np.testing.assert_array_equal(split.targets[:, 0], ((toy == 2) & split.inputs.mask).sum(axis=1))


def test_street_tasks_from_gtsrb_layout(root):
  src = _sources(root)
  regress = build_task(task_spec("regress_speed"), src, SIZES)
  assert not regress.synthetic and regress.datasets == ("gtsrb",)
  assert regress.table.shape[1:] == (3, 28, 28)
  roles = sorted(COST)  # the table holds only the seven role classes, never the distractor
  for split in (regress.train, regress.val, regress.test):
    cls = np.asarray(roles)[_labels_from_table(regress, split.inputs, np.asarray(roles))]
    np.testing.assert_array_equal(split.targets[:, 0], [COST[c] for c in cls])
    np.testing.assert_array_equal(split.targets[:, 1], np.where(cls == ROLES["start"], 1.0, 65.0))
  grid = build_task(task_spec("shortest_path_street"), src, SIZES)
  assert not grid.synthetic
  x, y = take(grid.test.inputs, slice(None)), grid.test.targets
  cls = np.asarray(roles)[_labels_from_table(grid, x.values, np.asarray(roles))]
  assert (cls[:, 0] == ROLES["start"]).all() and (cls[:, 24] == ROLES["goal"]).all()
  np.testing.assert_array_equal(y[..., 0], np.vectorize(COST.get)(cls))


def test_mnist_grid_tasks_are_mnist_digits_only(root):
  """As the authors build them (`get_io_examples_regress_speed_mnist`,
  `get_io_examples_shortest_path_mnist_maze`): the start a 0, the goal a 1, no sign images, so real
  MNIST gives real tasks; regress_mnist is every 0, 1, 3, 5, 7 and 9 of each pool, once."""
  src = Sources(mnist=str(root / "mnist"))  # no GTSRB given, and none needed
  value = {0: 1, 1: 1, 3: 3, 5: 5, 7: 7, 9: 9}  # digit -> cell cost
  digits = np.asarray(sorted(value))
  regress = build_task(task_spec("regress_mnist"), src, SIZES)
  assert not regress.synthetic and regress.datasets == ("mnist",) and "synthetic" not in regress.name
  assert regress.table.shape[1:] == (3, 28, 28)
  counts = []
  for split in (regress.train, regress.val, regress.test):
    d = digits[_labels_from_table(regress, split.inputs, digits)]
    assert len(np.unique(split.inputs)) == len(split.inputs)
    np.testing.assert_array_equal(split.targets[:, 0], [value[x] for x in d])
    np.testing.assert_array_equal(split.targets[:, 1], np.where(d == 0, 1.0, 65.0))
    counts.append(len(d))
  # The fixture's pools: 500 training, 100 validation and 100 test images, digits cycling 0..9.
  assert counts == [300, 60, 60]
  grid = build_task(task_spec("shortest_path_mnist"), src, SIZES)
  assert not grid.synthetic and grid.datasets == ("mnist",)
  x, y = take(grid.test.inputs, slice(None)), grid.test.targets
  d = digits[_labels_from_table(grid, x.values, digits)]
  assert (d[:, 0] == 0).all() and (d[:, 24] == 1).all() and np.isin(d[:, 1:24], [1, 3, 5, 7, 9]).all()
  np.testing.assert_array_equal(y[..., 0], np.vectorize(value.get)(d))
  assert (y[:, 0, 1] == 1).all()
