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

The key says what was trained: the task (its name and data fingerprint), the program, its fresh types,
the seeded training settings, the module settings and the library's function names, not their weights'
hashes: a library rebuilt on another machine (`retrain_winner`: equal up to the last digits of float32
arithmetic) keeps the files usable. On the machine that trained them the resumed synthesis gives the
uninterrupted one's ranking and winner bit for bit; on another, the kept scores are the first machine's,
and the winner's variables (and its scores in the ranking) are the retrained ones.

A file that cannot be read, or that holds another key, raises `CheckpointError` with its path.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hx.compile.checkpoint import CheckpointError, history_from_rows, history_rows
from hx.synth.fitting import Outcome
from hx.synth.jsonfiles import jsonable, write_json

__all__ = ["kept_path", "save_kept", "load_kept"]

_FORMAT = "hx-kept-candidate/1"
# The Outcome fields a kept file holds (all but the variables, the paused state and the history, which is
# written as rows).
_FIELDS = ("status", "reason", "val_score", "test_score", "epochs_run", "best_epoch", "steps_run",
           "compile_seconds", "train_seconds", "eval_seconds", "seconds")


def kept_path(directory: os.PathLike | str, key: str) -> Path:
  """The file of the candidate `key` in `directory` (named by a hash of the key)."""
  return Path(directory) / f"{hashlib.blake2b(key.encode(), digest_size=16).hexdigest()}.json"


def save_kept(path: os.PathLike | str, key: str, outcome: Outcome) -> None:
  """Writes `outcome` (without variables or state) to `path` under `key`, atomically."""
  fields = {name: jsonable(getattr(outcome, name)) for name in _FIELDS}
  write_json(Path(path), {"format": _FORMAT, "key": key,
                          "outcome": {**fields, "history": history_rows(outcome.history)}})


def load_kept(path: os.PathLike | str, key: str) -> Outcome | None:
  """The outcome kept at `path` (no variables), or None if there is no file. CheckpointError if the file
  is not a kept candidate or was written for another key."""
  path = Path(path)
  if not path.exists():
    return None
  try:
    obj = json.loads(path.read_text("utf-8"))
  except (OSError, UnicodeDecodeError, ValueError) as err:
    raise CheckpointError(path, f"not a kept candidate ({type(err).__name__}: {err}); delete it to train "
                                "this candidate again") from None
  if not isinstance(obj, dict) or obj.get("format") != _FORMAT:
    found = obj.get("format") if isinstance(obj, dict) else None
    raise CheckpointError(path, f"not a kept candidate (format {found!r}, expected {_FORMAT!r})")
  if obj.get("key") != key:
    raise CheckpointError(path, f"kept for {obj.get('key')!r}, not for {key!r}")
  try:
    fields = obj["outcome"]
    scores = {name: float(fields[name]) for name in ("val_score", "compile_seconds", "train_seconds",
                                                      "eval_seconds", "seconds")}
    test = fields["test_score"]
    return Outcome(status=str(fields["status"]), reason=fields["reason"],
                   test_score=None if test is None else float(test), epochs_run=int(fields["epochs_run"]),
                   best_epoch=int(fields["best_epoch"]), steps_run=int(fields["steps_run"]),
                   history=tuple(history_from_rows(fields["history"])), **scores)
  except (KeyError, TypeError, ValueError) as err:
    raise CheckpointError(path, f"a kept candidate with a missing or malformed field ({type(err).__name__}: "
                                f"{err}); delete it to train this candidate again") from None
