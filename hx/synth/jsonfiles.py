"""JSON on disk for result directories: settings as plain JSON values, files written atomically, and
files read back with what they must hold checked.

Used by the lifelong runner (`hx.synth.lifelong`) and the evaluation (`hx.evaluation`), whose records
and settings files must never be left half-written by an interrupted run, and by every reader of those
files, the library's manifest and kept candidates: `read_json` reads any of them, and `check` holds its
value to a schema built from `integer`, `number`, `score`, `text`, `boolean`, `nullable`, `array` and
`obj`. Either raises one `JsonFileError` whose message names the file and, for a value that does not fit,
where in it and what was expected ("records/01_x/fraction_1.json: ranked[0].test: expected a score (a
number or "nan"), got [1]"), never a KeyError or TypeError from the code that reads the value.

`RECORD` is the schema of a record (`hx.synth.lifelong.record`, `hx.evaluation.records.baseline_record`)
as its readers use it, `read_record` reads one; `read_settings` reads a run's settings.json.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from hx.atomic import write_atomically
from hx.defaults import omit_defaults

__all__ = [
    "jsonable", "write_json", "JsonFileError", "read_json", "Invalid", "Check", "check", "integer", "number",
    "score", "text", "boolean", "anything", "nullable", "array", "obj", "RECORD", "read_record",
    "SETTINGS_FILE_SCHEMA", "EVALUATION_SETTINGS", "read_settings",
]


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


# ---------------------------------------------------------------------------------------------------
# Reading.

class JsonFileError(ValueError):
  """A JSON file that cannot be read, or that does not hold what its reader expects.

  Attributes:
    path: the file.
    problem: what is wrong, in words (where in the file, for a value that does not fit).
  """

  def __init__(self, path: os.PathLike | str, problem: str):
    self.path = os.fspath(path)
    self.problem = problem
    super().__init__(f"{self.path}: {problem}")


def read_json(path: os.PathLike | str) -> Any:
  """The JSON value in the file `path`.

  Raises:
    JsonFileError: the file cannot be read, is not UTF-8, is not JSON, or nests deeper than Python's
      decoder goes (a RecursionError there) or writes an integer of over 4300 digits.
  """
  try:
    data = Path(path).read_bytes()
  except OSError as err:
    raise JsonFileError(path, f"cannot be read ({err.strerror or err})") from None
  try:
    text_ = data.decode("utf-8")
  except UnicodeDecodeError as err:
    raise JsonFileError(path, f"is not valid JSON (not UTF-8 text: byte {err.start}, {err.reason})") from None
  try:
    return json.loads(text_)
  except json.JSONDecodeError as err:
    where = f"line {err.lineno}, column {err.colno}"
    raise JsonFileError(path, f"is not valid JSON ({where}: {err.msg})") from None
  except RecursionError:
    raise JsonFileError(path, "is not JSON hx reads (it nests too deep)") from None
  except ValueError as err:  # an integer past int()'s digit limit
    raise JsonFileError(path, f"is not JSON hx reads ({err})") from None


class Invalid(ValueError):
  """A value that does not fit its schema: `where` it is in the file (e.g. "ranked[0].test", "" for the
  whole value) and what `problem` it has."""

  def __init__(self, where: str, problem: str):
    self.where = where
    self.problem = problem
    super().__init__(f"{where or 'the top level'}: {problem}")


Check = Callable[[Any, str], None]
"""A schema: called with a value and where it is, raises `Invalid` unless the value fits."""


def check(value: Any, schema: Check, path: os.PathLike | str) -> Any:
  """`value` (read from the file `path`) if it fits `schema`; JsonFileError naming the file and the place
  otherwise."""
  try:
    schema(value, "")
  except Invalid as err:
    raise JsonFileError(path, str(err)) from None
  return value


def _shown(value: Any) -> str:
  """A value as a message shows it: its JSON, cut to 60 characters."""
  try:
    shown = json.dumps(value, allow_nan=True)
  except (TypeError, ValueError, RecursionError):
    shown = repr(value)
  return shown if len(shown) <= 60 else shown[:57] + "..."


def _is_int(value: Any) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(minimum: int | None = None, maximum: int | None = None) -> Check:
  """A JSON integer (not a boolean, not 2.0) in [minimum, maximum]."""
  bounds = (f" >= {minimum}" if minimum is not None else "") + (
      f"{' and' if minimum is not None else ''} <= {maximum}" if maximum is not None else "")

  def check_integer(value: Any, where: str) -> None:
    if (not _is_int(value) or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)):
      raise Invalid(where, f"expected an integer{bounds}, got {_shown(value)}")
  return check_integer


def number(minimum: float | None = None, maximum: float | None = None, above: float | None = None) -> Check:
  """A finite JSON number (not a boolean, not NaN): >= minimum, <= maximum, > above."""
  bounds = " and".join(part for part in (
      f" > {above:g}" if above is not None else "", f" >= {minimum:g}" if minimum is not None else "",
      f" <= {maximum:g}" if maximum is not None else "") if part)

  def check_number(value: Any, where: str) -> None:
    if (not _is_number(value) or not math.isfinite(value) or (above is not None and value <= above)
        or (minimum is not None and value < minimum) or (maximum is not None and value > maximum)):
      raise Invalid(where, f"expected a finite number{bounds}, got {_shown(value)}")
  return check_number


# The texts `jsonable` writes for non-finite floats.
_NON_FINITE = ("nan", "inf", "-inf")


def score(value: Any, where: str) -> None:
  """A score or loss as `jsonable` writes one: a number, or the text of a non-finite float ("nan",
  "inf", "-inf"; a NaN literal too, which Python's JSON reads). `nullable(score)` admits null (not
  scored) as well."""
  if _is_number(value) or (isinstance(value, str) and value in _NON_FINITE):
    return
  raise Invalid(where, f"expected a score (a number or \"nan\"), got {_shown(value)}")


def text(choices: tuple[str, ...] | None = None, nonempty: bool = False) -> Check:
  """A JSON string, one of `choices` if given, not empty if `nonempty`."""
  def check_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
      raise Invalid(where, f"expected a string, got {_shown(value)}")
    if choices is not None and value not in choices:
      raise Invalid(where, f"expected one of {', '.join(map(repr, choices))}, got {_shown(value)}")
    if nonempty and not value:
      raise Invalid(where, "expected a non-empty string, got \"\"")
  return check_text


def boolean(value: Any, where: str) -> None:
  """true or false."""
  if not isinstance(value, bool):
    raise Invalid(where, f"expected true or false, got {_shown(value)}")


def anything(value: Any, where: str) -> None:
  """Any JSON value (a field whose presence is all a reader needs)."""


def nullable(schema: Check) -> Check:
  """null, or a value that fits `schema`."""
  def check_nullable(value: Any, where: str) -> None:
    if value is not None:
      schema(value, where)
  return check_nullable


def array(item: Check = anything, min_size: int = 0) -> Check:
  """A JSON array of at least `min_size` values, each fitting `item`."""
  def check_array(value: Any, where: str) -> None:
    if not isinstance(value, list):
      raise Invalid(where, f"expected an array, got {_shown(value)}")
    if len(value) < min_size:
      raise Invalid(where, f"expected at least {min_size} values, got {len(value)}")
    for i, v in enumerate(value):
      item(v, f"{where}[{i}]")
  return check_array


def obj(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None,
        values: Check | None = None) -> Check:
  """A JSON object with every key of `required` and any of `optional`, each value fitting its schema.

  Other keys are allowed (a record carries more fields than its readers use: `baseline_record`'s `extra`)
  and their values left unchecked, unless `values` is given: then every value of the object fits it."""
  optional = dict(optional or {})

  def check_obj(value: Any, where: str) -> None:
    if not isinstance(value, dict):
      raise Invalid(where, f"expected an object, got {_shown(value)}")
    missing = [k for k in required if k not in value]
    if missing:
      raise Invalid(where, f"missing {', '.join(map(repr, missing))}")
    for k, v in value.items():
      schema = required.get(k) or optional.get(k) or values
      if schema is not None:
        schema(v, f"{where}.{k}" if where else k)
  return check_obj


# ---------------------------------------------------------------------------------------------------
# A record, as its readers (the report, the runner's and `run_sequence`'s resumption) use it.

_SECONDS = number(minimum=0)

RECORD = obj({
    "sequence": text(),
    "task_index": integer(minimum=1),
    "task": text(nonempty=True),
    "metric": text(),
    "fraction": number(above=0, maximum=1),
    "data": obj({"datasets": array(text()), "synthetic": boolean},
                optional={"train": integer(0), "val": integer(0), "test": integer(0)}),
    "ranked": array(obj({"status": text(), "program": text(), "named": nullable(text()),
                         "test": nullable(score)},
                        optional={"val": nullable(score), "rank": integer(minimum=1),
                                  "reason": nullable(text()), "fresh_types": obj({}, values=text())})),
    "seconds": obj({"wall": _SECONDS},
                   optional={"compile": _SECONDS, "train": _SECONDS, "eval": _SECONDS, "search": _SECONDS}),
}, optional={
    "record_version": integer(minimum=1), "seed": integer(), "instance": integer(minimum=0),
    "method": text(), "task_kind": text(), "type": text(), "strategy": text(),
    "parameters": integer(0), "frozen_parameters": nullable(integer(0)),
    "candidates_trained": nullable(integer(0)), "same_as": nullable(text()), "epochs_run": integer(0),
    "best_epoch": integer(0),
})
"""A record's schema: the fields every reader of records needs, with their types and ranges."""


def read_record(path: os.PathLike | str) -> dict:
  """The record in `path`, checked against `RECORD`. JsonFileError (naming the file, and the field where
  one does not fit) if it is unreadable ("not a readable record: it is not valid JSON ...") or does not fit
  ("not a valid record: ranked[0].test: expected ...")."""
  try:
    value = read_json(path)
  except JsonFileError as err:
    raise JsonFileError(path, f"not a readable record: it {err.problem}") from None
  try:
    RECORD(value, "")
  except Invalid as err:
    raise JsonFileError(path, f"not a valid record: {err}") from None
  return value


# ---------------------------------------------------------------------------------------------------
# A run's settings.json ({"settings": ..., "started": ...}, `hx.synth.run_directory.open_settings`).

SETTINGS_FILE_SCHEMA = obj({"settings": obj({}), "started": text(nonempty=True)})
"""The envelope of every settings.json: the settings (an object) and the run's start time."""

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
  `EVALUATION_SETTINGS`). JsonFileError (naming the file and the field) if unreadable or ill-formed."""
  whole = check(read_json(path), SETTINGS_FILE_SCHEMA, path)
  if settings is not None:
    try:
      settings(whole["settings"], "settings")
    except Invalid as err:
      raise JsonFileError(path, str(err)) from None
  return whole["settings"], whole["started"]
