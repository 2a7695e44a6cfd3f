"""What the import-graph tests share: the groups of modules that import one another."""

from __future__ import annotations


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
  """The strongly connected components of more than one node of `graph` (node -> the nodes it points
  to), in the order Tarjan's algorithm closes them, visiting nodes and edges in sorted order."""
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on_stack: set[str] = set()
  groups: list[set[str]] = []

  def visit(v: str) -> None:
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(graph.get(v, ())):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = set()
      while True:
        w = stack.pop()
        on_stack.discard(w)
        group.add(w)
        if w == v:
          break
      if len(group) > 1:
        groups.append(group)

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return groups
