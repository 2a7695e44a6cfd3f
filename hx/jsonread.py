"""Reading JSON files with what they must hold checked: one clear error naming the file and the field.

`read_json` reads any JSON file hx keeps (records, settings, a library's manifest, a saved baseline
network's network.json, a checkpoint's JSON text), and `check` holds its value to a schema built from
`integer`, `number`, `score`, `text`, `boolean`, `anything`, `nullable`, `array`, `row` and `obj`. Either
raises one `JsonFileError` whose message names the file and, for a value that does not fit, where in it and
what was expected ("records/01_x/fraction_1.json: ranked[0].test: expected a score (a number or "nan"),
got [1]"), never a KeyError or TypeError from the code that reads the value. A reader with an error type
of its own calls a schema directly and turns the `Invalid` it raises into that error.

Beside the packages (docs/DESIGN.md, "The layers"), so that every layer's files are read the same way:
`hx.synth.jsonfiles` adds the schemas of records and settings, `hx.compile.checkpoint` and
`hx.baselines.networks` check their own files with these.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Callable, Mapping

__all__ = ["JsonValue", "JsonFileError", "read_json", "parse_json", "Invalid", "Check", "check", "integer",
           "number", "score", "text", "boolean", "anything", "nullable", "array", "row", "obj"]

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
"""A JSON value as Python's `json` reads and writes it: null (None), true or false, a number (an int, or a
float: NaN and the infinities too, which Python's reader admits), a string, an array (a list) or an object
(a dict with string keys), arrays and objects holding JSON values in turn."""


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


def read_json(path: os.PathLike | str) -> JsonValue:
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
  return parse_json(text_, path)


def parse_json(text_: str, path: os.PathLike | str) -> JsonValue:
  """The JSON value `text_` writes, read from the file `path` (alone, or inside it: a checkpoint's JSON
  text). JsonFileError as `read_json` raises it if it is not JSON hx reads."""
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


Check = Callable[[JsonValue, str], None]
"""A schema: called with a value and where it is, raises `Invalid` unless the value fits."""


def check(value: JsonValue, schema: Check, path: os.PathLike | str) -> JsonValue:
  """`value` (read from the file `path`) if it fits `schema`; JsonFileError naming the file and the place
  otherwise."""
  try:
    schema(value, "")
  except Invalid as err:
    raise JsonFileError(path, str(err)) from None
  return value


def _shown(value: JsonValue) -> str:
  """A value as a message shows it: its JSON, cut to 60 characters."""
  try:
    shown = json.dumps(value, allow_nan=True)
  except (TypeError, ValueError, RecursionError):
    shown = repr(value)
  return shown if len(shown) <= 60 else shown[:57] + "..."


def _is_int(value: JsonValue) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: JsonValue) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def integer(minimum: int | None = None, maximum: int | None = None) -> Check:
  """A JSON integer (not a boolean, not 2.0) in [minimum, maximum]."""
  bounds = (f" >= {minimum}" if minimum is not None else "") + (
      f"{' and' if minimum is not None else ''} <= {maximum}" if maximum is not None else "")

  def check_integer(value: JsonValue, where: str) -> None:
    if (not _is_int(value) or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)):
      raise Invalid(where, f"expected an integer{bounds}, got {_shown(value)}")
  return check_integer


def number(minimum: float | None = None, maximum: float | None = None, above: float | None = None) -> Check:
  """A finite JSON number (not a boolean, not NaN): >= minimum, <= maximum, > above."""
  bounds = " and".join(part for part in (
      f" > {above:g}" if above is not None else "", f" >= {minimum:g}" if minimum is not None else "",
      f" <= {maximum:g}" if maximum is not None else "") if part)

  def check_number(value: JsonValue, where: str) -> None:
    if (not _is_number(value) or not math.isfinite(value) or (above is not None and value <= above)
        or (minimum is not None and value < minimum) or (maximum is not None and value > maximum)):
      raise Invalid(where, f"expected a finite number{bounds}, got {_shown(value)}")
  return check_number


# The texts `jsonable` writes for non-finite floats.
_NON_FINITE = ("nan", "inf", "-inf")


def score(value: JsonValue, where: str) -> None:
  """A score or loss as `jsonable` writes one: a number, or the text of a non-finite float ("nan",
  "inf", "-inf"; a NaN literal too, which Python's JSON reads). `nullable(score)` admits null (not
  scored) as well."""
  if _is_number(value) or (isinstance(value, str) and value in _NON_FINITE):
    return
  raise Invalid(where, f"expected a score (a number or \"nan\"), got {_shown(value)}")


def text(choices: tuple[str, ...] | None = None, nonempty: bool = False) -> Check:
  """A JSON string, one of `choices` if given, not empty if `nonempty`."""
  def check_text(value: JsonValue, where: str) -> None:
    if not isinstance(value, str):
      raise Invalid(where, f"expected a string, got {_shown(value)}")
    if choices is not None and value not in choices:
      raise Invalid(where, f"expected one of {', '.join(map(repr, choices))}, got {_shown(value)}")
    if nonempty and not value:
      raise Invalid(where, "expected a non-empty string, got \"\"")
  return check_text


def boolean(value: JsonValue, where: str) -> None:
  """true or false."""
  if not isinstance(value, bool):
    raise Invalid(where, f"expected true or false, got {_shown(value)}")


def anything(value: JsonValue, where: str) -> None:
  """Any JSON value (a field whose presence is all a reader needs)."""


def nullable(schema: Check) -> Check:
  """null, or a value that fits `schema`."""
  def check_nullable(value: JsonValue, where: str) -> None:
    if value is not None:
      schema(value, where)
  return check_nullable


def array(item: Check = anything, min_size: int = 0) -> Check:
  """A JSON array of at least `min_size` values, each fitting `item`."""
  def check_array(value: JsonValue, where: str) -> None:
    if not isinstance(value, list):
      raise Invalid(where, f"expected an array, got {_shown(value)}")
    if len(value) < min_size:
      raise Invalid(where, f"expected at least {min_size} values, got {len(value)}")
    for i, v in enumerate(value):
      item(v, f"{where}[{i}]")
  return check_array


def row(*items: Check) -> Check:
  """A JSON array of exactly len(items) values, the i-th fitting items[i] (a table's row, e.g. an epoch's
  [epoch, train_loss, val_score, val_loss, train_seconds, val_seconds])."""
  def check_row(value: JsonValue, where: str) -> None:
    if not isinstance(value, list):
      raise Invalid(where, f"expected an array of {len(items)} values, got {_shown(value)}")
    if len(value) != len(items):
      raise Invalid(where, f"expected an array of {len(items)} values, got {len(value)}")
    for i, (item, v) in enumerate(zip(items, value)):
      item(v, f"{where}[{i}]")
  return check_row


def obj(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None,
        values: Check | None = None) -> Check:
  """A JSON object with every key of `required` and any of `optional`, each value fitting its schema.

  Other keys are allowed (a record carries more fields than its readers use: `baseline_record`'s `extra`)
  and their values left unchecked, unless `values` is given: then every value of the object fits it."""
  optional = dict(optional or {})

  def check_obj(value: JsonValue, where: str) -> None:
    if not isinstance(value, dict):
      raise Invalid(where, f"expected an object, got {_shown(value)}")
    missing = [k for k in required if k not in value]
    if missing:
      raise Invalid(where, f"missing {', '.join(map(repr, missing))}")
    for k, v in value.items():
      schema = required.get(k) or optional.get(k) or values
      if schema is not None:
        schema(v, _member(where, k))
  return check_obj


def _member(where: str, key: str) -> str:
  """Where an object's member is: `where.key`, or `where["key"]` (JSON-quoted, on one line) for a key that
  is not a plain name (empty, or with spaces, dots or line breaks: any key a user's file may hold)."""
  if key.isidentifier():
    return f"{where}.{key}" if where else key
  return f"{where}[{json.dumps(key)}]"
