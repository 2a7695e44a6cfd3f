"""`hx.run_sequence` on a sequence of a user's own tasks (`hx.Sequence.of` of `hx.Task.from_arrays`
tasks), as on the paper's: each task's training settings its own, the library grown task by task under
the sequence's name, and a run stopped after a task resumed to the records of an uninterrupted one."""

from __future__ import annotations

import numpy as np
import pytest

import hx
from tests.user_data import bright_images

TRAINING = {"epochs": 1, "batch_size": 16}


def _sequence() -> hx.Sequence:
  rng = np.random.default_rng(0)
  first = hx.Task.from_arrays("bright", "Tensor<real>[1][6][6] -> Tensor<bool>[1]", bright_images(rng, 48),
                              bright_images(rng, 16), bright_images(rng, 16), training=TRAINING)
  dark = [(x, 1 - y) for x, y in (bright_images(rng, 48), bright_images(rng, 16), bright_images(rng, 16))]
  second = hx.Task.from_arrays("dark", "Tensor<real>[1][6][6] -> Tensor<bool>[1]", *dark, training=TRAINING)
  return hx.Sequence.of("mine", [first, second])


def _winners(run) -> list[tuple[str, str, float]]:
  return [(r["task"], r["ranked"][0]["named"], r["ranked"][0]["test"]) for r in run.records]


@pytest.mark.slow
def test_run_sequence_runs_a_users_tasks_grows_the_library_and_resumes(tmp_path):
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=1))
  whole = hx.run_sequence(_sequence(), tmp_path / "whole", config)
  assert [r["task"] for r in whole.records] == ["bright", "dark"]
  assert whole.library.names and all(n.startswith("nn_mine_") for n in whole.library.names)
  assert "Array" not in repr(whole) and len(repr(whole)) < 200
  part = hx.run_sequence(_sequence(), tmp_path / "part", config, stop_after=1)
  assert [r["task"] for r in part.records] == ["bright"]
  rest = hx.run_sequence(_sequence(), tmp_path / "part", config)
  assert rest.resumed_after == 1
  assert _winners(rest) == _winners(whole)
  assert rest.library.names == whole.library.names
