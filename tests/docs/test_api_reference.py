"""The API reference (docs/api/, Sphinx autodoc over the docstrings): it builds with warnings as errors,
documents every package's exports, and its `hx` page lists every name of `hx.__all__`."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hx

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
# The packages with a page each, as the reference's own configuration lists them.
PACKAGES = ("hx.lang", "hx.compile", "hx.data", "hx.synth", "hx.baselines", "hx.evaluation", "hx.presets")


def summary_entries(rst: str) -> list[str]:
  """The dotted names listed under the `autosummary` directives of a page, `~` and all."""
  entries: list[str] = []
  for block in re.finditer(r"^\.\. autosummary::\n((?:\n|   .*\n)*)", rst, re.M):
    entries += [line.strip() for line in block.group(1).splitlines() if line.strip()]
  return entries


def resolve(entry: str, current: str = "hx") -> object:
  """The object an autosummary entry names, relative to the page's current module as Sphinx reads it."""
  dotted = entry.lstrip("~")
  for name in (f"{current}.{dotted}", dotted):
    module, _, attr = name.rpartition(".")
    try:
      return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
      continue
  raise LookupError(f"docs/api/hx.rst: {entry!r} names nothing importable")


def test_summary_entries_reads_the_directive_and_only_its_entries():
  rst = "Title\n\n.. autosummary::\n\n   ~lang.parse\n   ~synth.Budget\n\nA paragraph naming hx.tune.\n"
  assert summary_entries(rst) == ["~lang.parse", "~synth.Budget"]


def test_every_name_of_hx_all_is_on_the_hx_page_and_names_the_same_object():
  entries = summary_entries((API / "hx.rst").read_text("utf-8"))
  listed = [entry.rpartition(".")[2] for entry in entries]
  assert sorted(listed) == sorted(hx.__all__), (
      f"docs/api/hx.rst lists {sorted(set(listed) - set(hx.__all__))} beyond hx.__all__ and leaves out "
      f"{sorted(set(hx.__all__) - set(listed))}")
  for entry, name in zip(entries, listed):
    assert resolve(entry) is getattr(hx, name), f"docs/api/hx.rst: {entry} is not hx.{name}"


def test_the_index_has_a_page_for_hx_and_for_every_public_package():
  index = (API / "index.rst").read_text("utf-8")
  toctree = re.search(r"^\.\. toctree::\n((?:\n|   .*\n)*)", index, re.M)
  assert toctree is not None
  pages = [line.strip() for line in toctree.group(1).splitlines() if line.strip() and ":" not in line]
  assert pages == ["hx", *PACKAGES]
  for package in PACKAGES:
    assert f".. automodule:: {package}" in (API / f"{package}.rst").read_text("utf-8")


@pytest.mark.slow  # about 15-35 s on 2 cores: importing every layer and autodoc over ~500 objects
def test_the_reference_builds_without_warnings_and_documents_every_export(tmp_path):
  if importlib.util.find_spec("sphinx") is None:
    pytest.skip("Sphinx is not installed (pip install -e '.[docs]')")
  out = tmp_path / "html"
  build = subprocess.run(
      [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html", str(API), str(out),
       "-d", str(tmp_path / "doctrees")],
      capture_output=True, text=True, cwd=ROOT, timeout=600)
  assert build.returncode == 0, build.stderr[-6000:]
  for package in PACKAGES:
    page = (out / f"{package}.html").read_text("utf-8")
    documented = set(re.findall(r'id="([\w.]+)"', page))
    missing = [n for n in importlib.import_module(package).__all__ if f"{package}.{n}" not in documented]
    assert not missing, f"{package}.html documents none of {missing}"
