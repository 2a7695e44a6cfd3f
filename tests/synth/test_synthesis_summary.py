"""What a synthesis says of itself: a candidate budget it could not spend (with the size of the space), its
counts in words, and the metric its scores are in."""

import logging

import numpy as np
import pytest

import hx

TINY = hx.ModuleConfig(mlp_hidden=8)


def _task(kind: str) -> hx.Task:
  rng = np.random.default_rng(0)

  def split(n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return x, ((x[:, 0] > 0).astype(int) if kind == "bool" else x[:, :1] * 2.0)
  return hx.Task.from_arrays(f"vec_{kind}", f"Tensor<real>[5] -> Tensor<{kind}>[1]", split(60), split(20),
                             split(20), training={"epochs": 1, "batch_size": 20})


def _config(candidates: int) -> hx.SynthesisConfig:
  return hx.SynthesisConfig(budget=hx.Budget(candidates=candidates), module_config=TINY)


@pytest.fixture(scope="module")
def short():
  # The space of Tensor<real>[5] -> Tensor<bool>[1] over an empty library holds one program, a single MLP.
  task = _task("bool")
  handler = _Lines()
  logging.getLogger("absl").addHandler(handler)
  try:
    result = hx.synthesize(task, config=_config(2))
  finally:
    logging.getLogger("absl").removeHandler(handler)
  return result, handler.lines


class _Lines(logging.Handler):
  def __init__(self):
    super().__init__(logging.WARNING)
    self.lines = []

  def emit(self, record):
    self.lines.append(record.getMessage())


def test_a_budget_the_space_cannot_fill_is_stated_with_the_spaces_size(short):
  result, warned = short
  assert result.candidates_trained == 1
  expected = ("vec_bool: Budget(candidates=2) asked for 2 candidates, 1 trained: the search space holds "
              "only 1 program of type Tensor<real>[5] -> Tensor<bool>[1]")
  assert result.shortfall.startswith(expected), result.shortfall
  assert [line for line in warned if line.startswith(expected)], warned
  assert expected in str(result)


def test_a_spent_budget_says_nothing():
  result = hx.synthesize(_task("bool"), config=_config(1))
  assert result.shortfall is None and "asked for" not in str(result)


def test_the_summary_counts_in_words_and_names_its_metric(short):
  result, _ = short
  assert "1 candidate in " in repr(result) and "1 candidates" not in repr(result)
  assert "classification error (%), lower is better" in repr(result)
  regression = hx.synthesize(_task("real"), config=_config(1))
  assert regression.metric == "rmse" and "scores: RMSE, lower is better" in repr(regression)


def test_the_winners_program_reads_as_the_ranking_and_the_library_name_it(short):
  result, _ = short
  best = result.best
  # The winner's functions are the library's new entries; its program as shown, its line in the ranking
  # and the summary all call them so.
  assert str(best.display) == "nn_vec_bool_1" == str(best.named)
  assert set(best.display_types) == {"nn_vec_bool_1"} and "nn_vec_bool_1" in result.library
  assert str(best).startswith("  1. nn_vec_bool_1 ") and "best nn_vec_bool_1" in repr(result)
  # The program as the search built it keeps the search's own names (a run's records hold them).
  assert str(best.program) == "nn_1" and list(best.fresh_types) == ["nn_1"]
  assert best.fresh_types["nn_1"] == best.display_types["nn_vec_bool_1"]
