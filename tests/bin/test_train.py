import subprocess
import sys

import pytest

from tests.marks import fast_first


def _run(*args):
  return subprocess.run([sys.executable, "-m", "hx.bin.train", *args], capture_output=True, text=True,
                        timeout=600)


@pytest.mark.slow
def test_trains_a_paper_program_on_the_default_data():
  out = _run("--task=recognize_digit(3)", "--program=nn_a . nn_b", "--fraction=0.1", "--epochs=2")
  assert out.returncode == 0, out.stderr
  assert "nn_b: cnn Tensor<real>[1][28][28] -> Tensor<real>[1024]" in out.stdout
  assert "epoch   2" in out.stdout
  last = out.stdout.strip().splitlines()[-1]
  assert last.startswith("best epoch") and "test error" in last
  # The settings come from the paper preset, each with its source; --epochs overrides the preset's.
  assert "preset  paper: epochs 2, batch 150, Adam learning rate 0.001" in out.stdout
  assert "learning_rate: authors' code" in out.stdout
  assert "output bias from the targets' mean True" in out.stdout


@pytest.mark.parametrize("args, message", fast_first(1, [
    (("--program=compose(nn_a, map_l(nn_b)",), "parse error: line 1, column 26"),
    (("--task=count_digit(1)", "--program=compose(nn_a, map_g(nn_b))"), "type error: map_g(nn_b)"),
    (("--task=count_digit(12)",), "count_digit needs a class in 0..9"),
    (("--task=count_digit(1)", "--mnist=/nonexistent"), "set --mnist"),
    (("--preset=bogus",), "--preset=bogus: value should be one of <paper|authors|quick>"),
]))
def test_bad_input_is_a_clear_error(args, message):
  out = _run(*args)
  assert out.returncode == 1
  assert message in out.stderr
  assert "Traceback" not in out.stderr


def _one_line(out, message):
  assert out.returncode == 1, (out.stdout, out.stderr)
  assert out.stderr.strip().splitlines() == [message] and out.stdout == ""


@pytest.mark.parametrize("args, message", fast_first(1, [
    (("--fraction=0",), "error: --fraction must be in (0, 1], got 0"),
    (("--fraction=2",), "error: --fraction must be in (0, 1], got 2"),
    (("--epochs=0",), "error: --epochs must be >= 1, got 0"),
    (("--batch_size=0",), "error: --batch_size must be >= 1, got 0"),
    (("--learning_rate=-1",), "error: --learning_rate must be positive, got -1"),
    (("--fraction=0.5", "extra"), "error: unexpected arguments extra (flags take the form --name=value)"),
]))
def test_settings_once_accepted_or_a_traceback_are_one_line_before_training(args, message):
  _one_line(_run(*args), message)


@pytest.mark.slow
def test_a_checkpoint_directory_that_is_a_file_is_refused_before_training(tmp_path):
  file = tmp_path / "file"
  file.write_text("mine")
  _one_line(_run(f"--checkpoint_dir={file}"), f"error: --checkpoint_dir: {file} is a file, not a directory")
  _one_line(_run(f"--checkpoint_dir={file / 'sub'}"),
            f"error: --checkpoint_dir: cannot create {file / 'sub'}: {file} is not a directory")


@pytest.mark.slow
def test_a_checkpointed_training_resumes_and_then_gives_its_saved_result(tmp_path):
  args = ("--task=recognize_digit(3)", "--program=nn_a . nn_b", "--preset=quick", "--epochs=2",
          "--fraction=0.2", f"--checkpoint_dir={tmp_path}")
  first = _run(*args)
  assert first.returncode == 0, first.stderr
  assert "resuming" not in first.stdout and len(list(tmp_path.glob("*.npz"))) == 1
  again = _run(*args)
  assert again.returncode == 0, again.stderr
  (saved,) = tmp_path.glob("*.npz")
  assert f"resuming {saved}: finished" in again.stdout
  assert again.stdout.strip().splitlines()[-1] == first.stdout.strip().splitlines()[-1]  # the same scores
  (saved,) = tmp_path.glob("*.npz")
  saved.write_bytes(saved.read_bytes()[:-100])  # truncated: a zip without its directory
  broken = _run(*args)
  assert broken.returncode == 1 and broken.stderr.count("\n") == 1
  assert f"error: checkpoint {saved}: not a Tune checkpoint (BadZipFile: " in broken.stderr
  assert broken.stderr.strip().endswith("; delete it to start this training again")
