"""A run directory of layout version 1 or 2 spelt the long stream's recognize tasks "recognise": opened by
this hx, its folders are renamed and its JSON files rewritten with version 3's spelling
(`hx.synth.run_directory.respell`, called by `open_settings`), and its settings.json becomes version 3."""

from __future__ import annotations

import json

import pytest

from hx.synth.jsonfiles import RECORD_VERSION, read_settings_file
from hx.synth.run_directory import SettingsMismatch, open_settings, respell, respelled

OLD, NEW = "recognise_digit(7)", "recognize_digit(7)"
STARTED = "2026-12-01T00:00:00+00:00"


def _settings(name: str) -> dict:
  return {"sequence": "long", "stream": [{"task": "regress_cell"}, {"task": name}],
          "tune_configs": [[name.replace("(", "_").replace(")", "_"), {"epochs": 5}]]}


def _version_2(root, version=2):
  """A run as hx of layout version 2 wrote it: the stream's second task spelt "recognise"."""
  (root / "records" / "01_regress_cell").mkdir(parents=True)
  (root / "records" / "01_regress_cell" / "fraction_1.json").write_text(json.dumps({"task": "regress_cell"}))
  (root / "records" / f"02_{OLD}").mkdir()
  (root / "records" / f"02_{OLD}" / "fraction_1.json").write_text(json.dumps({"task": OLD, "ranked": []}))
  keyed = root / "checkpoints" / f"02_{OLD}" / "fraction_1"
  keyed.mkdir(parents=True)
  (keyed / "0123abcd.json").write_text(json.dumps({"key": OLD}))  # named by a hash of its text
  (root / "libraries" / "after_02").mkdir(parents=True)
  (root / "libraries" / "after_02" / "library.json").write_text(
      json.dumps({"entries": [{"name": "nn_long_1", "provenance": {"task": OLD}}]}, indent=1))
  (root / "notes.txt").write_text(OLD)  # not JSON: not the run's
  whole = {"settings": _settings(OLD), "started": STARTED, "record_version": version}
  (root / "settings.json").write_text(json.dumps(whole, indent=1, sort_keys=True))
  return root


def test_respelled_replaces_the_old_word_in_strings_and_keys_at_every_depth():
  old = {OLD: [OLD, {"k": f"x {OLD}"}, 1.5, None, True]}
  assert respelled(old) == {NEW: [NEW, {"k": f"x {NEW}"}, 1.5, None, True]}
  assert respelled("recognize_toy(3)") == "recognize_toy(3)" and respelled(3) == 3


@pytest.mark.parametrize("version", [None, 1, 2])
def test_an_older_stream_run_resumes_respelt_and_becomes_version_3(tmp_path, version):
  root = _version_2(tmp_path / "run", version)
  if version is None:
    whole = json.loads((root / "settings.json").read_text())
    del whole["record_version"]
    (root / "settings.json").write_text(json.dumps(whole))
  # A check only (write=False) accepts it as this hx spells it, and changes nothing.
  before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
  assert open_settings(root, _settings(NEW), write=False) == STARTED
  assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before

  assert open_settings(root, _settings(NEW)) == STARTED
  assert sorted(p.name for p in (root / "records").iterdir()) == ["01_regress_cell", f"02_{NEW}"]
  assert json.loads((root / "records" / f"02_{NEW}" / "fraction_1.json").read_text()) == {"task": NEW,
                                                                                         "ranked": []}
  library = json.loads((root / "libraries" / "after_02" / "library.json").read_text())
  assert library["entries"][0]["provenance"]["task"] == NEW
  # A file named by a hash of its text keeps its text; its folder takes the task's new name.
  assert json.loads((root / "checkpoints" / f"02_{NEW}" / "fraction_1" / "0123abcd.json").read_text()) == {
      "key": OLD}
  assert (root / "notes.txt").read_text() == OLD
  assert read_settings_file(root / "settings.json") == (_settings(NEW), STARTED,
                                                        RECORD_VERSION)
  # Version 3 now: nothing is read or renamed again.
  (root / "records" / f"03_{OLD}").mkdir()
  assert respell(root) == 0 and (root / "records" / f"03_{OLD}").is_dir()


def test_respelling_is_idempotent_so_an_interrupted_one_is_finished_by_the_next(tmp_path):
  root = _version_2(tmp_path / "run")
  # As if interrupted after the record folder was renamed, before the record and the library were.
  (root / "records" / f"02_{OLD}").rename(root / "records" / f"02_{NEW}")
  assert respell(root) == 4  # the record, the library's manifest, settings.json, the checkpoints' folder
  assert respell(root) == 0
  assert json.loads((root / "records" / f"02_{NEW}" / "fraction_1.json").read_text())["task"] == NEW
  assert not list(root.rglob(f"*{OLD}*"))


def test_an_older_run_of_other_settings_is_refused(tmp_path):
  root = _version_2(tmp_path / "run")
  other = {**_settings(NEW), "sequence": "cs1"}
  with pytest.raises(SettingsMismatch, match=r"other settings \(differing: sequence\)"):
    open_settings(root, other)
  assert read_settings_file(root / "settings.json")[2] == 2 and (root / "records" / f"02_{OLD}").is_dir()


def test_a_new_name_that_is_taken_already_is_refused_naming_both(tmp_path):
  root = _version_2(tmp_path / "run")
  (root / "records" / f"02_{NEW}").mkdir()
  with pytest.raises(FileExistsError) as err:
    respell(root)
  assert str(root / "records" / f"02_{OLD}") in str(err.value) and str(root / "records" / f"02_{NEW}") in str(
      err.value)
  assert (root / "records" / f"02_{OLD}" / "fraction_1.json").exists()
  # Resumed, the same is the run directory's one refusal, naming both.
  with pytest.raises(SettingsMismatch, match=r"cannot be renamed") as err:
    open_settings(root, _settings(NEW))
  assert str(root / "records" / f"02_{NEW}") in str(err.value)
  assert read_settings_file(root / "settings.json")[2] == 2


def test_a_newer_layout_is_refused_before_anything_is_respelt(tmp_path):
  from hx.synth.jsonfiles import LayoutVersionError

  root = _version_2(tmp_path / "run", RECORD_VERSION + 1)
  with pytest.raises(LayoutVersionError, match="written by a newer hx"):
    respell(root)
  assert (root / "records" / f"02_{OLD}").is_dir()
