"""benchmarks/synthesis.py's module flags: `--fix_horizon` reaches FixConfig, and bad text is refused."""

from __future__ import annotations

import pytest

from benchmarks.synthesis import _fix_config
from hx.compile.fixpoint import FixConfig


def test_fix_horizon_sets_the_training_horizon_and_nothing_else():
  config = _fix_config("16,32")
  assert config == FixConfig(train_horizon=(16, 32))
  assert config.horizon() == (16, 32)
  assert _fix_config(None) is None


@pytest.mark.parametrize("text", ["16", "16,32,48", "a,b", "32,16", "0,4"])
def test_a_bad_fix_horizon_names_the_flag_and_the_text(text):
  with pytest.raises(SystemExit, match=rf"--fix_horizon '{text}': expected LO,HI"):
    _fix_config(text)
