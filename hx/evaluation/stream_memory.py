"""The memory a method keeps over a long stream's run (`hx.evaluation.stream_metrics`), after each task:
HOUDINI's library (functions, parameters, bytes of its saved arrays, from `libraries/after_TT/
library.json`); a baseline's networks so far (one per task; bytes of their saved variables,
`networks/after_TT/network.json`, else 4 bytes a parameter); experience replay's and EWC's trunks, heads
and what they keep per task (memories, Fishers and anchors; their records' "continual_memory"); and the
resident memory of the run's process (`process_memory_after`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hx.evaluation.stream_metrics import TaskRow, _instance, _largest, _method_rank

if TYPE_CHECKING:
  import os

  from hx.jsonread import JsonValue

__all__ = ["LibraryPoint", "MemoryPoint", "library_growth", "network_growth", "memory_growth",
           "process_memory_after"]


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


def library_growth(directory: os.PathLike | str, method: str = "houdini_topdown", instance: int = 0
                   ) -> list[LibraryPoint]:
  """The library after each task whose library the run saved (`<method>/seed_<instance>/libraries/
  after_TT/library.json`), in task order; read from the manifests, no array loaded.

  Raises:
    ValueError: a manifest that is not readable JSON (its path named).
  """
  out = []
  folders = [f for f in (Path(directory) / method / f"seed_{instance}" / "libraries").glob("after_*")
             if f.name[6:].isdigit()]
  for folder in sorted(folders, key=lambda f: int(f.name[6:])):  # after_100 after after_99, not after_10
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


def network_growth(records: Sequence[dict], directory: os.PathLike | str, method: str,
                   instance: int | None = None) -> list[MemoryPoint]:
  """A baseline's networks kept after each task (one per task, all kept): parameters from the records,
  bytes from the saved networks (`networks/after_TT/network.json`), or 4 a parameter where one is not
  there (float32). Experience replay and EWC keep one trunk per kind and a head per task, with their
  memories or Fishers: counted from their records' "continual_memory" where every record has it."""
  instance = _instance(records, instance)
  largest = _largest(records)
  mine = sorted((r for r in records if r["method"] == method and r["instance"] == instance
                 and r["fraction"] == largest), key=lambda r: r["task_index"])
  if mine and all("continual_memory" in r for r in mine):
    return _continual_growth(mine, method)
  out, parameters, size = [], 0, 0
  for r in mine:
    parameters += int(r.get("parameters", 0))
    meta = Path(directory) / method / f"seed_{instance}" / "networks" / f"after_{r['task_index']:02d}" / \
        "network.json"
    try:
      size += int(json.loads(meta.read_text("utf-8"))["bytes"])
    except (OSError, ValueError, KeyError):
      size += 4 * int(r.get("parameters", 0))
    out.append(MemoryPoint(r["task_index"], method, parameters, size))
  return out


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


def process_memory_after(rows: Sequence[TaskRow]) -> dict[int, int]:
  """Task index -> the resident bytes of the run's process after the task (the largest of its methods'
  records; tasks whose records hold none left out)."""
  out: dict[int, int] = {}
  for r in rows:
    if r.rss_bytes is not None:
      out[r.index] = max(out.get(r.index, 0), r.rss_bytes)
  return out
