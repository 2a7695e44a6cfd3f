"""The headline markdown of many runs (`hx.evaluation.headline`), exactly, on hand-built roots. Nothing is
trained."""

import json
from pathlib import Path

import pytest

from hx.evaluation.fraction_plots import collect_figures
from hx.evaluation.headline import (
  blocks_in,
  instances_text,
  paper_ranks,
  paper_ranks_markdown,
  readme_blocks,
  scores_markdown,
  transfer_markdown,
  transfer_runs,
)


def _settings(run: Path, sequence: str, fractions, **module_changes) -> None:
  from hx.presets import EVALUATION_PRESETS
  from hx.synth.jsonfiles import jsonable

  module_config = {**jsonable(EVALUATION_PRESETS["paper"].modules(sequence)), **module_changes}
  run.mkdir(parents=True, exist_ok=True)
  (run / "settings.json").write_text(json.dumps({"settings": {
      "sequence": sequence, "preset": "paper", "fractions": fractions, "module_config": module_config},
      "started": "2026-01-01T00:00:00+00:00"}))


def _record(run: Path, method: str, instance: int, index: int, task: str, metric: str, fraction: float,
            ranked: list[tuple], sequence: str) -> None:
  """`ranked`: (test, program, named, order) per candidate, best first."""
  path = run / method / f"seed_{instance}" / "records" / f"{index:02d}_{task}" / f"fraction_{fraction:g}.json"
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({
      "record_version": 1, "sequence": sequence, "task_index": index, "task": task, "metric": metric,
      "fraction": fraction, "data": {"datasets": ["mnist"], "synthetic": False}, "seconds": {"wall": 1.0},
      "ranked": [{"rank": k, "program": program, "named": named, "order": order, "status": "trained",
                  "val": test, "test": test} for k, (test, program, named, order) in enumerate(ranked, 1)]}))


def _network(run, method, instance, index, task, metric, fraction, test, sequence="cs1"):
  _record(run, method, instance, index, task, metric, fraction, [(test, "network", "network", 0)], sequence)


@pytest.fixture
def root(tmp_path):
  """CS1 at 2% (instantiations 0, 1) and 10% (0): tasks 1 and 3, HOUDINI and the standalone network."""
  root = tmp_path / "root"
  low, high = root / "cs1", root / "fraction_0.1" / "cs1"
  _settings(low, "cs1", [0.02])
  _settings(high, "cs1", [0.1])
  first = [(2.0, "compose(nn_1, nn_2)", "compose(nn_cs1_1, nn_cs1_2)", 0)]
  paper3 = "compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_2)))"
  fresh = "compose(nn_1, map_l(compose(nn_2, nn_3)))"
  third = [(0.5, fresh, "compose(nn_cs1_7, map_l(compose(nn_cs1_8, nn_cs1_9)))", 0), (0.6, paper3, None, 2),
           (0.7, fresh, None, 1), (0.8, paper3, None, 3)]
  for instance, scale in ((0, 1.0), (1, 2.0)):
    _record(low, "houdini_topdown", instance, 1, "recognize_digit(0)", "error", 0.02,
            [(2.0 * scale, *first[0][1:])], "cs1")
    _record(low, "houdini_topdown", instance, 3, "count_digit(0)", "rmse", 0.02,
            [(t * scale, *rest) for t, *rest in third], "cs1")
    _network(low, "standalone", instance, 1, "recognize_digit(0)", "error", 0.02, 4.0 * scale)
    _network(low, "standalone", instance, 3, "count_digit(0)", "rmse", 0.02, [1.0, 0.25][instance])
  _record(high, "houdini_topdown", 0, 1, "recognize_digit(0)", "error", 0.1, first, "cs1")
  _record(high, "houdini_topdown", 0, 3, "count_digit(0)", "rmse", 0.1,
          [(0.3, paper3, "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))", 5)], "cs1")
  _network(high, "standalone", 0, 1, "recognize_digit(0)", "error", 0.1, 2.0)
  _network(high, "standalone", 0, 3, "count_digit(0)", "rmse", 0.1, 0.6)
  return root


def test_the_scores_table_exactly(root):
  assert scores_markdown(collect_figures(root)) == "\n".join([
      "### CS1", "",
      "| task | fraction | instantiations | HOUDINI (top-down) | standalone | HOUDINI / standalone |",
      "|---|---|---|---|---|---|",
      "| 1 recognize_digit(0) | 2% | 0, 1 | **3.00%** | 6.00% | 0.50 ± 0.00 |",
      "|  | 10% | 0 | **2.00%** | **2.00%** | 1.00 |",
      "|  | the paper, 100% | | 1% |  | |",
      "| 3 count_digit(0) | 2% | 0, 1 | 0.750 | **0.625** | 2.25 ± 2.47 |",
      "|  | 10% | 0 | **0.300** | 0.600 | 0.50 |",
      "|  | the paper, 100% | | 0.38 |  | |", "",
      "![CS1: test error against training data](figures/cs1_error_by_fraction.png)", ""])


def test_forward_transfer_counts_each_task_run_once_by_its_mean(root):
  figures = collect_figures(root)
  runs = transfer_runs(figures)
  assert [(r.sequence, r.task, r.fraction, r.ratios) for r in runs] == [
      ("cs1", 3, 0.02, (0.5, 4.0)), ("cs1", 3, 0.1, (0.5,))]
  assert transfer_markdown(figures, leads=1) == (
      "After a first task, HOUDINI (top-down) is ahead of the standalone network on 1 of 2 task runs (a task "
      "at a fraction; several instantiations counted once, by their mean ratio): 0 of 1 at 2% (behind on CS1 "
      "task 3, 2.25); 1 of 1 at 10%. Its 1 largest leads: CS1 task 3 at 10% (0.50).\n")


def test_the_papers_program_is_found_by_its_normal_form_and_library_roles(root):
  ranks = paper_ranks(root)
  assert [(r.fraction, r.instance, r.task, r.ours, r.found, r.trained) for r in ranks] == [
      (0.02, 0, 1, "compose(nn_cs1_1, nn_cs1_2)", ((1, 1),), 1),
      (0.02, 0, 3, "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))", ((2, 3), (4, 4)), 4),
      (0.02, 1, 1, "compose(nn_cs1_1, nn_cs1_2)", ((1, 1),), 1),
      (0.02, 1, 3, "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))", ((2, 3), (4, 4)), 4),
      (0.1, 0, 1, "compose(nn_cs1_1, nn_cs1_2)", ((1, 1),), 1),
      (0.1, 0, 3, "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))", ((1, 6),), 1)]
  assert paper_ranks_markdown(root) == "\n".join([
      "| task | 2%, 0 | 2%, 1 | 10%, 0 |", "|---|---|---|---|",
      "| CS1 1 | **1** (1) | **1** (1) | **1** (1) |",
      "| CS1 3 | 2 (3), 4 (4) | 2 (3), 4 (4) | **1** (6) |", ""])


def test_a_library_without_the_reused_function_is_a_dash_and_variants_are_left_out(tmp_path):
  # CS2's paper task 3 reuses task 2's counter; our task 2's winner has none in that place.
  run = tmp_path / "cs2"
  _settings(run, "cs2", [0.02])
  _record(run, "houdini_topdown", 0, 1, "recognize_digit(0)", "error", 0.02,
          [(2.0, "compose(nn_1, nn_2)", "compose(nn_cs2_1, nn_cs2_2)", 0)], "cs2")
  _record(run, "houdini_topdown", 0, 2, "count_digit(0)", "rmse", 0.02,
          [(0.8, "compose(lib.nn_cs2_1, lib.nn_cs2_2)", "compose(lib.nn_cs2_1, lib.nn_cs2_2)", 0)], "cs2")
  _record(run, "houdini_topdown", 0, 3, "count_digit(1)", "rmse", 0.02,
          [(0.6, "compose(nn_1, map_l(compose(nn_2, nn_3)))", "compose(nn_cs2_9, map_l(compose(nn_cs2_10, "
            "nn_cs2_11)))", 0)], "cs2")
  variant = tmp_path / "variants" / "x" / "cs2"
  _settings(variant, "cs2", [0.02], fold_step_norm=False)
  _record(variant, "houdini_topdown", 0, 1, "recognize_digit(0)", "error", 0.02,
          [(2.0, "compose(nn_1, nn_2)", "compose(nn_cs2_1, nn_cs2_2)", 0)], "cs2")
  ranks = paper_ranks(tmp_path)
  assert [(r.task, r.ours, r.found) for r in ranks] == [
      (1, "compose(nn_cs2_1, nn_cs2_2)", ((1, 1),)),
      (2, "compose(nn_cs2_3, compose(map_l(nn_cs2_4), map_l(nn_cs2_5)))", ()), (3, None, ())]
  assert paper_ranks_markdown(tmp_path).splitlines()[2:] == [
      "| CS2 1 | **1** (1) |", "| CS2 2 | none |", "| CS2 3 | - |"]


def test_instances_text():
  assert [instances_text(x) for x in ((0, 1, 2, 3, 4), (0, 2), (3,), (0, 1))] == ["0-4", "0, 2", "3", "0, 1"]


def test_readme_blocks_round_trip_and_bad_markers(root):
  text = readme_blocks(root)
  assert list(blocks_in("intro\n" + text + "outro\n")) == ["scores", "transfer", "paper_ranks"]
  assert blocks_in(text)["paper_ranks"] == paper_ranks_markdown(root)
  with pytest.raises(ValueError, match="'scores' has no END marker"):
    blocks_in("<!-- BEGIN headline:scores -->\nx\n")
  with pytest.raises(ValueError, match="'scores' is given twice"):
    blocks_in("<!-- BEGIN headline:scores -->\nx\n<!-- END headline:scores -->\n" * 2)
