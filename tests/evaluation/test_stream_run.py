"""The long stream end to end: its first four tasks, small, through `hx.evaluate` with HOUDINI and the
standalone network, then its metrics (`hx.evaluation.stream_metrics`), forgetting measured."""

from __future__ import annotations

import json
import re

import pytest

import hx
from hx.data import Sources, StreamSettings, stream_plan
from hx.evaluation import load_records
from hx.evaluation.stream_forgetting import rescore_winners
from hx.evaluation.stream_memory import library_growth, memory_growth, process_memory_after
from hx.evaluation.stream_metrics import task_rows
from hx.evaluation.stream_repeats import reuse_on_repeats
from hx.evaluation.stream_report import write_stream_report
from hx.evaluation.stream_summary import summary
from hx.presets import StreamPreset

# regress_cell, recognize_digit(d), the same with a tenth of the data, count_digit(d): a few dozen
# examples each, one or two epochs, so that the run takes seconds once compiled.
TINY = StreamPreset("tiny", StreamSettings(images=(24, 10, 10), lists=(12, 6, 6), train_lengths=(2, 3),
                                           test_lengths=(3, 4)),
                    epochs=(1, 2, 1), batch_size=12, min_steps=2)
SOURCES = Sources(standin_per_class=(20, 6, 6))


@pytest.mark.slow
def test_a_short_stream_runs_end_to_end_and_forgets_nothing(tmp_path):
  stream = TINY.stream(0, 4, SOURCES)
  plan = stream_plan(0, 4, TINY.settings)
  # HOUDINI's search as benchmarks/stream.py runs it: a bounded library, earlier programs of the task's
  # type scored as they are first, the fewest fresh functions within 10% or 2 standard errors of the best
  # winning.
  config = hx.EvalConfig.make(stream, methods=["houdini", "standalone"], fractions=[1.0], seeds=[0],
                              budget={"candidates": 2}, search={"library_tasks": 8, "reused_programs": 8,
                                                    "reuse_tolerance": 0.1, "reuse_standard_errors": 2.0})
  directory = tmp_path / "run"
  out = hx.evaluate(config, directory)
  assert out.finished and out.ran == 4 * 2 and (directory / "report.md").exists()

  records = load_records(directory)
  rows = task_rows(records)
  assert [(r.index, r.method) for r in rows] == [(i, m) for i in range(1, 5) for m in ("houdini_topdown",
                                                                                       "standalone")]
  assert [r.task for r in rows[::2]] == [t.name for t in plan]
  assert all(r.test is not None and r.transfer is not None for r in rows)
  # Task 3 repeats task 2 (the only earlier task of its type): its winner as it is comes on top.
  assert [r.trained for r in rows if r.method == "houdini_topdown"] == [2, 2, 3, 2]
  by_index = {r["task_index"]: r for r in records if r["method"] == "houdini_topdown"}
  two = next(c for c in by_index[2]["ranked"] if c["rank"] == 1)["named"]
  as_it_is = re.sub(r"(?<!lib\.)\b(nn_long_\d+)", r"lib.\1", two)
  assert as_it_is in [c["program"] for c in by_index[3]["ranked"]]
  # Every record holds the process's resident memory once its work was done (this one process's).
  assert all(r.rss_bytes is not None and 50e6 < r.rss_bytes < 24e9 for r in rows)
  assert sorted(process_memory_after(rows)) == [1, 2, 3, 4]

  # Forgetting: every winner on the library after task 4 scores what it scored when learned.
  forgetting = rescore_winners(config, directory)
  assert [r.index for r in forgetting.rows] == [1, 2, 3, 4]
  assert forgetting.largest_change <= 1e-9 and forgetting.all_unchanged

  growth = library_growth(directory)
  assert [p.index for p in growth] == [1, 2, 3, 4]
  assert all(a.functions <= b.functions and a.bytes <= b.bytes for a, b in zip(growth, growth[1:]))
  by = {s.method: s for s in summary(rows, memory_growth(records, directory), plan, forgetting)}
  assert by["houdini_topdown"].final_bytes == growth[-1].bytes and by["standalone"].final_bytes > 0
  assert {r for r, *_ in by["houdini_topdown"].transfer_by_relation} == {"new", "less_data"}

  # HOUDINI's search seconds are its records'; reuse is counted on task 3, the repeat of task 2.
  search = {r["task_index"]: r["seconds"]["search"] for r in records if r["method"] == "houdini_topdown"}
  assert {r.index: r.search_seconds for r in rows if r.method == "houdini_topdown"} == search
  assert all(r.search_seconds is None for r in rows if r.method == "standalone")
  reuse = reuse_on_repeats(rows, plan, "houdini_topdown")
  assert reuse.repeats == ((3, 2),) and set(reuse.calls_earlier) <= set(reuse.calls_library) <= {3}
  three = next(r for r in rows if r.index == 3 and r.method == "houdini_topdown")
  assert (3 in reuse.calls_library) == ("lib." in three.program)

  text = write_stream_report(config, directory, plan).read_text()
  assert f"winner calls a library function on **{len(reuse.calls_library)}**" in text
  assert "largest change of a test score **0**" in text and "| less_data | 1 |" in text
  after = process_memory_after(rows)
  assert f"after task 4: {after[4] / 1e6:.0f} MB (**{after[4] / after[1]:.2f}x**)" in text
  assert ("the winner first (the fewest fresh functions within 10% or 2 standard errors of the best "
          "validation score, whichever is wider, the prior's best-ranked library functions first among "
          "equally few), the others by validation score") in (directory / "programs.md").read_text()
  for name in ("stream_scores.png", "stream_cost.png", "stream_memory.png"):
    assert (directory / "plots" / name).stat().st_size > 0

  # The runner resumes by its records: nothing is left to do.
  assert hx.evaluate(config, directory).already_finished


def _committed(run, clone):
  """Copies into `clone` the files of `run` that a commit keeps (write_stream_report's docstring): the
  settings, records, kept re-scores and sizes, EWC's strength and report.md; no library, network or
  checkpoint, nor stream.md and the plots, which are to be rebuilt."""
  import shutil

  kept = ["settings.json", "report.md", "*/seed_*/settings.json", "*/seed_*/records/*/fraction_*.json",
          "*/seed_*/rescored.json", "*/seed_*/sizes.json", "ewc/seed_*/ewc_strength.json"]
  for pattern in kept:
    for path in run.glob(pattern):
      (clone / path.relative_to(run)).parent.mkdir(parents=True, exist_ok=True)
      shutil.copy2(path, clone / path.relative_to(run))


@pytest.mark.slow  # trains a 4-task stream under four methods, and EWC's strength on its first tasks
def test_the_stream_report_rebuilds_byte_for_byte_from_the_committed_files(tmp_path):
  stream = TINY.stream(0, 4, SOURCES)
  plan = stream_plan(0, 4, TINY.settings)
  config = hx.EvalConfig.make(stream, methods=["houdini", "standalone", "replay", "ewc"], fractions=[1.0],
                              seeds=[0], budget={"candidates": 2})
  run = tmp_path / "run"
  assert hx.evaluate(config, run).finished
  made = write_stream_report(config, run, plan).read_text("utf-8")
  # What the libraries and networks alone measure is kept beside the records.
  kept = json.loads((run / "houdini_topdown" / "seed_0" / "rescored.json").read_text())
  assert kept["after"] == 4 and [t["index"] for t in kept["tasks"]] == [1, 2, 3, 4]
  growth = library_growth(run)
  sizes = json.loads((run / "houdini_topdown" / "seed_0" / "sizes.json").read_text())["tasks"]
  assert [(t["index"], t["functions"], t["parameters"], t["bytes"]) for t in sizes] == \
      [(p.index, p.functions, p.parameters, p.bytes) for p in growth]
  networks = json.loads((run / "standalone" / "seed_0" / "sizes.json").read_text())["tasks"]
  assert [t["index"] for t in networks] == [1, 2, 3, 4]
  assert not (run / "replay" / "seed_0" / "sizes.json").exists()  # its memory is its records'
  assert "largest change of a test score" in made and "Every earlier task of EWC" in made

  clone = tmp_path / "clone"
  _committed(run, clone)
  assert not list(clone.rglob("libraries")) and not list(clone.rglob("networks"))
  before = sorted(p for p in clone.rglob("*") if p.is_file())
  assert write_stream_report(config, clone, plan).read_text("utf-8") == made
  for name in ("stream.md", "plots/stream_scores.png", "plots/stream_cost.png", "plots/stream_memory.png"):
    assert (clone / name).read_bytes() == (run / name).read_bytes(), name
  # Nothing kept is written again where the libraries and networks are absent.
  assert sorted(p for p in clone.rglob("*") if p.is_file() and p.parent.name != "plots"
                and p.name != "stream.md") == before
  # Without re-scoring, the run itself reads HOUDINI's kept re-scores: the same report.
  (run / "stream.md").unlink()
  assert write_stream_report(config, run, plan, rescore=False).read_text("utf-8") == made
