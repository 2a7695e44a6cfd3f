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
that differs), or a file that is not a checkpoint (with its path). Files are written atomically (a
temporary file in the same directory, synced, then renamed): a reader finds the previous checkpoint or
the new one, never a part of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax
from absl import logging

from hx.atomic import write_atomically
from hx.compile.tuning import (
  EpochRecord,
  TuneConfig,
  TuneData,
  TuneResult,
  TuneState,
  resolve_objective,
  tune,
)

__all__ = ["Checkpoint", "CheckpointError", "checkpoint_in", "describe_checkpoint", "fingerprint",
           "history_from_rows", "history_rows", "load_checkpoint", "save_checkpoint", "tune_checkpointed"]

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


def checkpoint_in(directory: os.PathLike | str, key: str, every_seconds: float = 120.0) -> Checkpoint:
  """The checkpoint of the run `key` in `directory`: its file is named by a hash of the key, so that one
  directory holds the files of many runs (a synthesis's candidates) without clashes."""
  name = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
  return Checkpoint(os.path.join(os.fspath(directory), f"{name}.npz"), key, every_seconds)


def fingerprint(tree: Any) -> str:
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

def _group_shapes(compiled: Any, config: TuneConfig) -> dict[str, Any]:
  """The tree each array group of a checkpoint must fill, as shape-dtype structures ("variables" is the
  shape of both a paused run's best variables and a finished run's chosen ones)."""
  variables = jax.eval_shape(compiled.init, jax.random.key(0))
  params = variables["params"]
  collections = {k: v for k, v in variables.items() if k != "params"}
  return {"params": params, "collections": collections,
          "opt_state": jax.eval_shape(optax.adam(config.learning_rate).init, params), "variables": variables}


def _to_host(tree: Any) -> list[np.ndarray]:
  return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


def _fill(path: Path, group: str, target: Any, arrays: dict[str, np.ndarray]) -> Any:
  """`target`'s tree with the group's arrays as leaves; CheckpointError at the first that does not fit."""
  leaves, treedef = jax.tree.flatten(target)
  stored = sorted((k for k in arrays if k.startswith(group + "/")), key=lambda k: int(k.split("/")[1]))
  if len(stored) != len(leaves):
    raise CheckpointError(path, f"{group} holds {len(stored)} arrays where the program's has {len(leaves)}: "
                                "saved for another program")
  out = []
  for i, (name, want) in enumerate(zip(stored, leaves)):
    got = arrays[name]
    if got.shape != tuple(want.shape) or got.dtype != np.dtype(want.dtype):
      where = jax.tree_util.keystr(jax.tree_util.tree_flatten_with_path(target)[0][i][0])
      raise CheckpointError(path, f"{group}{where} is {got.dtype}{list(got.shape)} where the program's is "
                                  f"{np.dtype(want.dtype)}{list(want.shape)}: saved for another program")
    out.append(got)
  return jax.tree.unflatten(treedef, out)


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
  write_atomically(path, lambda f: np.savez(f, **arrays))


def _float(x: float | None) -> Any:
  return x if x is None or math.isfinite(x) else str(x)


def _unfloat(x: Any) -> float | None:
  return x if x is None else float(x)


def history_rows(history: Any) -> list[list]:
  """Epoch records as JSON rows [epoch, train_loss, val_score, val_loss, train_seconds, val_seconds]
  (a non-finite score as its text)."""
  return [[r.epoch, r.train_loss, _float(r.val_score), _float(r.val_loss), r.train_seconds, r.val_seconds]
          for r in history]


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

  def put(group: str, tree: Any) -> None:
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


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
  """(meta, arrays) of a checkpoint file; CheckpointError if it is not one."""
  try:
    with np.load(path, allow_pickle=False) as f:
      arrays = {k: f[k] for k in f.files}
    meta = json.loads(str(arrays.pop("meta")))
  except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:  # truncated, altered, other
    raise CheckpointError(path, f"not a Tune checkpoint ({type(err).__name__}: {err}); delete it to start "
                                "this training again") from None
  if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
    found = meta.get("format") if isinstance(meta, dict) else None
    raise CheckpointError(path, f"not a Tune checkpoint (format {found!r}, expected {_FORMAT!r})")
  if meta.get("kind") not in ("paused", "finished"):
    raise CheckpointError(path, f"kind {meta.get('kind')!r} is neither 'paused' nor 'finished'")
  return meta, arrays


def describe_checkpoint(path: os.PathLike | str) -> dict:
  """What a checkpoint file holds, without the program: {"key", "kind" ("paused" or "finished"),
  "epochs" (full epochs done), "val_history" (the validation score after each), "best_val",
  "best_epoch"}: how far a long run has come. CheckpointError if the file is not a checkpoint."""
  meta, _ = _read(Path(path))
  paused = meta["kind"] == "paused"
  # The best as Tune chose it (a pause inside an epoch may hold it), not recomputed from the history.
  best = _unfloat(meta["best_score"] if paused else meta["val_score"])
  return {"key": meta.get("key"), "kind": meta["kind"],
          "epochs": meta["epoch"] if paused else meta["epochs_run"],
          "val_history": [float(r[2]) for r in meta.get("history", [])],
          "best_val": math.nan if best is None else best, "best_epoch": meta["best_epoch"]}


def load_checkpoint(path: os.PathLike | str, key: str, compiled: Any,
                    config: TuneConfig) -> TuneState | TuneResult | None:
  """The run saved at `path`: a `TuneState` to resume, a finished `TuneResult` (without `objective`), or
  None if there is no file. CheckpointError if the file is not a checkpoint, was saved under another key,
  or holds arrays that do not fit `compiled`'s variables (or Adam's state for them)."""
  path = Path(path)
  if not path.exists():
    return None
  meta, arrays = _read(path)
  if meta.get("key") != key:
    raise CheckpointError(path, f"saved for {meta.get('key')!r}, not for {key!r}")
  shapes = _group_shapes(compiled, config)
  try:
    if meta["kind"] == "finished":
      variables = _fill(path, "variables", shapes["variables"], arrays) if meta["has_variables"] else None
      return TuneResult(
          variables=variables, val_score=float(meta["val_score"]), test_score=_unfloat(meta["test_score"]),
          best_epoch=meta["best_epoch"], epochs_run=meta["epochs_run"],
          history=history_from_rows(meta["history"]), failed=meta["failed"], steps_run=meta["steps_run"],
          **_seconds(meta))
    return TuneState(
        params=_fill(path, "params", shapes["params"], arrays),
        collections=_fill(path, "collections", shapes["collections"], arrays),
        opt_state=_fill(path, "opt_state", shapes["opt_state"], arrays),
        epoch=meta["epoch"], step=meta["step"], loss_sum=np.float32(meta["loss_sum"]),
        score=float(meta["score"]),
        best_variables=_fill(path, "best", shapes["variables"], arrays) if meta["has_best"] else None,
        best_score=float(meta["best_score"]), best_epoch=meta["best_epoch"], since_best=meta["since_best"],
        history=tuple(history_from_rows(meta["history"])), steps_run=meta["steps_run"], seed=meta["seed"],
        batch_size=meta["batch_size"], learning_rate=meta["learning_rate"],
        steps_per_epoch=meta["steps_per_epoch"])
  except KeyError as err:
    raise CheckpointError(path, f"field {err} is missing") from None


def _seconds(meta: dict) -> dict[str, float]:
  """The wall seconds a file's run had cost when it was saved (zeros in files written before they were
  kept)."""
  saved = meta.get("seconds") or {}
  return {name: float(saved.get(name, 0.0)) for name in _SECONDS}


def _saved_seconds(path: os.PathLike | str) -> dict[str, float]:
  """`_seconds` of the checkpoint at `path`, reading its JSON text only."""
  with np.load(path, allow_pickle=False) as f:
    return _seconds(json.loads(str(f["meta"])))


# ---------------------------------------------------------------------------------------------------
# Training in chunks.

def tune_checkpointed(compiled: Any, frozen: Any, data: TuneData, objective: Any, config: TuneConfig,
                      checkpoint: Checkpoint, *, variables: Any = None,
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
