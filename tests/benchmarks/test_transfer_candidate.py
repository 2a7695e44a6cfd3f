"""benchmarks/studies/transfer_candidate.py's arithmetic floor: the memoised step's operations at the
machine's matmul rate, and what that allows against the inline candidate."""

from __future__ import annotations

import math

import pytest

from benchmarks.studies.transfer_candidate import arithmetic_floor, main


def test_the_floor_is_the_step_operations_at_the_matmul_rate():
  f = arithmetic_floor(inline_flops=6e9, memo_flops=2e9, peak=200e9, steps=40, inline_sec_per_epoch=1.6)
  assert f["memo floor sec_per_epoch (its flops at the matmul rate)"] == 0.4  # 2e9 * 40 / 200e9
  assert f["best ratio sec_per_epoch (inline / memo floor)"] == 4.0
  assert f["arithmetic ratio (inline / memo step flops)"] == 3.0
  assert (f["inline_step_gflop"], f["memo_step_gflop"], f["matmul_2048_gflop_per_s"]) == (6.0, 2.0, 200.0)


@pytest.mark.slow
def test_the_benchmark_counts_both_steps_and_the_memoised_one_does_less(monkeypatch, tmp_path):
  monkeypatch.setenv("HX_COMPILATION_CACHE", "0")
  out = main(["--small", "--epochs", "1", "--train_lists", "300", "--val_lists", "150", "--threads", "0",
              "--json", str(tmp_path / "out.json")])
  inline, memo = out["inline_step_gflop"], out["memo_step_gflop"]
  # The inline step runs the frozen CNN forward on every image besides everything the memoised step runs.
  assert inline > memo > 0
  assert out["memo"]["train_loss"] == out["inline"]["train_loss"]
  steps = math.ceil(300 / 150)
  floor = memo * 1e9 * steps / (out["matmul_2048_gflop_per_s"] * 1e9)
  assert out["memo floor sec_per_epoch (its flops at the matmul rate)"] == pytest.approx(floor, abs=2e-3)
  # No run of the step is faster than its operations at the matmul rate allow.
  assert out["memo"]["sec_per_epoch"] >= out["memo floor sec_per_epoch (its flops at the matmul rate)"]
