"""A write the system refuses (a full disk, a read-only directory, a permission refused) in each kind of
file hx writes (record, settings, checkpoint, library, report, lock file) is one error that names the file
and says that the same command resumes, and leaves the file as it was: never a half-written one."""

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from hx import atomic
from hx.atomic import WriteFailed, hold_directory, write_atomically, write_directory_atomically, write_text
from hx.compile.checkpoint import load_checkpoint, save_checkpoint
from hx.compile.tuning import TuneConfig, tune
from hx.synth.jsonfiles import write_json
from hx.synth.library import Library, LibraryError
from hx.synth.run_directory import open_settings
from tests.compile.test_tune import MSE, Linear, _regression
from tests.synth.test_library import _entry

RESUMES = "then run the same command again to resume"


def _refuse(monkeypatch, module, name, code):
  """Makes `module.name` (os.fsync, os.replace, tempfile.mkstemp, ...) raise OSError(code) from now on."""
  def refused(*args, **kwargs):
    raise OSError(code, os.strerror(code))
  monkeypatch.setattr(module, name, refused)


def _one_line(err, path, *parts):
  text = str(err)
  assert "\n" not in text and str(path) in text and RESUMES in text and all(p in text for p in parts), text


def _only(directory, *names):
  """Nothing but `names` in `directory`: no temporary left behind."""
  assert sorted(os.listdir(directory)) == sorted(names)


@pytest.mark.parametrize("where, code, words", [
    ("fsync", errno.ENOSPC, "No space left on device (ENOSPC); nothing was left half-written: free some"),
    ("replace", errno.EROFS, "Read-only file system (EROFS); nothing was left half-written: make it"),
    ("mkstemp", errno.EACCES, "Permission denied (EACCES)"),
])
def test_a_refused_file_write_names_the_file_and_leaves_the_old_one(tmp_path, monkeypatch, where, code,
                                                                    words):
  path = tmp_path / "a.json"
  write_atomically(path, lambda f: f.write("old"), text=True)
  module = {"fsync": os, "replace": os, "mkstemp": atomic.tempfile}[where]
  _refuse(monkeypatch, module, where, code)
  with pytest.raises(WriteFailed) as err:
    write_atomically(path, lambda f: f.write("new and longer"), text=True)
  monkeypatch.undo()
  _one_line(err.value, path, words)
  assert err.value.errno == code and err.value.filename == str(path) and isinstance(err.value, OSError)
  assert path.read_text() == "old"
  _only(tmp_path, "a.json")


def test_a_refused_directory_write_names_the_directory_and_leaves_the_old_one(tmp_path, monkeypatch):
  path = tmp_path / "d"
  write_directory_atomically(path, lambda tmp: (tmp / "x").write_text("old"))
  _refuse(monkeypatch, os, "fsync", errno.ENOSPC)
  with pytest.raises(WriteFailed) as err:
    write_directory_atomically(path, lambda tmp: atomic.write_new_file(tmp / "x", b"new"))
  monkeypatch.undo()
  _one_line(err.value, path, "No space left on device")
  assert (path / "x").read_text() == "old"
  _only(tmp_path, "d")


def test_a_record_or_kept_outcome_on_a_full_disk(tmp_path, monkeypatch):
  path = tmp_path / "records" / "01_t" / "fraction_1.json"
  write_json(path, {"old": 1})
  _refuse(monkeypatch, os, "fsync", errno.ENOSPC)
  with pytest.raises(WriteFailed) as err:
    write_json(path, {"new": 2})
  monkeypatch.undo()
  _one_line(err.value, path, "No space left on device")
  assert json.loads(path.read_text()) == {"old": 1}
  _only(path.parent, "fraction_1.json")


def test_a_settings_file_in_a_read_only_directory(tmp_path, monkeypatch):
  _refuse(monkeypatch, os, "replace", errno.EROFS)
  with pytest.raises(WriteFailed) as err:
    open_settings(tmp_path / "run", {"sequence": "cs1"})
  monkeypatch.undo()
  _one_line(err.value, tmp_path / "run" / "settings.json", "Read-only file system")
  _only(tmp_path / "run")  # and a later run starts it as new
  assert open_settings(tmp_path / "run", {"sequence": "cs1"}) is not None


def test_a_checkpoint_on_a_full_disk_leaves_the_previous_one(tmp_path, monkeypatch):
  data, model = _regression(), Linear(4, 1)
  config = TuneConfig(learning_rate=0.05, batch_size=32, epochs=5)
  one = tune(model, model.frozen(), data, MSE, config, until=1).state
  path = tmp_path / "run.npz"
  save_checkpoint(path, "k", one)
  two = tune(model, model.frozen(), data, MSE, config, resume=one, until=2).state
  _refuse(monkeypatch, os, "fsync", errno.ENOSPC)
  with pytest.raises(WriteFailed) as err:
    save_checkpoint(path, "k", two)
  monkeypatch.undo()
  _one_line(err.value, path, "No space left on device")
  _only(tmp_path, "run.npz")
  kept = load_checkpoint(path, "k", model, config)
  assert kept.epoch == 1
  assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(kept.params),
                                                  jax.tree.leaves(jax.device_get(one.params))))


def test_a_library_on_a_full_disk_leaves_the_previous_one(tmp_path, monkeypatch):
  path = tmp_path / "libraries" / "after_01"
  Library().save(path)
  _refuse(monkeypatch, os, "fsync", errno.ENOSPC)
  with pytest.raises(LibraryError) as err:
    Library((_entry(),), (("t", 1),)).save(path)
  monkeypatch.undo()
  _one_line(err.value, path, "cannot save library to", "No space left on device (ENOSPC)")
  assert Library.load(path) == Library()
  _only(path.parent, "after_01")


def test_a_report_on_a_full_disk_leaves_the_previous_one(tmp_path, monkeypatch):
  path = tmp_path / "report.md"
  write_text(path, "# old")
  _refuse(monkeypatch, os, "fsync", errno.ENOSPC)
  with pytest.raises(WriteFailed) as err:
    write_text(path, "# new")
  monkeypatch.undo()
  _one_line(err.value, path, "No space left on device")
  assert path.read_text() == "# old"


def test_the_report_and_its_plots_are_written_atomically():
  """build_report and the stream's metrics write through hx.atomic (no file of theirs written in place)."""
  import inspect

  from hx.evaluation import report, stream_plots, stream_report

  for module in (report, stream_plots, stream_report):
    source = inspect.getsource(module)
    assert ".write_text(" not in source and "savefig(path" not in source and "savefig(paths" not in source


def test_a_run_directory_that_cannot_be_held_is_one_line(tmp_path, monkeypatch):
  real = open

  def refused(path, *args, **kwargs):
    if str(path).endswith(atomic.LOCK_FILE):
      raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    return real(path, *args, **kwargs)
  monkeypatch.setattr("builtins.open", refused)
  with pytest.raises(WriteFailed) as err, hold_directory(tmp_path / "run"):
    pass
  monkeypatch.undo()
  _one_line(err.value, tmp_path / "run" / atomic.LOCK_FILE, "Read-only file system")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory regardless")
def test_a_truly_read_only_directory(tmp_path):
  path = tmp_path / "ro" / "a.json"
  write_json(path, {"old": 1})
  os.chmod(path.parent, 0o555)
  try:
    with pytest.raises(WriteFailed) as err:
      write_json(path, {"new": 1})
  finally:
    os.chmod(path.parent, 0o755)
  _one_line(err.value, path, "make it writable")
  assert json.loads(path.read_text()) == {"old": 1}


# A binary run with os.fsync refusing every write (ENOSPC): what a full disk does to it.
FULL_DISK = """
import errno, os, runpy, sys

def full(fd):
  raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

os.fsync = full
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""

REPRODUCTION = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction" / "cs2"


@pytest.mark.parametrize("binary, written", [("hx.bin.report", "plots/task_01.png"),
                                             ("hx.bin.figures", "figures/cs2_error_by_fraction.png")])
@pytest.mark.slow
def test_the_binaries_on_a_full_disk_are_one_line_naming_the_file(tmp_path, binary, written):
  if not REPRODUCTION.is_dir():
    pytest.skip(f"{REPRODUCTION} is not in this checkout")
  root = tmp_path / "cs2"
  shutil.copytree(REPRODUCTION, root, ignore=shutil.ignore_patterns("plots", "*.md"))
  out = subprocess.run([sys.executable, "-c", FULL_DISK, binary, str(root)], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith(f"error: cannot write {root / written}: No space left on device (ENOSPC)"), line
  assert RESUMES in line and not (root / written).exists()
  assert not [p for p in root.rglob("*") if atomic.TEMPORARY in p.name]
