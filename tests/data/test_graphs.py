"""Random connected graphs, their least costs, and the shortest-path tasks on them."""

import heapq

import numpy as np
import pytest

from hx.compile.values import EdgeGraphBatch, check_graphs, index_dtype, take
from hx.data import (
  CELL_COSTS,
  DISTANCE_BOUND,
  GRAPH_FAMILIES,
  KINDS,
  SIGN_ROLES,
  TEST,
  TRAIN,
  VAL,
  Sources,
  TaskSizes,
  build_task,
  task_spec,
)
from hx.data.graphs import (
  MAX_DEGREE,
  degrees,
  graph_least_costs,
  is_connected,
  least_costs_batch,
  random_graph,
)
from hx.data.tasks import _images
from hx.lang.paper import TASK_TYPES
from hx.presets import task_sizes, training_settings

SOURCES = Sources(standin_per_class=(30, 12, 12))
SIZES = TaskSizes(graphs=(60, 10, 20), graph_nodes=((10, 20), (30, 50), (30, 50)))


def _dijkstra(n: int, senders, receivers, cost) -> np.ndarray:
  """Least sum of node costs on a path from node 0, both ends included."""
  out = {u: [] for u in range(n)}
  for s, r in zip(senders, receivers):
    out[int(s)].append(int(r))
  dist = np.full(n, np.inf)
  dist[0] = cost[0]
  heap = [(float(cost[0]), 0)]
  while heap:
    d, u = heapq.heappop(heap)
    if d > dist[u]:
      continue
    for v in out[u]:
      if d + cost[v] < dist[v]:
        dist[v] = d + cost[v]
        heapq.heappush(heap, (dist[v], v))
  return dist


@pytest.mark.parametrize("kind", ["erdos_renyi", "geometric"])
def test_random_graphs_are_connected_undirected_and_of_bounded_degree(kind):
  rng = np.random.default_rng(0)
  for n in (2, 3, 10, 27, 50):
    for _ in range(5):
      s, r = random_graph(rng, n, kind)
      assert s.dtype == r.dtype == np.int32 and len(s) == len(r) and len(s) % 2 == 0
      assert is_connected(n, s, r)
      d = degrees(n, s, r)
      assert d.min() >= 1 and d.max() <= MAX_DEGREE
      pairs = set(zip(s.tolist(), r.tolist()))
      assert len(pairs) == len(s) and all((b, a) in pairs for a, b in pairs)  # both directions, no repeats
      assert not np.any(s == r) and s.min() >= 0 and max(s.max(), r.max()) < n
      assert np.all(np.diff(r * n + s) > 0)  # sorted by receiver, then sender


def test_random_graphs_are_deterministic_for_a_seed_and_differ_between_kinds():
  a = random_graph(np.random.default_rng(5), 30, "geometric")
  b = random_graph(np.random.default_rng(5), 30, "geometric")
  c = random_graph(np.random.default_rng(5), 30, "erdos_renyi")
  assert all(np.array_equal(x, y) for x, y in zip(a, b))
  assert len(a[0]) != len(c[0]) or not np.array_equal(a[0], c[0])
  with pytest.raises(ValueError, match="unknown graph kind 'grid'"):
    random_graph(np.random.default_rng(0), 5, "grid")
  with pytest.raises(ValueError, match="n >= 2"):
    random_graph(np.random.default_rng(0), 1, "geometric")


def test_degrees_are_capped_even_when_the_draw_is_dense():
  s, r = random_graph(np.random.default_rng(1), 40, "erdos_renyi", max_degree=4, mean_degree=12.0)
  assert degrees(40, s, r).max() <= 4 and is_connected(40, s, r)


def test_least_costs_match_dijkstra():
  rng = np.random.default_rng(2)
  for kind in ("erdos_renyi", "geometric"):
    for n in (2, 9, 33, 50):
      s, r = random_graph(rng, n, kind)
      cost = rng.choice([1, 3, 5, 7, 9], size=n).astype(np.float32)
      np.testing.assert_array_equal(graph_least_costs(cost, s, r), _dijkstra(n, s, r, cost))


def test_least_costs_of_a_padded_batch():
  # A path 0 - 1 - 2 and a single node; padded to 4 nodes and 5 edges (padding edges point anywhere).
  costs = np.array([[1, 3, 5, 7], [2, 9, 9, 9]], np.float32)
  senders = np.array([[0, 1, 1, 2, 3], [0, 0, 0, 0, 0]])
  receivers = np.array([[1, 0, 2, 1, 3], [3, 1, 2, 0, 0]])
  edge_mask = np.array([[1, 1, 1, 1, 0], [0, 0, 0, 0, 0]], bool)
  mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0]], bool)
  got = least_costs_batch(costs, senders, receivers, edge_mask, mask)
  np.testing.assert_array_equal(got, [[1, 4, 9, 0], [2, 0, 0, 0]])
  unreachable = least_costs_batch(costs[:1], senders[:1], receivers[:1], edge_mask[:1] & [[1, 1, 0, 0, 0]],
                                  mask[:1])
  assert unreachable[0, 2] == np.inf


def test_graph_tasks_are_registered_beside_the_papers_ten():
  assert set(GRAPH_FAMILIES) == {"shortest_path_graph_mnist", "shortest_path_geometric_mnist"}
  assert list(KINDS)[:10] == list(TASK_TYPES)[:10] and len(KINDS) == len(TASK_TYPES) == 12
  for kind in GRAPH_FAMILIES:
    assert TASK_TYPES[kind] == TASK_TYPES["shortest_path_mnist"]
    assert str(TASK_TYPES[kind]) == "Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>"
    settings = training_settings(kind)
    assert settings.epochs == 5 and settings.train_examples == TaskSizes().graphs[0]
    assert "ours" in settings.source("epochs") and "ours" in settings.source("batch_size")
    assert training_settings(kind, "quick").train_examples == task_sizes("quick").graphs[0]


@pytest.mark.parametrize("name", sorted(GRAPH_FAMILIES))
def test_shortest_path_graph_tasks(name):
  task = build_task(task_spec(name), SOURCES, SIZES)
  images = _images("mnist_cells", SOURCES)
  assert task.type == TASK_TYPES[name] and task.metric_component == 1 and task.objective.per_element
  for split, pool, count, (lo, hi), n_pad in ((task.train, TRAIN, 60, (10, 20), 32),
                                              (task.val, VAL, 10, (30, 50), 64),
                                              (task.test, TEST, 20, (30, 50), 64)):
    x = split.inputs
    assert isinstance(x, EdgeGraphBatch)
    check_graphs(x)
    assert x.values.shape == (count, n_pad) and x.values.dtype == index_dtype(len(task.table))
    assert x.senders.dtype == x.receivers.dtype == np.uint8 and x.senders.shape[1] in (64, 128, 256)
    assert split.targets.dtype == np.uint8 and split.targets.shape == (count, n_pad, 2)
    nodes = x.mask.sum(axis=1)
    assert nodes.min() >= lo and nodes.max() <= hi and nodes.max() > n_pad // 2  # a tight bucket
    batch = take(x, np.arange(count))
    assert batch.values.dtype == batch.senders.dtype == np.int32
    for b in range(count):
      n, e = int(nodes[b]), int(x.edge_mask[b].sum())
      s, r = x.senders[b, :e].astype(int), x.receivers[b, :e].astype(int)
      assert is_connected(n, s, r) and degrees(n, s, r).max() <= MAX_DEGREE
      kinds = images.labels[x.values[b, :n]]
      # The start a 0 (the start kind), the goal a 1 (the cost-1 digits' kind, as in the MNIST grids).
      assert kinds[0] == SIGN_ROLES.index("start") and kinds[-1] == SIGN_ROLES.index("speed_100")
      assert np.all(kinds[1:-1] < 5)
      assert np.all(images.pools[x.values[b, :n]] == pool)
      cost = np.asarray(CELL_COSTS, np.float32)[kinds]
      np.testing.assert_array_equal(split.targets[b, :n, 0], cost)
      np.testing.assert_array_equal(split.targets[b, :n, 1], _dijkstra(n, s, r, cost))
      assert split.targets[b, :n, 1].max() <= DISTANCE_BOUND and split.targets[b, 0, 1] == 1
      assert not split.targets[b, n:].any()


def test_graph_tasks_are_deterministic_for_a_seed():
  spec = task_spec("shortest_path_graph_mnist")
  a = build_task(spec, SOURCES, SIZES, 3)
  b = build_task.__wrapped__(spec, SOURCES, SIZES, 3)
  c = build_task(spec, SOURCES, SIZES, 4)
  for x, y in zip(a.train.inputs, b.train.inputs):
    np.testing.assert_array_equal(x, y)
  assert not np.array_equal(a.train.inputs.senders, c.train.inputs.senders)
  assert a.with_fraction(0.5).train.inputs.senders.shape == (30, a.train.inputs.senders.shape[1])


def test_graph_sizes_are_validated():
  with pytest.raises(ValueError, match="TaskSizes.graphs"):
    TaskSizes(graphs=(10, 0, 5))
  with pytest.raises(ValueError, match="TaskSizes.graph_nodes"):
    TaskSizes(graph_nodes=((10, 5), (30, 50), (30, 50)))
