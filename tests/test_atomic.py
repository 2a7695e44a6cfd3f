"""hx.atomic: a file or directory is the old one or the new one, and what a killed write left goes."""

import os

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
