"""What docs/guide.md promises of its three-task sequence, checked on the run its code makes: the third
task's HOUDINI winner reuses a function an earlier task trained, and the standalone network's score
stands beside it (`test_guide.py` runs every block; this one stops after the sequence's run)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from tests.docs.test_guide import GUIDE, blocks


@pytest.mark.slow
def test_the_guides_third_task_reuses_an_earlier_tasks_function(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "runs").mkdir()
  namespace: dict = {"__name__": "guide"}
  for i, (lang, code, _) in enumerate(blocks(GUIDE.read_text("utf-8"))):
    if lang != "python":
      continue
    with contextlib.redirect_stdout(io.StringIO()):
      exec(compile(code, f"{GUIDE}:block {i}", "exec"), namespace)  # noqa: S102 - the guide's own code
    if "hx.evaluate(config" in code:
      break
  run = tmp_path / "runs" / "squares"
  record = lambda method, folder: json.loads(  # noqa: E731
      (run / method / "seed_0" / "records" / folder / "fraction_1.json").read_text())
  houdini = record("houdini_topdown", "03_count_top")["ranked"][0]
  reused = re.findall(r"lib\.(nn_squares_\d+)", houdini["named"])
  assert reused, houdini["named"]
  # The functions it names were in the library the first two tasks left.
  library = json.loads((run / "houdini_topdown" / "seed_0" / "libraries" / "after_02" / "library.json")
                       .read_text())
  assert set(reused) <= {entry["name"] for entry in library["entries"]}, (reused, houdini["named"])
  standalone = record("standalone", "03_count_top")["ranked"][0]
  assert standalone["test"] > 0 and houdini["test"] > 0
  summary = namespace["outcome"].summary()
  # The summary shows both scores of the task, HOUDINI's beside its program that names the function.
  task3 = summary[summary.index("Task 3 count_top"):]
  assert re.search(r"HOUDINI \(top-down\):\s+[\d.]+\s+.*lib\.nn_squares_\d", task3), task3
  assert re.search(r"standalone:\s+[\d.]+", task3), task3
