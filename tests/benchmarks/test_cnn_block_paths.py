"""benchmarks/studies/cnn_block_paths.py: every CNN block of the presets, and the path hx's default takes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("cnn_block_paths",
                                               ROOT / "benchmarks" / "studies" / "cnn_block_paths.py")
cnn_block_paths = importlib.util.module_from_spec(_spec)
sys.modules["cnn_block_paths"] = cnn_block_paths
_spec.loader.exec_module(cnn_block_paths)


def test_the_paper_sequences_images_are_mnist_and_colour_28x28():
  assert cnn_block_paths.image_shapes() == [(1, 28, 28), (3, 28, 28)]


def test_the_quick_presets_blocks_take_xlas_path_untimed(capsys):
  out = cnn_block_paths.main(["--presets", "quick"])
  assert [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()] == out
  assert [line["block"] for line in out] == ["28x28x1-5x5x1x8-w", "12x12x8-5x5x8x16-wx",
                                             "28x28x3-5x5x3x8-w", "12x12x8-5x5x8x16-wx"]
  assert all(not line["kernels_can_run"] and line["default"] == "XLA's path" for line in out)


def test_the_paper_presets_blocks_are_timed_and_take_the_faster_path(capsys):
  from hx.compile import conv_pool

  if not conv_pool.load_kernels():
    pytest.skip("hx's CPU kernels cannot be built here")
  out = cnn_block_paths.main(["--presets", "paper", "--rows", "2"])
  assert [line["block"] for line in out] == ["28x28x1-5x5x1x32-w", "12x12x32-5x5x32x64-wx",
                                             "28x28x3-5x5x3x32-w", "12x12x32-5x5x32x64-wx"]
  for line in out:
    assert line["kernels_can_run"] and line["kernels_ms"] > 0 and line["xla_ms"] > 0
    assert line["default"] == ("hx's kernels" if line["kernels_ms"] < line["xla_ms"] else "XLA's path")


def test_an_unknown_preset_is_a_usage_error(capsys):
  with pytest.raises(SystemExit) as err:
    cnn_block_paths.main(["--presets", "paper,huge"])
  assert err.value.code == 2 and "huge" in capsys.readouterr().err
