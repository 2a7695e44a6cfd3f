"""The README's first command, as its committed records (docs/cs1-quick/: the run's settings and records,
without libraries or networks) give it: the picture the README shows is what the report draws from
them, and the README's table is their scores and programs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hx.evaluation import build_report, load_records

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "cs1-quick"


def test_the_readmes_picture_is_the_report_of_the_committed_records(tmp_path):
  copy = tmp_path / "cs1-quick"
  shutil.copytree(RUN, copy)
  build_report(copy)
  assert (copy / "plots" / "summary.png").read_bytes() == (ROOT / "docs" / "cs1-quick.png").read_bytes()


def _score(metric: str, x: float) -> str:
  return f"{x:.2f}%" if metric == "error" else f"{x:.3f}"


def test_the_readmes_table_is_the_committed_records():
  records = {(r["method"], r["task_index"], r["fraction"]): r for r in load_records(RUN)}
  assert len(records) == 16
  rows = re.findall(r"^\| (\d) (\S+), (error|RMSE) \|(.*)\|$", (ROOT / "README.md").read_text("utf-8"), re.M)
  assert [int(i) for i, *_ in rows] == [1, 2, 3, 4]
  for index, task, _, cells in rows:
    cells = [c.strip().strip("*`") for c in cells.split("|")]
    expected = []
    for fraction in (0.1, 1.0):
      for method in ("houdini_topdown", "standalone"):
        r = records[(method, int(index), fraction)]
        assert r["task"] == task
        expected.append(_score(r["metric"], r["ranked"][0]["test"]))
    best = records[("houdini_topdown", int(index), 1.0)]["ranked"][0]
    expected.append(best["named"] or best["program"])
    assert cells == expected, task
