"""The layers of hx (docs/DESIGN.md, "The layers"): no import cycle among hx's modules, and every import
between packages goes downward.

Read from the source with `ast`, imports inside functions included (a lazy import is still a dependency).
The re-exports of `hx/__init__.py` and `hx/<package>/__init__.py` are not counted: they exist to gather a
package's names for its users.
"""

import ast
import pathlib

from tests.import_graph import strongly_connected

ROOT = pathlib.Path(__file__).resolve().parent.parent / "hx"

LAYERS = ("lang", "compile", "data", "presets", "synth", "baselines", "evaluation", "bin")
"""hx's packages from the bottom up (and `hx/presets.py`, between data and synth): a package imports only
from packages before it."""
BESIDE = ("atomic", "canonical_json", "cpu_convolutions", "determinism", "jsonread", "process_memory")
"""Modules beside the packages (`hx/atomic.py`, `hx/canonical_json.py`, `hx/cpu_convolutions.py`,
`hx/determinism.py`, `hx/jsonread.py`, `hx/process_memory.py`): any layer may import them."""


def _modules() -> dict[str, pathlib.Path]:
  """Every module of hx by its dotted name (a package by its name, e.g. "hx.synth")."""
  modules = {}
  for path in ROOT.rglob("*.py"):
    parts = ("hx",) + path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
      parts = parts[:-1]
    modules[".".join(parts)] = path
  return modules


def _imports(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
  """The hx modules that module `name` imports, anywhere in its source."""
  package = name if path.name == "__init__.py" else name.rpartition(".")[0]
  found = set()
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import):
      targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
      # `from a.b import c` imports the module a.b.c when there is one, else a name of a.b
      targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                 for alias in node.names]
    else:
      continue
    for target in targets:
      while target and target not in modules:  # `import hx.x.y` of a name: its module
        target = target.rpartition(".")[0]
      if target.startswith("hx") and target != name:
        found.add(target)
  return found


def _graph() -> dict[str, set[str]]:
  """Module -> the hx modules it imports; the packages' `__init__` re-exports left out."""
  modules = _modules()
  return {name: (set() if path.name == "__init__.py" else _imports(name, path, modules))
          for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """The strongly connected components of more than one module, each sorted."""
  return [sorted(group) for group in strongly_connected(graph)]


def _layer(module: str) -> int | None:
  """The layer of `module` (its index in `LAYERS`), -1 beside the packages, None for `hx` itself (which
  every hx module imports anyway: Python imports a package before its modules)."""
  parts = module.split(".")
  if len(parts) < 2:
    return None
  if parts[1] in BESIDE:
    return -1
  assert parts[1] in LAYERS, f"{module} is in no layer: add its package to LAYERS (and to docs/DESIGN.md)"
  return LAYERS.index(parts[1])


def test_the_graph_sees_function_level_and_package_imports():
  graph = _graph()
  assert "hx.compile.checkpoint" in graph["hx.synth.jobs"]  # imported inside functions only
  assert "hx.synth.parallel" in graph["hx.synth.executors"]
  assert "hx.compile" in graph["hx.synth.jobs"]  # `from hx.compile import tune`: the package
  assert graph["hx.synth"] == set()  # a package's re-exports are not counted


def test_no_import_cycle_among_hx_modules():
  assert _cycles(_graph()) == []


def test_every_import_between_packages_goes_downward():
  upward = []
  for module, targets in sorted(_graph().items()):
    here = _layer(module)
    for target in sorted(targets):
      there = _layer(target)
      if here is not None and there is not None and there > here:
        upward.append(f"{module} -> {target}")
  assert upward == []


def test_data_imports_nothing_from_compile():
  # data builds tasks (their containers and objectives from hx.lang) without the compile layer
  graph = _graph()
  assert sorted(f"{m} -> {t}" for m in graph if m.startswith("hx.data") for t in graph[m]
                if t.startswith("hx.compile")) == []
