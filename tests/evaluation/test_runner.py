"""The runner on the sequences the binary's end-to-end test does not cover: a graph sequence (the
standalone baseline maps HOUDINI's first task's regressor, LLT fine-tunes it) and SS (standalone_with_fold
trains HOUDINI's program from scratch). Tiny data and modules; slow all the same."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from hx.baselines.networks import CNN, MLP, Network, architecture, load_network
from hx.data import Sources, TaskSizes
from hx.evaluation import ConfigError, EvalConfig, run
from hx.evaluation.records import network_version
from hx.lang.types import parse_type
from hx.synth.library import Library

TINY_MODULES = {"mlp_hidden": 16, "cnn_channels": (4, 8), "lstm_hidden": 8, "graph_hidden": 8,
                "graph_message": 4}


def _records(directory, method):
  return {p.parent.name: json.loads(p.read_text())
          for p in sorted((directory / method / "seed_0" / "records").glob("*/fraction_1.json"))}


@pytest.mark.slow
def test_a_graph_sequence_shares_the_first_tasks_regressor(tmp_path):
  config = EvalConfig.make("gs1", methods=["houdini", "standalone", "llt"], budget={"candidates": 1},
                           training={"epochs": 1}, module_overrides=TINY_MODULES,
                           sources=Sources(standin_per_class=(40, 10, 10)))
  config = dataclasses.replace(config, sizes=TaskSizes(grids_train=((3, 60), (4, 60)), grids_val=((5, 20),),
                                                       grids_test=((5, 20),)))
  lines = []
  outcome = run(config, tmp_path, progress=lines.append)
  assert outcome.finished and outcome.ran == 6 and len(lines) == 6
  standalone, llt = _records(tmp_path, "standalone"), _records(tmp_path, "llt")
  path = [k for k in standalone if k.startswith("02_")][0]
  first = standalone[[k for k in standalone if k.startswith("01_")][0]]
  # Both baselines' graph task start from HOUDINI's first program, compose(MLP, CNN), as a regressor.
  houdini_first = _records(tmp_path, "houdini_topdown")[[k for k in standalone if k.startswith("01_")][0]]
  assert houdini_first["ranked"][0]["named"] == "compose(nn_gs1_1, nn_gs1_2)"
  library = Library.load(tmp_path / "houdini_topdown" / "seed_0" / "libraries" / "after_01")
  arch = architecture(parse_type(first["type"]), config.module_config)
  shared = Network("houdini_topdown", first["task"], arch,
                   {CNN: library["nn_gs1_2"].variables, MLP: library["nn_gs1_1"].variables})
  source = {"task": first["task"], "method": "houdini_topdown", "version": network_version(shared)}
  assert source["version"] != first["network_version"]  # not the standalone network's own regressor
  assert standalone[path]["starts_from"] == [source] and llt[path]["starts_from"] == [source]
  kept = load_network(tmp_path / "standalone" / "seed_0" / "networks" / "after_02", config.module_config)
  for role in (CNN, MLP):  # frozen: the standalone network's regressor is HOUDINI's, unchanged
    for got, want in zip(jax.tree.leaves(kept.modules[role]), jax.tree.leaves(shared.modules[role])):
      np.testing.assert_array_equal(got, want)
  assert standalone[path]["ranked"][0]["program"] == "lstm_rows(map_g(compose(nn_mlp, nn_cnn)))"
  assert standalone[path]["frozen_parameters"] > 0 and llt[path]["frozen_parameters"] == 0
  assert dict(map(tuple, llt[path]["transfer"]))["nn_mlp.out"] == first["task"]
  assert llt[[k for k in llt if k.startswith("01_")][0]]["same_as"] == "standalone"
  assert standalone[path]["data"]["synthetic"] and "[synthetic: gtsrb-synthetic]" in standalone[path]["task"]
  report = outcome.report.read_text()
  assert "SYNTHETIC stand-in data (gtsrb-synthetic)" in report and "the paper's graph table (RMSE)" in report
  assert run(config, tmp_path).already_finished
  # Every method's networks and candidates were saved as they trained, and removed once recorded.
  assert list(tmp_path.glob("*/seed_0/checkpoints")) and [p for p in tmp_path.rglob("checkpoints/**/*")
                                                         if p.is_file()] == []


@pytest.mark.slow
def test_standalone_with_fold_trains_houdinis_program_from_scratch(tmp_path):
  config = EvalConfig.make("ss", methods=["houdini", "standalone", "standalone_with_fold"],
                           budget={"candidates": 2}, training={"epochs": 1}, fractions=(1.0,),
                           examples=(150, 60, 60), module_overrides=TINY_MODULES)
  outcome = run(config, tmp_path)
  assert outcome.finished
  houdini = _records(tmp_path, "houdini_topdown")
  swf = _records(tmp_path, "standalone_with_fold")
  assert list(swf) == ["02_sum_digits"]  # none for the first task: HOUDINI's program is all fresh there
  best = houdini["02_sum_digits"]["ranked"][0]
  rec = swf["02_sum_digits"]
  assert rec["structure_from"] == {"method": "houdini_topdown", "program": best["named"]}
  program = rec["ranked"][0]["program"]
  assert "lib." not in program and program.count("nn_scratch_") == best["program"].count("lib.")
  assert rec["ranked"][0]["status"] == "trained"


def test_houdini_trains_on_the_executor_it_is_given(tmp_path, monkeypatch):
  import hx.synth.lifelong

  given = []

  class Stop(Exception):
    pass

  def run_sequence(*args, **kwargs):
    given.append(kwargs["executor"])
    raise Stop

  monkeypatch.setattr(hx.synth.lifelong, "run_sequence", run_sequence)
  executor = object()
  with pytest.raises(Stop):
    run(EvalConfig.make("cs1", methods=["houdini"], tasks=1), tmp_path, executor=executor)
  with pytest.raises(Stop):
    run(EvalConfig.make("cs1", methods=["houdini"], tasks=1), tmp_path)
  assert given[0] is executor and given[1] is None


def test_a_run_directory_resumes_with_the_same_data_at_another_path(tmp_path):
  from hx.evaluation.runner import check_directory

  data = b"digits" * 100
  first, moved = tmp_path / "first" / "mnist.pkl.gz", tmp_path / "moved" / "mnist.pkl.gz"
  for p in (first, moved):
    p.parent.mkdir()
    p.write_bytes(data)
  run = tmp_path / "run"
  check_directory(EvalConfig.make("cs1", sources=Sources(mnist=str(first))), run)
  assert str(first) not in (run / "settings.json").read_text()
  check_directory(EvalConfig.make("cs1", sources=Sources(mnist=str(moved))), run)  # same content: resumes
  moved.write_bytes(data + b"?")
  with pytest.raises(ConfigError, match="differing: sources"):
    check_directory(EvalConfig.make("cs1", sources=Sources(mnist=str(moved))), run)


@pytest.mark.slow
def test_a_run_resumed_without_its_libraries_and_networks_ends_as_an_uninterrupted_one(tmp_path):
  # A committed reproduction on a fresh clone: the records are there, the libraries, networks and
  # checkpoints (not committed) not. Recorded tasks are not trained again as tasks; what later tasks
  # transfer from is rebuilt from their records, so the later tasks' records are the uninterrupted run's.
  import shutil

  config = EvalConfig.make("ss", methods=["houdini", "standalone", "llt", "pnn", "standalone_with_fold"],
                           budget={"candidates": 2}, training={"epochs": 1}, fractions=(1.0,),
                           examples=(150, 60, 60), module_overrides=TINY_MODULES)
  assert run(config, tmp_path / "whole").finished
  # What a clone of it holds after its first task: the first task's records, nothing that is not committed.
  part = tmp_path / "part"
  shutil.copytree(tmp_path / "whole", part)
  for kept in ("libraries", "networks", "checkpoints", "02_sum_digits"):
    for d in list(part.rglob(kept)):
      shutil.rmtree(d)
  first = {p: p.read_text() for p in part.rglob("records/*/fraction_1.json")}
  assert len(first) == 4  # standalone_with_fold has none for the first task
  assert run(config, part).finished
  assert {p: p.read_text() for p in first} == first  # not trained again as tasks
  for method in ("houdini_topdown", "standalone", "llt", "pnn", "standalone_with_fold"):
    got, want = _records(part, method), _records(tmp_path / "whole", method)
    assert list(got) == list(want)
    for task in got:
      assert [x["test"] for x in got[task]["ranked"]] == [x["test"] for x in want[task]["ranked"]], method
      assert got[task].get("starts_from") == want[task].get("starts_from"), method
  assert _records(part, "llt")["02_sum_digits"]["starts_from"]  # it transferred from task 1's network


def test_a_run_directory_takes_more_instantiations_but_not_other_settings(tmp_path):
  from hx.evaluation.runner import check_directory

  run = tmp_path / "run"
  check_directory(EvalConfig.make("cs1", seeds=(0,), fractions=(0.02,)), run)
  check_directory(EvalConfig.make("cs1", seeds=(1, 2), fractions=(0.02,)), run)  # more instantiations
  assert json.loads((run / "settings.json").read_text())["settings"]["seeds"] == [0, 1, 2]
  check_directory(EvalConfig.make("cs1", seeds=(0,), fractions=(0.02,)), run)  # one of them: resumes
  assert json.loads((run / "settings.json").read_text())["settings"]["seeds"] == [0, 1, 2]
  with pytest.raises(ConfigError, match="differing: fractions"):
    check_directory(EvalConfig.make("cs1", seeds=(3,), fractions=(0.1,)), run)


def test_rebuild_libraries_refuses_in_one_error_before_training_anything(tmp_path):
  from hx.evaluation import rebuild_libraries
  from hx.evaluation.runner import check_directory

  config = EvalConfig.make("cs1", methods=["houdini", "standalone"], seeds=(0,), fractions=(0.02, 0.1))
  missing = tmp_path / "none"
  with pytest.raises(ConfigError, match="holds no hx evaluation .no settings.json.: nothing to rebuild from"):
    rebuild_libraries(config, missing, 2)
  assert not missing.exists()  # no run started where there was none
  run_dir = tmp_path / "run"
  check_directory(config, run_dir)
  for after in (0, 5):
    with pytest.raises(ConfigError, match=f"the library after task {after}: the run has tasks 1-4"):
      rebuild_libraries(config, run_dir, after)
  records = run_dir / "houdini_topdown" / "seed_0" / "records"
  (records / "01_recognize_digit_0_").mkdir(parents=True)
  for f in ("0.02", "0.1"):  # task 1 at both fractions; task 2 at one only
    (records / "01_recognize_digit_0_" / f"fraction_{f}.json").write_text("{}")
  (records / "02_recognize_digit_1_").mkdir()
  (records / "02_recognize_digit_1_" / "fraction_0.02.json").write_text("{}")
  with pytest.raises(ConfigError, match=r"records: task 2 at fraction 0.1 is not recorded, so the library "
                                        r"after task 2 cannot be rebuilt"):
    rebuild_libraries(config, run_dir, 2)
  later = run_dir / "houdini_topdown" / "seed_0" / "libraries" / "after_03"
  later.mkdir(parents=True)
  with pytest.raises(ConfigError, match="holds after_03 but not after_01: a run resumes from its latest "
                                        "library, so move after_03 away"):
    rebuild_libraries(config, run_dir, 1)
  assert not (later.parent / "after_01").exists()


@pytest.mark.slow
def test_rebuild_libraries_trains_the_recorded_winners_again_into_the_runs_library(tmp_path):
  # A committed run on a fresh clone (records, no libraries): the library after task 1 comes back as the
  # run saved it (the same machine: the same arrays), and nothing recorded changes.
  import shutil

  from hx.evaluation import rebuild_libraries
  from hx.synth.library import Library

  config = EvalConfig.make("ss", methods=["houdini", "standalone"], budget={"candidates": 2},
                           training={"epochs": 1}, fractions=(1.0,), examples=(150, 60, 60),
                           module_overrides=TINY_MODULES)
  assert run(config, tmp_path / "whole").finished
  part = tmp_path / "part"
  shutil.copytree(tmp_path / "whole", part)
  for kept in ("libraries", "networks", "checkpoints"):
    for d in list(part.rglob(kept)):
      shutil.rmtree(d)
  records = {p: p.read_bytes() for p in part.rglob("records/*/*.json")}
  (path,) = rebuild_libraries(config, part, 1)
  assert path == part / "houdini_topdown" / "seed_0" / "libraries" / "after_01"
  got, want = Library.load(path), Library.load(tmp_path / "whole" / "houdini_topdown" / "seed_0" / "libraries"
                                                / "after_01")
  assert dict(got.types()) == dict(want.types()) and got.types()
  assert dict(got.versions()) == dict(want.versions())  # each function's arrays, to the bit
  assert {p: p.read_bytes() for p in part.rglob("records/*/*.json")} == records
  assert not (part / "houdini_topdown" / "seed_0" / "libraries" / "after_02").exists()
  assert rebuild_libraries(config, part, 1) == [path]  # there already: nothing trains
