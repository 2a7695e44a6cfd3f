"""Tune runs that survive interruption: a run saved to disk as it trains, and resumed from the file.

    result = tune_checkpointed(compiled, frozen, data, objective, config,
                               Checkpoint("runs/ckpt/regress.npz", key="regress_mnist nn_1 seed 0"))

The paper trains its regressions for 1,000 epochs (hours to days on a CPU: RESULTS.md, "GS2 task 2"). A
process that dies in the middle of such a run would otherwise lose all of it. `tune_checkpointed` trains
in chunks of whole epochs with `tune(..., until=...)` and, after each chunk, writes the paused run's
`TuneState` to `Checkpoint.path`; called again with the same checkpoint it continues from the file. A run
that pauses at an epoch's end and resumes goes on exactly as it would have without the pause (the same
steps, batches, dropout keys and optimiser state: `hx.compile.tuning`), so the scores are those of an
uninterrupted run, bit for bit on the CPU. Chunks are as many epochs as take about `every_seconds` (at
least one), so the files cost little time however short an epoch is.

When the run ends (its last epoch, early stopping, or a failure) the file is replaced by the finished
result: the chosen variables, scores, history and failure reason, without the optimiser state. Called
again, `tune_checkpointed` returns that result without training or scoring anything.

A checkpoint file is one NumPy `.npz` archive (loaded with `allow_pickle=False`, so a file cannot run
code): the arrays of the state, and a JSON text with everything else, including `Checkpoint.key`. The key
says what was trained (the program, its settings, the data): a file whose key differs is refused with
both keys in the message, as is a file whose arrays do not fit the program's variables (with the first
that differs) or what its JSON text says it holds, a JSON text with a field missing, of another type or
out of range (with the field: "meta.epoch: expected an integer >= 0, got -1"), or a file that is not a
checkpoint; each as one `CheckpointError` naming the file. Files are written atomically (a
temporary file in the same directory, synced, then renamed): a reader finds the previous checkpoint or
the new one, never a part of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
import time
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from absl import logging

from hx.atomic import write_atomically
from hx.canonical_json import canonical_json, content_key
from hx.compile.tuning import (
  EpochRecord,
  TuneConfig,
  TuneData,
  TuneResult,
  TuneState,
  optimizer,
  resolve_objective,
  tune,
)
from hx.jsonread import (
  Invalid,
  JsonFileError,
  array,
  boolean,
  integer,
  nullable,
  number,
  obj,
  parse_json,
  row,
  score,
  text,
)

if TYPE_CHECKING:
  from collections.abc import Iterable

  import chex

  from hx.compile.losses import Objective
  from hx.compile.tune_inputs import Tunable

__all__ = ["Checkpoint", "CheckpointError", "checkpoint_in", "describe_checkpoint", "fingerprint",
           "HISTORY_ROW", "history_from_rows", "history_rows", "load_checkpoint", "save_checkpoint",
           "tune_checkpointed"]

_FORMAT = "hx-tune-checkpoint/1"


class CheckpointError(ValueError):
  """A checkpoint file that cannot be used: missing fields, another run's key, arrays that do not fit."""

  def __init__(self, path: os.PathLike | str, problem: str):
    super().__init__(f"checkpoint {os.fspath(path)}: {problem}")
    self.path = os.fspath(path)


@dataclasses.dataclass(frozen=True)
class Checkpoint:
  """Where a Tune run is saved, what it is, and how often it is saved.

  Attributes:
    path: the checkpoint file (NumPy .npz); its directory is created when first written.
    key: what is trained (program, settings, data), in any text form; a file saved under another key
      is refused rather than resumed.
    every_seconds: write the file about this often (whole epochs, at least one per chunk).
  """
  path: str | os.PathLike
  key: str
  every_seconds: float = 120.0

  def __post_init__(self):
    if not self.every_seconds >= 0:
      raise ValueError(f"Checkpoint.every_seconds must be >= 0, got {self.every_seconds}")


def checkpoint_in(directory: os.PathLike | str, what: dict[str, object],
                  every_seconds: float = 120.0) -> Checkpoint:
  """The checkpoint of the run `what` in `directory`: `what` is a plain dict of what is trained (JSON
  values and settings dataclasses: the program, the training settings, the data's fingerprint, ...), whose
  canonical JSON (`hx.canonical_json.canonical_json`, every field of every dataclass) is the checkpoint's key,
  and whose hash (`hx.canonical_json.content_key`) names its file, so that one directory holds the files of
  many runs (a synthesis's candidates) without clashes. A file saved by an hx that keyed checkpoints by
  reprs has another name: its run is trained again."""
  return Checkpoint(os.path.join(os.fspath(directory), f"{content_key(what)}.npz"), canonical_json(what),
                    every_seconds)


def fingerprint(tree: chex.ArrayTree) -> str:
  """A hash of every array of `tree` (a pytree: task data, variables) with its dtype and shape, for
  checkpoint keys: a run is never resumed on other data or from other starting variables."""
  digest = hashlib.blake2b(digest_size=16)
  for leaf in jax.tree.leaves(jax.device_get(tree)):
    a = np.ascontiguousarray(np.asarray(leaf))
    digest.update(f"{a.dtype}{a.shape}".encode())
    digest.update(a.reshape(-1).view(np.uint8))
  return digest.hexdigest()


# ---------------------------------------------------------------------------------------------------
# The file: arrays in groups, everything else as one JSON text.

def _group_shapes(compiled: Tunable, config: TuneConfig) -> dict[str, Any]:
  """The tree each array group of a checkpoint must fill, as shape-dtype structures ("variables" is the
  shape of both a paused run's best variables and a finished run's chosen ones)."""
  variables = jax.eval_shape(compiled.init, jax.random.key(0))
  params = variables["params"]
  collections = {k: v for k, v in variables.items() if k != "params"}
  return {"params": params, "collections": collections,
          "opt_state": jax.eval_shape(optimizer(config).init, params), "variables": variables}


def _to_host(tree: chex.ArrayTree) -> list[np.ndarray]:
  return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


def _fill(path: Path, group: str, target: Any, arrays: dict[str, np.ndarray],
          flag: str | None = None) -> chex.ArrayTree:
  """`target`'s tree with the group's arrays ("group/0", "group/1", ...) as leaves; CheckpointError at the
  first that does not fit. `flag`: the meta field that says the file holds the group ("has_best")."""
  leaves, treedef = jax.tree.flatten(target)
  stored = {k for k in arrays if k.startswith(group + "/")}
  if len(stored) != len(leaves):
    why = f"meta.{flag} is true, but " if flag and not stored else ""
    raise CheckpointError(path, f"{why}{group} holds {len(stored)} arrays where the program's has "
                                f"{len(leaves)}: saved for another program, or altered")
  names = [f"{group}/{i}" for i in range(len(leaves))]
  if stored != set(names):
    raise CheckpointError(path, f"{group} holds arrays {sorted(stored - set(names))} where the program's are "
                                f"{group}/0 to {group}/{len(leaves) - 1}: not a Tune checkpoint's")
  out = []
  for i, (name, want) in enumerate(zip(names, leaves)):
    got = arrays[name]
    if got.shape != tuple(want.shape) or got.dtype != np.dtype(want.dtype):
      where = jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path(target)[0][i][0])
      raise CheckpointError(path, f"{group}{where} is {got.dtype}{list(got.shape)} where the program's is "
                                  f"{np.dtype(want.dtype)}{list(want.shape)}: saved for another program")
    out.append(got)
  return jax.tree.unflatten(treedef, out)


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
  write_atomically(path, lambda f: np.savez(f, **arrays))


def _float(x: float | None) -> float | str | None:
  return x if x is None or math.isfinite(x) else str(x)


def _unfloat(x: float | str | None) -> float | None:
  return x if x is None else float(x)


def history_rows(history: Iterable[EpochRecord]) -> list[list]:
  """Epoch records as JSON rows [epoch, train_loss, val_score, val_loss, train_seconds, val_seconds]
  (a non-finite score as its text)."""
  return [[r.epoch, r.train_loss, _float(r.val_score), _float(r.val_loss), r.train_seconds, r.val_seconds]
          for r in history]


HISTORY_ROW = row(integer(minimum=1), score, score, score, number(minimum=0), number(minimum=0))
"""The schema of one row of `history_rows` (`hx.jsonread`): the epoch from 1, the training loss and the
validation score and loss as scores (a non-finite one as its text, or a NaN literal), the seconds >= 0."""


def history_from_rows(rows: list) -> list[EpochRecord]:
  """The epoch records of `history_rows`."""
  return [EpochRecord(int(e), float(t), float(v), float(vl), float(ts), float(vs))
          for e, t, v, vl, ts, vs in rows]


_SECONDS = ("init_seconds", "compile_seconds", "train_seconds", "eval_seconds")


def save_checkpoint(path: os.PathLike | str, key: str, run: TuneState | TuneResult,
                    seconds: dict[str, float] | None = None) -> None:
  """Writes a paused run (`TuneState`) or a finished one (`TuneResult`) to `path` under `key`, atomically;
  with the wall seconds spent so far (`init_seconds`, `compile_seconds`, `train_seconds`, `eval_seconds`:
  `seconds` for a paused run, the result's own for a finished one), so that a run resumed in another
  process reports what it cost in all."""
  path = Path(path)
  arrays: dict[str, np.ndarray] = {}

  def put(group: str, tree: chex.ArrayTree) -> None:
    for i, leaf in enumerate(_to_host(tree)):
      arrays[f"{group}/{i}"] = leaf

  if isinstance(run, TuneState):
    put("params", run.params)
    put("collections", dict(run.collections))
    put("opt_state", run.opt_state)
    if run.best_variables is not None:
      put("best", dict(run.best_variables))
    meta = {"kind": "paused", "epoch": run.epoch, "step": run.step,
            "loss_sum": float(np.asarray(run.loss_sum)),
            "score": _float(run.score), "best_score": _float(run.best_score), "best_epoch": run.best_epoch,
            "has_best": run.best_variables is not None, "since_best": run.since_best,
            "history": history_rows(run.history), "steps_run": run.steps_run, "seed": run.seed,
            "batch_size": run.batch_size, "learning_rate": run.learning_rate,
            "steps_per_epoch": run.steps_per_epoch}
  elif isinstance(run, TuneResult):
    if run.state is not None:
      raise ValueError("a paused TuneResult: save its .state instead")
    if run.variables is not None:
      put("variables", dict(run.variables))
    meta = {"kind": "finished", "val_score": _float(run.val_score), "test_score": _float(run.test_score),
            "best_epoch": run.best_epoch, "epochs_run": run.epochs_run, "history": history_rows(run.history),
            "failed": run.failed, "steps_run": run.steps_run, "has_variables": run.variables is not None}
    seconds = {name: getattr(run, name) for name in _SECONDS}
  else:
    raise TypeError(f"save_checkpoint takes a TuneState or a TuneResult, got {type(run).__name__}")
  meta.update(format=_FORMAT, key=key,
              seconds={name: float((seconds or {}).get(name, 0.0)) for name in _SECONDS})
  arrays["meta"] = np.array(json.dumps(meta))
  _write_npz(path, arrays)


# What a checkpoint's JSON text holds (`save_checkpoint`), per kind: what `load_checkpoint` and
# `describe_checkpoint` read, each field of its type and in its range. "seconds" is missing from files
# written before it was kept.
_COUNT = integer(minimum=0)
_COMMON = {"format": text(), "key": text(), "best_epoch": _COUNT, "history": array(HISTORY_ROW),
           "steps_run": _COUNT}
_SAVED_SECONDS = {"seconds": obj({}, optional={name: number(minimum=0) for name in _SECONDS})}
_META = {
    "paused": obj({**_COMMON, "kind": text(), "epoch": _COUNT, "step": _COUNT, "loss_sum": score,
                   "score": score, "best_score": score, "has_best": boolean, "since_best": _COUNT,
                   "seed": integer(), "batch_size": integer(minimum=1), "learning_rate": number(above=0),
                   "steps_per_epoch": integer(minimum=1)}, optional=_SAVED_SECONDS),
    "finished": obj({**_COMMON, "kind": text(), "val_score": score, "test_score": nullable(score),
                     "epochs_run": _COUNT, "failed": nullable(text()), "has_variables": boolean},
                    optional=_SAVED_SECONDS),
}

# What numpy and zipfile raise on a damaged or foreign archive (a cut file, altered bytes, a member that is
# compressed, encrypted or not an array, a header claiming more than the file holds).
_DAMAGED = (ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            RuntimeError, MemoryError, struct.error)


def _read(path: Path, with_arrays: bool = True) -> tuple[dict, dict[str, np.ndarray]]:
  """(meta, arrays) of a checkpoint file, the meta checked against its kind's schema and the arrays' names
  against the meta; CheckpointError naming the file (and the field, or the array) if it is not one.
  Without `with_arrays` only the meta is read (arrays {})."""
  again = "; delete it to start this training again"
  try:
    loaded = np.load(path, allow_pickle=False)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
      raise ValueError("one NumPy array, not an .npz archive of them")
    with loaded as f:
      names = [k for k in f.files if k != "meta"]
      text_ = f["meta"] if "meta" in f.files else None
      arrays = {k: f[k] for k in names} if with_arrays else {}
  except OSError as err:
    raise CheckpointError(path, f"cannot be read ({err.strerror or err})") from None
  except _DAMAGED as err:
    raise CheckpointError(path, f"not a Tune checkpoint ({type(err).__name__}: {err}){again}") from None
  meta = _meta(path, text_)
  _check_names(path, meta, names)
  for name, a in arrays.items():
    if not isinstance(a, np.ndarray):  # a member without .npy: its bytes
      raise CheckpointError(path, f"array {name!r} is not a NumPy array (.npy){again}")
  return meta, arrays


def _meta(path: Path, value: np.ndarray | bytes | None) -> dict:
  """The checkpoint's JSON text (the "meta" array) as a value that fits its kind's schema."""
  if value is None:
    raise CheckpointError(path, "not a Tune checkpoint (no meta array)")
  if not (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "U"):
    got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
    raise CheckpointError(path, f"meta: expected a JSON text (a 0-d str array), got {got}")
  try:
    meta = parse_json(str(value), path)
  except JsonFileError as err:
    raise CheckpointError(path, f"meta {err.problem}") from None
  if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
    found = meta.get("format") if isinstance(meta, dict) else None
    raise CheckpointError(path, f"not a Tune checkpoint (format {found!r:.80}, expected {_FORMAT!r})")
  try:
    text(tuple(_META))(meta.get("kind"), "meta.kind")
    _META[meta["kind"]](meta, "meta")
  except Invalid as err:
    raise CheckpointError(path, str(err)) from None
  return meta


def _check_names(path: Path, meta: dict, names: list[str]) -> None:
  """Refuses an array that is in none of the groups the meta's run has (a paused run's params,
  collections, opt_state and, where it has one, best; a finished run's variables if it has them)."""
  if meta["kind"] == "paused":
    flag = "has_best"
    groups = ("params", "collections", "opt_state") + (("best",) if meta["has_best"] else ())
  else:
    flag, groups = "has_variables", ("variables",) if meta["has_variables"] else ()
  for name in names:
    group, _, index = name.partition("/")
    if group not in groups or not index.isdigit() or index != str(int(index)):
      raise CheckpointError(path, f"array {name!r:.80} is none of a {meta['kind']} run's with meta.{flag} "
                                  f"{str(meta[flag]).lower()} ({', '.join(groups) or 'none'}): altered, or "
                                  "not a Tune checkpoint's")


def describe_checkpoint(path: os.PathLike | str) -> dict:
  """What a checkpoint file holds, without the program: {"key", "kind" ("paused" or "finished"),
  "epochs" (full epochs done), "val_history" (the validation score after each), "best_val",
  "best_epoch"}: how far a long run has come. CheckpointError if the file is not a checkpoint."""
  meta, _ = _read(Path(path), with_arrays=False)
  paused = meta["kind"] == "paused"
  # The best as Tune chose it (a pause inside an epoch may hold it), not recomputed from the history.
  best = _unfloat(meta["best_score"] if paused else meta["val_score"])
  return {"key": meta["key"], "kind": meta["kind"],
          "epochs": meta["epoch"] if paused else meta["epochs_run"],
          "val_history": [float(r[2]) for r in meta["history"]],
          "best_val": math.nan if best is None else best, "best_epoch": meta["best_epoch"]}


def load_checkpoint(path: os.PathLike | str, key: str, compiled: Tunable,
                    config: TuneConfig) -> TuneState | TuneResult | None:
  """The run saved at `path`: a `TuneState` to resume, a finished `TuneResult` (without `objective`), or
  None if there is no file. CheckpointError naming the file if it is not a checkpoint (not an .npz
  archive, no meta, a meta field missing, of another type or out of range: "checkpoint run.npz:
  meta.epoch: expected an integer >= 0, got -1"), was saved under another key, or holds arrays that do not
  fit `compiled`'s variables (or Adam's state for them) or what its meta says it holds."""
  path = Path(path)
  if not path.exists():
    return None
  meta, arrays = _read(path)
  if meta["key"] != key:
    raise CheckpointError(path, f"saved for {meta['key']!r}, not for {key!r}")
  shapes = _group_shapes(compiled, config)
  if meta["kind"] == "finished":
    variables = (_fill(path, "variables", shapes["variables"], arrays, "has_variables")
                 if meta["has_variables"] else None)
    return TuneResult(
        variables=variables, val_score=float(meta["val_score"]), test_score=_unfloat(meta["test_score"]),
        best_epoch=meta["best_epoch"], epochs_run=meta["epochs_run"],
        history=history_from_rows(meta["history"]), failed=meta["failed"], steps_run=meta["steps_run"],
        **_seconds(meta))
  params, collections, opt_state = (_fill(path, group, shapes[group], arrays)
                                    for group in ("params", "collections", "opt_state"))
  best = _fill(path, "best", shapes["variables"], arrays, "has_best") if meta["has_best"] else None
  return TuneState(
      params=params, collections=collections, opt_state=opt_state,
      epoch=meta["epoch"], step=meta["step"], loss_sum=np.float32(meta["loss_sum"]),
      score=float(meta["score"]),
      best_variables=best,
      best_score=float(meta["best_score"]), best_epoch=meta["best_epoch"], since_best=meta["since_best"],
      history=tuple(history_from_rows(meta["history"])), steps_run=meta["steps_run"], seed=meta["seed"],
      batch_size=meta["batch_size"], learning_rate=meta["learning_rate"],
      steps_per_epoch=meta["steps_per_epoch"])


def _seconds(meta: dict) -> dict[str, float]:
  """The wall seconds a file's run had cost when it was saved (zeros in files written before they were
  kept)."""
  saved = meta.get("seconds") or {}
  return {name: float(saved.get(name, 0.0)) for name in _SECONDS}


def _saved_seconds(path: os.PathLike | str) -> dict[str, float]:
  """`_seconds` of the checkpoint at `path`, reading its JSON text only."""
  return _seconds(_read(Path(path), with_arrays=False)[0])


# ---------------------------------------------------------------------------------------------------
# Training in chunks.

def tune_checkpointed(compiled: Tunable, frozen: chex.ArrayTree, data: TuneData, objective: Objective,
                      config: TuneConfig, checkpoint: Checkpoint, *, variables: chex.ArrayTree | None = None,
                      resume: TuneState | None = None) -> TuneResult:
  """`tune(compiled, frozen, data, objective, config, variables=variables)`, saved to `checkpoint.path` as it
  trains and resumed from it when the file exists (module docstring). The same result as the
  uninterrupted `tune`. (`variables`, the starting point, is used only when there is no file: make the
  key say what they are, e.g. with `fingerprint`.) `resume`: a run paused in memory (successive
  halving's last rung) to continue, unless the file holds the same run further on.

  The returned result's seconds (init, compile, train, eval) are those of every chunk that made it,
  earlier calls' included (each file keeps them), except that a run continued from `resume` counts from
  there; its history holds every epoch. A finished file returns its result (objective resolved again),
  with the seconds it cost, without training or scoring.
  """
  saved = load_checkpoint(checkpoint.path, checkpoint.key, compiled, config)
  if isinstance(saved, TuneResult):
    return dataclasses.replace(saved, objective=resolve_objective(compiled, objective))
  state: TuneState | None = saved
  # The seconds of the chunks that made the file's run (earlier calls, other processes), then this call's.
  seconds = _saved_seconds(checkpoint.path) if saved is not None else dict.fromkeys(_SECONDS, 0.0)
  if resume is not None and (saved is None or resume.position > saved.position):
    state = resume
    seconds = dict.fromkeys(_SECONDS, 0.0)  # a run paused in memory: its caller counts what it cost
  chunk = 1
  while True:
    done = 0 if state is None else state.epoch
    start = time.perf_counter()
    start_from = variables if state is None else None
    r = tune(compiled, frozen, data, objective, config, variables=start_from, resume=state,
             until=done + chunk)
    elapsed = time.perf_counter() - start
    for name in seconds:
      seconds[name] += getattr(r, name)
    if r.state is None:
      result = dataclasses.replace(r, **seconds)
      save_checkpoint(checkpoint.path, checkpoint.key, result)
      return result
    save_checkpoint(checkpoint.path, checkpoint.key, r.state, seconds)
    state = r.state
    logging.info("%s: %d of %d epochs, validation %.4g (best %.4g at epoch %d)", checkpoint.path, state.epoch,
                 config.epochs, state.score, state.best_score, state.best_epoch)
    # Epochs per chunk from this chunk's pace (its compilation left out), so a file is written about
    # every `every_seconds`.
    per_epoch = max(elapsed - r.compile_seconds, 1e-6) / max(state.epoch - done, 1)
    chunk = max(1, int(checkpoint.every_seconds // per_epoch))
