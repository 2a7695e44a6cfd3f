"""examples/shapes.py runs to the end in its shortened form, and its counting task reuses a function the
earlier tasks trained."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "shapes.py"


@pytest.mark.slow
def test_the_shapes_example_runs_and_its_counting_task_reuses_the_library(tmp_path):
  out = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--output_dir", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
  assert out.returncode == 0, out.stderr[-3000:]
  assert "Task 3 count_circles" in out.stdout and "standalone:" in out.stdout
  records = tmp_path / "run" / "houdini_topdown" / "seed_0" / "records"
  count = json.loads((records / "03_count_circles" / "fraction_1.json").read_text())
  assert "lib.nn_shapes_" in count["ranked"][0]["named"]
  standalone = tmp_path / "run" / "standalone" / "seed_0" / "records" / "03_count_circles" / "fraction_1.json"
  assert json.loads(standalone.read_text())["ranked"][0]["test"] > 0
  assert (tmp_path / "run" / "report.md").exists()
