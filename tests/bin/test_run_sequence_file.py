"""hx-run --sequence_file: a user's sequence from a TOML file and .npz arrays, end to end, and a malformed
file refused in one line naming the entry."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hx.data.sequence_file import save_task_arrays
from tests.bin.test_run import _refused, _run
from tests.marks import fast_first

IMAGE = "Tensor<real>[1][6][6] -> Tensor<bool>[1]"


def write(tmp_path, extra: str = "", training: str = "epochs = 1, batch_size = 16") -> str:
  rng = np.random.default_rng(0)

  def split(n):
    x = rng.normal(size=(n, 1, 6, 6)).astype(np.float32)
    return x, (x.mean(axis=(1, 2, 3)) > 0).astype(np.int64)

  save_task_arrays(tmp_path / "a.npz", IMAGE, split(48), split(16), split(16))
  path = tmp_path / "seq.toml"
  path.write_text(f'''
name = "mine"
methods = ["houdini", "standalone"]
fractions = [1.0]
seeds = [0]
candidates = 1
{extra}
[[tasks]]
name = "positive"
type = "{IMAGE}"
data = "a.npz"
training = {{ {training} }}
''')
  return str(path)


@pytest.mark.slow
def test_a_sequence_file_runs_to_its_report_and_resumes(tmp_path):
  path = write(tmp_path)
  out = _run(f"--sequence_file={path}", f"--output_dir={tmp_path / 'out'}", "--noprogress")
  assert out.returncode == 0, out.stderr
  assert "hx: MINE, preset quick; methods HOUDINI (top-down), standalone" in out.stdout
  record = tmp_path / "out" / "standalone" / "seed_0" / "records" / "01_positive" / "fraction_1.json"
  assert json.loads(record.read_text())["task"] == "positive"
  assert (tmp_path / "out" / "report.md").exists()
  again = _run(f"--sequence_file={path}", f"--output_dir={tmp_path / 'out'}", "--noprogress")
  assert again.returncode == 0 and "already holds this run, finished" in again.stdout


@pytest.mark.parametrize("extra, flags, message", fast_first(1, [
    ('strategies = "all"', (), "seq.toml: strategies: must be a list, got 'all'"),
    ("", ("--sequence=cs1",), "--sequence_file runs the file's sequence: leave out --sequence"),
    ('preset = "huge"', (), "unknown preset 'huge'"),
    ("", ("--methods=houdini,rnn",), "unknown method 'rnn'"),
    ("", ("--methods=houdini,pnn", "--fractions=2"), "training fraction 2 is outside (0, 1]"),
    ('strategies = ["random"]', (),
     "error: the sequence file's strategies: unknown strategy 'random'; the strategies are topdown, "
     "evolutionary"),
]))
def test_a_bad_sequence_file_or_flag_is_one_line(tmp_path, extra, flags, message):
  path = write(tmp_path, extra)
  _refused(_run(f"--sequence_file={path}", f"--output_dir={tmp_path / 'out'}", *flags), message)
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_missing_sequence_file_is_one_line(tmp_path):
  _refused(_run(f"--sequence_file={tmp_path / 'none.toml'}"), "none.toml does not exist")


def test_a_bad_training_setting_in_a_file_is_one_line(tmp_path):
  path = write(tmp_path, training="epoch = 1")
  _refused(_run(f"--sequence_file={path}", f"--output_dir={tmp_path / 'out'}"),
           "task 'positive': unknown training setting(s) epoch")
