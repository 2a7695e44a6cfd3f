"""A run directory's layout version (`RECORD_VERSION`, "record_version" in every record and settings.json):
a file without one (written before hx recorded it) is read as version 1; a file of another version is
refused in one line that names the file and both versions, by the library functions and the binaries."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hx.synth.jsonfiles import RECORD_VERSION, LayoutVersionError, read_record, read_settings
from hx.synth.run_directory import SettingsMismatch, open_settings

REPRODUCTION = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction" / "cs2"


def _records(directory):
  return sorted(directory.glob("*/seed_*/records/*/fraction_*.json"))


@pytest.fixture
def evaluation(tmp_path):
  """A copy of a committed evaluation's settings and records (no plots, no reports)."""
  if not REPRODUCTION.is_dir():
    pytest.skip(f"{REPRODUCTION} is not in this checkout")
  copy = tmp_path / "cs2"
  shutil.copytree(REPRODUCTION, copy, ignore=shutil.ignore_patterns("plots", "*.md"))
  return copy


def _bump(path, version):
  value = json.loads(path.read_text())
  value["record_version"] = version
  path.write_text(json.dumps(value))


def test_a_new_settings_file_holds_the_layout_version(tmp_path):
  open_settings(tmp_path / "run", {"sequence": "cs1"})
  assert json.loads((tmp_path / "run" / "settings.json").read_text())["record_version"] == RECORD_VERSION == 1


def test_files_written_before_the_version_was_recorded_are_read_as_version_1(evaluation):
  settings = json.loads((evaluation / "settings.json").read_text())
  assert "record_version" not in settings  # committed before settings.json held it
  assert read_settings(evaluation / "settings.json")[0] == settings["settings"]
  record = _records(evaluation)[0]
  value = json.loads(record.read_text())
  del value["record_version"]
  record.write_text(json.dumps(value))
  assert read_record(record)["task"] == value["task"]


@pytest.mark.parametrize("version, words", [(2, "record_version 2, written by a newer hx"),
                                            (7, "record_version 7, written by a newer hx")])
def test_a_directory_of_a_newer_layout_is_refused_in_one_line_naming_the_version(tmp_path, version, words):
  open_settings(tmp_path / "run", {"sequence": "cs1"})
  path = tmp_path / "run" / "settings.json"
  _bump(path, version)
  with pytest.raises(SettingsMismatch) as err:
    open_settings(tmp_path / "run", {"sequence": "cs1"})
  line = str(err.value)
  assert line.startswith(f"{path}: ") and words in line and "this hx reads record_version 1 only" in line
  assert "\n" not in line


def test_a_record_of_a_newer_layout_is_refused_naming_it(evaluation):
  record = _records(evaluation)[0]
  _bump(record, 2)
  with pytest.raises(LayoutVersionError) as err:
    read_record(record)
  assert str(err.value).startswith(f"{record}: a run directory's layout of record_version 2, written by a "
                                   "newer hx; this hx reads record_version 1 only")


def test_the_report_refuses_a_record_of_a_newer_layout_in_one_line(evaluation):
  record = _records(evaluation)[3]
  _bump(record, 2)
  out = subprocess.run([sys.executable, "-m", "hx.bin.report", str(evaluation)], capture_output=True,
                       text=True, timeout=300)
  assert out.returncode == 1, out.stderr[-2000:]
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith(f"error: {record}: ") and "record_version 2, written by a newer hx" in line, line
  assert not (evaluation / "report.md").exists()
