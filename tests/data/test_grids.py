import heapq

import numpy as np
import pytest

from hx.data.grids import K, grid_layouts, grid_targets, least_costs, neighbour_table


def _dijkstra(costs: np.ndarray) -> np.ndarray:
  n = costs.shape[0]
  dist = np.full((n, n), np.inf)
  dist[0, 0] = costs[0, 0]
  heap = [(costs[0, 0], 0, 0)]
  while heap:
    d, r, c = heapq.heappop(heap)
    if d > dist[r, c]:
      continue
    for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
      if 0 <= rr < n and 0 <= cc < n and d + costs[rr, cc] < dist[rr, cc]:
        dist[rr, cc] = d + costs[rr, cc]
        heapq.heappush(heap, (dist[rr, cc], rr, cc))
  return dist


def test_least_costs_match_dijkstra_on_random_grids():
  rng = np.random.default_rng(0)
  for n in (1, 2, 3, 5, 7):
    costs = rng.choice([1, 3, 5, 7, 9], size=(20, n, n)).astype(np.float32)
    got = least_costs(costs)
    for g in range(20):
      np.testing.assert_array_equal(got[g], _dijkstra(costs[g]))


def test_least_costs_take_the_detour_around_expensive_cells():
  costs = np.array([[[1, 9, 1], [1, 9, 1], [1, 1, 1]]], np.float32)
  np.testing.assert_array_equal(least_costs(costs)[0], [[1, 10, 7], [2, 11, 6], [3, 4, 5]])


def test_neighbour_table_of_a_padded_grid():
  neighbours, neighbour_mask, mask = neighbour_table(3, nodes=16)
  assert neighbours.shape == (16, K) and neighbours.dtype == np.int32
  assert mask.tolist() == [True] * 9 + [False] * 7
  np.testing.assert_array_equal(neighbours[:, 0], np.arange(16))  # a node first in its own list
  assert sorted(neighbours[4, neighbour_mask[4]].tolist()) == [1, 3, 4, 5, 7]  # the centre
  assert sorted(neighbours[0, neighbour_mask[0]].tolist()) == [0, 1, 3]  # a corner
  assert neighbour_mask.sum(axis=1).tolist() == [3, 4, 3, 4, 5, 4, 3, 4, 3] + [0] * 7
  # Masked entries point at the node itself; real entries are 4-connected neighbours.
  for u in range(9):
    for v, ok in zip(neighbours[u], neighbour_mask[u]):
      if ok:
        assert abs(u // 3 - v // 3) + abs(u % 3 - v % 3) <= 1
      else:
        assert v == u
  with pytest.raises(ValueError):
    neighbour_table(5, nodes=16)


def test_neighbour_slots_are_directions():
  """Slot k is the same direction in every row (node, up, down, left, right), empty at a border: a slot
  kernel reads a cell's neighbours by direction and tells the corners apart."""
  neighbours, neighbour_mask, _ = neighbour_table(3)
  assert neighbours[4].tolist() == [4, 1, 7, 3, 5]  # the centre: up 1, down 7, left 3, right 5
  assert neighbour_mask[0].tolist() == [True, False, True, False, True]  # top left: down 3, right 1
  assert neighbours[0, [2, 4]].tolist() == [3, 1]
  assert neighbour_mask[8].tolist() == [True, True, False, True, False]  # bottom right: up 5, left 7
  assert neighbours[8, [1, 3]].tolist() == [5, 7]
  n = 4
  nb, nm, _ = neighbour_table(n)
  r, c = np.divmod(np.arange(n * n), n)
  for slot, (dr, dc) in enumerate([(-1, 0), (1, 0), (0, -1), (0, 1)], start=1):
    ok = nm[:, slot]
    np.testing.assert_array_equal(ok, (0 <= r + dr) & (r + dr < n) & (0 <= c + dc) & (c + dc < n))
    np.testing.assert_array_equal(nb[ok, slot], ((r + dr) * n + c + dc)[ok])


def test_grid_targets_hold_cost_and_distance_per_node():
  costs = np.array([[[1, 3], [5, 1]]], np.float32)
  targets = grid_targets(costs, nodes=9)
  assert targets.shape == (1, 9, 2) and targets.dtype == np.float32
  # d(start) = cost(start); d(u) = cost(u) + min over neighbours.
  np.testing.assert_array_equal(targets[0, :4], [[1, 1], [3, 4], [5, 6], [1, 5]])
  np.testing.assert_array_equal(targets[0, 4:], 0)
  with pytest.raises(ValueError, match="cannot pad"):
    grid_targets(costs, nodes=3)


def test_grid_layouts_hold_one_table_per_size():
  layouts = grid_layouts([3, 4], nodes=16)
  assert layouts.neighbours.shape == (2, 16, K) and layouts.neighbour_mask.shape == (2, 16, K)
  assert layouts.mask.shape == (2, 16) and layouts.mask.sum(axis=1).tolist() == [9, 16]
  for i, n in enumerate((3, 4)):
    for a, b in zip(layouts, neighbour_table(n, 16)):
      np.testing.assert_array_equal(a[i], b)
