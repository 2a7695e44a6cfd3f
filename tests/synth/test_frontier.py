"""A synthesis's result and its record are one type (`hx.synth.frontier`): a real synthesis written as its
record reads back as the same frontier, every record committed under benchmarks/ reads back and writes
again byte for byte, and an item that does not fit the record's schema is refused where it is wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import hx
from hx.compile.fitting import Outcome
from hx.jsonread import Invalid
from hx.synth.frontier import Frontier, FrontierEntry
from hx.synth.jsonfiles import read_record, write_json
from hx.synth.lifelong import record

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = (ROOT / "benchmarks" / "reproduction", ROOT / "benchmarks" / "stream" / "length_100_seed_0")
TINY = hx.ModuleConfig(mlp_hidden=8)


def _task(name: str, seed: int, feature: int) -> hx.Task:
  """Vectors of 5, labelled by the sign of one of their components."""
  rng = np.random.default_rng(seed)

  def split(n):
    x = rng.normal(size=(n, 5)).astype(np.float32)
    return x, (x[:, feature] > 0).astype(int)
  return hx.Task.from_arrays(name, "Tensor<real>[5] -> Tensor<bool>[1]", split(60), split(20), split(20),
                             training={"epochs": 10, "batch_size": 20})


@pytest.fixture(scope="module")
def synthesized():
  """A second task searched over the first one's library, for real: candidates that call the library, a
  winner whose functions the library names, runners-up (tiny MLPs, a few steps each)."""
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=3), module_config=TINY)
  first = hx.synthesize(_task("first", 0, feature=0), config=config, sequence="mine")
  task = _task("second", 1, feature=2)
  return task, first.library, hx.synthesize(task, first.library, config, sequence="mine")


def _text(value) -> str:
  """JSON as `write_json` writes it (NaN compares unequal to itself; its text does not)."""
  return json.dumps(value, indent=1, sort_keys=True)


def test_a_synthesis_written_as_its_record_reads_back_as_the_same_frontier(synthesized, tmp_path):
  task, library, frontier = synthesized
  assert len(frontier.entries) == 3 and frontier.best.named is not None
  assert any("lib." in str(e.program) for e in frontier.entries)
  path = tmp_path / "fraction_1.json"
  write_json(path, record(frontier, task, sequence="mine", index=2, fraction=1.0, seed=0,
                          library_before=library))
  rec = read_record(path)
  # The record holds the synthesis's part as `to_json` gives it, the programs as the search built them.
  assert _text({k: rec[k] for k in frontier.to_json()}) == _text(frontier.to_json())
  assert rec["ranked"][0]["program"] == str(frontier.best.program) != rec["ranked"][0]["named"]
  back = Frontier.from_json(rec)
  assert (back.task, back.strategy, back.candidates_trained, back.metric, back.enumeration, back.offered) == (
      frontier.task, frontier.strategy, frontier.candidates_trained, frontier.metric, frontier.enumeration,
      frontier.offered)
  assert (back.search_seconds, back.compile_seconds, back.train_seconds, back.eval_seconds,
          back.wall_seconds) == (frontier.search_seconds, frontier.compile_seconds, frontier.train_seconds,
                                 frontier.eval_seconds, frontier.wall_seconds)
  for got, want in zip(back.entries, frontier.entries, strict=True):
    assert (got.rank, got.program, got.named, got.fresh_types, got.order, got.val_history) == (
        want.rank, want.program, want.named, want.fresh_types, want.order, want.val_history)
    assert got.display == want.display and got.display_types == want.display_types
    recorded = ("status", "reason", "val_score", "test_score", "epochs_run", "seconds", "compile_seconds",
                "train_seconds", "eval_seconds")
    assert [getattr(got.outcome, f) for f in recorded] == [getattr(want.outcome, f) for f in recorded]
    assert got.outcome.variables is None and str(got) == str(want)
  # Written again, the same file.
  again = tmp_path / "again.json"
  write_json(again, {**rec, "ranked": [e.to_json() for e in back.entries]})
  assert again.read_bytes() == path.read_bytes()
  # What a record does not hold is not made up: no library, no variables.
  assert back.library is None and back.best.outcome.variables is None
  with pytest.raises(ValueError, match="no library"):
    back.to_json()
  with pytest.raises(ValueError, match="kept no variables"):
    back.predictor()


def test_the_winner_predicts_under_the_librarys_names(synthesized):
  _, _, frontier = synthesized
  best = frontier.best
  predict = frontier.predictor()
  assert predict.program == best.display == best.named and set(best.display_types) == set(
      hx.lang.program.fresh_names(best.named))
  x = np.random.default_rng(2).normal(size=(7, 5)).astype(np.float32)
  assert predict(x).shape == (7, 1)


def _committed() -> list[Path]:
  return sorted(p for root in COMMITTED for p in root.rglob("fraction_*.json"))


@pytest.mark.slow
def test_every_committed_record_reads_back_and_writes_again_byte_for_byte(tmp_path):
  paths = _committed()
  assert len(paths) > 1000  # the reproduction's records and the 100-task stream's
  houdini = baselines = 0
  for path in paths:
    rec = read_record(path)
    entries = [FrontierEntry.from_json(x) for x in rec["ranked"]]
    assert _text([e.to_json() for e in entries]) == _text(rec["ranked"]), path
    if "strategy" in rec:  # HOUDINI's: the whole synthesis reads back too
      houdini += 1
      assert _text([e.to_json() for e in Frontier.from_json(rec).entries]) == _text(rec["ranked"]), path
    else:  # a baseline's network, in the short form: its description kept as text
      baselines += 1
      assert all(e.fresh_types is None and isinstance(e.program, str) for e in entries), path
    written = tmp_path / "record.json"
    write_json(written, {**rec, "ranked": [e.to_json() for e in entries]})
    assert written.read_bytes() == path.read_bytes(), path
  assert houdini > 300 and baselines > 300  # hundreds of each


def test_estimates_and_scores_that_are_not_finite_round_trip():
  entry = FrontierEntry(
      rank=2, program=hx.parse("compose(nn_1, lib.nn_a_1)"), named=None,
      fresh_types={"nn_1": hx.parse_type("Tensor<real>[1] -> Tensor<bool>[1]")}, order=4,
      outcome=Outcome(status="estimated", reason="not trained to the end", val_score=math.nan,
                      test_score=None, seconds=1.5, compile_seconds=0.5, train_seconds=0.75,
                      eval_seconds=0.25),
      val_history=(0.5, math.inf), estimate=math.inf, estimate_method="short", estimate_seconds=1.0,
      estimate_epochs=0.25)
  item = json.loads(_text(entry.to_json()))
  assert (item["val"], item["estimate"], item["test"]) == ("nan", "inf", None)
  back = FrontierEntry.from_json(item)
  assert _text(back.to_json()) == _text(item)
  assert math.isnan(back.outcome.val_score) and back.estimate == math.inf
  assert back.val_history == (0.5, math.inf)
  assert str(back) == str(entry)


def test_a_baselines_network_is_the_short_form_and_keeps_its_description():
  description = "pnn(column 2 of 2: compose(nn_mlp, nn_cnn))"  # not a program hx parses
  entry = FrontierEntry(rank=1, program=description, named=description,
                        outcome=Outcome(status="trained", reason=None, val_score=1.25, test_score=2.5,
                                        seconds=3.0, epochs_run=4))
  item = entry.to_json()
  assert item == {"rank": 1, "program": description, "named": description, "status": "trained",
                  "reason": None, "val": 1.25, "test": 2.5, "seconds": 3.0}
  back = FrontierEntry.from_json(item)
  assert back.program == description and back.fresh_types is None and back.to_json() == item


def test_an_item_that_does_not_fit_the_schema_is_refused_where_it_is_wrong():
  item = {"rank": 1, "program": "nn_1", "named": None, "fresh_types": {"nn_1": "Tensor<real>[1] -> "
          "Tensor<real>[1]"}, "status": "trained", "reason": None, "val": 1.0, "test": 1.0, "seconds": 1.0,
          "order": "first"}
  with pytest.raises(Invalid, match=r"ranked item.order: expected an integer"):
    FrontierEntry.from_json(item)
  with pytest.raises(ValueError, match="holds no synthesis"):
    Frontier.from_json({"sequence": "s", "task_index": 1, "task": "t", "metric": "rmse", "fraction": 1.0,
                        "data": {"datasets": [], "synthetic": False}, "seconds": {"wall": 1.0},
                        "ranked": [{**item, "order": 0}]})
