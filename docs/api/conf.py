"""Sphinx configuration of hx's API reference, built from the docstrings (Google style, via napoleon).

Build: `sphinx-build -W --keep-going -b html docs/api OUTDIR` (the `docs` extra installs Sphinx).
Each package's page (`hx.lang.rst`, ...) is an `automodule` of the package: its `__all__`, in order.
"""

import importlib
import inspect
import sys
from pathlib import Path

# The reference documents the working tree's hx, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

project = "hx"
author = "hx authors"
copyright = "hx authors, Apache-2.0"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"]

# The theme Sphinx itself depends on: no dependency beyond the `docs` extra's.
html_theme = "alabaster"

napoleon_google_docstring = True
napoleon_numpy_docstring = False
# A dataclass's "Attributes:" section as fields of its own entry: as `.. attribute::` entries they would
# describe each field a second time beside autodoc's member entries.
napoleon_use_ivar = True
# Members in each package's `__all__` order, which groups them as the package does.
autodoc_member_order = "bysource"
# Type hints go beside each argument: signatures stay readable with hx's long frozen-dataclass types.
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
# hx's docstrings quote names and shapes in single backquotes (`parse`, `(n, L, d)`): show them as code,
# as the Markdown docs do, rather than as Sphinx's default role (a cross-reference or emphasis).
default_role = "code"

# The packages with a page each (the page's name is the package's).
PACKAGES = ("hx.lang", "hx.compile", "hx.data", "hx.synth", "hx.baselines", "hx.evaluation", "hx.presets")
# A constant's value is shown beside its name up to this many characters (a table of task kinds is not).
MAX_VALUE_CHARS = 80


def exported(package: str) -> list[tuple[str, object]]:
  """(name, object) of each name in `package`'s `__all__`, in order."""
  module = importlib.import_module(package)
  return [(name, getattr(module, name)) for name in module.__all__]


def is_data(obj: object) -> bool:
  """Whether autodoc's `automodule` leaves `obj` out as a package's member: a constant or a type alias
  (it documents a module's data only where that module's own source gives it a doc comment)."""
  return not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj))


def data_directives(package: str) -> str:
  """reST documenting `package`'s exported constants and type aliases, appended to its page: those that
  `automodule` leaves out (the ones with a doc comment in the package's own source it documents)."""
  from sphinx.pycode import ModuleAnalyzer

  commented = {name for _, name in ModuleAnalyzer.for_module(package).find_attr_docs()}
  names = [(name, obj) for name, obj in exported(package) if is_data(obj) and name not in commented]
  if not names:
    return ""
  title = "Constants and type aliases"
  lines = ["", "", title, "-" * len(title), ""]
  for name, obj in names:
    lines.append(f".. autodata:: {package}.{name}")
    if len(repr(obj)) > MAX_VALUE_CHARS and not _is_alias(obj):
      lines.append("   :no-value:")
    lines.append("")
  return "\n".join(lines)


def _is_alias(obj: object) -> bool:
  return type(obj).__module__ == "typing"  # `Program`, `Type`: Sphinx prints "alias of ..." for these


def _append_data(app, docname: str, source: list[str]) -> None:
  if docname in PACKAGES:
    source[0] += data_directives(docname)


def _keep_exported(app, what, name, obj, skip, options):
  """Keeps a package's exported function or class that has no docstring (autodoc drops it otherwise);
  None (autodoc decides) for everything else."""
  if what == "module" and skip and not is_data(obj):
    for package in PACKAGES:
      if any(n == name and o is obj for n, o in exported(package)):
        return False
  return None


def _drop_type_docstring(app, what, name, obj, options, lines: list[str]) -> None:
  """A constant's entry says nothing rather than its type's docstring (`dict`'s for a table): autodoc
  falls back to `type(obj).__doc__` when the constant has no doc comment of its own."""
  if what == "data" and getattr(obj, "__doc__", None) == getattr(type(obj), "__doc__", None):
    lines.clear()


def setup(app):
  app.connect("source-read", _append_data)
  app.connect("autodoc-process-docstring", _drop_type_docstring)
  app.connect("autodoc-skip-member", _keep_exported)
