"""benchmarks/studies/conv_pool_parts.py: one JSON line per block, image count and gradient."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("conv_pool_parts",
                                               ROOT / "benchmarks" / "studies" / "conv_pool_parts.py")
conv_pool_parts = importlib.util.module_from_spec(_spec)
sys.modules["conv_pool_parts"] = conv_pool_parts
_spec.loader.exec_module(conv_pool_parts)


def test_every_block_is_timed_with_and_without_the_input_gradient(capsys):
  from hx.compile import conv_pool

  if not conv_pool.load_kernels():
    pytest.skip("hx's CPU kernels cannot be built here")
  out = conv_pool_parts.main(["--rows", "3", "--repeats", "1"])
  lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
  assert lines == out
  assert {(line["block"], line["input_gradient"]) for line in out} == {
    (b, g) for b in conv_pool_parts.BLOCKS for g in (True, False)}
  assert all(line["rows"] == 3 and line["xla_ms"] > 0 and line["hx_kernels_ms"] > 0 for line in out)


@pytest.mark.parametrize("argv", [["--rows", "0"], ["--rows", "a,3"], ["--repeats", "2,3"]])
def test_bad_flags_exit_with_usage_before_any_work(argv, capsys):
  with pytest.raises(SystemExit) as err:
    conv_pool_parts.main(argv)
  assert err.value.code == 2
  assert capsys.readouterr().out == ""  # nothing timed
