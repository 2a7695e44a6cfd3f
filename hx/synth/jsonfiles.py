"""JSON on disk for result directories: settings as plain JSON values, files written atomically, and
files read back with what they must hold checked.

Used by the lifelong runner (`hx.synth.lifelong`) and the evaluation (`hx.evaluation`), whose records
and settings files must never be left half-written by an interrupted run, and by every reader of those
files, the library's manifest and kept candidates. The reading is `hx.jsonread`'s, whose names this
module gives too: `read_json` reads any of them, and `check` holds its value to a schema built from
`integer`, `number`, `score`, `text`, `boolean`, `nullable`, `array`, `row` and `obj`. Either raises one
`JsonFileError` whose message names the file and, for a value that does not fit, where in it and what was
expected ("records/01_x/fraction_1.json: ranked[0].test: expected a score (a number or "nan"), got [1]"),
never a KeyError or TypeError from the code that reads the value.

`RECORD` is the schema of a record (`hx.synth.lifelong.record`, `hx.evaluation.records.baseline_record`)
as its readers use it, `RANKED` that of an item of its "ranked" list (`hx.synth.frontier`, which writes and
reads both), `read_record` reads one; `read_settings` reads a run's settings.json.

`RECORD_VERSION` is the version of a run directory's layout: every record and settings.json holds it
("record_version"). A file without it was written before hx recorded the version, in version 1's layout,
and is read as version 1. Version 2 writes every field of the settings' dataclasses, where version 1 left
some out at their defaults; its records are version 1's. Version 3 spells the long stream's recognize
tasks so, where versions 1 and 2 spelt them "recognise" in task names, record folders and files. So
records of all three versions are read alike, and a run directory of version 1 or 2 is read as it is and
brought to version 3 when its run is resumed or its report rebuilt (`hx.synth.run_directory`:
`respell`, `open_settings`). A file of any other version is refused in one line that names the file and
the versions (`LayoutVersionError`), never read as this version's layout.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import TypeVar

from hx.atomic import write_atomically
from hx.canonical_json import jsonable
from hx.jsonread import (
  Check,
  Invalid,
  JsonFileError,
  JsonValue,
  anything,
  array,
  boolean,
  check,
  integer,
  nullable,
  number,
  obj,
  read_json,
  row,
  score,
  text,
)
from hx.lang.objectives import METRICS

__all__ = [
    "jsonable", "from_jsonable", "write_json", "JsonFileError", "read_json", "Invalid", "Check", "check",
    "integer", "number", "score", "text", "boolean", "anything", "nullable", "array", "row", "obj", "RANKED",
    "RECORD", "read_record",
    "SETTINGS_FILE_SCHEMA", "EVALUATION_SETTINGS", "read_settings", "read_settings_file", "RECORD_VERSION",
    "READ_VERSIONS", "LayoutVersionError", "layout_version", "check_layout_version",
]

_Settings = TypeVar("_Settings")
"""The dataclass `from_jsonable` reads."""

RECORD_VERSION = 3
"""The version of a run directory's layout (`hx.synth.run_directory`) and of its records
(`hx.synth.lifelong.record`, `hx.evaluation.records.baseline_record`), held by every record and
settings.json as "record_version". 2: settings.json holds every field of its dataclasses (version 1 left
those of `hx.synth.run_directory.VERSION_1_OMITTED` out at their defaults); records as in version 1.
3: the names of a run's tasks, and so its record folders, are spelt as `hx.data` spells them now (versions
1 and 2 of a long stream's run spelt its recognize tasks "recognise": `hx.synth.run_directory.RESPELLED`);
records and settings as in version 2."""

READ_VERSIONS = (1, 2, RECORD_VERSION)
"""The layout versions this hx reads: a version 1 or 2 record as a version 3 one (the same fields), a
version 1 settings.json migrated when its run resumes, and the names of a version 1 or 2 directory
respelt when it is opened (`hx.synth.run_directory.open_settings`, `respell`)."""


_READ_VERSIONS_TEXT = ", ".join(map(str, READ_VERSIONS[:-1])) + f" or {READ_VERSIONS[-1]}"
"""`READ_VERSIONS` as a refusal names them ("1, 2 or 3")."""


class LayoutVersionError(JsonFileError):
  """A record or settings.json of a run directory's layout this hx does not read (not in `READ_VERSIONS`:
  a newer hx's): the message names the file, its version and the ones this hx reads."""


def layout_version(value: dict[str, JsonValue]) -> JsonValue:
  """The layout version of the JSON object `value` (a record or a settings.json): its "record_version",
  1 where it has none (written before hx recorded it)."""
  return value.get("record_version", 1)


def check_layout_version(path: os.PathLike | str, value: dict) -> None:
  """Refuses the JSON object `value` read from `path` (a record or a settings.json) unless its
  "record_version" is one of `READ_VERSIONS`, or missing (version 1, written before hx recorded it).

  Raises:
    LayoutVersionError: another version.
  """
  version = layout_version(value)
  if version not in READ_VERSIONS or isinstance(version, bool):
    newer = isinstance(version, int) and version > RECORD_VERSION
    raise LayoutVersionError(path, f"a run directory's layout of record_version {version}"
                                   f"{', written by a newer hx' if newer else ''}; this hx reads "
                                   f"record_version {_READ_VERSIONS_TEXT} only: use the "
                                   "hx that wrote it, or another directory")


def from_jsonable(cls: type[_Settings], value: JsonValue, where: str) -> _Settings:
  """The frozen dataclass `cls` (e.g. `hx.compile.ModuleConfig`) that `jsonable` wrote as `value`: a field
  missing from `value` takes its default (a file of an older hx, or of layout version 1, which left some
  fields out at their defaults: `hx.synth.run_directory.VERSION_1_OMITTED`), a field whose default is a
  dataclass is read as one, arrays become tuples, "nan" and "inf" floats.

  Raises:
    ValueError: `value` is not an object, names a field `cls` does not have, or a value `cls` refuses;
      the message starts with `where`.
  """
  if not isinstance(value, dict):
    raise ValueError(f"{where}: expected an object of {cls.__name__}'s fields, got {type(value).__name__}")
  fields = {f.name: f for f in dataclasses.fields(cls)}
  unknown = sorted(set(value) - set(fields))
  if unknown:
    raise ValueError(f"{where}: {cls.__name__} has no field {', '.join(unknown)}")

  def read(v: JsonValue, default: object, at: str) -> object:
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
      return from_jsonable(type(default), v, at)
    if isinstance(v, list):
      return tuple(read(x, None, at) for x in v)
    if isinstance(v, str) and isinstance(default, float) and v in ("nan", "inf", "-inf"):
      return float(v)
    return v

  given = {k: read(v, fields[k].default, f"{where}.{k}") for k, v in value.items()}
  try:
    return cls(**given)
  except (TypeError, ValueError) as err:
    raise ValueError(f"{where}: {err}") from None


def write_json(path: Path, obj: JsonValue) -> None:
  """Writes `obj` as JSON to `path` atomically (`hx.atomic.write_atomically`): a reader sees the old file
  or the new one, never a part."""
  write_atomically(path, lambda f: json.dump(obj, f, indent=1, sort_keys=True), text=True)


# ---------------------------------------------------------------------------------------------------
# A record, as its readers (the report, the runner's and `run_sequence`'s resumption) use it.

_SECONDS = number(minimum=0)

RANKED = obj({"status": text(), "program": text(), "named": nullable(text()), "test": nullable(score)},
             optional={"val": nullable(score), "rank": integer(minimum=1), "reason": nullable(text()),
                       "fresh_types": obj({}, values=text()), "seconds": _SECONDS,
                       "compile_seconds": _SECONDS, "train_seconds": _SECONDS, "eval_seconds": _SECONDS,
                       "order": integer(minimum=-1), "epochs_run": integer(0), "val_history": array(score),
                       "estimate": score, "estimate_method": nullable(text()), "estimate_seconds": _SECONDS,
                       "estimate_epochs": number(minimum=0)})
"""An item of a record's "ranked" list: one candidate of a synthesis, or a baseline's network, as
`hx.synth.frontier.FrontierEntry.to_json` writes it and `FrontierEntry.from_json` reads it."""

RECORD = obj({
    "sequence": text(),
    "task_index": integer(minimum=1),
    "task": text(nonempty=True),
    "metric": text(METRICS),
    "fraction": number(above=0, maximum=1),
    "data": obj({"datasets": array(text()), "synthetic": boolean},
                optional={"train": integer(0), "val": integer(0), "test": integer(0)}),
    "ranked": array(RANKED),
    "seconds": obj({"wall": _SECONDS},
                   optional={"compile": _SECONDS, "train": _SECONDS, "eval": _SECONDS, "search": _SECONDS}),
}, optional={
    "record_version": integer(minimum=1), "seed": integer(), "instance": integer(minimum=0),
    "method": text(), "task_kind": text(), "type": text(), "strategy": text(),
    "parameters": integer(0), "frozen_parameters": nullable(integer(0)),
    "candidates_trained": nullable(integer(0)), "same_as": nullable(text()), "epochs_run": integer(0),
    "best_epoch": integer(0), "enumeration": obj({}, values=number(minimum=0)),
    "library_offered": array(text()),
    "process_memory": obj({"rss_bytes": nullable(integer(0)), "peak_rss_bytes": integer(0)}),
})
"""A record's schema: the fields every reader of records needs, with their types and ranges."""


def read_record(path: os.PathLike | str) -> dict:
  """The record in `path`, checked against `RECORD`. JsonFileError (naming the file, and the field where
  one does not fit) if it is unreadable ("not a readable record: it is not valid JSON ...") or does not fit
  ("not a valid record: ranked[0].test: expected ..."); LayoutVersionError (one) if it is of a layout
  this hx does not read (`check_layout_version`: records of versions 1 to 3 are read alike)."""
  try:
    value = read_json(path)
  except JsonFileError as err:
    raise JsonFileError(path, f"not a readable record: it {err.problem}") from None
  try:
    RECORD(value, "")
  except Invalid as err:
    raise JsonFileError(path, f"not a valid record: {err}") from None
  check_layout_version(path, value)
  return value


# ---------------------------------------------------------------------------------------------------
# A run's settings.json ({"settings": ..., "started": ...}, `hx.synth.run_directory.open_settings`).

SETTINGS_FILE_SCHEMA = obj({"settings": obj({}), "started": text(nonempty=True)},
                           optional={"record_version": integer(minimum=1)})
"""The envelope of every settings.json: the settings (an object), the run's start time and its layout's
version (`RECORD_VERSION`, or 1: missing, written before hx recorded it)."""

_FRACTION = number(above=0, maximum=1)

EVALUATION_SETTINGS = obj({}, optional={
    "sequence": text(), "preset": nullable(text()), "methods": array(text()),
    "fractions": array(_FRACTION, min_size=1), "seeds": array(integer(minimum=0), min_size=1),
    "tasks": integer(minimum=0),
})
"""The fields of an evaluation's settings (`hx.evaluation.runner.settings_json`) its report and plots read:
any may be missing (an older run), and each present is of its type."""


def read_settings(path: os.PathLike | str, settings: Check | None = None) -> tuple[dict, str]:
  """(settings, started) of the settings.json at `path`; the settings also fit `settings` if given (e.g.
  `EVALUATION_SETTINGS`). JsonFileError (naming the file and the field) if unreadable or ill-formed,
  LayoutVersionError (one) if of a layout this hx does not read (`check_layout_version`). A version 1
  file's settings are given as it holds them (`read_settings_file` says which version it is)."""
  saved, started, _ = read_settings_file(path, settings)
  return saved, started


def read_settings_file(path: os.PathLike | str, settings: Check | None = None) -> tuple[dict, str, int]:
  """(settings, started, layout version) of the settings.json at `path`: as `read_settings`, with the
  file's version (one of `READ_VERSIONS`), which says whether its settings need the fields version 1 left
  out and its names respelling (`hx.synth.run_directory.open_settings`)."""
  whole = check(read_json(path), SETTINGS_FILE_SCHEMA, path)
  check_layout_version(path, whole)
  if settings is not None:
    try:
      settings(whole["settings"], "settings")
    except Invalid as err:
      raise JsonFileError(path, str(err)) from None
  return whole["settings"], whole["started"], layout_version(whole)
