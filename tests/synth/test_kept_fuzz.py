"""Whatever JSON lies where a synthesis keeps a finished candidate's outcome, `load_kept` gives the
outcome or one CheckpointError naming the file: never a KeyError, TypeError or AttributeError."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.compile.checkpoint import CheckpointError
from hx.compile.fitting import Outcome
from hx.synth.kept import load_kept, save_kept
from tests.synth.json_strategies import json_values, mutated

KEY = "task t | program nn_1"
# A kept file as `save_kept` writes one.
KEPT = {
    "format": "hx-kept-candidate/1", "key": KEY,
    "outcome": {"status": "trained", "reason": None, "val_score": 0.25, "test_score": 0.5, "epochs_run": 2,
                "best_epoch": 2, "steps_run": 40, "compile_seconds": 1.5, "train_seconds": 3.0,
                "eval_seconds": 0.5, "seconds": 5.0,
                "history": [[1, 0.9, 0.5, 0.8, 1.5, 0.25], [2, 0.6, 0.25, "nan", 1.5, 0.25]]},
}


def _load_or_refuse(path, text: str) -> None:
  path.write_text(text, "utf-8")
  try:
    outcome = load_kept(path, KEY)
  except CheckpointError as err:
    assert str(path) in str(err) and len(str(err).splitlines()) == 1
    return
  assert isinstance(outcome, Outcome)
  assert outcome.status in ("trained", "failed") and outcome.epochs_run >= 0
  assert all(isinstance(getattr(outcome, f), float) for f in ("val_score", "seconds", "train_seconds"))


def test_a_kept_file_gives_back_its_outcome(tmp_path):
  path = tmp_path / "k.json"
  path.write_text(json.dumps(KEPT))
  outcome = load_kept(path, KEY)
  assert (outcome.status, outcome.val_score, outcome.test_score) == ("trained", 0.25, 0.5)
  assert (outcome.epochs_run, outcome.steps_run) == (2, 40)
  assert math.isnan(outcome.history[1].val_loss)
  save_kept(tmp_path / "again.json", KEY, outcome)  # NaN != NaN: the files are compared
  assert json.loads((tmp_path / "again.json").read_text()) == KEPT


@settings(max_examples=150)
@given(value=json_values)
def test_any_json_value_is_refused_with_the_files_name(tmp_path_factory, value):
  path = tmp_path_factory.mktemp("any") / "k.json"
  path.write_text(json.dumps(value))
  with pytest.raises(CheckpointError) as info:
    load_kept(path, KEY)
  assert str(path) in str(info.value)


@settings(max_examples=300)
@given(data=st.data())
def test_a_kept_file_with_one_field_mutated_loads_or_is_refused_with_the_files_name(tmp_path_factory, data):
  _load_or_refuse(tmp_path_factory.mktemp("mutated") / "k.json", json.dumps(data.draw(mutated(KEPT))))


def _outcome_edit(field, value):
  return {**KEPT, "outcome": {**KEPT["outcome"], field: value}}


@pytest.mark.parametrize("kept, message", [
    (_outcome_edit("epochs_run", -1), "outcome.epochs_run: expected an integer >= 0, got -1"),
    (_outcome_edit("status", "done"), "outcome.status: expected one of 'trained', 'failed'"),
    (_outcome_edit("val_score", None), "outcome.val_score: expected a score"),
    (_outcome_edit("seconds", math.nan), "outcome.seconds: expected a finite number >= 0, got NaN"),
    (_outcome_edit("reason", 3), "outcome.reason: expected a string, got 3"),
    (_outcome_edit("history", [[1, 2, 3]]), r"outcome.history\[0\]: expected 6 values"),
    (_outcome_edit("history", [[0, 1, 1, 1, 1, 1]]), r"outcome.history\[0\]\[0\]: expected an integer >= 1"),
    ({k: v for k, v in KEPT.items() if k != "outcome"}, "missing 'outcome'"),
    ({**KEPT, "key": "another"}, "kept for 'another'"),
])
def test_a_damaged_field_is_named_with_the_file(tmp_path, kept, message):
  path = tmp_path / "k.json"
  path.write_text(json.dumps(kept))
  with pytest.raises(CheckpointError, match=message) as info:
    load_kept(path, KEY)
  assert str(path) in str(info.value)


@pytest.mark.parametrize("data", [b"\xff", b"[" * 100_000, b"{", b"1" * 5000])
def test_a_file_that_is_not_json_is_named(tmp_path, data):
  path = tmp_path / "k.json"
  path.write_bytes(data)
  with pytest.raises(CheckpointError, match="not a kept candidate: it is not") as info:
    load_kept(path, KEY)
  assert str(path) in str(info.value)
