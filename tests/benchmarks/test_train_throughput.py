"""benchmarks/train_throughput.py --convolutions: the run says which library ran XLA:CPU's convolutions, and
how hx's CNN trained under it."""

from __future__ import annotations

import os

import pytest

from benchmarks.train_throughput import main
from hx.cpu_convolutions import OWN_FLAGS, YNNPACK_FLAGS


@pytest.mark.slow
@pytest.mark.parametrize("library", ["xla", "ynnpack"])
def test_the_run_names_the_convolution_library(monkeypatch, library):
  monkeypatch.setenv("HX_COMPILATION_CACHE", "0")
  monkeypatch.setenv("XLA_FLAGS", "")  # restored after the test: the flag goes into this environment
  out = main(["--small", "--epochs", "1", "--train_lists", "300", "--val_lists", "150", "--threads", "0",
              "--val_repeats", "1", "--convolutions", library])
  assert out["cpu_convolutions"] == {"xla": "xla (one call)", "ynnpack": "ynnpack (sliced CNN)"}[library]
  assert os.environ["XLA_FLAGS"].endswith({"xla": OWN_FLAGS, "ynnpack": YNNPACK_FLAGS}[library])
  assert len(out["epoch_train_s"]) == 1 and out["sec_per_epoch"] > 0


def test_a_jaxlib_where_the_flag_was_not_checked_is_refused_before_any_work(monkeypatch):
  import hx.cpu_convolutions

  monkeypatch.setenv("XLA_FLAGS", "")
  monkeypatch.setattr(hx.cpu_convolutions, "jaxlib_has_flag", lambda: False)
  with pytest.raises(SystemExit) as e:
    main(["--small", "--convolutions", "xla"])
  assert "--convolutions" in str(e.value.code) and "0.10" in str(e.value.code)
  assert os.environ["XLA_FLAGS"] == ""  # nothing was set, nothing ran
