"""What was learned, used (`hx.synth.predict`): a synthesis's winner, and a run directory's programs loaded
later, applied to new arrays in `hx.Task.from_arrays`' layout; their predictions give the scores the
evaluation computed, a reloaded run predicts what the run's own library does, and inputs of the wrong
layout are refused with the layout the type needs."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import hx
from hx.compile import ModuleConfig, compile_program
from hx.lang.program import as_library, fresh_names
from hx.lang.types import parse_type
from hx.synth.predict import Predictor, predictor
from hx.synth.saved_run import load_run
from tests.user_data import bright_images, bright_lists

SMALL = ModuleConfig(mlp_hidden=8, cnn_channels=(4, 8), lstm_hidden=8)
IMAGE_TASK = "Tensor<real>[1][6][6] -> Tensor<bool>[1]"
LIST_TASK = "List<Tensor<real>[1][6][6]> -> Tensor<real>[1]"


def _error(p: np.ndarray, labels: np.ndarray) -> float:
  """Classification error (%) of probabilities p (n, 1) against 0/1 labels, as hx scores it."""
  return 100.0 * float(np.mean((p[:, 0] > 0.5) != (np.asarray(labels).reshape(-1) > 0.5)))


def _rmse(p: np.ndarray, targets: np.ndarray) -> float:
  return float(np.sqrt(np.mean((p.reshape(-1) - np.asarray(targets, np.float64).reshape(-1)) ** 2)))


def _tasks(seed: int = 0) -> tuple[hx.Task, hx.Task, dict]:
  """A recognition task and a counting task on 6x6 images, and their test arrays by task name."""
  rng = np.random.default_rng(seed)
  bright = [bright_images(rng, n) for n in (64, 32, 40)]
  lists = [bright_lists(rng, n) for n in (48, 24, 30)]
  first = hx.Task.from_arrays("bright", IMAGE_TASK, *bright, training={"epochs": 2, "batch_size": 16})
  second = hx.Task.from_arrays("count", LIST_TASK, *lists, training={"epochs": 2, "batch_size": 16})
  return first, second, {"bright": bright[2], "count": lists[2]}


def test_a_synthesis_winner_predicts_what_its_scores_were_computed_from():
  first, _, test = _tasks()
  result = hx.synthesize(first, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2),
                                                         module_config=SMALL))
  x, labels = test["bright"]
  for rank in (1, 2):
    predict = result.predictor(rank)
    assert isinstance(predict, Predictor)
    p = predict(x)
    assert p.shape == (40, 1) and p.dtype == np.float32 and np.all((p >= 0) & (p <= 1))
    assert _error(p, labels) == pytest.approx(result.entries[rank - 1].test_score, abs=1e-9)
  # Batched as one call or many, the same values; a single example too.
  small = result.predictor(1, batch_size=3)
  np.testing.assert_allclose(small(x), result.predictor()(x), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(small(x[:1]), result.predictor()(x)[:1], rtol=1e-6, atol=1e-7)
  with pytest.raises(ValueError, match="no rank 9"):
    result.predictor(9)


def test_inputs_of_the_wrong_layout_are_refused_naming_the_layout_the_type_needs():
  first, _, test = _tasks()
  result = hx.synthesize(first, config=hx.SynthesisConfig(budget=hx.Budget(candidates=1),
                                                         module_config=SMALL))
  x, _ = test["bright"]
  predict = result.predictor()
  with pytest.raises(ValueError, match=r"not \(n, 1, 6, 6\) as the type's Tensor<real>\[1\]\[6\]\[6\] needs"):
    predict(x[:, 0])
  with pytest.raises(ValueError, match=r"not \(n, 1, 6, 6\)"):
    predict(x[:, :, :5])
  with pytest.raises(ValueError, match="finite"):
    predict(np.full_like(x, np.nan))
  vector = predictor(hx.parse("nn_1"), hx.Library(), fresh_types={"nn_1": parse_type(
      "Tensor<real>[30] -> Tensor<real>[2]")}, variables=_init("nn_1", "Tensor<real>[30] -> Tensor<real>[2]"))
  assert vector(np.zeros((5, 30))).shape == (5, 2)
  with pytest.raises(ValueError, match=r"has shape \(5, 29\), not \(n, 30\)"):
    vector(np.zeros((5, 29)))


def _init(name: str, fn_type: str) -> dict:
  compiled = compile_program(hx.parse(name), {name: parse_type(fn_type)}, SMALL)
  return compiled.init(jax.random.key(0))


def test_a_list_or_graph_output_gives_each_example_its_real_elements_or_nodes():
  fn_type = "Tensor<real>[2] -> Tensor<real>[1]"
  predict = predictor(hx.parse("map_l(nn_1)"), hx.Library(), fresh_types={"nn_1": parse_type(fn_type)},
                      variables=_init("nn_1", fn_type), module_config=SMALL)
  assert str(predict.type) == "List<Tensor<real>[2]> -> List<Tensor<real>[1]>"
  lists = [np.ones((3, 2)), np.zeros((1, 2)), np.full((2, 2), 2.0)]
  out = predict(lists)
  assert [o.shape for o in out] == [(3, 1), (1, 1), (2, 1)]
  np.testing.assert_allclose(out[0], np.repeat(out[0][:1], 3, axis=0), rtol=1e-6)  # equal elements
  with pytest.raises(ValueError, match="not"):
    predict([np.ones((3, 3))])
  on_nodes = predictor(hx.parse("map_g(nn_1)"), hx.Library(), fresh_types={"nn_1": parse_type(fn_type)},
                       variables=_init("nn_1", fn_type), module_config=SMALL)
  graphs = [{"nodes": np.ones((4, 2)), "edges": [[0, 1], [1, 2], [2, 3]]},
            {"nodes": np.ones((2, 2)), "neighbours": [[1], [0]]}]
  out = on_nodes(graphs)
  assert [o.shape for o in out] == [(4, 1), (2, 1)]
  np.testing.assert_allclose(out[1], out[0][:2], rtol=1e-6)  # equal nodes, equal values


def test_a_run_loaded_later_predicts_what_the_run_scored_and_what_its_library_computes(tmp_path):
  first, second, test = _tasks()
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=3), space=hx.SearchSpace(order="cost"),
                              module_config=SMALL)
  run = hx.run_sequence(hx.Sequence.of("mine", [first, second]), tmp_path / "run", config)
  loaded = load_run(tmp_path / "run")
  assert [p.task for p in loaded.programs] == ["bright", "count"]
  assert loaded.library.names == run.library.names and loaded.module_config == SMALL
  assert "count" in str(loaded) and "lib.nn_mine_" in str(loaded.program("count").program)
  for p, rec in zip(loaded.programs, run.records):
    assert p.program == as_library(hx.parse(rec["ranked"][0]["named"])) and not fresh_names(p.program)
    x, targets = test[p.task]
    y = loaded.predictor(p.task)(x)
    score = _error(y, targets) if p.metric == "error" else _rmse(y, targets)
    assert score == pytest.approx(rec["ranked"][0]["test"], rel=1e-5, abs=1e-6)
    assert p.test == rec["ranked"][0]["test"]
    # The library the run returned, in memory, computes the very same values.
    same = predictor(p.program, run.library, module_config=SMALL)(x)
    np.testing.assert_array_equal(y, same)
  assert loaded.predictor(2)(test["count"][0]).shape == (30, 1)
  with pytest.raises(KeyError, match="no program for task 'other'"):
    loaded.predictor("other")


def test_an_evaluation_directory_loads_its_one_houdini_run_and_refuses_others(tmp_path):
  with pytest.raises(ValueError, match="holds no HOUDINI run"):
    load_run(tmp_path)
  for method in ("houdini_topdown", "houdini_evolutionary"):
    (tmp_path / method / "seed_0" / "records").mkdir(parents=True)
  with pytest.raises(ValueError, match="holds 2 HOUDINI runs; load one of them"):
    load_run(tmp_path)
  (tmp_path / "houdini_evolutionary" / "seed_0" / "records").rmdir()
  (tmp_path / "houdini_topdown" / "seed_0" / "settings.json").write_text(
      '{"settings": {"sequence": "mine"}, "started": "2026-01-01T00:00:00+00:00"}')
  with pytest.raises(ValueError, match="no library saved yet"):
    load_run(tmp_path)
