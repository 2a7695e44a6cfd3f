"""Whatever JSON lies where an evaluation keeps a record, `load_records` gives the records (which the
report's summary then reads without fault) or one JsonFileError naming the file: never a KeyError,
TypeError or AttributeError from the code that reads them."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.evaluation import load_records, summary_lines
from hx.synth.jsonfiles import RECORD, JsonFileError, check
from tests.synth.json_strategies import json_values, mutated

ROOT = Path(__file__).resolve().parents[2]

# A HOUDINI record as `hx.synth.lifelong.record` writes one (fewer candidates, the same fields).
HOUDINI = {
    "record_version": 1, "sequence": "cs1", "task_index": 2, "task": "recognize_digit(d2)",
    "task_kind": "recognize_digit", "type": "Tensor<real>[1][28][28] -> Tensor<bool>[1]", "metric": "error",
    "fraction": 0.5, "seed": 7, "strategy": "topdown",
    "data": {"datasets": ["mnist"], "synthetic": False, "train": 240, "val": 100, "test": 100},
    "library_before": "ab" * 32, "library_after": "cd" * 32, "library_functions_before": ["nn_cs1_1"],
    "candidates_trained": 2,
    "seconds": {"search": 0.25, "compile": 1.5, "train": 3.0, "eval": 0.5, "wall": 5.5},
    "ranked": [
        {"rank": 1, "program": "compose(lib.nn_cs1_1, nn_1)", "named": "compose(lib.nn_cs1_1, nn_cs1_3)",
         "fresh_types": {"nn_1": "Tensor<real>[1][28][28] -> Tensor<real>[1024]"}, "status": "trained",
         "reason": None, "val": 1.25, "test": 1.5, "seconds": 2.0, "val_history": [3.0, 1.25]},
        {"rank": 2, "program": "nn_1", "named": None, "status": "failed", "reason": "diverged",
         "val": "nan", "test": None, "seconds": 1.0, "val_history": []},
    ],
}
# A baseline's record (`hx.evaluation.records.baseline_record`).
BASELINE = {
    "record_version": 1, "method": "standalone", "sequence": "cs1", "instance": 0, "task_index": 2,
    "task": "recognize_digit(d2)", "task_kind": "recognize_digit", "type": "Tensor<real>[1][28][28] -> "
    "Tensor<bool>[1]", "metric": "error", "fraction": 0.5, "seed": 7,
    "data": {"datasets": ["mnist"], "synthetic": False, "train": 240, "val": 100, "test": 100},
    "tune_config": {"epochs": 2, "batch_size": 32, "learning_rate": 0.001, "patience": None, "min_steps": 0},
    "parameters": 1000, "frozen_parameters": 0, "epochs_run": 2, "best_epoch": 2, "starts_from": [],
    "transfer": [], "network_version": "ef" * 32,
    "seconds": {"compile": 1.0, "train": 2.0, "eval": 0.5, "wall": 3.5},
    "ranked": [{"rank": 1, "program": "mlp", "named": "mlp", "status": "trained", "reason": None, "val": 2.0,
                "test": 2.5, "seconds": 3.5}],
}


def _write(directory: Path, method: str, record_text: str) -> Path:
  path = directory / method / "seed_0" / "records" / "02_recognize_digit_d2_" / "fraction_0.5.json"
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(record_text, "utf-8")
  return path


def _load_or_refuse(directory: Path, path: Path, written) -> None:
  """The property: the record back, equal to what was written and summarised without fault, or one
  JsonFileError naming the file."""
  try:
    records = load_records(directory)
  except JsonFileError as err:
    assert str(path) in str(err)
    assert len(str(err).splitlines()) == 1
    return
  assert len(records) == 1
  got = {k: v for k, v in records[0].items() if k not in ("method", "instance", "path")}
  assert json.dumps(got, sort_keys=True) == json.dumps(
      {k: v for k, v in written.items() if k not in ("method", "instance")}, sort_keys=True)
  assert summary_lines(records)


def test_the_well_formed_records_load_and_summarise(tmp_path):
  for method, rec in (("houdini_topdown", HOUDINI), ("standalone", BASELINE)):
    _write(tmp_path, method, json.dumps(rec))
  records = load_records(tmp_path)
  assert [r["method"] for r in records] == ["houdini_topdown", "standalone"]
  assert any("compose(lib.nn_cs1_1, nn_cs1_3)" in line for line in summary_lines(records))


@settings(max_examples=150)
@given(value=json_values)
def test_any_json_value_as_a_record_is_refused_with_the_files_name(tmp_path_factory, value):
  directory = tmp_path_factory.mktemp("any")
  path = _write(directory, "houdini_topdown", json.dumps(value))
  with pytest.raises(JsonFileError) as info:  # no JSON value of this size holds every required field
    load_records(directory)
  assert str(path) in str(info.value)


@settings(max_examples=300)
@given(data=st.data(), which=st.sampled_from(["houdini_topdown", "standalone"]))
def test_a_record_with_one_field_mutated_loads_or_is_refused_with_the_files_name(tmp_path_factory, data,
                                                                                  which):
  record = mutated(HOUDINI if which == "houdini_topdown" else BASELINE)
  rec = data.draw(record)
  directory = tmp_path_factory.mktemp("mutated")
  path = _write(directory, which, json.dumps(rec))
  _load_or_refuse(directory, path, rec)


def _set(where: tuple, value):
  def edit(rec):
    target = rec
    for k in where[:-1]:
      target = target[k]
    target[where[-1]] = value
  return edit


def _delete(where: tuple):
  def edit(rec):
    target = rec
    for k in where[:-1]:
      target = target[k]
    del target[where[-1]]
  return edit


@pytest.mark.parametrize("edit, message", [
    (_delete(("task_index",)), "task_index' *missing|missing 'task_index'"),
    (_set(("task_index",), -1), "task_index: expected an integer >= 1, got -1"),
    (_set(("task_index",), True), "task_index: expected an integer >= 1, got true"),
    (_set(("fraction",), math.nan), "fraction: expected a finite number > 0 and <= 1, got NaN"),
    (_set(("fraction",), 1.5), "fraction: expected a finite number > 0 and <= 1, got 1.5"),
    (_set(("fraction",), "0.5"), "fraction: expected a finite number"),
    (_set(("ranked", 0, "test"), [1]), r"ranked\[0\].test: expected a score"),
    (_delete(("ranked", 1, "status")), r"ranked\[1\]: missing 'status'"),
    (_set(("ranked",), {}), "ranked: expected an array, got {}"),
    (_set(("data", "synthetic"), "yes"), 'data.synthetic: expected true or false, got "yes"'),
    (_set(("data", "datasets", 0), 3), r"data.datasets\[0\]: expected a string, got 3"),
    (_set(("seconds", "wall"), -1), "seconds.wall: expected a finite number >= 0, got -1"),
    (_set(("seconds", "train"), math.inf), "seconds.train: expected a finite number >= 0, got Infinity"),
    (_set(("task",), ""), "task: expected a non-empty string"),
])
def test_a_damaged_field_is_named_with_the_file(tmp_path, edit, message):
  rec = json.loads(json.dumps(HOUDINI))
  edit(rec)
  path = _write(tmp_path, "houdini_topdown", json.dumps(rec))
  with pytest.raises(JsonFileError, match=message) as info:
    load_records(tmp_path)
  assert str(info.value).startswith(f"{path}: ")


@pytest.mark.parametrize("data, message", [
    (b"\xff\xfe{}", "is not valid JSON .not UTF-8 text"),
    (b'{"task_index": ', "is not valid JSON .line 1, column 16"),
    (b"[" * 100_000 + b"]" * 100_000, "nests too deep"),
    (b"1" * 5000, "is not JSON hx reads"),
    (b"", "is not valid JSON"),
])
def test_a_record_that_is_not_json_is_named_with_the_file(tmp_path, data, message):
  path = _write(tmp_path, "houdini_topdown", "")
  path.write_bytes(data)
  with pytest.raises(JsonFileError, match=message) as info:
    load_records(tmp_path)
  assert info.value.path == str(path)


def test_extra_fields_are_kept_as_they_are(tmp_path):
  rec = {**HOUDINI, "a_later_field": {"nested": [1, None]}}
  _write(tmp_path, "houdini_topdown", json.dumps(rec))
  assert load_records(tmp_path)[0]["a_later_field"] == {"nested": [1, None]}


def test_every_committed_record_fits_the_schema():
  paths = sorted((ROOT / "benchmarks").rglob("records/*/fraction_*.json"))
  assert paths, "the repository's reproductions hold records"
  for path in paths:
    check(json.loads(path.read_text("utf-8")), RECORD, path)
