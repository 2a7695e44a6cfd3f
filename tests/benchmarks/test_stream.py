"""benchmarks/stream.py's search order flag: a bad one is one line before any work, a good one reaches
HOUDINI's search space (the run's settings.json records it)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stream(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stream.py"), *args], capture_output=True,
                        text=True, timeout=600, cwd=ROOT)


def test_an_unknown_order_is_one_line_and_nothing_is_written(tmp_path):
  done = _stream("--order=bogus", "--length=2", f"--output_dir={tmp_path / 'out'}")
  assert done.returncode == 1
  assert done.stderr.strip().splitlines() == ["error: search: unknown search order 'bogus'; the orders are "
                                              "authors, cost"]
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_order_given_is_the_one_houdini_searches_in(tmp_path):
  out = tmp_path / "out"
  done = _stream("--order=authors", "--length=2", "--candidates=1", "--methods=houdini",
                 f"--output_dir={out}", "--no_rescore")
  assert done.returncode == 0, done.stderr[-2000:]
  settings = json.loads((out / "settings.json").read_text())["settings"]
  assert settings["space"]["order"] == "authors", settings["space"]


def test_stream_search_refuses_fewer_probed_than_offered_tasks_in_one_line(tmp_path):
  out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stream_search.py"), "--run", str(tmp_path),
                        "--probed_tasks", "3"], capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and out.stdout == ""
  assert out.stderr.strip().splitlines() == ["error: --probed_tasks 3: the prior must probe at least the "
                                             "--library_tasks 8 earlier tasks it offers"]
