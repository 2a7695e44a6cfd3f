"""The report from records alone (hand-written records: no training), and the configurations' checks."""

import dataclasses
import json
import re

import pytest

from hx.compile import ModuleConfig
from hx.data import FRACTIONS
from hx.evaluation import ConfigError, EvalConfig, build_report, load_records, summary_lines
from hx.evaluation.paper import paper_top
from hx.evaluation.records import fraction_file, task_dir
from hx.presets import task_sizes
from hx.synth import Evolutionary, SearchSpace, TopDown, paper_space


def _write(directory, method, instance, index, task, fraction, test, *, metric="rmse", synthetic=False,
           programs=None, status="trained", seconds=None):
  datasets = ["mnist-5k", "smallnorb-synthetic"] if synthetic else ["mnist-5k"]
  name = task + (" [synthetic: smallnorb-synthetic]" if synthetic else "")
  programs = programs or [f"compose(nn_{method}_{index}, nn_x)"]
  rec = {"sequence": "cs3", "task_index": index, "task": name, "task_kind": task.split("(")[0],
         "metric": metric, "fraction": fraction, "seed": 7,
         "data": {"datasets": datasets, "synthetic": synthetic},
         "seconds": seconds or {"wall": 10.0},
         "ranked": [{"rank": k + 1, "program": p, "named": p, "status": status, "reason": None, "val": test,
                     "test": test + k} for k, p in enumerate(programs)]}
  if method.startswith("houdini"):
    rec["candidates_trained"] = len(programs)
  path = directory / method / f"seed_{instance}" / "records" / task_dir(index, name) / fraction_file(fraction)
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(rec))


def test_a_search_resumed_across_calls_reports_its_candidates_seconds_beside_the_last_calls_wall(tmp_path):
  # Resumed from kept candidates: the recording call took 100 s, its candidates 3,050 s over all calls.
  _write(tmp_path, "houdini_topdown", 0, 2, "count_digit(1)", 0.1, 0.4, programs=["compose(nn_a, nn_b)"] * 3,
         seconds={"wall": 100.0, "compile": 30.0, "train": 3000.0, "eval": 19.5, "search": 0.5})
  _write(tmp_path, "standalone", 0, 2, "count_digit(1)", 0.1, 0.5, seconds={"wall": 20.0, "train": 19.0})
  report = build_report(tmp_path).read_text()
  assert ("; 3 candidates trained in 100 s (the recording call's wall time; 3,050 s of the candidates' own "
          "compiling, training and scoring over every call and worker)") in report
  # A network trained within its one call: the wall alone, no note.
  assert "- standalone: `compose(nn_standalone_2, nn_x)`\n" in report
  assert "| HOUDINI (top-down) | 100 | 3050 | 1 |" in report
  assert "| standalone | 20 | 19 | 1 |" in report


def test_the_report_aggregates_instances_labels_synthetic_data_and_lays_out_the_programs(tmp_path):
  for instance, (digit, toy) in enumerate([(1, 2), (5, 4)]):
    for f, bonus in ((0.1, 1.0), (1.0, 0.0)):
      _write(tmp_path, "houdini_topdown", instance, 2, f"count_digit({digit})", f, 0.4 + bonus,
             programs=["compose(nn_cs3_1, map_l(nn_cs3_2))", "compose(nn_cs3_3, map_l(lib.nn_cs3_2))"])
      _write(tmp_path, "standalone", instance, 2, f"count_digit({digit})", f, 0.5 + 0.2 * instance + bonus)
      _write(tmp_path, "houdini_topdown", instance, 4, f"recognize_toy({toy})", f, 5.0, metric="error",
             synthetic=True)
      _write(tmp_path, "standalone", instance, 4, f"recognize_toy({toy})", f, 7.0, metric="error",
             synthetic=True, status="failed" if instance == 1 else "trained")
  records = load_records(tmp_path)
  assert len(records) == 16 and {r["method"] for r in records} == {"houdini_topdown", "standalone"}
  assert {r["instance"] for r in records} == {0, 1}
  path = build_report(tmp_path)
  report = path.read_text()
  assert "**Some tasks below ran on SYNTHETIC stand-in data" in report
  assert "| Task 2: count_digit(1) (and 1 other instantiations) | mnist-5k | 0.400 ± 0.000 (n=2) | " \
         "0.600 ± 0.141 (n=2) |" in report
  # A failed training is not averaged in; its instantiation is counted out.
  assert "| 7.00% ± - (n=1) |" in report
  assert "Data: mnist-5k, smallnorb-synthetic — SYNTHETIC stand-in data (smallnorb-synthetic)" in report
  assert "| 10% | 1.400 ± 0.000 (n=2) | 1.600 ± 0.141 (n=2) |" in report
  # The paper's top program for the task, from its CS3 table.
  assert "the paper (tab:CS3Progs, count_digit(d), 100% of its data): `compose(nn_cs3_3, map_l(compose(" \
         "nn_cs3_4, nn_cs3_5)))`, 0.40 RMSE" in report
  # Forward transfer: HOUDINI's test score over the standalone network's, per instantiation, then the mean
  # (0.4/0.5 and 0.4/0.7 at 100%; 1.4/1.5 and 1.4/1.7 at 10%); the failed standalone network is counted out.
  assert "| Task 2: count_digit(1) (and 1 other instantiations) | 10% | 0.88 ± 0.08 (n=2) |" in report
  assert "| Task 2: count_digit(1) (and 1 other instantiations) | 100% | 0.69 ± 0.16 (n=2) |" in report
  assert "| Task 4: recognize_toy(2) (and 1 other instantiations) | 100% | 0.71 |" in report
  programs = (tmp_path / "programs.md").read_text()
  assert "### HOUDINI (top-down), CS3 instantiation 1, 100% of the training data [synthetic stand-in data]" \
      in programs
  assert "| Task 2: count_digit(5) | 1. `compose(nn_cs3_1, map_l(nn_cs3_2))` | 0.40 RMSE |" in programs
  assert "|  | 2. `compose(nn_cs3_3, map_l(lib.nn_cs3_2))` | 1.40 RMSE |" in programs
  assert "| Task 4: recognize_toy(4) [synthetic: smallnorb-synthetic] | 1. `compose(nn_houdini_topdown_4, " \
         "nn_x)` | 5.00% error |" in programs
  # Classification error in words, not the paper's "CE", the paper's own scores too.
  report_text = (tmp_path / "report.md").read_text()
  assert " CE" not in programs and " CE" not in report_text
  assert "; 1 candidate trained in " in report_text and "1 candidates" not in report_text
  assert re.search(r"- the paper \(tab:CS3Progs, .*, 100% of its data\): `.*`, \d+% error", report_text)
  for name in ("task_02.png", "task_04.png", "summary.png"):
    assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"
  # The terminal's summary: every fraction run, each method's mean score, HOUDINI's program.
  lines = summary_lines(records)
  assert lines[:4] == [
      "Task 2 count_digit(1)",
      "  test RMSE at                     10%      100%",
      "  HOUDINI (top-down):            1.400     0.400  compose(nn_cs3_1, map_l(nn_cs3_2))",
      "  standalone:                    1.600     0.600"]
  assert lines[4:6] == ["Task 4 recognize_toy(2) [synthetic data]",
                        "  test error at                    10%      100%"]
  assert summary_lines([]) == []


def test_a_directory_without_records_has_no_report(tmp_path):
  with pytest.raises(FileNotFoundError, match="holds no evaluation records"):
    build_report(tmp_path)


def test_paper_references():
  (top,) = paper_top("cs1", 3)
  assert top.program == "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))"
  assert top.score == "0.38 RMSE"
  assert len(paper_top("ls", 1)) == 5  # the paper's five LS instantiations
  assert paper_top("cs1", 4, "evolutionary") == []  # "No Solution"


@pytest.mark.parametrize("kind, examples", [("recognize_digit", "binary"), ("count_digit", "lists")])
def test_the_quick_preset_trains_more_steps_on_more_data(kind, examples):
  # At 10% the 30-step floor decides a run's length; at 100% the epochs must give well over it, or 100%
  # of the data scores no better than 10% (CS1's recognize tasks did, at 3 epochs: 30 and 32 steps).
  quick = EvalConfig.make("cs1")
  tune = quick.tune_config(kind)
  full = getattr(quick.sizes, examples)[0]
  steps = {}
  for fraction in quick.fractions:
    n = round(fraction * full)
    steps[fraction] = tune.for_examples(n).epochs * tune.steps_per_epoch(n)
  assert steps[0.1] >= 30 and steps[1.0] >= 2 * steps[0.1], steps
  # One test example of a recognize task is at most 0.1% of its error.
  assert quick.sizes.binary[2] >= 1000


def test_presets_and_their_checks():
  quick = EvalConfig.make("cs1")
  assert quick.methods == ("houdini_topdown", "standalone", "llt", "pnn")
  assert quick.fractions == (0.1, 1.0) and quick.seeds == (0,) and quick.budget.candidates == 4
  assert quick.sizes == task_sizes("quick") and quick.tune_config("count_digit").epochs == 8
  assert quick.tune_config("count_digit").batch_size == 32
  # At least 30 optimiser steps per training under quick; the paper preset trains its epochs as given.
  assert {c.min_steps for _, c in quick.tune_configs} == {30}
  named = EvalConfig.make("cs1", training={"epochs": 2})
  assert {c.min_steps for _, c in named.tune_configs} == {0}  # named epochs
  recognize = quick.tune_config("recognize_digit")
  assert recognize.epochs == 10 and recognize.batch_size == 150
  paper = EvalConfig.make("ss", preset="paper")
  assert paper.methods == ("houdini_topdown", "standalone", "llt", "pnn", "standalone_with_fold")
  assert paper.fractions == FRACTIONS and paper.seeds == (0, 1, 2, 3, 4)
  # The authors' code trains 10 candidates for SS task 1 and 100 for task 2 (EvaluatorSummingSeq.py).
  assert [b.candidates for b in paper.budgets] == [10, 100]
  assert paper.space == paper_space(graphs=False) and quick.space == SearchSpace(order="cost")
  assert paper.module_config == ModuleConfig() and paper.tune_config("sum_digits").epochs == 20
  assert {c.min_steps for _, c in paper.tune_configs} == {0}
  gs = EvalConfig.make("gs2", preset="paper", methods=[TopDown(), Evolutionary(), "standalone", "llt"])
  assert gs.methods == ("houdini_topdown", "houdini_evolutionary", "standalone", "llt")
  # GraphSeq.py: M=10 for the regression, M=60 for each shortest-path task.
  assert gs.fractions == (1.0,) and [b.candidates for b in gs.budgets] == [10, 60, 60]
  assert gs.space == paper_space(graphs=True) and "conv_g" in gs.space.combinators
  assert [b.candidates for b in EvalConfig.make("ls", preset="paper").budgets] == [50] * 9
  assert [b.candidates for b in EvalConfig.make("cs2", preset="paper").budgets] == [20] * 4
  overridden = EvalConfig.make("ss", preset="paper", budget={"candidates": 7},
                               search={"order": "cost", "authors_filter": False})
  assert [b.candidates for b in overridden.budgets] == [7, 7]
  assert overridden.space.order == "cost" and not overridden.space.authors_filter
  custom = EvalConfig.make("cs1", methods=["llt", "houdini"], fractions=[1, 0.5, 0.5], tasks=2,
                           training={"epochs": 1}, module_overrides={"mlp_hidden": 8}, examples=(10, 5, 5))
  assert custom.methods == ("houdini_topdown", "llt") and custom.fractions == (0.5, 1.0)
  assert custom.module_config.mlp_hidden == 8 and custom.sizes.lists == (10, 5, 5)
  assert quick.tune_config("count_digit").bias_from_targets  # Tune's default
  authors_bias = EvalConfig.make("gs2", training={"bias_from_targets": False})
  assert not any(c.bias_from_targets for _, c in authors_bias.tune_configs)
  default = dict(EvalConfig.make("gs2").tune_configs)
  assert {k: dataclasses.replace(c, bias_from_targets=True) for k, c in authors_bias.tune_configs} == default
  for kwargs, message in [
      (dict(seeds=[0, 0]), "seeds must be distinct"), (dict(budget={"candidates": 0}), "Budget.candidates"),
      (dict(module_overrides={"mlp_dropout": 1.5}), "module sizes: mlp_dropout must be in"),
      (dict(training={"epochs": 0}), "epochs must be >= 1"),
      (dict(examples=(0, 1, 1)), "three positive counts"),
      (dict(methods=[]), "methods is empty"), (dict(fractions=()), "fractions is empty"),
      (dict(seeds=[]), "seeds must be distinct non-negative integers, got")]:
    with pytest.raises(ConfigError, match=message):
      EvalConfig.make("cs1", **kwargs)
