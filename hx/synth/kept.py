"""Finished candidates kept as small JSON files, so that a synthesis resumed without its checkpoint files
trains again only what it needs.

A candidate's checkpoint (`hx.compile.checkpoint`, `hx.synth.jobs.Checkpoints`) holds its variables and
Adam's state: megabytes, kept on the machine that trained it. Given a `scores` directory as well, each
candidate trained to the end also leaves there its outcome without variables (status, failure reason,
scores, epochs, steps, times and the epochs' history: a few KB), one file per candidate:

    SCORES/<hash of the key>.json    {"format": "hx-kept-candidate/1", "key": ..., "outcome": {...}}

Called again where the checkpoint files are gone (a committed reproduction resumed on a fresh clone, where
a run starts from what git holds), a candidate with such a file is not trained: its result
is the file's, with no variables (`JobResult.restored`). Only the winner needs variables (the library
keeps its fresh functions), and `hx.synthesize` trains it again with its job seed, as
`hx.synth.synthesize.retrain_winner` does for a recorded task.

The key says what was trained, as canonical JSON (`hx.synth.jobs.Checkpoints.key`, `hx.canonical_json`): the
task (its name and data fingerprint), the program, its fresh types, the seeded training settings, the
module settings, the schedule and the library's function names, not their weights' hashes: a library
rebuilt on another machine (`retrain_winner`: equal up to the last digits of float32
arithmetic) keeps the files usable. On the machine that trained them the resumed synthesis gives the
uninterrupted one's ranking and winner bit for bit; on another, the kept scores are the first machine's,
and the winner's variables (and its scores in the ranking) are the retrained ones.

A file that cannot be read, or that holds another key, raises `CheckpointError` with its path. A file
kept by an hx that keyed candidates by reprs (a run directory of layout version 1,
`hx.synth.run_directory`) has another name: its candidate is trained again.
"""

from __future__ import annotations

import os
from pathlib import Path

from hx.canonical_json import text_key
from hx.compile.checkpoint import CheckpointError, history_from_rows, history_rows
from hx.compile.fitting import Outcome
from hx.synth.jsonfiles import (
    Invalid,
    JsonFileError,
    anything,
    array,
    integer,
    jsonable,
    nullable,
    number,
    obj,
    read_json,
    score,
    text,
    write_json,
)

__all__ = ["kept_path", "save_kept", "load_kept"]

_FORMAT = "hx-kept-candidate/1"
# The Outcome fields a kept file holds (all but the variables, the paused state and the history, which is
# written as rows).
_FIELDS = ("status", "reason", "val_score", "test_score", "epochs_run", "best_epoch", "steps_run",
           "compile_seconds", "train_seconds", "eval_seconds", "seconds")


def kept_path(directory: os.PathLike | str, key: str) -> Path:
  """The file of the candidate `key` (its canonical JSON text) in `directory`, named by the key's hash
  (`hx.canonical_json.text_key`: the `content_key` of what the key writes)."""
  return Path(directory) / f"{text_key(key)}.json"


def save_kept(path: os.PathLike | str, key: str, outcome: Outcome) -> None:
  """Writes `outcome` (without variables or state) to `path` under `key`, atomically."""
  fields = {name: jsonable(getattr(outcome, name)) for name in _FIELDS}
  write_json(Path(path), {"format": _FORMAT, "key": key,
                          "outcome": {**fields, "history": history_rows(outcome.history)}})


# What a kept file's outcome holds (`save_kept`): each field of `_FIELDS`, and the history as rows of
# `history_rows` ([epoch, train_loss, val_score, val_loss, train_seconds, val_seconds]).
_SECONDS = number(minimum=0)
_OUTCOME = obj({
    "status": text(choices=("trained", "failed")), "reason": nullable(text()), "val_score": score,
    "test_score": nullable(score),
    "epochs_run": integer(minimum=0), "best_epoch": integer(minimum=0), "steps_run": integer(minimum=0),
    "compile_seconds": _SECONDS, "train_seconds": _SECONDS, "eval_seconds": _SECONDS, "seconds": _SECONDS,
    "history": array(array(score)),
})
_KEPT = obj({"format": anything, "key": anything, "outcome": anything})


def _history_row(row: list, where: str) -> None:
  """A history row: six values, the epoch an integer >= 1, the losses and scores scores, the times >= 0."""
  if len(row) != 6:
    raise Invalid(where, f"expected 6 values [epoch, train_loss, val_score, val_loss, train_seconds, "
                         f"val_seconds], got {len(row)}")
  integer(minimum=1)(row[0], f"{where}[0]")
  for i in (4, 5):
    _SECONDS(row[i], f"{where}[{i}]")


def load_kept(path: os.PathLike | str, key: str) -> Outcome | None:
  """The outcome kept at `path` (no variables), or None if there is no file. CheckpointError naming the
  file if it is not a kept candidate (unreadable, another format, a field missing, of another type or
  out of range) or was written for another key."""
  path = Path(path)
  if not path.exists():
    return None
  again = "; delete it to train this candidate again"
  try:
    obj_ = read_json(path)
  except JsonFileError as err:
    raise CheckpointError(path, f"not a kept candidate: it {err.problem}{again}") from None
  if not isinstance(obj_, dict) or obj_.get("format") != _FORMAT:
    found = obj_.get("format") if isinstance(obj_, dict) else None
    raise CheckpointError(path, f"not a kept candidate (format {_shown_format(found)}, expected {_FORMAT!r})")
  if obj_.get("key") != key:
    raise CheckpointError(path, f"kept for {_shown_format(obj_.get('key'))}, not for {key!r}")
  try:
    _KEPT(obj_, "")
    _OUTCOME(obj_["outcome"], "outcome")
    for i, row in enumerate(obj_["outcome"]["history"]):
      _history_row(row, f"outcome.history[{i}]")
  except Invalid as err:
    raise CheckpointError(path, f"a kept candidate with a missing or malformed field ({err}){again}") \
        from None
  fields = obj_["outcome"]
  # float() reads the texts of non-finite scores ("nan", "inf") as `score` admits them.
  floats = {name: float(fields[name]) for name in ("val_score", "compile_seconds", "train_seconds",
                                                   "eval_seconds", "seconds")}
  counts = {name: fields[name] for name in ("epochs_run", "best_epoch", "steps_run")}
  test = fields["test_score"]
  return Outcome(status=fields["status"], reason=fields["reason"],
                 test_score=None if test is None else float(test),
                 history=tuple(history_from_rows(fields["history"])), **floats, **counts)


def _shown_format(value: object) -> str:
  """A value of the file as a message shows it (its repr, cut to 80 characters)."""
  shown = repr(value)
  return shown if len(shown) <= 80 else shown[:77] + "..."
