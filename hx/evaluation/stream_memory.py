"""The memory a method keeps over a long stream's run (`hx.evaluation.stream_metrics`), after each task:
HOUDINI's library (functions, parameters, bytes of its saved arrays, from `libraries/after_TT/
library.json`); a baseline's networks so far (one per task; bytes of their saved variables,
`networks/after_TT/network.json`, else 4 bytes a parameter); experience replay's and EWC's trunks, heads
and what they keep per task (memories, Fishers and anchors; their records' "continual_memory"); and the
resident memory of the run's process (`process_memory_after`).

The saved libraries and networks are not committed (hundreds of MB); what the report reads of them is
kept beside the records by `keep_sizes`, in `<method>/seed_<S>/sizes.json` (`SIZES_FILE`), and read where
they are absent: a clone of the run measures the same memory as the machine that ran it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hx.evaluation.records import write_json
from hx.evaluation.stream_metrics import TaskRow, _instance, _largest, _method_rank

if TYPE_CHECKING:
  import os

  from hx.jsonread import JsonValue

__all__ = ["LibraryPoint", "MemoryPoint", "SIZES_FILE", "saved_libraries", "library_growth",
           "network_growth", "memory_growth", "keep_sizes", "process_memory_after"]

SIZES_FILE = "sizes.json"
"""What a method's saved libraries or networks measure after each task, kept in `<method>/seed_<S>/` for
a report made without them (`keep_sizes`): {"method", "instance", "tasks": [{"index" (from 1), "bytes",
and for HOUDINI's library "functions" and "parameters"}, ...]}, in task order."""


@dataclasses.dataclass(frozen=True)
class LibraryPoint:
  """HOUDINI's library after task `index`: its functions, their parameters, and the bytes of their saved
  arrays (`library.json`'s "bytes", the msgpack files)."""
  index: int
  functions: int
  parameters: int
  bytes: int


@dataclasses.dataclass(frozen=True)
class MemoryPoint:
  """What a method keeps after task `index`: `parameters` and `bytes` in all (every network or library
  function it holds then)."""
  index: int
  method: str
  parameters: int
  bytes: int


def _parameters(structure: JsonValue) -> int:
  """The scalars in a library entry's "structure" (nested containers of {"array": {dtype, shape}})."""
  if isinstance(structure, dict):
    if set(structure) == {"array"} and isinstance(structure["array"], dict):
      return math.prod(structure["array"]["shape"])
    return sum(_parameters(v) for v in structure.values())
  if isinstance(structure, list):
    return sum(_parameters(v) for v in structure)
  return 0


def saved_libraries(directory: os.PathLike | str, method: str, instance: int) -> list[Path]:
  """The folders of the libraries the run saved (`<method>/seed_<instance>/libraries/after_TT`), in task
  order; none where they are not on this machine."""
  folders = [f for f in (Path(directory) / method / f"seed_{instance}" / "libraries").glob("after_*")
             if f.name[6:].isdigit()]
  return sorted(folders, key=lambda f: int(f.name[6:]))  # after_100 after after_99, not after_10


def _kept_sizes(directory: os.PathLike | str, method: str, instance: int, fields: Sequence[str] = ("bytes",)
                ) -> dict[int, dict]:
  """Task index -> its entry in `<method>/seed_<instance>/sizes.json` (`keep_sizes`), each with `fields`;
  empty where not kept.

  Raises:
    ValueError: the file is not readable JSON or not of `SIZES_FILE`'s form (its path named).
  """
  from hx.jsonread import read_json

  path = Path(directory) / method / f"seed_{instance}" / SIZES_FILE
  if not path.exists():
    return {}
  got = read_json(path)
  if not isinstance(got, dict) or not isinstance(got.get("tasks"), list) \
      or not all(isinstance(t, dict) and all(k in t for k in ("index", *fields)) for t in got["tasks"]):
    raise ValueError(f"{path}: not a list of tasks' sizes: delete it and make the report again where the "
                     "run's libraries and networks are")
  return {int(t["index"]): t for t in got["tasks"]}


def _measured_library(directory: os.PathLike | str, method: str, instance: int) -> list[LibraryPoint]:
  out = []
  for folder in saved_libraries(directory, method, instance):
    path = folder / "library.json"
    try:
      manifest = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as err:
      raise ValueError(f"{path}: not a readable library manifest ({err})") from None
    entries = manifest["entries"]
    parameters = sum(_parameters(e["structure"]) for e in entries)
    size = sum(int(e["bytes"]) for e in entries)
    out.append(LibraryPoint(int(folder.name[6:]), len(entries), parameters, size))
  return out


def library_growth(directory: os.PathLike | str, method: str = "houdini_topdown", instance: int = 0
                   ) -> list[LibraryPoint]:
  """The library after each task whose library the run saved (`<method>/seed_<instance>/libraries/
  after_TT/library.json`), in task order; read from the manifests, no array loaded. A task whose library
  is not on this machine (a clone: libraries are not committed) counts the sizes `keep_sizes` kept.

  Raises:
    ValueError: a manifest that is not readable JSON, or a kept file that is not `SIZES_FILE`'s (its path
      named).
  """
  measured = {p.index: p for p in _measured_library(directory, method, instance)}
  kept = _kept_sizes(directory, method, instance, ("functions", "parameters", "bytes"))
  points = {**{i: LibraryPoint(i, *(int(kept[i][k]) for k in ("functions", "parameters", "bytes")))
               for i in kept}, **measured}
  return [points[i] for i in sorted(points)]


def network_growth(records: Sequence[dict], directory: os.PathLike | str, method: str,
                   instance: int | None = None) -> list[MemoryPoint]:
  """A baseline's networks kept after each task (one per task, all kept): parameters from the records,
  bytes from the saved networks (`networks/after_TT/network.json`), or 4 a parameter where one is not
  there (float32): where the saved network is not on this machine, the bytes `keep_sizes` kept of it.
  Experience replay and EWC keep one trunk per kind and a head per task, with their memories or Fishers:
  counted from their records' "continual_memory" where every record has it.

  Raises:
    ValueError: a kept file that is not `SIZES_FILE`'s (its path named).
  """
  instance = _instance(records, instance)
  mine = _mine(records, method, instance)
  if mine and all("continual_memory" in r for r in mine):
    return _continual_growth(mine, method)
  kept = _kept_sizes(directory, method, instance)
  out, parameters, size = [], 0, 0
  for r in mine:
    parameters += int(r.get("parameters", 0))
    measured = _network_bytes(directory, method, instance, r["task_index"])
    if measured is None:
      measured = int(kept[r["task_index"]]["bytes"]) if r["task_index"] in kept \
          else 4 * int(r.get("parameters", 0))
    size += measured
    out.append(MemoryPoint(r["task_index"], method, parameters, size))
  return out


def _mine(records: Sequence[dict], method: str, instance: int) -> list[dict]:
  """`method`'s records of `instance` at the run's largest fraction, in task order."""
  largest = _largest(records)
  return sorted((r for r in records if r["method"] == method and r["instance"] == instance
                 and r["fraction"] == largest), key=lambda r: r["task_index"])


def _network_bytes(directory: os.PathLike | str, method: str, instance: int, index: int) -> int | None:
  """The bytes of the network `method` saved after task `index` (its `network.json`'s), or None where it
  is not on this machine or not readable."""
  meta = Path(directory) / method / f"seed_{instance}" / "networks" / f"after_{index:02d}" / "network.json"
  try:
    return int(json.loads(meta.read_text("utf-8"))["bytes"])
  except (OSError, ValueError, KeyError):
    return None


def _continual_growth(mine: Sequence[dict], method: str) -> list[MemoryPoint]:
  """Experience replay's or EWC's memory after each task, from its records' "continual_memory"
  (`hx.baselines.continual.footprint`): every head so far, the latest trunk of each kind (float32, 4 bytes
  a parameter), and what each task kept (replay's memories, EWC's Fishers and anchors)."""
  out, heads, kept, trunks = [], 0, 0, {}
  for r in mine:
    m = r["continual_memory"]
    heads += int(m["head_parameters"])
    kept += int(m["kept_bytes"])
    if m.get("trunk") is not None:
      trunks[m["trunk"]] = int(m["trunk_parameters"])
    parameters = heads + sum(trunks.values())
    out.append(MemoryPoint(r["task_index"], method, parameters, 4 * parameters + kept))
  return out


def memory_growth(records: Sequence[dict], directory: os.PathLike | str, instance: int | None = None
                  ) -> list[MemoryPoint]:
  """Every method's memory after each task: HOUDINI's library (`library_growth`), each baseline's
  networks (`network_growth`)."""
  instance = _instance(records, instance)
  out = []
  for method in sorted({r["method"] for r in records}, key=_method_rank):
    if method.startswith("houdini_"):
      out += [MemoryPoint(p.index, method, p.parameters, p.bytes)
              for p in library_growth(directory, method, instance)]
    else:
      out += network_growth(records, directory, method, instance)
  return out


def keep_sizes(records: Sequence[dict], directory: os.PathLike | str, instance: int | None = None
               ) -> list[Path]:
  """Keeps what the saved libraries and networks on this machine measure (`library_growth`,
  `network_growth`) in each method's `<method>/seed_<instance>/sizes.json` (`SIZES_FILE`), beside its
  records, so that a report made where they are absent (a clone: they are not committed) measures the same
  memory (experience replay's and EWC's is their records'). Sizes kept earlier of tasks whose library or
  network is gone stay; a method with none saved here is left as it is, and a file whose content would not
  change is not written again. Returns the files written.

  Raises:
    ValueError: a manifest or a kept file that is not readable (its path named).
  """
  instance = _instance(records, instance)
  out = []
  for method in sorted({r["method"] for r in records}, key=_method_rank):
    if method.startswith("houdini_"):
      if not saved_libraries(directory, method, instance):
        continue
      tasks = [{"index": p.index, "functions": p.functions, "parameters": p.parameters, "bytes": p.bytes}
               for p in library_growth(directory, method, instance)]
    else:
      mine = _mine(records, method, instance)
      if mine and all("continual_memory" in r for r in mine):
        continue  # measured from its records (`network_growth`)
      measured = {r["task_index"]: b for r in mine
                  if (b := _network_bytes(directory, method, instance, r["task_index"])) is not None}
      if not measured:
        continue
      kept = _kept_sizes(directory, method, instance)
      sizes = {**{i: int(kept[i]["bytes"]) for i in kept}, **measured}
      tasks = [{"index": i, "bytes": sizes[i]} for i in sorted(sizes)]
    content = {"method": method, "instance": instance, "tasks": tasks}
    path = Path(directory) / method / f"seed_{instance}" / SIZES_FILE
    try:
      same = json.loads(path.read_text("utf-8")) == content
    except (OSError, ValueError):
      same = False
    if not same:
      write_json(path, content)
      out.append(path)
  return out


def process_memory_after(rows: Sequence[TaskRow]) -> dict[int, int]:
  """Task index -> the resident bytes of the run's process after the task (the largest of its methods'
  records; tasks whose records hold none left out)."""
  out: dict[int, int] = {}
  for r in rows:
    if r.rss_bytes is not None:
      out[r.index] = max(out.get(r.index, 0), r.rss_bytes)
  return out
