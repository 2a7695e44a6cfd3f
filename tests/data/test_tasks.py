import dataclasses

import numpy as np
import pytest

from hx.compile.values import GraphBatch, ListBatch, SharedGraphs, index_dtype, take
from hx.data import (
  CELL_COSTS,
  DISTANCE_BOUND,
  FRACTIONS,
  SIGN_ROLES,
  START_DISTANCE,
  TEST,
  TRAIN,
  VAL,
  DataNotFoundError,
  Sources,
  TaskSizes,
  TaskSpec,
  build_task,
  regression_targets,
  task_spec,
)
from hx.data.grids import least_costs
from hx.data.tasks import _images
from hx.lang.paper import TASK_TYPES

SOURCES = Sources(standin_per_class=(30, 12, 12))
SIZES = TaskSizes(binary=(400, 120, 120), lists=(400, 120, 120), grids_train=((3, 60), (4, 40)),
                  grids_val=((5, 10),), grids_test=((5, 30),))


def _build(name, seed=0):
  return build_task(task_spec(name), SOURCES, SIZES, seed)


def _labels_and_pools(task):
  images = _images({"digit": "digits", "toy": "toys"}.get(task.spec.kind.split("_")[-1], "digits"), SOURCES)
  return images.labels, images.pools


@pytest.mark.parametrize("name", ["recognize_digit(3)", "recognize_toy(2)"])
def test_recognize_is_half_positive_with_negatives_from_other_classes(name):
  task = _build(name)
  labels, pools = _labels_and_pools(task)
  cls = task.spec.cls
  for split, pool, n in zip((task.train, task.val, task.test), (TRAIN, VAL, TEST), SIZES.binary):
    assert split.inputs.shape == (n,) and split.inputs.dtype == np.int32
    assert split.targets.shape == (n, 1) and split.targets.dtype == np.float32
    assert split.targets.sum() == n // 2
    positive = split.targets[:, 0] == 1
    assert np.all(labels[split.inputs[positive]] == cls)
    assert np.all(labels[split.inputs[~positive]] != cls)
    assert len(np.unique(labels[split.inputs[~positive]])) == (9 if "digit" in name else 4)
    assert np.all(pools[split.inputs] == pool)  # the splits draw on disjoint image pools
  assert task.type == TASK_TYPES[task.spec.kind] and task.loss == "bce" and task.metric == "error"


def test_classify_uses_every_image_of_each_pool_once():
  task = _build("classify_digit")
  labels, pools = _labels_and_pools(task)
  for split, pool in zip((task.train, task.val, task.test), (TRAIN, VAL, TEST)):
    assert sorted(split.inputs.tolist()) == np.flatnonzero(pools == pool).tolist()
    np.testing.assert_array_equal(split.targets, labels[split.inputs])
    assert split.targets.dtype == np.int32
  assert task.loss == "ce"


@pytest.mark.parametrize("name", ["count_digit(4)", "count_toy(1)"])
def test_count_lists_by_length_and_count(name):
  task = _build(name)
  labels, pools = _labels_and_pools(task)
  for split, pool, lengths, n in ((task.train, TRAIN, (2, 3, 4, 5), 400), (task.val, VAL, (6, 7, 8), 120),
                                  (task.test, TEST, (6, 7, 8), 120)):
    x = split.inputs
    assert isinstance(x, ListBatch) and x.values.shape == (n, max(lengths)) and x.values.dtype == np.int32
    length = x.mask.sum(axis=1)
    assert np.all(x.mask == (np.arange(max(lengths))[None] < length[:, None]))  # a prefix
    counts = np.bincount(length, minlength=max(lengths) + 1)[list(lengths)]
    assert counts.max() - counts.min() <= 1 and counts.sum() == n  # equal per length
    real = np.where(x.mask, labels[x.values], -1)
    np.testing.assert_array_equal(split.targets[:, 0], (real == task.spec.cls).sum(axis=1))
    assert np.all(pools[x.values[x.mask]] == pool)
    assert np.all(x.values[~x.mask] == 0)
    for L in lengths:  # the count is uniform over 0..L: mean L/2, and (100 lists a length) every value
      counts_l = split.targets[length == L, 0]
      assert abs(counts_l.mean() - L / 2) < 0.25 * L
      if pool == TRAIN:
        assert set(counts_l.astype(int)) == set(range(L + 1))
  # The counted images are not always at the same places.
  first = np.where(task.train.inputs.mask, labels[task.train.inputs.values], -1)[:, 0] == task.spec.cls
  assert 0.1 < first.mean() < 0.6


def test_sum_digits_labels_are_the_sums():
  task = _build("sum_digits")
  labels, _ = _labels_and_pools(task)
  x = task.train.inputs
  np.testing.assert_array_equal(task.train.targets[:, 0], np.where(x.mask, labels[x.values], 0).sum(axis=1))
  assert set(np.unique(labels[x.values[x.mask]])) == set(range(10))


@pytest.mark.parametrize("name, which", [("regress_speed", "street"), ("regress_mnist", "mnist_cells")])
def test_regression_targets_are_cost_and_initial_distance(name, which):
  task = _build(name)
  images = _images(which, SOURCES)
  assert task.table.shape[1:] == (3, 28, 28)
  start = SIGN_ROLES.index("start")
  for split, pool in zip((task.train, task.val, task.test), (TRAIN, VAL, TEST)):
    kinds = images.labels[split.inputs]
    assert split.targets.dtype == np.float32 and split.targets.shape == (len(kinds), 2)
    np.testing.assert_array_equal(split.targets[:, 0], np.asarray(CELL_COSTS)[kinds])
    # The start is visible after the regressor: its initial distance is its cost, d(start) = 1; every
    # other cell's (the goal and the other cost-1 cells included) is the bound 65.
    assert START_DISTANCE == 1.0 and np.all(split.targets[kinds == start] == [1.0, 1.0])
    assert np.all(split.targets[kinds != start, 1] == DISTANCE_BOUND)
    # Every image of the pool once (the authors' get_images_for_regression); the MNIST goal is a 1, one
    # of the cost-1 digits, so regress_mnist has no image of the goal kind of its own.
    np.testing.assert_array_equal(np.sort(split.inputs), np.flatnonzero(images.pools == pool))
    assert set(kinds.tolist()) == set(range(7 if which == "street" else 6))
  np.testing.assert_array_equal(regression_targets(np.arange(7)), [[9, 65], [7, 65], [5, 65], [3, 65],
                                                                   [1, 65], [1, 1], [1, 65]])
  with pytest.raises(ValueError, match="cell kinds"):
    regression_targets(np.array([7]))


@pytest.mark.parametrize("name, which", [("shortest_path_street", "street"),
                                         ("shortest_path_mnist", "mnist_cells")])
def test_shortest_path_grids(name, which):
  task = _build(name)
  images = _images(which, SOURCES)
  assert task.metric_component == 1
  for split, sizes, pool in ((task.train, SIZES.grids_train, TRAIN), (task.test, SIZES.grids_test, TEST)):
    shared = split.inputs
    assert isinstance(shared, SharedGraphs)
    # One neighbour table per grid size, indices as narrow as the table allows, uint8 targets.
    assert shared.layouts.neighbours.shape[0] == len(sizes)
    assert shared.values.dtype == index_dtype(len(task.table)) and shared.layout.dtype == np.uint8
    assert split.targets.dtype == np.uint8
    x = take(shared, np.arange(len(split.targets)))  # the GraphBatch the program sees
    assert isinstance(x, GraphBatch) and x.values.dtype == np.int32
    nodes = max(n * n for n, _ in sizes)
    assert x.values.shape == (sum(c for _, c in sizes), nodes) and x.neighbours.shape[1:] == (nodes, 5)
    for n, count in sizes:
      rows = np.flatnonzero(x.mask.sum(axis=1) == n * n)
      assert len(rows) == count
      kinds = images.labels[x.values[rows, :n * n]]
      # Start top left, goal bottom right: a street grid's goal sign, an MNIST grid's goal a 1 (kind 4).
      assert np.all(kinds[:, 0] == 5) and np.all(kinds[:, -1] == (6 if which == "street" else 4))
      assert np.all(kinds[:, 1:-1] < 5)
      costs = np.asarray(CELL_COSTS, np.float32)[kinds]
      np.testing.assert_array_equal(split.targets[rows, :n * n, 0], costs)
      np.testing.assert_array_equal(split.targets[rows, :n * n, 1],
                                    least_costs(costs.reshape(-1, n, n)).reshape(-1, n * n))
      real = x.neighbours[rows, :n * n][x.neighbour_mask[rows, :n * n]]
      assert np.all(real < n * n) and not x.neighbour_mask[rows, n * n:].any()
      assert np.all(images.pools[x.values[rows, :n * n]] == pool)


def test_tables_are_normalized_on_the_training_pool():
  task = _build("count_digit(1)")
  labels, pools = _labels_and_pools(task)
  train = task.table[pools == TRAIN]
  assert abs(float(train.mean())) < 1e-3 and abs(float(train.std()) - 1) < 1e-3
  assert task.table.dtype == np.float32 and task.table.shape[1:] == (1, 28, 28)


def test_tasks_are_deterministic_for_a_seed():
  a = _build("count_digit(2)", seed=3)
  b = build_task.__wrapped__(task_spec("count_digit(2)"), SOURCES, SIZES, 3)  # built again, not cached
  np.testing.assert_array_equal(a.train.inputs.values, b.train.inputs.values)
  c = _build("count_digit(2)", seed=4)
  assert not np.array_equal(a.train.inputs.values, c.train.inputs.values)


def test_training_fractions_are_nested_prefixes():
  task = _build("recognize_digit(5)")
  previous = None
  for f in FRACTIONS:
    part = task.with_fraction(f)
    n = len(part.train.targets)
    assert n == max(1, round(f * 400)) and part.fraction == f
    np.testing.assert_array_equal(part.train.inputs, task.train.inputs[:n])
    if previous is not None:
      assert set(previous.tolist()) <= set(part.train.inputs.tolist())
    previous = part.train.inputs
    assert len(part.val.targets) == 120  # validation and test are whole
  with pytest.raises(ValueError):
    task.with_fraction(0)
  lists = _build("count_digit(1)").with_fraction(0.1)
  assert lists.train.inputs.values.shape == (40, 5) and lists.train.targets.shape == (40, 1)


def test_stand_in_data_is_labelled_synthetic():
  toy = _build("count_toy(0)")
  assert toy.synthetic and "synthetic" in toy.name and toy.datasets == ("smallnorb-synthetic",)
  digit = _build("count_digit(0)")
  assert not digit.synthetic and "synthetic" not in digit.name and digit.datasets == ("mnist-5k",)
  street = _build("shortest_path_street")
  assert street.synthetic and "gtsrb-synthetic" in street.name


def test_bad_task_names_and_missing_data():
  with pytest.raises(ValueError, match="unknown task kind"):
    task_spec("juggle(3)")
  with pytest.raises(ValueError, match="needs a class"):
    TaskSpec("count_digit")
  with pytest.raises(ValueError, match="0..4"):
    task_spec("count_toy(7)")
  with pytest.raises(ValueError, match="takes no class"):
    task_spec("sum_digits(2)")
  missing = dataclasses.replace(SOURCES, mnist="/nonexistent/mnist")
  with pytest.raises(DataNotFoundError) as info:
    build_task(task_spec("count_digit(1)"), missing, SIZES)
  assert "/nonexistent/mnist" in str(info.value) and "--mnist" in str(info.value)


@pytest.mark.parametrize("name, loss, metric, component, per_element", [
    ("recognize_digit(3)", "bce", "error", None, False),
    ("classify_digit", "ce", "error", None, False),
    ("count_toy(1)", "mse", "rmse", None, False),
    ("regress_mnist", "mse", "rmse", None, False),
    ("shortest_path_mnist", "mse", "rmse", 1, True),
])
def test_a_task_knows_its_objective(name, loss, metric, component, per_element):
  objective = _build(name).objective
  assert (objective.loss, objective.metric, objective.metric_component, objective.per_element) == (
      loss, metric, component, per_element)
  assert not objective.from_logits  # Tune decides that from the compiled program


def test_task_sizes_are_checked():
  with pytest.raises(ValueError, match="lists"):
    TaskSizes(lists=(100, 0, 10))
  with pytest.raises(ValueError, match="grids_val"):
    TaskSizes(grids_val=())


def _split_bytes(split) -> int:
  def arrays(tree):
    if isinstance(tree, np.ndarray):
      yield tree
    elif isinstance(tree, tuple):
      for leaf in tree:
        yield from arrays(leaf)
  return sum(a.nbytes for a in arrays(split))


def test_grids_of_one_size_share_one_neighbour_table():
  """Per 4x4 grid: 16 uint16 cell indices, a uint8 layout id and 16 x 2 uint8 targets (65 bytes); the
  neighbour tables are stored once per grid size. At the paper's 1,070,000 training grids that is ~70 MB,
  where a neighbour table per grid took ~630 MB."""
  sizes = dataclasses.replace(SIZES, grids_train=((3, 2000), (4, 8000)))
  task = build_task(task_spec("shortest_path_mnist"), SOURCES, sizes, 0)
  shared = task.train.inputs
  assert shared.values.dtype == np.uint16 and len(task.table) > 255  # the narrowest dtype for the table
  layouts_bytes = _split_bytes(shared.layouts)
  assert layouts_bytes == 2 * 16 * (5 * 4 + 5 + 1)  # two 16-node tables: int32 neighbours, bool masks
  per_grid = (_split_bytes(task.train) - layouts_bytes) / 10_000
  assert per_grid == 16 * 2 + 1 + 16 * 2
  # A fraction keeps sharing the layouts.
  part = task.with_fraction(0.1)
  assert part.train.inputs.layouts is shared.layouts and len(part.train.targets) == 1000
  np.testing.assert_array_equal(part.train.inputs.values, shared.values[:1000])
