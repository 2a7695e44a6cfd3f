"""benchmarks/train_throughput.py --xla_convolutions: hx's CNN trains unsliced under XLA's own convolutions,
and the run says which library ran them."""

from __future__ import annotations

import os

import pytest

from benchmarks.train_throughput import main
from hx.cpu_convolutions import EIGEN_FLAGS


@pytest.mark.slow
@pytest.mark.parametrize("xla", [False, True])
def test_the_run_names_the_convolution_library(monkeypatch, xla):
  monkeypatch.setenv("HX_COMPILATION_CACHE", "0")
  monkeypatch.setenv("XLA_FLAGS", "")  # restored after the test: the flag goes into this environment
  out = main(["--small", "--epochs", "1", "--train_lists", "300", "--val_lists", "150", "--threads", "0",
              "--val_repeats", "1"] + (["--xla_convolutions"] if xla else []))
  assert out["cpu_convolutions"] == ("xla (one call)" if xla else "ynnpack (sliced CNN)")
  assert (EIGEN_FLAGS in os.environ["XLA_FLAGS"]) is xla
  assert len(out["epoch_train_s"]) == 1 and out["sec_per_epoch"] > 0
