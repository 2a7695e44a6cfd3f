"""hx.atomic: a file or directory is the old one or the new one, and what a killed write left goes."""

import os
from pathlib import Path

import pytest

from hx.atomic import write_atomically, write_directory_atomically


def test_a_file_is_replaced_whole_and_a_failed_write_leaves_the_old_one(tmp_path):
  path = tmp_path / "sub" / "a.json"
  write_atomically(path, lambda f: f.write("old"), text=True)

  def half(f):
    f.write(b"ne")
    raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    write_atomically(path, half)
  assert path.read_text() == "old" and os.listdir(path.parent) == ["a.json"]
  (path.parent / ".a.json.tmp-k1ll3d").write_bytes(b"what a killed write left")
  write_atomically(path, lambda f: f.write(b"new"))
  assert path.read_text() == "new" and os.listdir(path.parent) == ["a.json"]


def test_a_directory_is_replaced_whole_and_a_failed_fill_leaves_the_old_one(tmp_path):
  path = tmp_path / "d"
  write_directory_atomically(path, lambda tmp: (tmp / "x").write_text("old"))

  def fails(tmp):
    (tmp / "x").write_text("new")
    raise OSError("disk full")

  with pytest.raises(OSError, match="disk full"):
    write_directory_atomically(path, fails)
  assert (path / "x").read_text() == "old" and os.listdir(tmp_path) == ["d"]
  (tmp_path / ".d.tmp-k1ll3d").mkdir()
  (tmp_path / ".d.tmp-k1ll3d" / "x").write_text("half")
  (tmp_path / ".other.tmp-k1ll3d").mkdir()  # another directory's temporary is not this write's to remove
  write_directory_atomically(path, lambda tmp: (tmp / "y").write_text("new"))
  assert os.listdir(path) == ["y"] and sorted(os.listdir(tmp_path)) == [".other.tmp-k1ll3d", "d"]


def _holder(directory, seconds: float = 60.0):
  """A process that holds `directory` until killed (or `seconds`); returns once it holds it."""
  import subprocess
  import sys
  import time

  code = ("import sys, time\nfrom hx.atomic import hold_directory\nwith hold_directory(sys.argv[1]):\n"
          "  print('held', flush=True)\n  time.sleep(float(sys.argv[2]))\n")
  proc = subprocess.Popen([sys.executable, "-c", code, str(directory), str(seconds)], stdout=subprocess.PIPE,
                          text=True)
  assert proc.stdout.readline().strip() == "held"
  time.sleep(0.05)
  return proc


def test_a_directory_held_by_another_process_is_refused_and_free_once_it_ends(tmp_path):
  from hx.atomic import DirectoryInUse, hold_directory

  proc = _holder(tmp_path / "run")
  try:
    busy = rf"run is being written by another hx run \(process {proc.pid}\)"
    with pytest.raises(DirectoryInUse, match=busy):
      with hold_directory(tmp_path / "run"):
        pass
  finally:
    proc.kill()
    proc.wait()
  with hold_directory(tmp_path / "run"):  # killed: the system released its lock
    pass
  with hold_directory(tmp_path / "run"):  # and a block that ended released this one
    pass


@pytest.mark.slow
def test_a_second_evaluation_on_a_held_directory_is_one_line(tmp_path):
  import subprocess
  import sys

  proc = _holder(tmp_path / "out")
  try:
    out = subprocess.run([sys.executable, "-m", "hx.bin.run", "--sequence=cs1", "--tasks=1",
                          "--methods=standalone", f"--output_dir={tmp_path / 'out'}"], capture_output=True,
                         text=True, timeout=300)
  finally:
    proc.kill()
    proc.wait()
  assert out.returncode == 1
  (line,) = out.stderr.strip().splitlines()
  assert "is being written by another hx run" in line and "Traceback" not in out.stderr


def test_an_evaluation_refused_on_a_held_directory_writes_nothing_there(tmp_path):
  """More instantiations of a run rewrite its settings.json (`check_directory`): not from a process the
  lock refuses."""
  from hx.atomic import DirectoryInUse
  from hx.evaluation import EvalConfig
  from hx.evaluation.runner import check_directory, run

  check_directory(EvalConfig.make("cs1", seeds=(0,)), tmp_path / "out")
  before = (tmp_path / "out" / "settings.json").read_bytes()
  proc = _holder(tmp_path / "out")
  try:
    with pytest.raises(DirectoryInUse, match=f"process {proc.pid}"):
      run(EvalConfig.make("cs1", seeds=(0, 1)), tmp_path / "out")
  finally:
    proc.kill()
    proc.wait()
  assert (tmp_path / "out" / "settings.json").read_bytes() == before
  assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".hx-lock", "settings.json"]


def test_a_sequence_refused_on_a_held_directory_writes_nothing_there(tmp_path):
  import numpy as np

  import hx
  from hx.atomic import DirectoryInUse

  rng = np.random.default_rng(0)
  split = lambda n: (rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 1)))  # noqa: E731
  task = hx.Task.from_arrays("v", "Tensor<real>[3] -> Tensor<real>[1]", split(8), split(4), split(4))
  proc = _holder(tmp_path / "seq")
  try:
    with pytest.raises(DirectoryInUse, match=f"process {proc.pid}"):
      hx.run_sequence(hx.Sequence.of("mine", [task]), tmp_path / "seq",
                      hx.SynthesisConfig(budget=hx.Budget(candidates=1)))
  finally:
    proc.kill()
    proc.wait()
  assert [p.name for p in (tmp_path / "seq").iterdir()] == [".hx-lock"]


@pytest.mark.parametrize("script, args", [
    ("stream.py", ["--length=2", "--output_dir={OUT}"]),
    ("stream.py", ["--length=2", "--output_dir={OUT}", "--metrics_only"]),
    ("reproduce.py", ["--sequences=cs1", "--seeds=0", "--fractions=0.02", "--methods=standalone",
                      "--output_dir={OUT}"]),
])
@pytest.mark.slow
def test_the_benchmarks_refuse_a_held_directory_in_one_line(tmp_path, script, args):
  import subprocess
  import sys

  root = Path(__file__).resolve().parent.parent
  out = tmp_path / "out"
  held = out / "cs1" if script == "reproduce.py" else out
  proc = _holder(held)
  if "--metrics_only" in args:  # a run's directory (its settings are not read before the lock)
    (out / "settings.json").write_text("{}")
  try:
    done = subprocess.run([sys.executable, str(root / "benchmarks" / script),
                           *[a.replace("{OUT}", str(out)) for a in args]], capture_output=True, text=True,
                          timeout=300, cwd=root)
  finally:
    proc.kill()
    proc.wait()
  assert done.returncode == 1, done.stderr[-2000:]
  assert "Traceback" not in done.stderr, done.stderr[-2000:]
  (line,) = [x for x in done.stderr.strip().splitlines() if x.startswith("error: ")]
  assert f"is being written by another hx run (process {proc.pid})" in line
  assert sorted(p.name for p in held.iterdir()) == sorted([".hx-lock"] + ["settings.json"] * ("--metrics_only"
                                                                                              in args))
