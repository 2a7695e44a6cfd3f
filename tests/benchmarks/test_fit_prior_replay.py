"""benchmarks/studies/fit_prior_replay.py on small exact cases: which functions read images, what a winner
adds to the library, which candidates the rule skips, and its choice and cost on a search and a run."""

from __future__ import annotations

import pytest

from benchmarks.studies.fit_prior_replay import (
  added_functions,
  reads_images,
  replaces,
  replay_run,
  replay_search,
)

CNN = "Tensor<real>[1][28][28] -> Tensor<real>[1024]"
MLP = "Tensor<real>[1024] -> Tensor<real>[10]"
COUNT = "List<Tensor<real>[10]> -> Tensor<real>[1]"


def test_only_functions_of_one_image_read_images():
  assert reads_images(CNN) and reads_images("Tensor<real>[3][32][32] -> Tensor<real>[2]")
  assert not reads_images(MLP) and not reads_images(COUNT)
  assert not reads_images("List<Tensor<real>[1][28][28]> -> Tensor<real>[1]")


def test_a_winner_adds_its_fresh_functions_under_their_library_names():
  winner = dict(program="compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_1)))",
                named="compose(nn_cs1_3, map_l(compose(nn_cs1_4, lib.nn_cs1_1)))",
                fresh_types={"nn_1": COUNT, "nn_2": MLP})
  assert added_functions(winner) == {"nn_cs1_3": COUNT, "nn_cs1_4": MLP}
  with pytest.raises(ValueError, match="name different functions"):
    added_functions(dict(winner, named="nn_cs1_3"))


def _cand(program, types, val, test, seconds=1.0):
  return dict(program=program, fresh_types=types, val=val, test=test, seconds=seconds)


def test_the_rule_skips_fresh_replacements_and_chooses_the_best_of_the_rest():
  cands = [_cand("fresh cnn", {"nn_1": CNN, "nn_2": MLP}, 1.0, 2.0, seconds=6.0),
           _cand("reuse", {"nn_1": MLP}, 1.5, 3.0, seconds=2.0),
           _cand("all lib", {}, 2.0, 2.5, seconds=2.0)]
  assert replaces(cands[0], {CNN}) and not replaces(cands[1], {CNN}) and not replaces(cands[0], set())
  row = replay_search(cands, {CNN})
  assert row["skipped"] == 1 and row["skipped_share"] == pytest.approx(0.6)
  assert row["winner"] == "fresh cnn" and row["winner_replaces"]
  assert row["chosen"] == "reuse" and row["test_ratio"] == pytest.approx(1.5)
  everything = replay_search(cands[:1], {CNN})
  assert everything["chosen"] is None and everything["test_ratio"] is None


def _record(index, datasets, ranked, synthetic=False):
  return dict(task_index=index, task=f"t{index}", fraction=0.02,
              data=dict(datasets=datasets, synthetic=synthetic),
              ranked=[dict(x, status="trained", compile_seconds=0.0, train_seconds=1.0, eval_seconds=0.0)
                      for x in ranked])


def test_a_library_module_fits_only_tasks_on_the_data_sets_it_was_trained_on():
  first = _record(1, ["mnist"], [dict(program="compose(nn_1, nn_2)", named="compose(nn_s_1, nn_s_2)",
                                      fresh_types={"nn_1": MLP, "nn_2": CNN}, val=0.1, test=0.1, rank=1)])
  search = [dict(program="compose(nn_1, nn_2)", named="compose(nn_s_3, nn_s_4)",
                 fresh_types={"nn_1": MLP, "nn_2": CNN}, val=1.0, test=1.0, rank=1),
            dict(program="compose(nn_1, lib.nn_s_2)", fresh_types={"nn_1": MLP}, val=2.0, test=1.2, rank=2)]
  rows = replay_run([first, _record(2, ["mnist"], search)], "run")
  assert len(rows) == 1 and rows[0]["task"] == "run 2 t2 @ 0.02"
  assert rows[0]["skipped"] == 1 and rows[0]["test_ratio"] == pytest.approx(1.2)
  # Other data sets (toys), or the same data set rendered synthetic: no library module fits, no row.
  assert replay_run([first, _record(2, ["smallnorb"], search)]) == []
  assert replay_run([first, _record(2, ["mnist"], search, synthetic=True)]) == []


def test_a_root_that_is_no_folder_or_holds_no_search_stops_with_its_path(tmp_path):
  from benchmarks.studies.fit_prior_replay import main

  with pytest.raises(SystemExit, match="no such folder"):
    main([str(tmp_path / "missing")])
  with pytest.raises(SystemExit, match=f"{tmp_path}: no HOUDINI top-down search"):
    main([str(tmp_path)])
