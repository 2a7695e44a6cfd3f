"""A run directory's layout version (`RECORD_VERSION`, "record_version" in every record and settings.json):
a file without one (written before hx recorded it) is read as version 1; a version 1 record is read as a
version 3 one, a version 1 settings.json is migrated when its run resumes (the fields it left out at their
defaults filled in, `hx.synth.run_directory.VERSION_1_OMITTED`); a file of another version is refused in
one line that names the file and the versions, by the library functions and the binaries."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hx.synth.jsonfiles import RECORD_VERSION, LayoutVersionError, jsonable, read_record, read_settings
from hx.synth.run_directory import VERSION_1_OMITTED, SettingsMismatch, migrated_settings, open_settings

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
  assert json.loads((tmp_path / "run" / "settings.json").read_text())["record_version"] == RECORD_VERSION == 3


def test_files_written_before_the_version_was_recorded_are_read_as_version_1(evaluation):
  settings = json.loads((evaluation / "settings.json").read_text())
  assert "record_version" not in settings  # committed before settings.json held it
  assert read_settings(evaluation / "settings.json")[0] == settings["settings"]
  record = _records(evaluation)[0]
  value = json.loads(record.read_text())
  del value["record_version"]
  record.write_text(json.dumps(value))
  assert read_record(record)["task"] == value["task"]


@pytest.mark.parametrize("version, words", [(4, "record_version 4, written by a newer hx"),
                                            (7, "record_version 7, written by a newer hx"),
                                            (0, "record_version: expected an integer >= 1, got 0"),
                                            ("2", 'record_version: expected an integer >= 1, got "2"')])
def test_a_directory_of_another_layout_is_refused_in_one_line_naming_the_versions(tmp_path, version, words):
  open_settings(tmp_path / "run", {"sequence": "cs1"})
  path = tmp_path / "run" / "settings.json"
  _bump(path, version)
  before = path.read_bytes()
  with pytest.raises(SettingsMismatch) as err:
    open_settings(tmp_path / "run", {"sequence": "cs1"})
  line = str(err.value)
  assert line.startswith(f"{path}") and words in line and "\n" not in line
  if isinstance(version, int) and version >= 1:  # 0 and "2" do not fit the file's schema: named as such
    assert "this hx reads record_version 1, 2 or 3 only" in line
  assert path.read_bytes() == before


def test_a_record_of_a_newer_layout_is_refused_naming_it(evaluation):
  record = _records(evaluation)[0]
  _bump(record, 4)
  with pytest.raises(LayoutVersionError) as err:
    read_record(record)
  assert str(err.value).startswith(f"{record}: a run directory's layout of record_version 4, written by a "
                                   "newer hx; this hx reads record_version 1, 2 or 3 only")


def test_records_of_versions_1_to_3_are_read_alike(evaluation):
  record = _records(evaluation)[0]
  value = json.loads(record.read_text())
  for version in (1, 2, 3):
    record.write_text(json.dumps({**value, "record_version": version}))
    assert {k: v for k, v in read_record(record).items() if k != "record_version"} == {
        k: v for k, v in value.items() if k != "record_version"}


@pytest.mark.slow
def test_the_report_refuses_a_record_of_a_newer_layout_in_one_line(evaluation):
  record = _records(evaluation)[3]
  _bump(record, 4)
  out = subprocess.run([sys.executable, "-m", "hx.bin.report", str(evaluation)], capture_output=True,
                       text=True, timeout=300)
  assert out.returncode == 1, out.stderr[-2000:]
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith(f"error: {record}: ") and "record_version 4, written by a newer hx" in line, line
  assert not (evaluation / "report.md").exists()


# ---------------------------------------------------------------------------------------------------
# A settings.json of version 1: the fields it left out at their defaults are filled in when it resumes.

def _asked() -> dict:
  """A run's settings as today's hx writes them: every field of its dataclasses."""
  from hx.compile import ModuleConfig
  from hx.synth.schedules import CheapFirst
  from hx.synth.space import SearchSpace
  from hx.synth.synthesize import Budget

  return jsonable({"sequence": "cs1", "seeds": [0], "module_config": ModuleConfig(), "space": SearchSpace(),
                   "budget": Budget(candidates=4, schedule=CheapFirst()),
                   "budgets": [Budget(schedule=CheapFirst(keep=2)), Budget()], "stream": None})


def _left_out(value):
  """`value` as version 1 wrote it: the fields of VERSION_1_OMITTED left out at their defaults."""
  if isinstance(value, dict):
    return {k: _left_out(v) for k, v in value.items()
            if not (k in VERSION_1_OMITTED and v == VERSION_1_OMITTED[k])}
  if isinstance(value, list):
    return [_left_out(v) for v in value]
  return value


def _version_1(directory, settings, version=None):
  directory.mkdir(parents=True)
  whole = {"settings": settings, "started": "2026-01-02T03:04:05+00:00"}
  if version is not None:
    whole["record_version"] = version
  (directory / "settings.json").write_text(json.dumps(whole, indent=1, sort_keys=True))
  return directory / "settings.json"


def test_the_table_names_every_field_version_1_left_out():
  asked = _asked()
  saved = _left_out(asked)
  assert "stream" not in saved and "mlp_order" not in saved["module_config"]
  assert "fold_step_norm" not in saved["module_config"] and "reused_programs" not in saved["space"]
  assert {"eta", "keep_at", "free"}.isdisjoint(saved["budget"]["schedule"])
  assert {"eta", "keep_at", "free"}.isdisjoint(saved["budgets"][0]["schedule"])
  assert migrated_settings(saved, asked) == asked
  assert migrated_settings(asked, asked) == asked


@pytest.mark.parametrize("version", [None, 1])
def test_a_version_1_directory_resumes_and_is_rewritten_as_version_3(tmp_path, version):
  asked = _asked()
  path = _version_1(tmp_path / "run", _left_out(asked), version)
  before = path.read_bytes()
  # A check only (write=False) reads it, migrated, and writes nothing.
  assert open_settings(tmp_path / "run", asked, write=False) == "2026-01-02T03:04:05+00:00"
  assert path.read_bytes() == before
  assert open_settings(tmp_path / "run", asked) == "2026-01-02T03:04:05+00:00"
  whole = json.loads(path.read_text())
  assert whole == {"settings": asked, "started": "2026-01-02T03:04:05+00:00",
                   "record_version": RECORD_VERSION}
  assert read_settings(path)[0] == asked
  assert open_settings(tmp_path / "run", asked) == "2026-01-02T03:04:05+00:00"  # and again, as version 3


def test_a_version_1_directory_of_other_settings_is_refused_and_left_as_it_is(tmp_path):
  asked = _asked()
  path = _version_1(tmp_path / "run", _left_out(asked))
  before = path.read_bytes()
  # A field version 1 left out, asked at another value: that run did not use it.
  other = {**asked, "module_config": {**asked["module_config"], "fold_step_norm": False}}
  with pytest.raises(SettingsMismatch, match=r"other settings \(differing: module_config\)"):
    open_settings(tmp_path / "run", other)
  other = {**asked, "budget": {**asked["budget"], "schedule": {**asked["budget"]["schedule"], "free": True}}}
  with pytest.raises(SettingsMismatch, match=r"other settings \(differing: budget\)"):
    open_settings(tmp_path / "run", other)
  with pytest.raises(SettingsMismatch, match=r"other settings \(differing: seeds\)"):
    open_settings(tmp_path / "run", {**asked, "seeds": [1]})
  assert path.read_bytes() == before


def test_a_version_2_file_is_not_filled_in(tmp_path):
  # Version 2 writes every field: one missing there is a run of other settings, not a default.
  asked = _asked()
  _version_1(tmp_path / "run", _left_out(asked), 2)
  # (stream, missing against null, is not named: the message compares values, and both read as null.)
  with pytest.raises(SettingsMismatch, match=r"differing: budget, budgets, module_config, space\)"):
    open_settings(tmp_path / "run", asked)


def test_a_version_1_field_is_filled_in_only_at_its_default_of_the_same_json_type():
  assert migrated_settings({}, {"free": False}) == {"free": False}
  assert migrated_settings({}, {"free": 0}) == {}
  assert migrated_settings({}, {"fold_step_norm": 1}) == {}
  assert migrated_settings({}, {"keep_at": 2}) == {"keep_at": 2}
  assert migrated_settings({}, {"keep_at": 3.0}) == {}
  assert migrated_settings({}, {"other": None}) == {}
  # Arrays of other lengths: no element is matched.
  assert migrated_settings({"a": [{}]}, {"a": [{"eta": None}, {"eta": None}]}) == {"a": [{}]}


def test_a_version_1_evaluation_resumes_with_more_instantiations(tmp_path):
  # The evaluation's merge (more seeds) applies to the migrated settings, and the file becomes version 3.
  from hx.evaluation import ConfigError
  from hx.evaluation.runner import _more_seeds

  asked = _asked()
  path = _version_1(tmp_path / "run", _left_out(asked))
  more = {**asked, "seeds": [1]}
  assert open_settings(tmp_path / "run", more, merge=_more_seeds, error=ConfigError) is not None
  assert json.loads(path.read_text()) == {"settings": {**asked, "seeds": [0, 1]},
                                          "started": "2026-01-02T03:04:05+00:00",
                                          "record_version": RECORD_VERSION}


def test_a_committed_version_1_evaluation_opens_migrated(evaluation):
  # benchmarks/reproduction/cs2: its settings.json as committed (version 1, no record_version), opened for
  # the settings it holds with the fields version 1 left out at their defaults filled in.
  path = evaluation / "settings.json"
  saved = json.loads(path.read_text())
  filled = {**saved["settings"], "stream": None,
            "module_config": {**saved["settings"]["module_config"], "mlp_order": "bn_relu",
                              "fold_step_norm": True}}
  assert open_settings(evaluation, filled, what="hx evaluation") == saved["started"]
  assert json.loads(path.read_text())["record_version"] == RECORD_VERSION
  assert read_settings(path)[0] == filled
