"""Grids for the shortest-path tasks: 4-connected n x n grids as graphs, and their least-cost labels.

A grid's N = n*n nodes are numbered row-major. Its neighbour table lists, for node u, u itself first and
then its neighbours up, down, left and right, each in its own slot (K = 5 entries); a slot whose
neighbour does not exist (a border) holds u itself and is masked, so slot k means the same direction in
every row (a slot kernel, `hx.compile.modules`, reads them by direction). Grids of several sizes in one
split are padded to the largest node count with masked nodes, and all grids of one size share one table
(`grid_layouts`).

The distance convention, the same everywhere in hx (these labels, the regression tasks' targets in
`hx.data.tasks`, and the hand-set Bellman-Ford kernel of the tests), is the authors' (their
`MazeGenerator.shortest_path_bfm`): the cost of a path is the sum of its cells' costs, the start's
included, so the least cost of reaching cell u is

    d(start) = cost(start) = 1,    d(u) = cost(u) + min over neighbours v of d(v),

the fixed point of the relaxation d(u) <- min(d(u), cost(u) + min_v d(v)) from the initial values
d(start) = 1 and d(u) = 65 elsewhere (`hx.data.tasks.DISTANCE_BOUND`: no least cost in a 5x5 grid of
costs <= 9 exceeds it, the goal's worst case being 1 + 7 * 9 + 1 = 65). That relaxation is what the
paper's conv_g kernels learn, and the regressions' targets (cost, initial distance) are its initial node
states.
"""

from __future__ import annotations

import numpy as np

from hx.lang.values import GraphLayouts

__all__ = ["K", "neighbour_table", "least_costs", "grid_targets", "grid_layouts"]

K = 5
"""Entries of a neighbour list: the node itself and up to four neighbours."""


def neighbour_table(n: int, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """The neighbour table of an n x n grid, padded to `nodes` (default n*n) nodes.

  Returns:
    neighbours: int32 (nodes, K); row u is [u, up, down, left, right], slot k always the same direction;
      missing neighbours (and padded nodes' rows) point at u itself.
    neighbour_mask: bool (nodes, K); True for u itself and its existing neighbours, False elsewhere (and
      everywhere on padded nodes).
    mask: bool (nodes,); True for the n*n real nodes.
  """
  nodes = n * n if nodes is None else nodes
  if nodes < n * n:
    raise ValueError(f"cannot pad a {n}x{n} grid to {nodes} nodes")
  u = np.arange(nodes)
  r, c = u // n, u % n
  real = u < n * n
  candidates = [(u, real), (u - n, real & (r > 0)), (u + n, real & (r < n - 1)),
                (u - 1, real & (c > 0)), (u + 1, real & (c < n - 1))]
  neighbours = np.repeat(u[:, None], K, 1).astype(np.int32)
  neighbour_mask = np.zeros((nodes, K), bool)
  for slot, (idx, ok) in enumerate(candidates):
    neighbours[ok, slot] = idx[ok]
    neighbour_mask[ok, slot] = True
  return neighbours, neighbour_mask, real


def least_costs(costs: np.ndarray) -> np.ndarray:
  """Least path costs from the top-left cell of each grid.

  Args:
    costs: (g, n, n) positive cell costs.

  Returns:
    float32 (g, n, n): d(u) = the least sum of cell costs over 4-connected paths from (0, 0) to u, both
    ends included. Computed by vectorised Bellman-Ford over all grids at once (at most n*n rounds).
  """
  costs = np.asarray(costs, np.float64)
  d = np.full(costs.shape, np.inf)
  d[:, 0, 0] = costs[:, 0, 0]
  for _ in range(costs.shape[1] * costs.shape[2]):
    best = d.copy()
    best[:, 1:, :] = np.minimum(best[:, 1:, :], d[:, :-1, :])
    best[:, :-1, :] = np.minimum(best[:, :-1, :], d[:, 1:, :])
    best[:, :, 1:] = np.minimum(best[:, :, 1:], d[:, :, :-1])
    best[:, :, :-1] = np.minimum(best[:, :, :-1], d[:, :, 1:])
    new = np.minimum(d, best + costs)
    new[:, 0, 0] = costs[:, 0, 0]
    if np.array_equal(new, d):
      break
    d = new
  return d.astype(np.float32)


def grid_targets(costs: np.ndarray, nodes: int) -> np.ndarray:
  """Per-node targets of g n x n grids, padded to `nodes` nodes.

  Args:
    costs: (g, n, n) cell costs.
    nodes: the padded node count (>= n*n).

  Returns:
    float32 (g, nodes, 2): (cost, least cost from the start) per node, row-major; 0 on padded nodes.
  """
  g, n, _ = costs.shape
  if nodes < n * n:
    raise ValueError(f"cannot pad a {n}x{n} grid to {nodes} nodes")
  targets = np.zeros((g, nodes, 2), np.float32)
  targets[:, :n * n, 0] = costs.reshape(g, n * n)
  targets[:, :n * n, 1] = least_costs(costs).reshape(g, n * n)
  return targets


def grid_layouts(sides: tuple[int, ...] | list[int], nodes: int) -> GraphLayouts:
  """The neighbour tables and masks of n x n grids for each n in `sides`, padded to `nodes` nodes.

  Returns:
    GraphLayouts with neighbours int32 (S, nodes, K), neighbour_mask bool (S, nodes, K) and mask bool
    (S, nodes), layout i being the grid of side sides[i] (`neighbour_table`).
  """
  tables = [neighbour_table(n, nodes) for n in sides]
  return GraphLayouts(*(np.stack([t[i] for t in tables]) for i in range(3)))
