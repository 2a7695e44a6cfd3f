"""Forgetting in a stream's metrics (`hx.evaluation.stream_forgetting`), exactly, on hand-made rows and a
hand-made `rescored.json`: CTrL's forgetting of experience replay and EWC (each earlier task's final
score minus its recorded one), zero by construction for the baselines that keep their networks, the
final scores averaged after the last task, and the summary's forgetting column. No training."""

from __future__ import annotations

import json

import pytest

from hx.evaluation.records import RESCORED_FILE, read_rescored
from hx.evaluation.stream_forgetting import (
  Forgetting,
  Rescored,
  continual_forgetting,
  keep_rescores,
  kept_rescores,
)
from hx.evaluation.stream_metrics import TaskRow
from hx.evaluation.stream_report import stream_section
from hx.evaluation.stream_summary import summary


def _row(index, method, metric, test):
  return TaskRow(index=index, task=f"t{index}", method=method, metric=metric, test=test, transfer=None,
                 wall_seconds=1.0, work_seconds=1.0, candidates=1, trained=1, parameters=10, program="net")


# Four tasks: 1 and 2 error tasks, 3 a graph task (RMSE, not scored again), 4 the last (error).
RECORDED = {1: ("error", 10.0), 2: ("error", 20.0), 3: ("rmse", 2.0), 4: ("error", 30.0)}
RESCORED = {1: 15.0, 2: 21.0, 3: None, 4: 30.0}


def _write(directory, method="replay"):
  folder = directory / method / "seed_0"
  folder.mkdir(parents=True)
  tasks = [{"index": i, "task": f"t{i}", "metric": m, "network": "net", "recorded": t,
            "rescored": RESCORED[i], "shares_trunk": RESCORED[i] is not None}
           for i, (m, t) in RECORDED.items()]
  (folder / RESCORED_FILE).write_text(json.dumps({"method": method, "instance": 0, "after": 4,
                                                  "fraction": 1.0, "tasks": tasks}))


def test_a_continual_baselines_forgetting_is_the_mean_change_of_its_earlier_tasks(tmp_path):
  _write(tmp_path)
  f = continual_forgetting(tmp_path, "replay", 0)
  assert f.method == "replay" and f.after == 4
  assert [(r.index, r.recorded, r.rescored, r.change) for r in f.rows] == [
      (1, 10.0, 15.0, 5.0), (2, 20.0, 21.0, 1.0), (3, 2.0, 2.0, 0.0), (4, 30.0, 30.0, 0.0)]
  assert f.mean_change("error") == 3.0  # tasks 1 and 2: (5 + 1) / 2; the last task is not counted
  assert f.mean_change("rmse") == 0.0  # the graph task, shared nothing, changed by nothing
  assert [r.unchanged for r in f.rows] == [False, False, True, False]
  assert f.largest_change == 5.0
  assert continual_forgetting(tmp_path, "ewc", 0) is None  # not written: no figure


def test_the_summary_takes_final_scores_and_forgetting_per_method(tmp_path):
  _write(tmp_path)
  rows = [_row(i, m, metric, t) for m in ("standalone", "replay") for i, (metric, t) in RECORDED.items()]
  rows += [_row(i, "houdini_topdown", metric, t) for i, (metric, t) in RECORDED.items()]
  houdini = Forgetting("houdini_topdown", 0, 4, tuple(Rescored(i, f"t{i}", "lib.nn", t, t, 0.0, True, m)
                                                      for i, (m, t) in RECORDED.items()))
  by = {s.method: s for s in summary(rows, forgetting=[houdini, continual_forgetting(tmp_path, "replay", 0)])}
  replay = by["replay"]
  assert replay.mean_error == pytest.approx((15.0 + 21.0 + 30.0) / 3)  # the scores after the last task
  assert replay.mean_rmse == 2.0
  assert (replay.forgetting_error, replay.forgetting_rmse) == (3.0, 0.0)
  assert (by["standalone"].forgetting_error, by["standalone"].forgetting_rmse) == (0.0, 0.0)  # kept
  assert by["standalone"].mean_error == 20.0  # recorded = final
  assert (by["houdini_topdown"].forgetting_error, by["houdini_topdown"].forgetting_rmse) == (0.0, 0.0)
  # Without a measurement a continual baseline's forgetting is unknown, not zero.
  bare = {s.method: s for s in summary(rows)}["replay"]
  assert (bare.forgetting_error, bare.forgetting_rmse) == (None, None) and bare.mean_error == 20.0


def test_the_report_has_a_forgetting_column_only_where_a_continual_baseline_ran(tmp_path):
  _write(tmp_path)
  forgetting = [continual_forgetting(tmp_path, "replay", 0)]
  rows = [_row(i, m, metric, t) for m in ("standalone", "replay") for i, (metric, t) in RECORDED.items()]
  lines = stream_section(rows, summary(rows, forgetting=forgetting), forgetting=forgetting)
  head = next(line for line in lines if line.startswith("| method"))
  assert "| forgetting |" in head
  # Each mean with its 95% interval over the tasks: 1.96 standard errors (none for the one RMSE task).
  assert any(line.startswith("| standalone | 4 | 20.00% ± 11.32 | 2.000 | - | +0.00 / +0.000 |")
             for line in lines)  # 10, 20, 30: 1.96 * 10 / sqrt(3)
  assert any(line.startswith("| experience replay | 4 | 22.00% ± 8.54 | 2.000 | - | +3.00 / +0.000 |")
             for line in lines)  # 15, 21, 30 after the last task: 1.96 * sqrt(57) / sqrt(3)
  text = "\n".join(lines)
  assert "### Forgetting" in text and "error tasks +3.00 points; RMSE tasks +0.000" in text
  assert "3 tasks; 1 share no trunk" in text
  plain = [_row(i, "standalone", metric, t) for i, (metric, t) in RECORDED.items()]
  plain_lines = stream_section(plain, summary(plain))
  assert all("forgetting" not in line for line in plain_lines)  # the committed reports' layout


def test_the_interval_is_1_96_standard_errors_of_the_mean():
  from hx.evaluation.stream_summary import interval

  assert interval([10.0, 20.0, 30.0, None]) == pytest.approx(1.96 * 10.0 / 3 ** 0.5)
  assert interval([5.0]) is None and interval([]) is None



def test_houdinis_rescores_are_kept_and_read_back_exactly(tmp_path):
  rows = (Rescored(1, "t1", "lib.nn_1", 12.343013427390817, 12.343013427390818, 12.343013427390818
                   - 12.343013427390817, True, "rmse"),
          Rescored(2, "t2", "compose(lib.nn_2, lib.nn_1)", 11.0, 13.5, 2.5, False, "error"))
  forgetting = Forgetting("houdini_topdown", 0, 2, rows)
  path = keep_rescores(tmp_path, forgetting, 1.0)
  assert path == tmp_path / "houdini_topdown" / "seed_0" / RESCORED_FILE
  assert kept_rescores(tmp_path, "houdini_topdown", 0) == forgetting
  assert kept_rescores(tmp_path, "houdini_bottomup", 0) is None
  _write(tmp_path, "houdini_bottomup")  # a continual learner's form: no "program"
  with pytest.raises(ValueError, match=r"rescored\.json: not HOUDINI's re-scores"):
    kept_rescores(tmp_path, "houdini_bottomup", 0)

def test_a_damaged_rescored_file_is_named(tmp_path):
  folder = tmp_path / "ewc" / "seed_0"
  folder.mkdir(parents=True)
  (folder / RESCORED_FILE).write_text('{"tasks": []}')
  with pytest.raises(ValueError, match=r"rescored\.json: no field 'after'"):
    read_rescored(tmp_path, "ewc", 0)


@pytest.mark.slow  # trains a 4-task stream under three methods, and EWC's strength on its first tasks
def test_a_four_task_stream_reports_the_forgetting_of_replay_and_ewc(tmp_path):
  import hx
  from hx.data import Sources, StreamSettings, stream_plan
  from hx.evaluation import load_records
  from hx.evaluation.stream_report import write_stream_report
  from hx.presets import StreamPreset

  tiny = StreamPreset("tiny", StreamSettings(images=(24, 10, 10), lists=(12, 6, 6)), epochs=(1, 1, 1),
                      batch_size=12, min_steps=2)
  stream = tiny.stream(0, 4, Sources(standin_per_class=(20, 6, 6)))  # regress, recognize x2, count
  config = hx.EvalConfig.make(stream, methods=["standalone", "replay", "ewc"], fractions=[1.0], seeds=[0])
  directory = tmp_path / "run"
  assert hx.evaluate(config, directory).finished
  records = load_records(directory)
  for method in ("replay", "ewc"):
    kept = read_rescored(directory, method, 0)
    assert kept["after"] == 4 and [t["index"] for t in kept["tasks"]] == [1, 2, 3, 4]
    mine = {r["task_index"]: r["ranked"][0]["test"] for r in records if r["method"] == method}
    assert [t["recorded"] for t in kept["tasks"]] == [mine[i] for i in range(1, 5)]
    last = kept["tasks"][-1]
    assert last["rescored"] == pytest.approx(last["recorded"], abs=1e-4)  # nothing after the last task
    assert all(t["shares_trunk"] for t in kept["tasks"])  # one CNN trunk: every task on digits
    memory = [r["continual_memory"] for r in records if r["method"] == method]
    assert len(memory) == 4 and len({m["trunk"] for m in memory}) == 1  # what CTrL's memory counts
  path = write_stream_report(config, directory, stream_plan(0, 4, tiny.settings), rescore=False)
  text = path.read_text("utf-8")
  assert "| forgetting |" in text
  for label in ("experience replay", "EWC"):
    assert f"Every earlier task of {label} re-scored after task 4" in text
  replay = continual_forgetting(directory, "replay", 0)
  row = next(line for line in text.splitlines() if line.startswith("| experience replay |"))
  assert f"{replay.mean_change('error'):+.2f} / {replay.mean_change('rmse'):+.3f}" in row


def test_replay_and_ewc_memory_counts_one_trunk_per_kind_every_head_and_what_each_task_kept(tmp_path):
  from hx.evaluation.stream_memory import MemoryPoint, network_growth

  def rec(index, trunk, trunk_parameters, head, kept):
    return {"method": "ewc", "instance": 0, "fraction": 1.0, "task_index": index, "parameters": 999,
            "continual_memory": {"trunk": trunk, "trunk_parameters": trunk_parameters,
                                 "head_parameters": head, "kept_bytes": kept}}

  records = [rec(1, "nn_cnn: image", 100, 10, 800), rec(2, "nn_cnn: image", 100, 20, 800),
             rec(3, None, 0, 7, 0), rec(4, "nn_enc: vector", 50, 5, 400)]
  got = network_growth(records, tmp_path, "ewc")
  assert got == [MemoryPoint(1, "ewc", 110, 4 * 110 + 800), MemoryPoint(2, "ewc", 130, 4 * 130 + 1600),
                 MemoryPoint(3, "ewc", 137, 4 * 137 + 1600), MemoryPoint(4, "ewc", 192, 4 * 192 + 2000)]


def test_a_tasks_footprint_is_its_head_its_trunk_and_its_memory_or_fisher():
  import jax
  import numpy as np

  import hx
  from hx import baselines
  from hx.baselines import ENC, ContinualSettings
  from hx.compile import ModuleConfig

  rng = np.random.default_rng(0)
  splits = [(rng.normal(size=(n, 6)).astype(np.float32), rng.integers(0, 2, size=n)) for n in (30, 10, 10)]
  task = hx.Task.from_arrays("t [synthetic]", "Tensor<real>[6] -> Tensor<bool>[1]", *splits)
  arch = baselines.architecture(task.type, ModuleConfig(mlp_hidden=8))
  modules = arch.init(jax.random.key(0))
  count = {r: sum(np.size(x) for x in jax.tree.leaves(m["params"])) for r, m in modules.items()}
  head = sum(n for r, n in count.items() if r != ENC)
  ewc = baselines.continual_footprint("ewc", task, 0, arch, modules)
  assert ewc == {"trunk": f"{ENC}: {arch.spec(ENC).type}", "trunk_parameters": count[ENC],
                 "head_parameters": head, "kept_bytes": 8 * count[ENC]}  # Fisher and anchor, float32
  replay = baselines.continual_footprint("replay", task, 0, arch, modules,
                                         ContinualSettings(memory_per_task=5))
  assert replay["kept_bytes"] == 5 * 6 * 4 + 5 * np.asarray(task.train.targets)[:1].nbytes  # inputs, targets


@pytest.mark.slow  # trains 10 tasks under two methods
def test_a_graph_task_under_replay_maps_the_shared_regressor_and_is_not_scored_again(tmp_path):
  import hx
  from hx.data import Sources, StreamSettings
  from hx.evaluation import load_records
  from hx.presets import StreamPreset

  tiny = StreamPreset("tiny", StreamSettings(images=(24, 10, 10), lists=(12, 6, 6), graphs=(8, 4, 4)),
                      epochs=(1, 1, 1), batch_size=12, min_steps=2)
  stream = tiny.stream(0, 10, Sources(standin_per_class=(20, 6, 6)))  # task 9: a shortest path
  config = hx.EvalConfig.make(stream, methods=["standalone", "replay"], fractions=[1.0], seeds=[0])
  directory = tmp_path / "run"
  assert hx.evaluate(config, directory).finished
  graph = next(r for r in load_records(directory) if r["method"] == "replay" and r["task_index"] == 9)
  assert graph["task"].startswith("shortest_path")
  assert "trunk the shared regressor, frozen" in graph["ranked"][0]["program"]
  assert graph["continual_memory"]["trunk"] is None and graph["continual_memory"]["kept_bytes"] == 0
  kept = read_rescored(directory, "replay", 0)
  rows = {t["index"]: t for t in kept["tasks"]}
  assert rows[9]["rescored"] is None and not rows[9]["shares_trunk"]
  assert all(rows[i]["rescored"] is not None for i in range(1, 11) if i != 9)
  assert rows[10]["rescored"] == pytest.approx(rows[10]["recorded"], abs=1e-4)
