"""`--help` of the console scripts (hx-run, hx-cs1 ...): the binary's docstring and its flags, as
`python -m hx.bin.run --help` prints them, not absl's bare "Try --helpfull"."""

import subprocess
import sys

import pytest

MAIN_FLAGS = ("--sequence", "--sequence_file", "--preset", "--methods", "--fractions", "--seeds",
              "--tasks", "--candidates", "--epochs", "--output_dir", "--time_budget", "--executor",
              "--schedule", "--mnist")


def _help(code: str) -> str:
  # `python -c` has a __main__ without a docstring or flags of its own, as the script pip writes does.
  out = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=300)
  assert "Traceback" not in out.stderr, out.stderr  # absl's --help exits with status 1
  return out.stdout


@pytest.mark.parametrize("entry", ["console", pytest.param("cs1", marks=pytest.mark.slow)])
def test_a_console_scripts_help_lists_the_main_flags(entry):
  text = _help(f"from hx.bin.run import {entry}; {entry}()")
  assert text.startswith("Runs one of the paper's task sequences"), text[:200]
  listed = {line.split(":")[0].strip().replace("[no]", "") for line in text.splitlines()
            if line.startswith("  --")}
  assert set(MAIN_FLAGS) <= listed, sorted(set(MAIN_FLAGS) - listed)
  assert "--verbosity" not in listed  # absl's own flags stay under --helpfull
