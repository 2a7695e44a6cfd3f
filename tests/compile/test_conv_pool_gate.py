"""The switch that makes CI fail, not skip, when hx's CPU kernels do not build (tests/compile/kernel_gate.py).

These tests need no kernels: they run wherever the others skip.
"""

import os
import pathlib
import subprocess
import sys

import pytest

from tests.compile import kernel_gate

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _decide(**changes):
  given = {"enabled": True, "backend": "cpu", "compiler": "g++", "load_error": None, "required": True}
  return kernel_gate.decide(**{**given, **changes})


def test_built_kernels_run_their_tests_required_or_not():
  assert _decide() == ("run", "")
  assert _decide(required=False) == ("run", "")


def test_kernels_that_do_not_build_fail_where_required_and_a_compiler_exists():
  action, why = _decide(load_error="g++ failed (1) on conv_pool.cc: error: ...")
  assert action == "fail"
  assert kernel_gate.REQUIRE_ENV in why and "(g++)" in why and "g++ failed (1)" in why
  assert _decide(compiler="ccache g++", load_error="...")[0] == "fail"


def test_they_skip_with_the_reason_where_not_required_without_a_compiler_or_not_wanted():
  action, why = _decide(load_error="no C++ compiler found", compiler=None)
  assert (action, why) == ("skip", "hx's CPU kernels cannot be built here: no C++ compiler found")
  not_built = ("skip", "hx's CPU kernels cannot be built here: g++ failed")
  assert _decide(load_error="g++ failed", required=False) == not_built
  off = ("skip", "hx's CPU kernels are off ($HX_CPU_KERNELS)")
  assert _decide(enabled=False, load_error="g++ failed") == off
  assert _decide(backend="gpu", load_error="g++ failed") == ("skip", "JAX's backend is gpu, not the CPU")


@pytest.mark.parametrize("value, wanted", [("1", True), ("yes", True), (" TRUE ", True), ("", False),
                                           ("0", False), ("off", False), ("False", False), (None, False)])
def test_the_variable_asks_for_the_kernels_unless_empty_or_off(value, wanted):
  assert kernel_gate.required({} if value is None else {kernel_gate.REQUIRE_ENV: value}) is wanted


def test_ci_sets_the_switch():
  lines = (ROOT / ".ci" / "pytest").read_text().splitlines()
  assert f"export {kernel_gate.REQUIRE_ENV}=1" in lines
  assert lines.index(f"export {kernel_gate.REQUIRE_ENV}=1") < next(
      i for i, line in enumerate(lines) if line.startswith("python -m pytest"))


def _pytest_with_a_failing_compiler(tmp_path, required):
  """The kernels' shape checks' tests, in a child pytest whose compiler fails (`false`)."""
  env = {**os.environ, "CXX": "false", "HX_KERNEL_CACHE_DIR": str(tmp_path), "HX_CPU_KERNELS": "1"}
  env.pop(kernel_gate.REQUIRE_ENV, None)
  if required:
    env[kernel_gate.REQUIRE_ENV] = "1"
  return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p",
                         "no:cacheprovider", "tests/compile/test_conv_pool_checks.py"],
                        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


@pytest.mark.slow
def test_a_failing_build_fails_the_tests_where_required_and_skips_them_otherwise(tmp_path):
  required = _pytest_with_a_failing_compiler(tmp_path, True)
  assert required.returncode not in (0, 5), required.stdout[-2000:]
  assert "did not build or load" in required.stdout and "false failed" in required.stdout
  skipped = _pytest_with_a_failing_compiler(tmp_path, False)
  assert skipped.returncode == 0, skipped.stdout[-2000:]
  assert "1 skipped" in skipped.stdout and "cannot be built here: false failed" in skipped.stdout
