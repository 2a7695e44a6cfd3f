"""A user's sequence of vector tasks, and of lists of vectors, with HOUDINI beside every baseline, end to
end; and a baseline that cannot take a task refused before anything trains, by `EvalConfig.make` and at
hx-run's start. The data is synthetic (`tests.baselines.test_vector_baselines`)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hx
from hx.data.sequence_file import save_task_arrays
from hx.evaluation import ConfigError, EvalConfig, load_records
from tests.baselines.test_vector_baselines import WIDTH, chains, regression, vector_lists, vectors

TRAINING = {"epochs": 8, "batch_size": 32, "learning_rate": 1e-2}
SMALL = {"mlp_hidden": 16, "lstm_hidden": 16}
ALL = ["houdini", "standalone", "llt", "pnn"]


def _task(name: str, type_: str, draw, rng, n=(120, 40, 40), **kw) -> hx.Task:
  return hx.Task.from_arrays(name, type_, *(draw(rng, k, **kw) for k in n), training=TRAINING)


def vector_tasks(seed: int) -> list[hx.Task]:
  """Three synthetic yes/no tasks on vectors of one width, each a linear boundary of two components."""
  rng = np.random.default_rng(seed)
  t = f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]"
  return [_task("sum_positive", t, vectors, rng),
          _task("difference_positive", t, vectors, rng, weights=(1, -1)),
          _task("sum_positive_again", t, vectors, rng)]


def list_tasks(seed: int) -> list[hx.Task]:
  """A synthetic yes/no task on vectors, then counting its positives in lists of 2-4 vectors."""
  rng = np.random.default_rng(seed)
  return [_task("sum_positive", f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]", vectors, rng),
          _task("count_positive", f"List<Tensor<real>[{WIDTH}]> -> Tensor<real>[1]", vector_lists, rng,
                n=(80, 30, 30))]


def narrow(seed: int = 0) -> hx.Task:
  rng = np.random.default_rng(seed)
  return _task("narrow", "Tensor<real>[4] -> Tensor<bool>[1]", vectors, rng, width=4)


def per_element(seed: int = 0) -> hx.Task:
  """A task whose output is a list (one label per element): no baseline network gives one."""
  rng = np.random.default_rng(seed)

  def draw(rng, n):
    lists, _ = vector_lists(rng, n)
    return lists, [(x[:, 0] + x[:, 1] > 0).astype(np.float32) for x in lists]

  return hx.Task.from_arrays("per_element", f"List<Tensor<real>[{WIDTH}]> -> List<Tensor<bool>[1]>",
                             draw(rng, 20), draw(rng, 5), draw(rng, 5))


def test_the_default_methods_are_every_baseline_that_takes_the_sequence():
  for tasks in (vector_tasks, list_tasks):
    config = EvalConfig.make(hx.TaskStream("vectors", tasks))
    assert config.methods == ("houdini_topdown", "standalone", "llt", "pnn")
  widths = EvalConfig.make(hx.TaskStream("widths", [vector_tasks(0)[0], narrow()]))
  assert widths.methods == ("houdini_topdown", "standalone", "llt")  # pnn's columns need one input
  assert EvalConfig.make(hx.TaskStream("lists", [per_element()])).methods == ("houdini_topdown",)
  graph = hx.Task.from_arrays("g", "Graph<Tensor<real>[2]> -> Graph<Tensor<real>[1]>",
                              *[([{"nodes": np.ones((2, 2)), "edges": [[0, 1]]}], [np.ones(2)])] * 3)
  config = EvalConfig.make(hx.TaskStream("graphs", [graph]), methods=["houdini", "standalone", "llt"])
  assert config.methods == ("houdini_topdown", "standalone", "llt")


def test_a_baseline_that_cannot_take_a_task_is_refused_when_the_run_is_made():
  widths = hx.TaskStream("widths", [vector_tasks(0)[0], narrow()])
  with pytest.raises(ConfigError) as err:
    EvalConfig.make(widths, methods=ALL)
  assert str(err.value) == ("pnn cannot take task 2, narrow : Tensor<real>[4] -> Tensor<bool>[1]: its input "
                            "Tensor<real>[4] is not the first column's Tensor<real>[6]: the columns of a "
                            "progressive network all read one input")
  assert EvalConfig.make(widths, methods=ALL, tasks=1).methods[-1] == "pnn"  # only the tasks run count
  assert EvalConfig.make(widths, methods=["houdini", "standalone", "llt"]).tasks == 2
  lists = hx.TaskStream("lists", [per_element()])
  for method in ("standalone", "llt", "pnn"):
    with pytest.raises(ConfigError, match=f"^{method} cannot take task 1, per_element : "
                                          r"List<Tensor<real>\[6\]> -> List<Tensor<bool>\[1\]>: the "
                                          "baselines take a tensor"):
      EvalConfig.make(lists, methods=["houdini", method])


@pytest.mark.slow
def test_hx_run_refuses_a_baseline_that_cannot_take_a_task_at_its_start(tmp_path):
  rng = np.random.default_rng(0)
  save_task_arrays(tmp_path / "wide.npz", f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]",
                   *(vectors(rng, 20) for _ in range(3)))
  save_task_arrays(tmp_path / "narrow.npz", "Tensor<real>[4] -> Tensor<bool>[1]",
                   *(vectors(rng, 20, width=4) for _ in range(3)))
  (tmp_path / "seq.toml").write_text(
      'name = "widths"\n'
      f'[[tasks]]\nname = "wide"\ntype = "Tensor<real>[{WIDTH}] -> Tensor<bool>[1]"\ndata = "wide.npz"\n'
      '[[tasks]]\nname = "narrow"\ntype = "Tensor<real>[4] -> Tensor<bool>[1]"\ndata = "narrow.npz"\n')
  out = subprocess.run([sys.executable, "-m", "hx.bin.run", f"--sequence_file={tmp_path / 'seq.toml'}",
                        "--methods=houdini,standalone,pnn", f"--output_dir={tmp_path / 'run'}",
                        "--noprogress"],
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 1, (out.stdout, out.stderr)
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1 and "pnn cannot take task 2, narrow : Tensor<real>[4] -> Tensor<bool>[1]" in lines[0]
  assert not (tmp_path / "run").exists()  # nothing written, nothing trained


def _run(tasks, directory):
  config = EvalConfig.make(hx.TaskStream("vectors", tasks), methods=ALL, budget={"candidates": 2},
                           fractions=[1.0], seeds=[0], module_overrides=SMALL)
  outcome = hx.evaluate(config, directory)
  assert outcome.finished and outcome.ran > 0
  return config, {(rec["method"], rec["task_index"]): rec for rec in load_records(directory)}


@pytest.mark.slow
def test_houdini_and_every_baseline_run_on_vector_tasks(tmp_path):
  _, records = _run(vector_tasks, tmp_path / "run")
  assert {k for k in records} == {(m, i) for m in ("houdini_topdown", "standalone", "llt", "pnn")
                                  for i in (1, 2, 3)}
  for rec in records.values():
    assert rec["ranked"][0]["status"] == "trained" and np.isfinite(rec["ranked"][0]["test"])
  assert records["standalone", 1]["ranked"][0]["program"] == "compose(nn_mlp, nn_enc)"
  # Synthetic, linearly separable: every baseline well below chance (50%) on every task.
  for m in ("standalone", "llt", "pnn"):
    for i in (1, 2, 3):
      assert records[m, i]["ranked"][0]["test"] < 30.0, (m, i, records[m, i]["ranked"][0]["test"])
  # Low-level transfer starts task 3 from task 2's encoder; the progressive network's third column
  # reads the two frozen ones.
  assert dict(map(tuple, records["llt", 3]["transfer"]))["nn_enc"] == "difference_positive"
  assert records["pnn", 3]["ranked"][0]["program"] == "pnn(column 3 of 3: compose(nn_mlp, nn_enc))"
  assert [s["task"] for s in records["pnn", 3]["starts_from"]] == ["sum_positive", "difference_positive"]
  assert records["pnn", 3]["frozen_parameters"] > 0
  assert records["llt", 1]["same_as"] == "standalone" and records["pnn", 1]["same_as"] == "standalone"
  # Resumed without task 3's baseline records: the networks of tasks 1-2 load back from their files
  # (pnn's columns with their lateral adapters) and task 3 trains to the same scores.
  for m in ("llt", "pnn"):
    for path in (tmp_path / "run" / m / "seed_0" / "records").glob("03_*/fraction_1.json"):
      path.unlink()
  _, again = _run(vector_tasks, tmp_path / "run")
  for m in ("llt", "pnn"):
    assert again[m, 3]["ranked"][0]["test"] == records[m, 3]["ranked"][0]["test"], m
    assert again[m, 3]["network_version"] == records[m, 3]["network_version"], m


@pytest.mark.slow
def test_houdini_and_every_baseline_run_on_lists_of_vectors(tmp_path):
  _, records = _run(list_tasks, tmp_path / "run")
  assert {k for k in records} == {(m, i) for m in ("houdini_topdown", "standalone", "llt", "pnn")
                                  for i in (1, 2)}
  count = {m: records[m, 2] for m in ("houdini_topdown", "standalone", "llt", "pnn")}
  for m, rec in count.items():
    assert rec["ranked"][0]["status"] == "trained" and np.isfinite(rec["ranked"][0]["test"]), m
  assert count["standalone"]["ranked"][0]["program"] == "compose(nn_rnn, map_l(compose(nn_mlp, nn_enc)))"
  transfer = dict(map(tuple, count["llt"]["transfer"]))
  assert transfer["nn_enc"] == "sum_positive" and transfer["nn_mlp.hidden"] == "sum_positive"
  assert count["pnn"]["ranked"][0]["program"] == (
      "pnn(column 2 of 2: compose(nn_rnn, map_l(compose(nn_mlp, nn_enc))))")


@pytest.mark.slow
def test_hx_run_runs_every_baseline_on_a_sequence_file_of_vectors_and_lists_of_vectors(tmp_path):
  rng = np.random.default_rng(0)
  save_task_arrays(tmp_path / "positive.npz", f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]",
                   *(vectors(rng, n) for n in (120, 40, 40)))
  save_task_arrays(tmp_path / "count.npz", f"List<Tensor<real>[{WIDTH}]> -> Tensor<real>[1]",
                   *(vector_lists(rng, n) for n in (80, 30, 30)))
  training = "training = { epochs = 4, batch_size = 32, learning_rate = 0.01 }\n"
  (tmp_path / "seq.toml").write_text(
      'name = "vectors"\nmethods = ["houdini", "standalone", "llt", "pnn"]\nfractions = [1.0]\n'
      'seeds = [0]\ncandidates = 2\n'
      f'[[tasks]]\nname = "positive"\ntype = "Tensor<real>[{WIDTH}] -> Tensor<bool>[1]"\n'
      f'data = "positive.npz"\n{training}'
      f'[[tasks]]\nname = "count"\ntype = "List<Tensor<real>[{WIDTH}]> -> Tensor<real>[1]"\n'
      f'data = "count.npz"\n{training}')
  out = subprocess.run([sys.executable, "-m", "hx.bin.run", f"--sequence_file={tmp_path / 'seq.toml'}",
                        f"--output_dir={tmp_path / 'run'}", "--module=mlp_hidden=16,lstm_hidden=16",
                        "--noprogress"],
                       capture_output=True, text=True, timeout=900)
  assert out.returncode == 0, (out.stdout, out.stderr)
  records = {(r["method"], r["task_index"]): r for r in load_records(tmp_path / "run")}
  assert set(records) == {(m, i) for m in ("houdini_topdown", "standalone", "llt", "pnn") for i in (1, 2)}
  assert records["pnn", 2]["ranked"][0]["program"] == (
      "pnn(column 2 of 2: compose(nn_rnn, map_l(compose(nn_mlp, nn_enc))))")
  assert all(np.isfinite(r["ranked"][0]["test"]) for r in records.values())


@pytest.mark.slow
def test_graphs_of_vectors_map_the_first_tasks_regressor_or_learn_their_own(tmp_path):
  def tasks(seed):
    rng = np.random.default_rng(seed)
    return [_task("regress", f"Tensor<real>[{WIDTH}] -> Tensor<real>[1]", regression, rng),
            _task("chain", f"Graph<Tensor<real>[{WIDTH}]> -> Graph<Tensor<real>[1]>", chains, rng,
                  n=(60, 20, 20))]

  config = EvalConfig.make(hx.TaskStream("chains", tasks), budget={"candidates": 2}, fractions=[1.0],
                           seeds=[0], module_overrides=SMALL)
  assert config.methods == ("houdini_topdown", "standalone", "llt")  # no pnn on graphs
  assert hx.evaluate(config, tmp_path / "run").finished
  records = {(r["method"], r["task_index"]): r for r in load_records(tmp_path / "run")}
  chain = records["standalone", 2]
  assert chain["ranked"][0]["program"] == "lstm_rows(map_g(compose(nn_mlp, nn_enc)))"
  assert [s["task"] for s in chain["starts_from"]] == ["regress"] and chain["frozen_parameters"] > 0
  assert dict(map(tuple, records["llt", 2]["transfer"]))["nn_mlp.out"] == "regress"
  # A sequence that starts with the graph task: no earlier regressor, the network learns its own.
  alone = EvalConfig.make(hx.TaskStream("chains", lambda seed: tasks(seed)[1:]),
                          budget={"candidates": 1}, fractions=[1.0], seeds=[0], methods=["standalone", "llt"],
                          module_overrides=SMALL)
  assert hx.evaluate(alone, tmp_path / "alone").finished
  first = {r["method"]: r for r in load_records(tmp_path / "alone")}
  assert first["standalone"]["starts_from"] == [] and first["standalone"]["frozen_parameters"] == 0
  assert np.isfinite(first["standalone"]["ranked"][0]["test"]) and first["llt"]["same_as"] == "standalone"
