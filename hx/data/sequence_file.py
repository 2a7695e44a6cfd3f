"""A sequence of a user's tasks as a file: the tasks, where their arrays are, and how to run them.

A sequence file is TOML (read with the standard library's `tomllib`):

    name = "shapes"                        # the sequence's name: lower case letters, digits and _
    methods = ["houdini", "standalone"]    # optional run settings, each as EvalConfig.make's argument
    fractions = [0.1, 1.0]                 #   (methods, strategies, fractions, seeds, candidates,
    seeds = [0]                            #   epochs, preset); the binary's flags override them
    candidates = 8
    library_seed = 0                       # optional: hx.data.Sequence.library_seed (default 0)

    [[tasks]]
    name = "is_circle"
    type = "Tensor<real>[1][12][12] -> Tensor<bool>[1]"
    data = "is_circle.npz"                 # a path, relative to this file
    training = { epochs = 5, batch_size = 32 }   # optional: hx.compile.TuneConfig fields
    metric_component = 1                   # optional, as `hx.Task.from_arrays`

Each task's `.npz` holds, per split S of train, val and test, `S_inputs` and `S_targets` as
`hx.Task.from_arrays` takes them, with ragged lists and graphs flattened (`np.savez` cannot hold ragged
arrays without pickling, which hx does not load):
- lists: `S_inputs` every list's elements one after another (k, ...), `S_lengths` (n,) each list's length;
- graphs: `S_inputs` every graph's nodes one after another, `S_lengths` (n,) each graph's node count,
  `S_edges` (e, 2) every graph's (sender, receiver) pairs one after another, numbered within its graph,
  and `S_edge_counts` (n,);
- per-element targets (a List or Graph output): `S_targets` one row per element, in the inputs' order.
`save_task_arrays` writes a task's file in this layout.

`read_sequence_file` checks everything before any task is trained, and a problem is one
`hx.data.DataFormatError` (`DataNotFoundError` for a missing file) whose message names the file and the
entry (e.g. `tasks[2].data`).
"""

from __future__ import annotations

import dataclasses
import tomllib
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np

from hx.data.errors import DataFormatError, DataNotFoundError
from hx.data.sequences import TaskStream
from hx.data.task import SPLITS, Task, task_from_arrays
from hx.lang.errors import ParseError
from hx.lang.types import GraphType, ListType, function_parts, parse_type

if TYPE_CHECKING:
  import numpy.typing as npt

  from hx.data.task import ArrayInputs
  from hx.lang.types import Type

__all__ = ["SequenceFile", "read_sequence_file", "save_task_arrays", "RUN_SETTINGS"]

RUN_SETTINGS = {"methods": list, "strategies": list, "fractions": list, "seeds": list, "candidates": int,
                "epochs": int, "preset": str}
"""The run settings a sequence file may give, and the TOML type of each."""

_LIST_ITEMS = {"methods": (str, "text"), "strategies": (str, "text"), "fractions": ((int, float), "numbers"),
               "seeds": (int, "integers")}
"""What the items of each list setting must be (their values are checked by `EvalConfig.make`)."""

_TASK_KEYS = {"name", "type", "data", "training", "metric_component"}


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceFile:
  """A sequence file read and checked.

  Attributes:
    path: the file.
    stream: its tasks, as a `TaskStream` (the same tasks for every instantiation seed).
    run: the run settings it gives, as `EvalConfig.make` keyword arguments.
  """
  path: Path
  stream: TaskStream
  run: Mapping[str, list | int | str]


def read_sequence_file(path: str | Path) -> SequenceFile:
  """Reads a sequence file and every task's arrays (the module docstring gives the format).

  Raises:
    hx.data.DataNotFoundError: the file, or a task's data file, does not exist.
    hx.data.DataFormatError: anything malformed, in one line naming the file and the entry.
  """
  path = Path(path)
  if not path.is_file():
    raise DataNotFoundError("sequence file", f"{path} does not exist", [path])
  try:
    doc = tomllib.loads(path.read_text("utf-8"))
  except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
    raise _bad(path, "", f"not TOML: {err}") from None
  unknown = sorted(set(doc) - {"name", "tasks", "library_seed"} - set(RUN_SETTINGS))
  if unknown:
    raise _bad(path, unknown[0], f"unknown entry; the entries are name, tasks, library_seed, "
                                 f"{', '.join(RUN_SETTINGS)}")
  name = doc.get("name")
  if not isinstance(name, str):
    raise _bad(path, "name", "missing, or not text")
  run = _run_settings(path, doc)
  entries = doc.get("tasks")
  if not isinstance(entries, list) or not entries:
    raise _bad(path, "tasks", "missing: give one [[tasks]] table per task")
  tasks = [_task(path, f"tasks[{i}]", entry) for i, entry in enumerate(entries)]
  try:
    stream = TaskStream(name, tuple(tasks), library_seed=doc.get("library_seed", 0))
  except ValueError as err:  # the sequence's name, its library seed, or two tasks of one name
    entry = ("name" if str(err).startswith("a sequence's name") else
             "library_seed" if "library_seed" in str(err) else "tasks")
    raise _bad(path, entry, str(err)) from None
  return SequenceFile(path, stream, run)


def _run_settings(path: Path, doc: Mapping[str, object]) -> dict[str, list | int | str]:
  """The run settings the file gives, each of its TOML type (lists of the items `_LIST_ITEMS` names)."""
  run = {}
  for key, kind in RUN_SETTINGS.items():
    if key in doc:
      if not isinstance(doc[key], kind) or isinstance(doc[key], bool):
        what = {list: "a list", int: "an integer", str: "text"}[kind]
        raise _bad(path, key, f"must be {what}, got {doc[key]!r}")
      item, items = _LIST_ITEMS.get(key, (None, ""))
      bad = [v for v in doc[key] if not isinstance(v, item) or isinstance(v, bool)] if item else []
      if bad:
        raise _bad(path, key, f"must be a list of {items}, got {bad[0]!r} in {doc[key]!r}")
      run[key] = doc[key]
  return run


def _bad(path: Path, entry: str, problem: str) -> DataFormatError:
  # No flag: the message names the file and its entry, which is what to mend; hx-run's --sequence_file
  # only chooses which file is read (and `read_sequence_file` is called from Python too).
  return DataFormatError("sequence file", f"{path}{': ' + entry if entry else ''}: {problem}")


def _task(path: Path, where: str, entry: object) -> Task:
  if not isinstance(entry, dict):
    raise _bad(path, where, "must be a table ([[tasks]])")
  unknown = sorted(set(entry) - _TASK_KEYS)
  if unknown:
    raise _bad(path, f"{where}.{unknown[0]}",
               f"unknown entry; a task's entries are {', '.join(sorted(_TASK_KEYS))}")
  for key in ("name", "type", "data"):
    if not isinstance(entry.get(key), str):
      raise _bad(path, f"{where}.{key}", "missing, or not text")
  try:
    t = parse_type(entry["type"])
  except ParseError as err:
    raise _bad(path, f"{where}.type", str(err)) from None
  args, _ = function_parts(t)
  if len(args) != 1:  # the arrays are read by the argument's kind
    raise _bad(path, f"{where}.type", f"{t} must take exactly one argument (an example's input), not "
                                      f"{len(args)}")
  component = entry.get("metric_component")
  if component is not None and (not isinstance(component, int) or isinstance(component, bool)):
    raise _bad(path, f"{where}.metric_component", f"must be an integer, got {component!r}")
  training = entry.get("training", {})
  if not isinstance(training, dict):
    raise _bad(path, f"{where}.training", "must be a table, e.g. { epochs = 5 }")
  data = _data_file(path, f"{where}.data", entry["data"])
  try:
    splits = _load_splits(data, t)
  except (OSError, ValueError, KeyError) as err:
    raise _bad(path, f"{where}.data", f"{data}: {err}") from None
  try:
    return task_from_arrays(entry["name"], t, *splits, training=training, metric_component=component,
                            dataset=Path(entry["data"]).stem)
  except ValueError as err:
    raise _bad(path, where, str(err)) from None


def _data_file(path: Path, where: str, name: str) -> Path:
  """The `.npz` file an entry names, relative to the sequence file `path`, checked to be one."""
  data = path.parent / name
  if not data.exists():
    raise DataNotFoundError("sequence file", f"{path}: {where}: {data} does not exist", [data])
  if not data.is_file() or not zipfile.is_zipfile(data):  # np.savez writes a zip archive
    what = "a directory" if data.is_dir() else "a file that np.savez did not write"
    raise _bad(path, where, f"{data} is {what}, not an .npz file (save_task_arrays writes one)")
  return data


def _load_splits(data: Path, t: Type) -> list[tuple[ArrayInputs, npt.ArrayLike]]:
  (arg,), output = function_parts(t)
  per_element = isinstance(output, (ListType, GraphType))
  with np.load(data, allow_pickle=False) as f:
    arrays = {k: f[k] for k in f.files}
  out = []
  for s in SPLITS:
    missing = [k for k in (f"{s}_inputs", f"{s}_targets") if k not in arrays]
    if isinstance(arg, (ListType, GraphType)):
      missing += [k for k in (f"{s}_lengths",) if k not in arrays]
    if isinstance(arg, GraphType):
      missing += [k for k in (f"{s}_edges", f"{s}_edge_counts") if k not in arrays]
    if missing:
      raise KeyError(f"no array {missing[0]} (it holds {', '.join(sorted(arrays)) or 'none'})")
    inputs, targets = arrays[f"{s}_inputs"], arrays[f"{s}_targets"]
    if isinstance(arg, (ListType, GraphType)):
      lengths = arrays[f"{s}_lengths"]
      inputs = _pieces(inputs, lengths, f"{s}_lengths", f"{s}_inputs")
      if isinstance(arg, GraphType):
        edges = _pieces(arrays[f"{s}_edges"], arrays[f"{s}_edge_counts"], f"{s}_edge_counts", f"{s}_edges")
        if len(edges) != len(inputs):
          raise ValueError(f"{s}_edge_counts gives {len(edges)} graphs, {s}_lengths {len(inputs)}")
        inputs = [{"nodes": v, "edges": e} for v, e in zip(inputs, edges)]
      if per_element:
        targets = _pieces(targets, lengths, f"{s}_lengths", f"{s}_targets")
    out.append((inputs, targets))
  return out


def _pieces(flat: np.ndarray, counts: np.ndarray, counts_name: str, flat_name: str) -> list[np.ndarray]:
  counts = np.asarray(counts)
  if counts.ndim != 1 or not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
    raise ValueError(f"{counts_name} must be non-negative integers (n,), got {counts.dtype} {counts.shape}")
  if int(counts.sum()) != len(flat):
    raise ValueError(f"{counts_name} sums to {int(counts.sum())} but {flat_name} has {len(flat)} rows")
  return np.split(flat, np.cumsum(counts)[:-1])


def save_task_arrays(path: str | Path, task_type: str | Type, train: tuple[ArrayInputs, npt.ArrayLike],
                     val: tuple[ArrayInputs, npt.ArrayLike], test: tuple[ArrayInputs, npt.ArrayLike]) -> None:
  """Writes the (inputs, targets) of each split as a sequence file's `.npz` (the module docstring's
  layout), for a task of type `task_type` (text or an `hx.Type`); the inverse of what
  `read_sequence_file` loads.

  The splits are those `hx.Task.from_arrays` takes, checked by it before anything is written, so that a
  file written here is one `read_sequence_file` accepts.

  Raises:
    hx.ParseError: the type's text does not parse.
    ValueError: an array that does not fit the type (NaN or infinite values, a label outside the
      output's range, the wrong width, ragged or empty splits ...), as `hx.Task.from_arrays` says it,
      the task named after the file.
  """
  t = parse_type(task_type) if isinstance(task_type, str) else task_type
  task_from_arrays(Path(path).name.removesuffix(".npz"), t, train, val, test)  # raises what it cannot take
  (arg,), output = function_parts(t)
  arrays = {}
  for s, (inputs, targets) in zip(SPLITS, (train, val, test)):
    if isinstance(arg, GraphType):
      arrays[f"{s}_inputs"] = np.concatenate([np.asarray(g["nodes"]) for g in inputs])
      arrays[f"{s}_lengths"] = np.asarray([len(g["nodes"]) for g in inputs])
      edges = [np.asarray(g["edges"]).reshape(-1, 2) for g in inputs]
      arrays[f"{s}_edges"] = np.concatenate(edges).astype(np.int64)
      arrays[f"{s}_edge_counts"] = np.asarray([len(e) for e in edges])
    elif isinstance(arg, ListType):
      arrays[f"{s}_inputs"] = np.concatenate([np.asarray(v) for v in inputs])
      arrays[f"{s}_lengths"] = np.asarray([len(v) for v in inputs])
    else:
      arrays[f"{s}_inputs"] = np.asarray(inputs)
    per_element = isinstance(output, (ListType, GraphType))
    arrays[f"{s}_targets"] = (np.concatenate([np.asarray(y) for y in targets]) if per_element
                              else np.asarray(targets))
  np.savez(path, **arrays)
