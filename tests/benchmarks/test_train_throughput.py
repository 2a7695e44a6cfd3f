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


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["1", "0", "auto"])
def test_the_step_through_hx_kernels_is_counted_and_timed_through_xla_too(monkeypatch, kernels):
  """At the paper's module sizes the CNN trains through hx's CPU kernels, whose arithmetic XLA does not
  count: the run counts the same step compiled through XLA's kernels and times it beside, in each round.
  Under the default (auto) it prints each block's path with both timings."""
  from hx.compile import conv_pool
  from hx.compile.executables import clear_tune_caches

  if not conv_pool.load_kernels():
    pytest.skip("hx's CPU kernels cannot be built here")
  monkeypatch.setenv("HX_COMPILATION_CACHE", "0")
  monkeypatch.setenv(conv_pool.ENABLE_ENV, kernels)
  clear_tune_caches()  # HX_CPU_KERNELS is read when a step is traced: none of another case's steps
  out = main(["--epochs", "1", "--train_lists", "300", "--val_lists", "150", "--threads", "0",
              "--val_repeats", "1"])
  assert os.environ[conv_pool.ENABLE_ENV] == kernels  # the run put the setting back
  flops = out["train_step_gflop (XLA cost_analysis, the step through XLA's kernels)"]
  assert out["kernel_march"] == "native" and out["cpu_isa"]
  if kernels == "auto":
    paths = out["cnn_block_paths"]
    assert set(paths) == {"28x28x1-5x5x1x32-w", "12x12x32-5x5x32x64-wx"}
    for p in paths.values():
      assert p["path"] == ("hx's kernels" if p["kernels_ms"] < p["xla_ms"] else "XLA's")
    kernels = "1" if any(p["path"] == "hx's kernels" for p in paths.values()) else "0"
  else:
    forced = 'on' if kernels == '1' else 'off'
    assert out["cnn_block_paths"] == f"forced by HX_CPU_KERNELS ({forced}): not timed"
  if kernels == "1":
    assert out["cpu_kernels"] == "hx (hx.compile.conv_pool)"
    assert len(out["xla_kernels_epoch_train_s (HX_CPU_KERNELS=0, each round)"]) == 1
    assert out["xla_kernels_sec_per_epoch"] > 0 and out["ratio_xla_kernels (s / s with hx's kernels)"] > 0
  else:
    assert out["cpu_kernels"] == "XLA's" and "xla_kernels_sec_per_epoch" not in out
  # The paper's step of 150 lists of up to 5 images: about 16 GFLOP either way (XLA's count).
  assert 14 < flops < 18
