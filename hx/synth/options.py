"""Settings written as one line of text, `NAME` or `NAME:KEY=VALUE,KEY=VALUE`: how the binaries' flags name
a schedule (`hx.synth.schedules.parse_schedule`) or an executor (`hx.bin.spellings.parse_executor`).

    read_options("halving:eta=2,val=none", {"halving": {"eta": "int", "val": "int | None"}}, "schedule")
    # -> ("halving", {"eta": 2, "val": None})

A key's kind is the text of a type annotation: "int", "float", "str" or "bool", optionally `| None`
(then the word `none` gives None). A bool is `true` or `false` (or 1 or 0). Anything else is one
ValueError, a line that names the setting, the bad name, key or value, and what would do.
"""

from __future__ import annotations

from typing import Mapping, Union

__all__ = ["read_options", "read_value", "option_text", "OptionValue"]

OptionValue = Union[bool, int, float, str, None]
"""A key's value as `read_value` reads it: of its kind ("int", "float", "str" or "bool"), or None."""

_KINDS = {"int": "an integer", "float": "a number", "str": "a word", "bool": "true or false"}
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


def read_options(text: str, choices: Mapping[str, Mapping[str, str]],
                 what: str) -> tuple[str, dict[str, OptionValue]]:
  """(name, {key: value}) from `text`, `NAME` or `NAME:KEY=VALUE,...`.

  Args:
    text: the setting as written.
    choices: per name, its keys and their kinds ("int", "float", "str", "bool", each optionally
      "| None"), in the order an error lists them.
    what: the kind of setting ("schedule", "executor"), for the message about an unknown name (the
      others start with the name: "halving: unknown key 'etaa'; its keys are ...").

  Raises:
    ValueError: an unknown name or key, an item that is not KEY=VALUE, a key given twice, or a value
      that is not of its key's kind.
  """
  name, sep, rest = text.strip().partition(":")
  name = name.strip()
  if name not in choices:
    given = "" if text.strip() == name else f" in {text.strip()!r}"
    raise ValueError(f"unknown {what} {name!r}{given}; the {what}s are {', '.join(choices)}")
  keys = choices[name]
  listed = f"its keys are {', '.join(keys)}" if keys else "it takes no keys"
  options: dict[str, OptionValue] = {}
  for item in rest.split(",") if sep else ():
    key, eq, value = (part.strip() for part in item.partition("="))
    if not eq or not key:
      raise ValueError(f"{name}: {item.strip()!r} is not KEY=VALUE; {listed}")
    if key not in keys:
      raise ValueError(f"{name}: unknown key {key!r}; {listed}")
    if key in options:
      raise ValueError(f"{name}: {key} is given twice")
    options[key] = read_value(value, keys[key], f"{name}: {key}")
  return name, options


def read_value(text: str, kind: str, where: str) -> OptionValue:
  """`text` read as `kind` ("int", "float", "str", "bool", optionally "| None"); ValueError naming
  `where` otherwise."""
  base, _, optional = (part.strip() for part in kind.partition("|"))
  if base not in _KINDS or optional not in ("", "None"):
    raise ValueError(f"{where}: the kind {kind!r} is none of {', '.join(_KINDS)} (optionally | None)")
  if optional and text.lower() == "none":
    return None
  try:
    if base == "bool":
      return _BOOLS[text.lower()]
    if base == "str":
      if not text:
        raise ValueError(text)
      return text
    return int(text) if base == "int" else float(text)
  except (KeyError, ValueError):
    expected = _KINDS[base] + (" or none" if optional else "")
    raise ValueError(f"{where}={text!r} is not {expected}") from None


def option_text(value: OptionValue) -> str:
  """`value` as `read_value` reads it back: none, true, false, a number or a word."""
  if value is None:
    return "none"
  if isinstance(value, bool):
    return "true" if value else "false"
  return repr(value) if isinstance(value, float) else str(value)
