"""`benchmarks/on_gpu.sh reproduce`: bad settings are one line and exit 1, before anything is copied or
trained (the stage's settings checks need no GPU; its run is checked by hand on a lent machine and, on
the CPU, by the round trip RESULTS.md names)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stage(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
  base = {k: v for k, v in os.environ.items() if not k.startswith("REPRODUCE_") and k != "MNIST"}
  # python3 is the interpreter running the tests (the stage calls python3).
  base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
  return subprocess.run(["bash", str(ROOT / "benchmarks" / "on_gpu.sh"), "reproduce"], capture_output=True,
                        text=True, env={**base, "OUT": str(tmp_path / "out"), **env}, timeout=120)


@pytest.mark.parametrize("env, message", [
    ({}, "reproduce: REPRODUCE_SEQUENCES must name the sequences (e.g. gs1,gs2)"),
    ({"REPRODUCE_SEQUENCES": "gs1", "REPRODUCE_DIR": "/nonexistent/reproduction"},
     "reproduce: REPRODUCE_DIR /nonexistent/reproduction is not a directory"),
    ({"REPRODUCE_SEQUENCES": "gs1", "MNIST": "/nonexistent/mnist.pkl.gz"},
     "reproduce: MNIST must name the full MNIST pickle (got '/nonexistent/mnist.pkl.gz')"),
])
def test_bad_settings_are_one_line_and_exit_1(tmp_path, env, message):
  out = _stage(tmp_path, **env)
  assert out.returncode == 1
  assert out.stderr.strip().splitlines() == [message]
  assert not (tmp_path / "out" / "reproduce.log").exists()  # nothing ran


def test_a_refused_reproduce_run_is_exit_1_and_brings_nothing_back(tmp_path):
  mnist = tmp_path / "mnist.pkl.gz"
  mnist.write_bytes(b"")  # reproduce.py refuses the sequence name before reading it
  out = _stage(tmp_path, REPRODUCE_SEQUENCES="gs9", REPRODUCE_DIR=str(tmp_path), MNIST=str(mnist))
  assert out.returncode == 1
  assert "reproduce: reproduce.py failed (exit" in out.stderr
  assert not (tmp_path / "out" / "reproduction.tgz").exists()
