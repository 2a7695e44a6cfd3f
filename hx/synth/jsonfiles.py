"""JSON on disk for result directories: settings as plain JSON values, files written atomically.

Used by the lifelong runner (`hx.synth.lifelong`) and the evaluation (`hx.evaluation`), whose records
and settings files must never be left half-written by an interrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from hx.atomic import write_atomically
from hx.defaults import omit_defaults

__all__ = ["jsonable", "write_json"]


def jsonable(x: Any) -> Any:
  """`x` as plain JSON values: dataclasses and dicts as objects (keys as text; a field marked
  `hx.defaults.OMIT_DEFAULT` left out where it holds its default), lists and tuples as arrays, a
  non-finite float as its text ("nan", "inf"), anything else (types, programs) as its text."""
  if dataclasses.is_dataclass(x) and not isinstance(x, type):
    return {name: jsonable(value) for name, value in omit_defaults(x)}
  if isinstance(x, dict):
    return {str(k): jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v) for v in x]
  if x is None or isinstance(x, (bool, int, str)):
    return x
  if isinstance(x, float):
    return x if math.isfinite(x) else str(x)
  return str(x)


def write_json(path: Path, obj: Any) -> None:
  """Writes `obj` as JSON to `path` atomically (`hx.atomic.write_atomically`): a reader sees the old file
  or the new one, never a part."""
  write_atomically(path, lambda f: json.dump(obj, f, indent=1, sort_keys=True), text=True)
