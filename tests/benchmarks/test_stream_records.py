"""The committed long-stream runs (benchmarks/stream/): spelt as this hx spells the stream's tasks (layout
version 3, `hx.synth.run_directory.respell`), and enough to rebuild their reports byte for byte. Nothing
is trained."""

import shutil
from pathlib import Path

import pytest

from hx.data import stream_plan
from hx.evaluation import build_report, load_records
from hx.presets import STREAM_PRESETS
from hx.synth.run_directory import RESPELLED

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "stream"
RUNS = {"length_100_seed_0": "small", "length_100_seed_0_ctrl": "ctrl"}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_committed_stream_run_is_spelt_as_this_hx_spells_its_tasks(name):
  run = ROOT / name
  plan = stream_plan(0, 100, STREAM_PRESETS[RUNS[name]].settings)
  records = load_records(run)
  assert {r["task_index"]: r["task"] for r in records} == {i: t.name for i, t in enumerate(plan, 1)}
  assert any(t.kind == "recognize" for t in plan)
  for old, _ in RESPELLED:
    assert not [p for p in run.rglob(f"*{old}*")]
    assert not [p for p in run.rglob("*.json") if old in p.read_text("utf-8")]
    assert not [p for p in run.glob("*.md") if old in p.read_text("utf-8")]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_committed_stream_run_rebuilds_its_report_byte_for_byte(name, tmp_path):
  run, copy = ROOT / name, tmp_path / name
  shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints", "candidates", "libraries",
                                                           "networks", "*.md", "plots"))
  assert build_report(copy).read_bytes() == (run / "report.md").read_bytes()
  assert (copy / "programs.md").read_bytes() == (run / "programs.md").read_bytes()
