"""A stream's metrics (`hx.evaluation.stream_metrics`), checked exactly against the records, libraries and
networks of a real short run (three tiny tasks of the long stream, HOUDINI and the standalone network)."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

import hx
from hx.data import Sources, StreamSettings, stream_plan
from hx.evaluation import load_records
from hx.evaluation.stream_forgetting import Forgetting, Rescored, rescore_winners
from hx.evaluation.stream_memory import LibraryPoint, library_growth, memory_growth, network_growth
from hx.evaluation.stream_metrics import TaskRow, task_rows
from hx.evaluation.stream_plots import plot_stream
from hx.evaluation.stream_repeats import Growth, growth_by_relation, repeats_growth, reuse_on_repeats
from hx.evaluation.stream_report import stream_section, write_stream_report
from hx.evaluation.stream_summary import summary
from hx.presets import StreamPreset
from hx.synth.library import Library

TINY = StreamPreset("tiny", StreamSettings(images=(24, 10, 10)), epochs=(1, 1, 1), batch_size=12, min_steps=2)
SOURCES = Sources(standin_per_class=(20, 6, 6))
LENGTH = 3  # regress_cell, recognize_digit(d), the same with less data


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  directory = tmp_path_factory.mktemp("stream") / "run"
  stream = TINY.stream(0, LENGTH, SOURCES)
  config = hx.EvalConfig.make(stream, methods=["houdini", "standalone"], fractions=[1.0], seeds=[0],
                              budget={"candidates": 1})
  hx.evaluate(config, directory)
  return config, directory, load_records(directory)


def _record(records, method, index):
  (rec,) = [r for r in records if r["method"] == method and r["task_index"] == index]
  return rec


@pytest.mark.slow  # trains a short run (tests/evaluation/test_stream_run.py is the fast one)
def test_each_row_is_its_record(run):
  _, _, records = run
  rows = task_rows(records)
  assert [(r.index, r.method) for r in rows] == [(i, m) for i in range(1, LENGTH + 1)
                                                  for m in ("houdini_topdown", "standalone")]
  for row in rows:
    rec = _record(records, row.method, row.index)
    alone = _record(records, "standalone", row.index)["ranked"][0]["test"]
    assert row.test == rec["ranked"][0]["test"] and row.task == rec["task"] and row.metric == rec["metric"]
    assert row.transfer == rec["ranked"][0]["test"] / alone
    assert row.wall_seconds == rec["seconds"]["wall"]
    if row.method == "standalone":
      assert (row.candidates, row.trained, row.parameters) == (1, 1, rec["parameters"])
    else:
      assert row.candidates == len(rec["ranked"]) and row.trained == rec["candidates_trained"] == 1
      assert row.program == rec["ranked"][0]["named"] and row.parameters is None


@pytest.mark.slow  # trains a short run (tests/evaluation/test_stream_run.py is the fast one)
def test_the_library_and_network_sizes_are_those_saved(run):
  _, directory, records = run
  growth = library_growth(directory)
  assert [p.index for p in growth] == list(range(1, LENGTH + 1))
  for point in growth:
    saved = directory / "houdini_topdown" / "seed_0" / "libraries" / f"after_{point.index:02d}"
    library = Library.load(saved)
    assert point.functions == len(library) == len(_record(records, "houdini_topdown", point.index + 1)[
        "library_functions_before"]) if point.index < LENGTH else point.functions == len(library)
    assert point.parameters == sum(np.size(a) for e in library.entries for a in e.leaves)
    assert point.bytes == sum(f.stat().st_size for f in (saved / "arrays").iterdir())
  networks = network_growth(records, directory, "standalone")
  parameters, size = 0, 0
  for point in networks:
    parameters += _record(records, "standalone", point.index)["parameters"]
    size += (directory / "standalone" / "seed_0" / "networks" / f"after_{point.index:02d}" /
             "variables.msgpack").stat().st_size
    assert (point.parameters, point.bytes) == (parameters, size)
  assert memory_growth(records, directory) == [*[p for p in memory_growth(records, directory)
                                                 if p.method == "houdini_topdown"], *networks]


@pytest.mark.slow  # trains a short run (tests/evaluation/test_stream_run.py is the fast one)
def test_the_summary_averages_the_rows(run):
  _, directory, records = run
  rows, plan = task_rows(records), stream_plan(0, LENGTH, TINY.settings)
  memory = memory_growth(records, directory)
  by = {s.method: s for s in summary(rows, memory, plan)}
  h = by["houdini_topdown"]
  tests = {i: _record(records, "houdini_topdown", i)["ranked"][0]["test"] for i in range(1, LENGTH + 1)}
  assert h.tasks == LENGTH and h.mean_rmse == tests[1]
  assert h.mean_error == statistics.fmean([tests[2], tests[3]])
  assert h.mean_transfer == statistics.fmean(r.transfer for r in rows if r.method == "houdini_topdown")
  relations = {r: (a, b, n) for r, a, b, n in h.transfer_by_relation}
  assert set(relations) == {"new", "less_data"} and relations["less_data"][2] == 1
  less = next(r for r in rows if r.method == "houdini_topdown" and r.index == 3)
  assert relations["less_data"][:2] == (less.transfer, tests[3] / tests[2] if tests[2] else None)
  assert by["standalone"].mean_transfer is None and by["standalone"].transfer_by_relation[0][1] is None
  last = library_growth(directory)[-1]
  assert (h.final_parameters, h.final_bytes, h.bytes_per_task) == (last.parameters, last.bytes,
                                                                   last.bytes / LENGTH)
  # A re-scored HOUDINI score replaces the recorded one in its final average.
  moved = Forgetting("houdini_topdown", 0, LENGTH, (Rescored(1, "regress_cell", "lib.nn_long_1", tests[1],
                                                             tests[1] + 1.0, 1.0, True),))
  assert summary(rows, memory, plan, moved)[0].mean_rmse == tests[1] + 1.0
  assert moved.largest_change == 1.0 and moved.all_unchanged


@pytest.mark.slow  # trains a short run (tests/evaluation/test_stream_run.py is the fast one)
def test_forgetting_is_measured_as_zero(run):
  config, directory, records = run
  forgetting = rescore_winners(config, directory)
  assert forgetting.after == LENGTH and [r.index for r in forgetting.rows] == list(range(1, LENGTH + 1))
  for r in forgetting.rows:
    assert r.recorded == _record(records, "houdini_topdown", r.index)["ranked"][0]["test"]
    assert "nn_" not in r.program.replace("lib.nn_", "")  # every function read from the library
    assert r.change == r.rescored - r.recorded and math.isclose(r.rescored, r.recorded, abs_tol=1e-9)
  assert forgetting.largest_change <= 1e-9 and forgetting.all_unchanged


@pytest.mark.slow  # trains a short run (tests/evaluation/test_stream_run.py is the fast one)
def test_the_plots_and_the_section_are_written(run, tmp_path):
  config, directory, records = run
  rows = task_rows(records)
  paths = plot_stream(tmp_path, rows, memory_growth(records, directory), library_growth(directory))
  assert [p.name for p in paths] == ["stream_scores.png", "stream_cost.png", "stream_memory.png"]
  assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
  path = write_stream_report(config, directory, stream_plan(0, LENGTH, TINY.settings))
  text = path.read_text()
  assert path == directory / "stream.md" and (directory / "plots" / "stream_memory.png").exists()
  assert "| less_data | 1 |" in text and "largest change of a test score **0**" in text
  assert "| 3 | recognize_digit(" in text and "less_data of 2" in text
  lines = stream_section(rows, summary(rows), [LibraryPoint(1, 7, 1234, 5600)])
  assert not any(line.startswith("### Transfer per relation") for line in lines)  # no plan, no relations
  (first,) = [line for line in lines if line.startswith("| 1 | regress_cell |  |")]
  assert first.endswith(" 7 / 1,234 / 6 |")  # the library after task 1: functions, parameters, KB


def test_no_record_is_refused(tmp_path):
  with pytest.raises(ValueError, match="no record"):
    task_rows([])
  with pytest.raises(ValueError, match="holds no evaluation records"):
    write_stream_report(None, tmp_path)
  config = hx.EvalConfig.make(TINY.stream(0, 1, SOURCES), methods=["houdini"], fractions=[1.0],
                              seeds=[0], budget={"candidates": 1})
  with pytest.raises(ValueError, match="holds no saved library"):
    rescore_winners(config, tmp_path)
  assert json.loads("[]") == [] and library_growth(tmp_path) == []


def test_the_library_growth_is_in_task_order_past_task_99(tmp_path):
  # Folders are after_TT with two digits at least: after_100 sorts between after_10 and after_11 by name.
  for index in (9, 10, 11, 100):
    folder = tmp_path / "houdini_topdown" / "seed_0" / "libraries" / f"after_{index:02d}"
    folder.mkdir(parents=True)
    (folder / "library.json").write_text(json.dumps({"entries": []}))
  assert [p.index for p in library_growth(tmp_path)] == [9, 10, 11, 100]



def test_the_sizes_kept_stand_in_for_the_libraries_and_networks_a_clone_lacks(tmp_path):
  import shutil

  from hx.evaluation.stream_memory import keep_sizes

  seed = tmp_path / "houdini_topdown" / "seed_0"
  for index, entries in ((1, 1), (2, 3)):
    folder = seed / "libraries" / f"after_{index:02d}"
    folder.mkdir(parents=True)
    entry = {"structure": {"w": {"array": {"dtype": "float32", "shape": [3, 4]}}}, "bytes": 60}
    (folder / "library.json").write_text(json.dumps({"entries": [entry] * entries}))
  records = [{"method": m, "instance": 0, "fraction": 1.0, "task_index": i, "parameters": 10}
             for m in ("houdini_topdown", "standalone") for i in (1, 2)]
  saved = tmp_path / "standalone" / "seed_0" / "networks" / "after_01"
  saved.mkdir(parents=True)
  (saved / "network.json").write_text(json.dumps({"bytes": 123}))  # task 2's not saved: 4 a parameter
  library, networks = library_growth(tmp_path), network_growth(records, tmp_path, "standalone")
  assert library == [LibraryPoint(1, 1, 12, 60), LibraryPoint(2, 3, 36, 180)]
  assert [p.bytes for p in networks] == [123, 163]
  written = keep_sizes(records, tmp_path)
  assert [p.relative_to(tmp_path).as_posix() for p in written] == ["houdini_topdown/seed_0/sizes.json",
                                                                   "standalone/seed_0/sizes.json"]
  assert keep_sizes(records, tmp_path) == []  # the same sizes: not written again
  shutil.rmtree(seed / "libraries")
  shutil.rmtree(tmp_path / "standalone" / "seed_0" / "networks")
  assert library_growth(tmp_path) == library and network_growth(records, tmp_path, "standalone") == networks
  assert keep_sizes(records, tmp_path) == []  # nothing measured here: what was kept stays
  (seed / "sizes.json").write_text('{"tasks": [{"index": 1}]}')
  with pytest.raises(ValueError, match=r"sizes\.json: not a list of tasks' sizes"):
    library_growth(tmp_path)

def _row(index, method, program, search=None, wall=1.0, test=1.0):
  return TaskRow(index=index, task=f"t{index}", method=method, metric="error", test=test, transfer=None,
                 wall_seconds=wall, work_seconds=wall, candidates=1, trained=1, parameters=None,
                 program=program, search_seconds=search)


def test_reuse_counts_calls_of_the_repeated_tasks_functions():
  plan = stream_plan(0, 12)  # 3 repeats 2, 7 repeats 5, 8 repeats 4, 12 repeats 4
  programs = {2: "nn_long_2", 4: "compose(nn_long_5, map_l(lib.nn_long_2))", 5: "nn_long_7",
              3: "compose(nn_long_3, lib.nn_long_2)",  # calls task 2's own function
              7: "compose(nn_long_9, lib.nn_long_4)",  # a library function, not task 5's
              8: "compose(nn_long_10, map_l(lib.nn_long_2))",  # task 4 called nn_long_2 too
              12: "nn_long_11"}
  rows = [_row(i, "houdini_topdown", p) for i, p in programs.items()]
  reuse = reuse_on_repeats(rows, plan, "houdini_topdown")
  assert reuse.repeats == ((3, 2), (7, 5), (8, 4), (12, 4))
  assert reuse.calls_library == (3, 7, 8) and reuse.calls_earlier == (3, 8)
  # The section counts them per relation: 3 less_data, 7 new_output, 8 new_input, 12 new_data.
  text = "\n".join(stream_section(rows, summary(rows), plan=plan))
  assert ("and a function the repeated task's winner computes with on **2** (tasks 3, 8); per relation: "
          "less_data 1 of 1, new_data 0 of 1, new_output 0 of 1, new_input 1 of 1.") in text


def test_the_cost_section_compares_late_tasks_with_tasks_10_to_20():
  rows = [_row(i, "houdini_topdown", "nn_long_1", search=0.1 * i, wall=2.0) for i in range(1, 31)]
  lines = stream_section(rows, summary(rows))
  (search,) = [line for line in lines if line.startswith("| search")]
  # Tasks 10-20 (11 tasks): median search 1.5 s; the last 11 (20-30): 2.5 s; task 30: 3.0 s.
  assert search.endswith("| 1.50 | 2.50 | 3.00 (1.67x; 2.00x) |")
  assert "median over tasks 20-30, and task 30" in "\n".join(lines)
  assert not any(line.startswith("| search") for line in stream_section(rows[:20], summary(rows[:20])))


def test_the_library_growth_per_relation_is_the_bytes_each_task_added():
  plan = stream_plan(0, 12)  # relations: 1, 2 new; 3 less_data; ...; 7 new_output; 8 new_input; 12 new_data
  sizes = {1: 100, 2: 300, 3: 300, 4: 700, 5: 900, 6: 1000, 7: 1100, 8: 1150, 9: 1400, 10: 1500, 11: 1900,
           12: 1910}
  library = [LibraryPoint(i, functions=i if i != 3 else 2, parameters=0, bytes=b) for i, b in sizes.items()]
  growth = {g.relation: g for g in growth_by_relation(library, plan)}
  assert growth["less_data"].tasks == (3,) and growth["less_data"].added == (0,)
  assert growth["less_data"].nothing == 1 and growth["less_data"].halves() is None
  new = growth["new"]
  assert new.tasks[:2] == (1, 2) and new.added[:2] == (100, 200)
  assert new.mean == sum(sizes[i] - sizes.get(i - 1, 0) for i in new.tasks) / len(new.tasks)
  assert growth["new_data"].added == (10,)
  # A task whose library before it was not saved is left out.
  assert 5 not in growth_by_relation([p for p in library if p.index != 4], plan)[0].tasks
  rows = [_row(i, "houdini_topdown", "nn_long_1") for i in range(1, 13)]
  lines = stream_section(rows, summary(rows), library, plan)
  text = "\n".join(lines)
  assert "### The library's growth per relation" in text
  assert "| less_data | 1 | 0.0 | 1 | - | - |" in text
  # less_data 3 (0), new_output 7 (100), new_input 8 (50), new_data 12 (10): halves 50 and 30 bytes.
  assert "| every repeat | 4 | 0.0 | 1 | 0.1 | 0.0 |" in text


def test_halves_compare_the_first_and_second_half_of_a_relations_tasks():
  g = Growth("new_data", (1, 2, 3, 4, 5), (100, 300, 50, 50, 20), 0)
  assert g.halves() == (200.0, 40.0)


def test_every_repeat_together_is_the_repeat_relations_tasks_in_task_order():
  growth = [Growth("new", (1, 2), (100, 200), 0), Growth("less_data", (3, 9), (0, 40), 1),
            Growth("new_data", (5, 7), (30, 0), 1), Growth("distractor", (4,), (500,), 0)]
  every = repeats_growth(growth)
  assert every == Growth("every repeat", (3, 5, 7, 9), (0, 30, 0, 40), 2)
  assert every.halves() == (15.0, 20.0)
  assert repeats_growth(growth[:1] + growth[3:]) is None
  lines = stream_section([_row(1, "houdini_topdown", "nn_long_1")], summary([_row(1, "houdini_topdown",
                                                                               "nn_long_1")]))
  assert not any("every repeat" in line for line in lines)
