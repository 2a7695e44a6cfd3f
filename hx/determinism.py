"""Deterministic GPU kernels: the same seed gives the same numbers, on a GPU as on a CPU.

XLA's GPU backend sums scatter-adds (the segment sums of graph kernels and of packed lists, and their
gradients) with atomic additions whose order varies from run to run, so two runs with one seed drift
apart at float32 rounding and then further: on an H100, a lifelong run resumed after its first task and
a packed graph run paused and resumed no longer gave the straight runs' numbers bit for bit
(benchmarks/notes/2026-11-23-gpu-h100.md). `--xla_gpu_deterministic_ops=true` makes XLA choose
deterministic kernels, at a cost in speed (benchmarks/RESULTS.md, "On a GPU") which hx pays by default
because synthesis ranks candidates by scores that must not depend on the run, and resuming an
interrupted run must give the run's own results.

XLA reads `XLA_FLAGS` once, when JAX first starts a backend, so `hx/__init__.py` calls
`request_deterministic_gpu_ops()` before anything of JAX runs. A user who wants the faster,
non-deterministic kernels sets `XLA_FLAGS=--xla_gpu_deterministic_ops=false` before importing hx; hx
never overrides a value the user gave. A program that started a JAX backend before importing hx keeps
the flags it started with. XLA:CPU is deterministic either way and ignores the flag.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["FLAG", "request_deterministic_gpu_ops"]

FLAG = "--xla_gpu_deterministic_ops"


def request_deterministic_gpu_ops(environ: MutableMapping[str, str] = os.environ) -> str:
  """Adds `--xla_gpu_deterministic_ops=true` to `environ["XLA_FLAGS"]` unless the flag is there already.

  Returns:
    The resulting XLA_FLAGS value.
  """
  flags = environ.get("XLA_FLAGS", "")
  if FLAG not in flags:
    flags = f"{flags} {FLAG}=true".strip()
    environ["XLA_FLAGS"] = flags
  return flags
