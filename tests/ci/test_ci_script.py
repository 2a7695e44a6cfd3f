"""`.ci/pytest`, the test step of `.ci/run`: it fails when pytest collects no test (BUILD.md)."""

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "pytest"


def _run(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_no_collected_test_fails():
  out = _run("tests/api/test_public_api.py", "-k", "no_test_has_this_name")
  assert out.returncode == 5, out.stdout + out.stderr
  assert "collected no test" in out.stderr


@pytest.mark.slow
def test_passing_tests_pass_and_failures_fail(tmp_path):
  assert _run("tests/api/test_public_api.py", "-k", "unknown_attribute").returncode == 0
  failing = tmp_path / "test_failing.py"
  failing.write_text("def test_fails():\n  assert 1 == 2\n")
  assert _run(str(failing)).returncode == 1


def test_ci_run_hands_the_status_of_the_test_step_on():
  text = (ROOT / ".ci" / "run").read_text()
  assert text.rstrip().splitlines()[-1] == "exec .ci/pytest"
