"""The benchmarks' fix flags (`--fix_horizon`, `--fix_tolerance` of synthesis.py and
relaxation_learning.py) reach FixConfig, and bad text is refused with the flag's name."""

from __future__ import annotations

import pytest

from benchmarks.relaxation_learning import fix_config
from hx.compile.fixpoint import FixConfig


def test_fix_flags_set_the_training_horizon_and_tolerance_and_nothing_else():
  config = fix_config("16,32")
  assert config == FixConfig(train_horizon=(16, 32))
  assert config.horizon() == (16, 32)
  assert fix_config(None, 0.05) == FixConfig(tolerance=0.05)
  assert fix_config("8,8", 0.1) == FixConfig(train_horizon=(8, 8), tolerance=0.1)
  assert fix_config() is None


@pytest.mark.parametrize("text", ["16", "16,32,48", "a,b", "32,16", "0,4"])
def test_a_bad_fix_horizon_names_the_flag_and_the_text(text):
  with pytest.raises(SystemExit, match=rf"--fix_horizon '{text}'.*expected LO,HI"):
    fix_config(text)


def test_a_negative_tolerance_is_refused():
  with pytest.raises(SystemExit, match="--fix_tolerance -1.0"):
    fix_config(None, -1.0)
