"""Test-wide settings: hypothesis without time deadlines, so a slow CI machine does not turn into flaky
failures (speed is measured in benchmarks/, not asserted in tests); and, under pytest-xdist (`-n N`),
JAX processes that share a GPU."""

import os

from hypothesis import HealthCheck, settings

if "PYTEST_XDIST_WORKER" in os.environ:
  # Each JAX process takes 75% of a GPU's memory at start by default: a second worker would find too
  # little. Set before any test starts a backend; no effect on the CPU.
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

settings.register_profile("hx", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hx")
