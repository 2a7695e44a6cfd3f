"""benchmarks/continual_memory.py: bad flags are one line before any work; a run measures a row per method
and count of earlier tasks, trained for real."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "continual_memory.py"), *args],
                        capture_output=True, text=True, timeout=900, cwd=ROOT)


COUNTS = "counts of earlier tasks, 0 or more"


@pytest.mark.parametrize(("flag", "said"), [
    ("--methods=sgd", "error: --methods sgd: the methods are replay and ewc"),
    ("--earlier=-1", f"error: --earlier -1: {COUNTS}"),
    ("--earlier=x", f"error: --earlier x: {COUNTS}")])
def test_bad_flags_are_one_line(flag, said):
  done = _run(flag)
  assert done.returncode == 1 and done.stderr.strip().splitlines() == [said]


@pytest.mark.slow  # trains a recognize task under replay three times, in processes of their own
def test_a_row_per_method_and_count_with_its_seconds_and_memory():
  done = _run("--methods=replay", "--earlier=0,3")
  assert done.returncode == 0, done.stderr[-2000:]
  rows = [line for line in done.stdout.splitlines() if re.match(r"^\| replay \| \d", line)]
  assert [r.split(" | ")[1] for r in rows] == ["0", "3"]
  for r in rows:
    seconds, before, after, released, peak = (float(x) for x in r.strip("| ").split(" | ")[2:])
    assert seconds > 0 and 0 < before <= peak and 0 < after <= peak and released > 0
