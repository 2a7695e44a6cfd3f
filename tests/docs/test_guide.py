"""docs/guide.md runs: every Python block in order in one namespace (a `text` block right after one is
what it prints), every `sh` block's command through its binary, in a fresh directory."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
BINARIES = {"hx-run": "hx.bin.run"}


def blocks(text: str) -> list[tuple[str, str, str | None]]:
  """(language, code, module it needs) of each fenced block, in order: a block right after a line
  `<!-- needs: MODULE -->` runs only where MODULE imports (an optional extra's package)."""
  pattern = r"(?:^<!-- needs: ([\w.]+) -->\n)?^```(\w*)\n(.*?)^```$"
  return [(m.group(2), m.group(3), m.group(1)) for m in re.finditer(pattern, text, re.M | re.S)]


def importable(module: str | None) -> bool:
  return module is None or importlib.util.find_spec(module) is not None


def test_the_guide_has_no_unwritten_section_and_its_blocks_are_fenced():
  text = GUIDE.read_text("utf-8")
  assert not re.search(r"\bPENDING_[A-Z]+\b", text)
  found = blocks(text)
  assert text.count("```") == 2 * len(found)
  assert {lang for lang, _, _ in found} <= {"python", "text", "sh"}
  assert sum(lang == "python" for lang, _, _ in found) >= 8


def test_the_search_settings_the_guide_shows_for_a_long_sequence_are_accepted():
  import ast

  import hx

  text = " ".join(GUIDE.read_text("utf-8").split())
  shown = re.search(r"search=(\{[^}]*\})", text)
  assert shown, "the guide shows a long sequence's search settings"
  search = ast.literal_eval(shown.group(1))
  assert set(search) >= {"library_tasks", "reused_programs", "reuse_tolerance", "reuse_standard_errors"}
  space = hx.EvalConfig.make("cs1", search=search).space
  assert {k: getattr(space, k) for k in search} == search


@pytest.mark.slow
def test_every_block_of_the_guide_runs(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "runs").mkdir()
  namespace: dict = {"__name__": "guide"}
  found = blocks(GUIDE.read_text("utf-8"))
  for i, (lang, code, needs) in enumerate(found):
    if not importable(needs):
      continue
    if lang == "python":
      out = io.StringIO()
      with contextlib.redirect_stdout(out):
        exec(compile(code, f"{GUIDE}:block {i}", "exec"), namespace)  # noqa: S102 - the guide's own code
      if i + 1 < len(found) and found[i + 1][0] == "text":
        assert out.getvalue().strip() == found[i + 1][1].strip(), f"block {i} printed another text"
    elif lang == "sh":
      for line in code.strip().splitlines():
        words = shlex.split(line)
        command = [sys.executable, "-m", BINARIES[words[0]], *words[1:]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
