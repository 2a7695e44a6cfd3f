"""Values as plain JSON, one canonical text of them, and the hash that names hx's saved files by it.

    jsonable(config)          # {"epochs": 20, "score": "nan", ...}: JSON values, every field written
    canonical_json(config)    # '{"epochs":20,"score":"nan",...}': keys sorted, no spaces
    content_key(config)       # 32 hex digits: blake2b of the canonical JSON

A file hx saves for what it trains (a candidate's checkpoint, `hx.compile.checkpoint.checkpoint_in`; a
kept candidate, `hx.synth.kept`; a baseline's checkpoint) is named by the `content_key` of a plain dict
of what that is (the task, the data's fingerprint, the program, the training and module settings, ...)
and holds its `canonical_json`, checked when the file is read back. Two values with the same fields give
the same text whatever order the fields were written in; a changed field gives another text and another
name, so a file is never resumed for another run. A field added to a dataclass changes the names of the
files saved before it (they are trained again); finished work is read from records, which no key names.

Beside the packages (docs/DESIGN.md, "The layers"): `hx.compile` names its checkpoints with it, and
`hx.synth.jsonfiles` writes settings and records with `jsonable`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

from hx.jsonread import JsonValue

__all__ = ["jsonable", "canonical_json", "content_key", "text_key"]


def jsonable(x: object) -> JsonValue:
  """`x` as plain JSON values: dataclasses (every field, in field order) and dicts as objects (keys as
  text), lists and tuples as arrays, a non-finite float as its text ("nan", "inf", "-inf"), anything
  else (types, programs, paths) as its text (`str`)."""
  if dataclasses.is_dataclass(x) and not isinstance(x, type):
    return {f.name: jsonable(getattr(x, f.name)) for f in dataclasses.fields(x)}
  if isinstance(x, dict):
    return {str(k): jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v) for v in x]
  if x is None or isinstance(x, (bool, int, str)):
    return x
  if isinstance(x, float):
    return x if math.isfinite(x) else str(x)
  return str(x)


def canonical_json(x: object) -> str:
  """The canonical JSON text of `x` (`jsonable`'s values): keys sorted, no spaces (separators "," and
  ":"), ASCII only (other characters escaped); equal values give equal texts."""
  return json.dumps(jsonable(x), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def text_key(text: str) -> str:
  """The hash of `text` (UTF-8) that names a file: blake2b, 16 bytes, as 32 hex digits."""
  return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def content_key(x: object) -> str:
  """The hash of `x`'s canonical JSON (`text_key(canonical_json(x))`): what names a file saved for `x`."""
  return text_key(canonical_json(x))
