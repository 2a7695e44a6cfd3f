"""hx.synthesize on tasks of a user's arrays: small images get a CNN, a result prints as a summary, and a
type no module can build says why."""

from __future__ import annotations

import numpy as np
import pytest

import hx
from hx.synth.lifelong import SequenceRun


def task(side: int, n: int = 48) -> hx.Task:
  rng = np.random.default_rng(side)

  def split(k):
    x = rng.normal(0, 0.3, size=(k, 1, side, side)).astype(np.float32)
    y = rng.integers(0, 2, k)
    x[y == 1] += 1.0
    return x, y

  return hx.Task.from_arrays(f"bright{side}", f"Tensor<real>[1][{side}][{side}] -> Tensor<bool>[1]", split(n),
                             split(16), split(16), training={"epochs": 2, "batch_size": 16})


def test_an_8x8_task_trains_a_small_cnn_and_prints_a_summary():
  result = hx.synthesize(task(8), config=hx.SynthesisConfig(budget=hx.Budget(candidates=1)))
  best = result.best
  assert best.outcome.status == "trained" and 0 <= best.test_score <= 100
  cnns = [s for s in result.library.specs().values() if s.template == "cnn"]
  assert cnns and all(s["channels"] == (32,) and s["kernel"] == 5 for s in cnns)  # one 5x5 block fits 8x8
  text = repr(result)
  assert text.startswith("Frontier(bright8: topdown, 1 candidate in ") and "best nn_bright8_1" in text
  assert len(text) < 200 and "Array" not in str(result)
  assert "Array" not in repr(SequenceRun("d", (), result.library, 0))
  # Nor does any part of it a user may print or echo in a notebook: the ranks, the winner, its outcome.
  for part in (result.entries, best, best.outcome):
    shown = repr(part)
    assert "Array" not in shown and "array(" not in shown and len(shown) < 1000, shown
  assert "val_score=" in repr(best.outcome) and f"rank=1, program={best.program!r}" in repr(best)


def test_a_task_no_module_can_build_says_why():
  result = hx.synthesize(task(2), config=hx.SynthesisConfig(budget=hx.Budget(candidates=2)))
  assert result.entries == () and "no candidate trained" in repr(result)
  why = r"no candidate of bright2 trained successfully \(the search proposed no program: .*image " \
        r"Tensor<real>\[1\]\[2\]\[2\] too small"
  with pytest.raises(ValueError, match=why):
    _ = result.best


def _scores(result) -> list[tuple[str, float, float]]:
  return [(str(r.program), r.val_score, r.test_score) for r in result.entries]


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_a_user_task_trains_in_other_processes_as_in_this_one(executor):
  if executor == "ray":
    pytest.importorskip("ray", reason="Ray is not installed (the 'ray' extra)")
  t = task(8)
  local = hx.synthesize(t, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2)))
  settings = hx.synth.Processes() if executor == "processes" else hx.synth.Ray()
  elsewhere = hx.synthesize(t, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2)), executor=settings)
  assert _scores(elsewhere) == _scores(local)


def test_a_user_task_resumes_from_its_checkpoints(tmp_path):
  t = task(8)
  first = hx.synthesize(t, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2)), checkpoint_dir=tmp_path)
  assert len(list(tmp_path.glob("*.npz"))) == 2
  again = hx.synthesize(t, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2)), checkpoint_dir=tmp_path)
  assert _scores(again) == _scores(first)
  # Restored, not trained again: each candidate's saved training time comes back to the last digit.
  assert [r.outcome.train_seconds for r in again.entries] == [r.outcome.train_seconds for r in first.entries]
