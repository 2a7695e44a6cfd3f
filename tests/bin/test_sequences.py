import subprocess
import sys


def _run(*args):
  return subprocess.run([sys.executable, "-m", "hx.bin.sequences", *args], capture_output=True, text=True,
                        timeout=300)


def test_lists_every_sequence_with_types():
  out = _run()
  assert out.returncode == 0, out.stderr
  for name in ("CS1", "CS2", "CS3", "SS", "GS1", "GS2", "LS"):
    assert f"\n{name} (seed 0" in "\n" + out.stdout
  assert "shortest_path_street : Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>" in out.stdout
  assert "gtsrb-synthetic (a rendered stand-in, not GTSRB)" in out.stdout


def test_builds_a_sequence_on_the_default_data():
  out = _run("--sequence=cs1", "--seed=1", "--build")
  assert out.returncode == 0, out.stderr
  assert "recognize_digit(3)" in out.stdout and "train/val/test 6000/2100/2100" in out.stdout
  assert "from mnist-5k" in out.stdout


def test_a_missing_data_set_is_a_clear_error():
  out = _run("--sequence=ss", "--build", "--mnist=/nonexistent/mnist")
  assert out.returncode == 1
  assert "MNIST" in out.stderr and "/nonexistent/mnist" in out.stderr and "--mnist" in out.stderr
  assert "Traceback" not in out.stderr


def test_a_negative_seed_or_a_stray_argument_is_one_line_with_status_1():
  for args, message in ((("--seed=-1",), "error: --seed must be >= 0, got -1"),
                        (("cs1",), "error: unexpected arguments cs1 (flags take the form --name=value)")):
    out = _run(*args)
    assert out.returncode == 1 and out.stderr.strip().splitlines() == [message]
