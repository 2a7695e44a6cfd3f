"""Test-wide settings: hypothesis without time deadlines, so a slow CI machine does not turn into flaky
failures (speed is measured in benchmarks/, not asserted in tests); and, under pytest-xdist (`-n N`),
JAX processes that share a GPU; and a registry of user modules that each test leaves as it found it."""

import os

import pytest
from hypothesis import HealthCheck, settings

if "PYTEST_XDIST_WORKER" in os.environ:
  # Each JAX process takes 75% of a GPU's memory at start by default: a second worker would find too
  # little. Set before any test starts a backend; no effect on the CPU.
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

settings.register_profile("hx", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hx")


@pytest.fixture(autouse=True)
def _forget_modules_registered_by_a_test():
  """A module registered in one test (the guide's, say) would stay in the process's registry for every
  later test in the same worker: one that registers the same name otherwise, or sends its context to a
  worker that cannot import the first one's definition, would fail for a reason not its own."""
  from hx.compile.modules import registered_modules, unregister_module
  before = set(registered_modules())
  yield
  for name in set(registered_modules()) - before:
    unregister_module(name)
