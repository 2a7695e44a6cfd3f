"""Where an evaluation writes, and reading its records back.

    DIR/settings.json                               the run's settings (`EvalConfig`), checked on resume
    DIR/<method>/seed_<S>/records/TT_TASK/fraction_F.json   one record per method, instance, task, fraction
    DIR/<method>/seed_<S>/networks/after_TT/        a baseline's network after task TT (its largest fraction)
    DIR/<replay|ewc>/seed_<S>/rescored.json         every task scored again after the last (`read_rescored`)
    DIR/<method>/seed_<S>/rescored.json, sizes.json  a stream's report's: HOUDINI's winners re-scored, the
                                                    library's and networks' sizes per task
                                                    (`hx.evaluation.stream_report.write_stream_report`)
    DIR/houdini_<strategy>/seed_<S>/                HOUDINI's run (`hx.synth.run_sequence`: its own
                                                    settings.json, records/ and libraries/after_TT/)
    DIR/report.md, DIR/programs.md, DIR/plots/      the report (`hx.evaluation.report`)

A HOUDINI record is `hx.synth.lifelong.record`'s; a baseline's (`baseline_record`) has the same fields
where they mean the same thing (task, kind, type, metric, fraction, seed, data, seconds) and one entry in
"ranked" (its network, written by `hx.synth.frontier.FrontierEntry.to_json` in its short form), so the
report reads both alike. `load_records` adds to every record the method
and the instantiation ("instance") its path names.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from hx.compile.batching import num_examples
from hx.process_memory import process_memory
from hx.synth.frontier import FrontierEntry
from hx.synth.jsonfiles import read_record, write_json
from hx.synth.run_directory import RECORD_VERSION, fraction_file, task_dir

__all__ = ["RECORD_VERSION", "task_dir", "fraction_file", "record_path", "write_json", "RecordPlace",
           "baseline_record", "load_records", "network_version", "work_seconds", "RESCORED_FILE",
           "read_rescored"]

RESCORED_FILE = "rescored.json"
"""A continual baseline's re-scores after the run's last task, in `<method>/seed_<S>/` (`read_rescored`)."""


def record_path(directory: Path, method: str, instance: int, index: int, fraction: float) -> Path | None:
  """The record of task `index` (1-based) if one was written, found by its number (the task's name in
  the path is not needed)."""
  base = Path(directory) / method / f"seed_{instance}" / "records"
  for d in sorted(base.glob(f"{index:02d}_*")):
    p = d / fraction_file(fraction)
    if p.exists():
      return p
  return None


def network_version(network: Any) -> str | None:
  """sha256 of a network's arrays (names, shapes, dtypes and bytes), or None: identifies the weights a
  later task transferred from."""
  if network is None:
    return None
  import jax
  import numpy as np

  h = hashlib.sha256()
  for path, leaf in jax.tree_util.tree_flatten_with_path(dict(network.modules))[0]:
    a = np.ascontiguousarray(np.asarray(leaf))
    h.update(f"{jax.tree_util.keystr(path)}|{a.dtype}|{a.shape}|".encode())
    h.update(a.tobytes())
  return h.hexdigest()


class RecordPlace(NamedTuple):
  """Where a record stands in an evaluation (`baseline_record`'s fields of the same names).

  Attributes:
    sequence: str, the sequence's name.
    instance: int, the sequence's instantiation (its `seed_<S>` directory).
    index: int, the task's position in the sequence, from 1.
    fraction: float, the fraction of the task's training data trained on.
    seed: int, the training seed.
  """
  sequence: str
  instance: int
  index: int
  fraction: float
  seed: int


def baseline_record(result: Any, task: Any, place: RecordPlace, tune_config: Any, *,
                    starts_from: list[dict] | None = None, extra: dict | None = None) -> dict:
  """The JSON record of one baseline training (`hx.baselines.BaselineResult`, whose method it names) on
  `task`.

  Args:
    place: which run it is.
    tune_config: the training settings used.
    starts_from: the earlier networks it used ({"task", "version"} each): LLT's sources, PNN's frozen
      columns, the graph baseline's regressor.
    extra: more fields (e.g. "same_as", "structure_from").
  """
  outcome = result.outcome
  rec = {
      "record_version": RECORD_VERSION, "method": result.method,
      "sequence": place.sequence, "instance": place.instance, "task_index": place.index, "task": task.name,
      "task_kind": task.spec.kind, "type": str(task.type), "metric": task.metric, "fraction": place.fraction,
      "seed": place.seed,
      "data": {"datasets": list(task.datasets), "synthetic": bool(task.synthetic),
               "train": int(len(task.train.targets)), "val": int(len(task.val.targets)),
               "test": int(len(task.test.targets))},
      "tune_config": {"epochs": tune_config.for_examples(num_examples(task.train)).epochs,
                      "batch_size": tune_config.batch_size, "learning_rate": tune_config.learning_rate,
                      "patience": tune_config.patience, "min_steps": tune_config.min_steps},
      "parameters": result.parameters, "frozen_parameters": result.frozen_parameters,
      "epochs_run": outcome.epochs_run, "best_epoch": outcome.best_epoch,
      "starts_from": starts_from or [], "transfer": [list(s) for s in result.sources],
      "network_version": network_version(result.network),
      "seconds": {"compile": outcome.compile_seconds, "train": outcome.train_seconds,
                  "eval": outcome.eval_seconds, "wall": outcome.seconds},
      "process_memory": process_memory(),  # this process's, once the network is trained (`hx.process_memory`)
      # Its network as a synthesis's entry in short form (`FrontierEntry.to_json`), read as HOUDINI's are.
      "ranked": [FrontierEntry(rank=1, program=result.description, named=result.description,
                               outcome=outcome).to_json()],
  }
  rec.update(extra or {})
  return rec


def work_seconds(record: dict) -> float:
  """A record's own work in seconds: its candidates' (or network's) compiling, training and scoring, plus
  the search's proposing where recorded, summed over every call and worker that did it.

  `seconds["wall"]` is the wall time of the call that wrote the record only: a search resumed across
  calls from its kept candidates (`hx.synth.kept`), or a network resumed from its checkpoint, carries the
  earlier calls' seconds in these parts and not in its wall. With parallel workers the sum exceeds the
  wall too (worker seconds, not elapsed)."""
  seconds = record["seconds"]
  return float(sum(seconds.get(part, 0.0) for part in ("compile", "train", "eval", "search")))


def _records(directory: Path) -> Iterator[tuple[str, int, Path]]:
  for method_dir in sorted(p for p in directory.iterdir() if p.is_dir()):
    for seed_dir in sorted(method_dir.glob("seed_*")):
      m = re.fullmatch(r"seed_(\d+)", seed_dir.name)
      if m is None:
        continue
      for path in sorted(seed_dir.glob("records/*/fraction_*.json")):
        yield method_dir.name, int(m.group(1)), path


def load_records(directory: os.PathLike | str) -> list[dict]:
  """Every record under `directory`, each with "method" and "instance" set from its path, sorted by
  method, instance, task and fraction.

  Raises:
    hx.synth.jsonfiles.JsonFileError (a ValueError): a record that is not readable JSON or lacks a field
      its readers use, or holds one of another type or outside its range (`hx.synth.jsonfiles.RECORD`);
      the message names the file and the field.
  """
  directory = Path(directory)
  out = []
  for method, instance, path in _records(directory):
    rec = read_record(path)
    rec["method"], rec["instance"] = method, instance
    rec["path"] = str(path.relative_to(directory))
    out.append(rec)
  out.sort(key=lambda r: (r["method"], r["instance"], r["task_index"], r["fraction"]))
  return out


def read_rescored(directory: os.PathLike | str, method: str, instance: int) -> dict | None:
  """`<method>/seed_<instance>/rescored.json` of the run in `directory`, or None where it was not written
  (the run has not finished its last task, or the method is not a continual baseline).

  It holds {"method", "instance", "after": the tasks run, "fraction": the largest, "tasks": [{"index"
  (from 1), "task", "metric" ("error" or "rmse"), "recorded": the test score when the task was learned
  (None if nothing trained), "rescored": its test score after task "after" (None where not scored again:
  a graph task, or no network), "shares_trunk": bool (its trunk is shared and trained on by later tasks
  of its kind)}, ...]}.

  Raises:
    hx.jsonread.JsonFileError or ValueError: the file is not readable JSON, or not an object with "after"
      and "tasks" (the message names the file).
  """
  from hx.jsonread import read_json

  path = Path(directory) / method / f"seed_{instance}" / RESCORED_FILE
  if not path.exists():
    return None
  got = read_json(path)
  for field in ("after", "tasks"):
    if not isinstance(got, dict) or field not in got:
      raise ValueError(f"{path}: no field {field!r}: delete it and run the same command again to score "
                       "the tasks again")
  return got
