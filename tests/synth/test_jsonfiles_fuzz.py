"""The JSON readers of `hx.synth.jsonfiles`: any bytes give a value or one JsonFileError naming the file;
a schema refuses a value that does not fit with the place and what it expected; a run's settings.json
read back or refused the same way."""

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.synth.jsonfiles import (
    EVALUATION_SETTINGS,
    JsonFileError,
    array,
    boolean,
    check,
    integer,
    nullable,
    number,
    obj,
    read_json,
    read_settings,
    score,
    text,
)
from tests.synth.json_strategies import json_values, mutated

# An evaluation's settings.json as `hx.synth.run_directory.open_settings` writes it (fewer fields).
SETTINGS = {
    "started": "2025-01-02T03:04:05+00:00",
    "settings": {"sequence": "cs1", "preset": "smoke", "methods": ["houdini_topdown", "standalone"],
                 "fractions": [0.5, 1.0], "seeds": [0, 1], "tasks": 3, "budget": {"candidates": 4},
                 "module_config": {"mlp_hidden": 8}},
}


@settings(max_examples=200)
@given(data=st.binary(max_size=64) | st.text(max_size=64).map(lambda s: s.encode("utf-8")))
def test_any_bytes_are_a_json_value_or_one_error_naming_the_file(tmp_path_factory, data):
  path = tmp_path_factory.mktemp("bytes") / "f.json"
  path.write_bytes(data)
  try:
    value = read_json(path)
  except JsonFileError as err:
    assert err.path == str(path) and str(err).startswith(f"{path}: ") and "\n" not in str(err)
  else:
    assert json.dumps(value) is not None


@settings(max_examples=200)
@given(value=json_values)
def test_any_json_value_written_reads_back(tmp_path_factory, value):
  path = tmp_path_factory.mktemp("values") / "f.json"
  path.write_text(json.dumps(value))
  assert json.dumps(read_json(path)) == json.dumps(value)  # NaN != NaN: compared as text


def test_a_file_that_cannot_be_read_is_one_error(tmp_path):
  with pytest.raises(JsonFileError, match="cannot be read"):
    read_json(tmp_path / "absent.json")
  with pytest.raises(JsonFileError, match="cannot be read"):
    read_json(tmp_path)  # a directory


@pytest.mark.parametrize("schema, value, message", [
    (integer(minimum=0), -1, "expected an integer >= 0, got -1"),
    (integer(minimum=0), 1.0, "expected an integer >= 0, got 1.0"),
    (integer(minimum=1, maximum=3), 4, "expected an integer >= 1 and <= 3, got 4"),
    (integer(), False, "expected an integer, got false"),
    (number(above=0, maximum=1), 0, "expected a finite number > 0 and <= 1, got 0"),
    (number(), math.inf, "expected a finite number, got Infinity"),
    (number(), "1", 'expected a finite number, got "1"'),
    (score, "0.5", 'expected a score (a number or "nan"), got "0.5"'),
    (score, None, "expected a score"),
    (text(choices=("a", "b")), "c", "expected one of 'a', 'b', got \"c\""),
    (text(), None, "expected a string, got null"),
    (boolean, 0, "expected true or false, got 0"),
    (array(integer()), {}, "expected an array, got {}"),
    (array(integer(), min_size=1), [], "expected at least 1 values, got 0"),
    (obj({"a": integer()}), [], "expected an object, got []"),
    (obj({"a": integer(), "b": integer()}), {}, "missing 'a', 'b'"),
    (obj({"a": array(obj({"b": text()}))}), {"a": [{"b": "x"}, {"b": 2}]}, "a[1].b: expected a string"),
    (obj({}, values=text()), {"k": 1}, "k: expected a string, got 1"),
    (obj({}, optional={"k": integer()}), {"k": "x"}, 'k: expected an integer, got "x"'),
])
def test_a_schema_names_the_place_and_what_it_expected(tmp_path, schema, value, message):
  with pytest.raises(JsonFileError, match=re.escape(message)) as info:
    check(value, schema, tmp_path / "f.json")
  assert str(info.value).startswith(f"{tmp_path / 'f.json'}: ")


@pytest.mark.parametrize("schema, value", [
    (integer(minimum=0), 0), (number(above=0, maximum=1), 1), (score, "nan"), (score, math.nan),
    (nullable(score), None), (text(), ""), (boolean, True), (array(integer()), []),
    (obj({"a": integer()}), {"a": 1, "other": [None]}), (obj({}, values=text()), {}),
])
def test_a_value_that_fits_is_given_back(tmp_path, schema, value):
  assert check(value, schema, tmp_path / "f.json") is value


def test_a_long_value_is_cut_in_the_message(tmp_path):
  with pytest.raises(JsonFileError) as info:
    check(list(range(1000)), integer(), tmp_path / "f.json")
  assert len(str(info.value)) < 200 and str(info.value).endswith("...")


def test_settings_read_back(tmp_path):
  path = tmp_path / "settings.json"
  path.write_text(json.dumps(SETTINGS))
  assert read_settings(path, EVALUATION_SETTINGS) == (SETTINGS["settings"], SETTINGS["started"])


@settings(max_examples=200)
@given(data=st.data(), fields=st.sampled_from([None, EVALUATION_SETTINGS]))
def test_settings_with_one_field_mutated_read_or_are_refused_with_the_files_name(tmp_path_factory, data,
                                                                                  fields):
  value = data.draw(mutated(SETTINGS) | json_values)
  path = tmp_path_factory.mktemp("settings") / "settings.json"
  path.write_text(json.dumps(value))
  try:
    got, started = read_settings(path, fields)
  except JsonFileError as err:
    assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
    return
  assert isinstance(got, dict) and isinstance(started, str) and started
  if fields is not None:  # what a report reads of them has its type
    assert all(isinstance(f, (int, float)) and 0 < f <= 1 for f in got.get("fractions", []))
    assert isinstance(got.get("tasks", 0), int) and all(isinstance(m, str) for m in got.get("methods", []))


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.pop("started"), "missing 'started'"),
    (lambda s: s.__setitem__("settings", []), "settings: expected an object, got"),
    (lambda s: s["settings"].__setitem__("fractions", [0.5, 2]),
     r"settings.fractions\[1\]: expected a finite number > 0 and <= 1, got 2"),
    (lambda s: s["settings"].__setitem__("seeds", [-1]), r"settings.seeds\[0\]: expected an integer >= 0"),
    (lambda s: s["settings"].__setitem__("tasks", "3"), "settings.tasks: expected an integer >= 0"),
])
def test_a_damaged_settings_field_is_named_with_the_file(tmp_path, edit, message):
  value = json.loads(json.dumps(SETTINGS))
  edit(value)
  path = tmp_path / "settings.json"
  path.write_text(json.dumps(value))
  with pytest.raises(JsonFileError, match=message):
    read_settings(path, EVALUATION_SETTINGS)
