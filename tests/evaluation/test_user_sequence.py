"""A user's own sequence (`hx.TaskStream` of `hx.Task.from_arrays` tasks) through the evaluation: every
method's records, the report, resuming, and its settings keyed by the tasks' data."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hx
from hx.evaluation import ConfigError, EvalConfig, run
from hx.evaluation.runner import check_directory
from tests.user_data import bright_images, bright_lists

TRAINING = {"epochs": 1, "batch_size": 16}


def tasks(seed: int) -> list[hx.Task]:
  rng = np.random.default_rng(seed)
  return [hx.Task.from_arrays("is_bright", "Tensor<real>[1][6][6] -> Tensor<bool>[1]",
                              bright_images(rng, 64), bright_images(rng, 16), bright_images(rng, 16),
                              training=TRAINING),
          hx.Task.from_arrays("count_bright", "List<Tensor<real>[1][6][6]> -> Tensor<real>[1]",
                              bright_lists(rng, 32), bright_lists(rng, 8), bright_lists(rng, 8),
                              training=TRAINING)]


@pytest.mark.slow
def test_a_user_sequence_runs_every_method_writes_the_report_and_resumes(tmp_path):
  stream = hx.TaskStream("bright", tasks)
  config = EvalConfig.make(stream, methods=["houdini", "standalone", "llt", "pnn"], budget={"candidates": 2},
                           fractions=[0.5, 1.0], seeds=[0])
  assert config.sequence == "bright" and config.tasks == 2
  assert dict(config.tune_configs)["count_bright"].batch_size == 16  # the task's own settings
  out = run(config, tmp_path / "run")
  assert out.finished and out.ran == 2 * 4 * 2
  for method in ("houdini_topdown", "standalone", "llt", "pnn"):
    for folder, name in (("01_is_bright", "is_bright"), ("02_count_bright", "count_bright")):
      path = tmp_path / "run" / method / "seed_0" / "records" / folder / "fraction_1.json"
      rec = json.loads(path.read_text())
      assert rec["task"] == name and rec["task_kind"] == name
      assert rec["ranked"] and np.isfinite(rec["ranked"][0]["test"])
  report = out.report.read_text()
  assert "Task 2: count_bright" in report and "Forward transfer" in report
  assert "count_bright" in out.summary() and "HOUDINI (top-down)" in out.summary()
  # HOUDINI's library grew from the first task: task 2's search could use its functions.
  library = hx.Library.load(tmp_path / "run" / "houdini_topdown" / "seed_0" / "libraries" / "after_01")
  assert any(name.startswith("nn_bright_") for name in library.names)
  again = run(config, tmp_path / "run")
  assert again.already_finished and again.ran == 0


def test_the_settings_name_the_data_so_other_data_is_not_resumed(tmp_path):
  config = EvalConfig.make(hx.TaskStream("bright", tasks), methods=["standalone"], seeds=[0])
  check_directory(config, tmp_path)
  check_directory(config, tmp_path)  # the same run: accepted
  other = EvalConfig.make(hx.TaskStream("bright", lambda seed: tasks(seed + 1)), methods=["standalone"],
                          seeds=[0])
  with pytest.raises(ConfigError, match="differing: stream"):
    check_directory(other, tmp_path)


def test_instances_come_from_the_seed():
  stream = hx.TaskStream("bright", tasks)
  a, b = stream.instance(0), stream.instance(1)
  assert (a.seed, b.seed) == (0, 1) and a.tasks[0].name == "is_bright"
  assert not np.array_equal(a.build(0).table, b.build(0).table)
  fixed = hx.TaskStream("fixed", tasks(0))
  assert fixed.instance(5).build(1) is fixed.instance(0).build(1)


def test_user_sequences_that_cannot_work_are_refused():
  with pytest.raises(ConfigError, match="may not be named 'cs1'"):
    EvalConfig.make(hx.TaskStream("cs1", tasks(0)))
  graph = hx.Task.from_arrays("g", "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[1]>",
                              *[([{"nodes": np.ones((2, 1)), "edges": [[0, 1]]}], [np.ones(2)])] * 3)
  with pytest.raises(ConfigError, match="pnn is not defined for the graph sequence graphs"):
    EvalConfig.make(hx.TaskStream("graphs", [graph]), methods=["houdini", "pnn"])
  assert "pnn" not in EvalConfig.make(hx.TaskStream("graphs", [graph])).methods
  with pytest.raises(ConfigError, match="--tasks must be in 1..2"):
    EvalConfig.make(hx.TaskStream("bright", tasks(0)), tasks=3)
  with pytest.raises(ValueError, match="two tasks are named 'is_bright'"):
    hx.TaskStream("twice", [tasks(0)[0], tasks(1)[0]])
  with pytest.raises(ValueError, match="sequence's name must be lower case"):
    hx.Sequence.of("Bright", tasks(0))
  with pytest.raises(ValueError, match="is at fraction 0.5"):
    hx.Sequence.of("bright", [tasks(0)[0].with_fraction(0.5)])
  with pytest.raises(ValueError, match="task 1 is a str"):
    hx.Sequence.of("bright", ["is_bright"])


def test_a_stream_mixes_paper_tasks_of_one_kind_with_its_own_and_builds_each_seed_once():
  calls = []

  def make(seed):
    calls.append(seed)
    return tasks(seed)

  stream = hx.TaskStream("counted", make)
  EvalConfig.make(stream, methods=["standalone"], seeds=[0])
  stream.instance(0)
  assert calls == [0]
  cs1 = hx.data.sequence("cs1", 0)
  mixed = hx.Sequence.of("mixed", [cs1.build(0), cs1.build(1), tasks(0)[0]])  # two recognize_digit tasks
  assert [t.kind for t in mixed.tasks] == ["recognize_digit", "recognize_digit", "is_bright"]
