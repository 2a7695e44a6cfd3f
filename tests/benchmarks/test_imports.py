"""No import cycle among benchmarks/' modules.

The benchmark scripts import one another (a study reuses a benchmark's data, a benchmark runs its peer),
some at the top of the file and some inside functions, by their dotted names (`benchmarks.studies.x`) or,
as scripts run from their own folder do, by bare names (`import torch_reference`). A cycle between two of
them works only in the import order that happens to run first; what both need belongs in one module the
others import. The graph here reads every `import` and `from ... import` anywhere in each file's syntax
tree (`ast`), so an import inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import strongly_connected

REPO = Path(__file__).resolve().parents[2]


def module_names(root: Path, package: str) -> dict[str, Path]:
  """Every module under `root` (the folder of the top-level `package`), by dotted name: {name: file}.

  A folder's `__init__.py` is the folder's own name; other files are `package.sub.file`."""
  out = {}
  for path in sorted(root.rglob("*.py")):
    parts = (package, *path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
      parts = parts[:-1]
    out[".".join(parts)] = path
  return out


def _targets(node: ast.AST, here: str, is_package: bool) -> list[str]:
  """The dotted names one statement in module `here` imports ([] for any other node): `import a.b` names
  a.b; `from a import b` names a.b, which is the module a.b where there is one and else something a
  defines; a relative `from .` is read against `here`'s package."""
  if isinstance(node, ast.Import):
    return [alias.name for alias in node.names]
  if not isinstance(node, ast.ImportFrom):
    return []
  if node.level:
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    module = ".".join([*base, node.module] if node.module else base)
  else:
    module = node.module or ""
  return [f"{module}.{alias.name}" for alias in node.names]


def _resolve(name: str, here: str, modules: dict[str, Path]) -> str | None:
  """The module of `modules` that `name`, imported in module `here`, refers to, or None (outside them).

  The name is tried as written, then relative to `here`'s folder (a script's bare import of a file beside
  it: `python benchmarks/x.py` puts that folder first on sys.path); of each, the longest prefix that is
  one of `modules` (`from a import f` names a.f, which is a function of the module a)."""
  folder = here.split(".")[:-1]
  for parts, shortest in ((name.split("."), 1), ([*folder, *name.split(".")], len(folder) + 1)):
    for end in range(len(parts), shortest - 1, -1):
      prefix = ".".join(parts[:end])
      if prefix in modules:
        return prefix
  return None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
  """{module: the other modules of `modules` it imports anywhere in its file}. A file that does not parse
  is a SyntaxError naming it."""
  graph = {}
  for here, path in modules.items():
    try:
      tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as e:
      raise SyntaxError(f"{path}: cannot parse it to read its imports: {e}") from e
    is_package = path.name == "__init__.py"
    targets = (_resolve(name, here, modules) for node in ast.walk(tree)
               for name in _targets(node, here, is_package))
    graph[here] = {t for t in targets if t is not None and t != here}
  return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """One shortest cycle per strongly connected group of modules that import one another, each as
  [a, b, ..., a] starting from the group's first module in sorted order; [] when there is none."""
  groups = strongly_connected(graph)
  cycles = []
  for group in sorted(groups, key=min):
    start = min(group)
    parent, frontier, found = {start: None}, [start], None
    while frontier and found is None:  # breadth first within the group, back to the start
      nxt = []
      for v in frontier:
        for w in sorted(graph[v] & group):
          if w == start:
            found = v
            break
          if w not in parent:
            parent[w] = v
            nxt.append(w)
        if found is not None:
          break
      frontier = nxt
    path, v = [start], found
    while v is not None and v != start:
      path.insert(1, v)
      v = parent[v]
    cycles.append([*path, start])
  return cycles


def test_no_import_cycle_among_benchmarks_modules():
  modules = module_names(REPO / "benchmarks", "benchmarks")
  assert "benchmarks.train_throughput" in modules and "benchmarks.studies.regressor_floor" in modules
  cycles = find_cycles(import_graph(modules))
  assert not cycles, "import cycles among benchmarks/' modules: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_graph_reads_the_known_edges():
  """The graph sees imports at the top, inside functions, and by bare and dotted names."""
  graph = import_graph(module_names(REPO / "benchmarks", "benchmarks"))
  assert "benchmarks.torch_reference" in graph["benchmarks.train_throughput"]  # inside main()
  assert "benchmarks.throughput_data" in graph["benchmarks.torch_reference"]  # at the top
  assert "benchmarks.studies.regressor_floor" in graph["benchmarks.studies.relaxation_learning"]
  assert "benchmarks.studies.grid_states" in graph["benchmarks.studies.regressor_floor"]


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
  for name, text in files.items():
    path = root / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
  return module_names(root / "pkg", "pkg")


def test_a_cycle_through_a_function_level_and_a_bare_import_is_found_and_named(tmp_path):
  modules = _write(tmp_path, {
    "a.py": "def f():\n  from pkg.sub.b import g\n  return g\n",
    "sub/b.py": "import c\n",  # a script's bare import of its sibling pkg/sub/c.py
    "sub/c.py": "from pkg import a\n",
    "d.py": "import numpy\nfrom pkg.sub import b\n",  # imports into the cycle, not part of it
  })
  graph = import_graph(modules)
  assert graph["pkg.sub.b"] == {"pkg.sub.c"} and graph["pkg.sub.c"] == {"pkg.a"}
  assert find_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]]


def test_two_cycles_are_each_named_once_and_a_chain_is_none():
  graph = {"x": {"y"}, "y": {"x", "z"}, "z": set(), "p": {"q"}, "q": {"r"}, "r": {"p"}}
  assert find_cycles(graph) == [["p", "q", "r", "p"], ["x", "y", "x"]]
  assert find_cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_relative_imports_resolve(tmp_path):
  modules = _write(tmp_path, {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .a import f\n"})
  assert find_cycles(import_graph(modules)) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_a_file_that_does_not_parse_is_named(tmp_path):
  modules = _write(tmp_path, {"bad.py": "def (:\n"})
  with pytest.raises(SyntaxError, match="bad.py: cannot parse it"):
    import_graph(modules)
