"""Random connected graphs for the shortest-path tasks beyond grids, and their least-cost labels.

A graph of n nodes is given by its edges, each undirected edge listed once in each direction (sender,
receiver), sorted by receiver, then sender: the edge-list form of `hx.lang.values.EdgeGraphBatch`.
Two families (`FAMILIES`), both connected, every degree between 1 and `MAX_DEGREE`:

  erdos_renyi  G(n, p) with p = mean_degree / (n - 1); the components are then joined by an edge from a
               random node of each to a random node of the growing connected part.
  geometric    n points uniform in the unit square, joined when closer than the radius that gives the
               mean degree (r = sqrt(mean_degree / (pi (n - 1)))); components are joined by their closest
               pair of points, as a road network would be.

Either way a node whose degree is above `MAX_DEGREE` then loses edges (random ones, or its longest) as
long as the graph stays connected. Everything is drawn from the generator passed in: a seed gives the
same graphs on every machine.

Least costs follow `hx.data.grids`' convention: a path costs the sum of its nodes' costs, both ends
included, so d(start) = cost(start) and d(u) = cost(u) + min over neighbours v of d(v).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FAMILIES", "MAX_DEGREE", "MEAN_DEGREE", "random_graph", "graph_least_costs", "least_costs_batch",
           "degrees", "is_connected"]

FAMILIES = ("erdos_renyi", "geometric")
MAX_DEGREE = 10
"""No node has more neighbours than this."""
MEAN_DEGREE = {"erdos_renyi": 3.0, "geometric": 4.0}
"""The expected degree each family is drawn with (before joining components and capping degrees). A
geometric graph gets more: its components are smaller at the same degree."""


def _components(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
  """The component label of each node (the smallest node index in it), for undirected edges (u, v)."""
  label = np.arange(n)
  while True:  # label propagation: at most the graph's diameter rounds
    new = label.copy()
    np.minimum.at(new, u, label[v])
    np.minimum.at(new, v, label[u])
    new = new[new]
    if np.array_equal(new, label):
      return label
    label = new


def is_connected(n: int, senders: np.ndarray, receivers: np.ndarray) -> bool:
  """Whether the graph of n nodes with these edges is connected (edge directions ignored)."""
  return n <= 1 or bool(np.all(_components(n, np.asarray(senders), np.asarray(receivers)) == 0))


def degrees(n: int, senders: np.ndarray, receivers: np.ndarray) -> np.ndarray:
  """In-degree of each node (for a graph listing each edge both ways: its number of neighbours)."""
  return np.bincount(np.asarray(receivers), minlength=n)


def _join(rng: np.random.Generator, n: int, pairs: set, points: np.ndarray | None) -> None:
  """Adds edges to `pairs` ((u, v) with u < v) until the graph is connected."""
  while True:
    u = np.array([p[0] for p in pairs], np.int64)
    v = np.array([p[1] for p in pairs], np.int64)
    label = _components(n, u, v)
    others = np.flatnonzero(label != label[0])
    if not others.size:
      return
    main = np.flatnonzero(label == label[0])
    part = np.flatnonzero(label == label[rng.choice(others)])
    if points is None:
      a, b = rng.choice(main), rng.choice(part)
    else:
      dist = np.linalg.norm(points[main][:, None] - points[part][None], axis=-1)
      i, j = np.unravel_index(np.argmin(dist), dist.shape)
      a, b = main[i], part[j]
    pairs.add((min(a, b), max(a, b)))


def _cap_degrees(rng: np.random.Generator, n: int, pairs: set, points: np.ndarray | None,
                 max_degree: int) -> None:
  """Removes edges of nodes above max_degree (longest first for geometric graphs, else random) while the
  graph stays connected."""
  for node in rng.permutation(n):
    incident = [p for p in pairs if node in p]
    if len(incident) <= max_degree:
      continue
    if points is None:
      order = rng.permutation(len(incident))
    else:
      order = np.argsort([-np.linalg.norm(points[a] - points[b]) for a, b in incident])
    for k in order:
      if sum(node in p for p in pairs) <= max_degree:
        break
      edge = incident[k]
      pairs.discard(edge)
      u = np.array([p[0] for p in pairs], np.int64)
      v = np.array([p[1] for p in pairs], np.int64)
      if not np.all(_components(n, u, v) == 0):
        pairs.add(edge)


def random_graph(rng: np.random.Generator, n: int, kind: str, max_degree: int = MAX_DEGREE,
                 mean_degree: float | None = None) -> tuple[np.ndarray, np.ndarray]:
  """A random connected graph of n nodes (see the module docstring).

  Args:
    rng: the generator everything is drawn from.
    n: nodes (>= 2).
    kind: "erdos_renyi" or "geometric".
    max_degree: the most neighbours a node may have (>= 2).
    mean_degree: the degree the graph is drawn with; default `MEAN_DEGREE[kind]`.

  Returns:
    (senders, receivers): int32 arrays (2m,) of its m undirected edges, each listed in both directions,
    sorted by receiver, then sender.
  """
  if kind not in FAMILIES:
    raise ValueError(f"unknown graph kind {kind!r}; the kinds are {', '.join(FAMILIES)}")
  if n < 2 or max_degree < 2:
    raise ValueError(f"a random graph needs n >= 2 nodes and max_degree >= 2, got {n}, {max_degree}")
  degree = MEAN_DEGREE[kind] if mean_degree is None else mean_degree
  iu, ju = np.triu_indices(n, 1)
  points = None
  if kind == "erdos_renyi":
    keep = rng.random(iu.shape[0]) < min(1.0, degree / (n - 1))
  else:
    points = rng.random((n, 2))
    radius = np.sqrt(degree / (np.pi * (n - 1)))
    keep = np.linalg.norm(points[iu] - points[ju], axis=-1) < radius
  pairs = {(int(a), int(b)) for a, b in zip(iu[keep], ju[keep])}
  _join(rng, n, pairs, points)
  _cap_degrees(rng, n, pairs, points, max_degree)
  u = np.array([p[0] for p in pairs], np.int32)
  v = np.array([p[1] for p in pairs], np.int32)
  senders, receivers = np.concatenate([u, v]), np.concatenate([v, u])
  order = np.lexsort((senders, receivers))
  return senders[order], receivers[order]


def least_costs_batch(costs: np.ndarray, senders: np.ndarray, receivers: np.ndarray,
                      edge_mask: np.ndarray, mask: np.ndarray, start: int = 0) -> np.ndarray:
  """Least path costs from node `start` of each graph of a padded batch (Bellman-Ford over all at once).

  Args:
    costs: (g, N) positive node costs.
    senders, receivers: (g, E) integer edge ends (indices within each graph).
    edge_mask: (g, E) bool, the real edges.
    mask: (g, N) bool, the real nodes.
    start: the source node of every graph.

  Returns:
    float32 (g, N): d(u) = the least sum of node costs over paths from start to u, both ends included; 0 on
    padded nodes, inf where no path reaches u.
  """
  costs = np.asarray(costs, np.float64)
  g, n = costs.shape
  flat = np.arange(g)[:, None] * n
  real = np.asarray(edge_mask, bool)
  src = (np.asarray(senders) + flat)[real]
  dst = (np.asarray(receivers) + flat)[real]
  order = np.argsort(dst, kind="stable")
  src, dst = src[order], dst[order]
  starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]]) if dst.size else np.zeros(0, np.int64)
  d = np.full(g * n, np.inf)
  d[flat[:, 0] + start] = costs.reshape(-1)[flat[:, 0] + start]
  cost = costs.reshape(-1)
  for _ in range(n):
    best = np.full(g * n, np.inf)
    if dst.size:
      best[dst[starts]] = np.minimum.reduceat(d[src], starts)
    new = np.minimum(d, best + cost)
    if np.array_equal(new, d):
      break
    d = new
  d = d.reshape(g, n)
  return np.where(np.asarray(mask, bool), d, 0.0).astype(np.float32)


def graph_least_costs(cost: np.ndarray, senders: np.ndarray, receivers: np.ndarray, n: int | None = None,
                      start: int = 0) -> np.ndarray:
  """Least path costs from `start` in one graph of len(cost) (or n) nodes; see `least_costs_batch`."""
  n = len(cost) if n is None else n
  senders, receivers = np.asarray(senders)[None], np.asarray(receivers)[None]
  return least_costs_batch(np.asarray(cost)[None, :n], senders, receivers, np.ones_like(senders, bool),
                           np.ones((1, n), bool), start)[0]
