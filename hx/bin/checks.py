"""How the binaries refuse what cannot work: one line on stderr, `error: ...`, and exit status 1, before
anything is written; never a traceback, never a silent default.

    try:
      no_arguments(argv)
      nonempty_lists(_FRACTIONS, _METHODS)
      writable_directory(Path(_OUTPUT.value), "--output_dir")
    except FlagError as err:
      return refuse(err)

A bad value absl itself can tell (an unknown flag, an integer flag given "x", an enum flag given another
word) absl refuses when it parses the flags; so does a check registered on a flag with `check_flag` or
`check_flags` (a count below its minimum, a path that does not exist or is not of its kind, a flag given
without the one it only matters with: `at_least`, `positive`, `fraction`, `existing`, `needs`). Each binary
runs `app.run(main, flags_parser=parse_flags)`, which makes those refusals the same one line and status 1.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, Union

from absl import flags

if TYPE_CHECKING:
  import types

__all__ = ["FlagError", "refuse", "one_line", "no_arguments", "nonempty_lists", "writable_directory",
           "module_overrides", "parse_flags", "flag_error_line", "check_flag", "check_flags", "at_least",
           "positive", "fraction", "existing", "existing_path", "needs", "parses", "FlagValue"]

FlagValue = Union[bool, int, float, str, list[str], None]
"""A flag's value as absl parses it: a boolean, integer, float, string or enum flag's, a list flag's
strings, or None (not given, without a default)."""

Problem = Callable[[str, FlagValue], "str | None"]
"""What is wrong with a flag's value, given the flag's name and value, in words that start with the flag
("--tasks must be >= 1, got 0"); None if nothing is."""


class FlagError(ValueError):
  """A flag (or a combination of flags) that cannot work; the message is one line that names it."""


def one_line(err: BaseException | str) -> str:
  """The message of `err` on one line (some errors, `hx.data.DataError`'s, say where they looked and what
  to set on lines of their own)."""
  return "; ".join(part.strip() for part in str(err).splitlines() if part.strip())


def refuse(err: BaseException | str) -> int:
  """Prints `error: <err on one line>` to stderr and returns the exit status 1."""
  print(f"error: {one_line(err)}", file=sys.stderr, flush=True)
  return 1


def no_arguments(argv: list[str]) -> None:
  """Refuses positional arguments (`argv` as absl gives it: the program, then what no flag took), which
  would otherwise be ignored."""
  if len(argv) > 1:
    raise FlagError(f"unexpected arguments {' '.join(argv[1:])} (flags take the form --name=value)")


def nonempty_lists(*holders: flags.FlagHolder) -> None:
  """Refuses a list flag given as empty (`--fractions=`), which would otherwise run as if it were not
  given, with the default. `holders`: absl `FlagHolder`s of `DEFINE_list` flags."""
  for holder in holders:
    if holder.value is not None and not [v for v in holder.value if v.strip()]:
      raise FlagError(f"--{holder.name} is empty: give at least one value, or leave the flag out for the "
                      "default")


def writable_directory(path: os.PathLike | str, flag: str) -> None:
  """Refuses a directory that cannot be written: one that is a file, lies under a file, or where no
  directory can be created (no permission, a read-only or virtual file system). Leaves nothing behind:
  it makes and removes an empty directory in `path` if it exists, else the first of `path`'s missing
  directories (permissions alone do not tell: root may write anywhere, /proc takes no directory)."""
  path = Path(path)
  where = path.absolute()
  if where.exists() and not where.is_dir():
    raise FlagError(f"{flag}: {path} is a file, not a directory")
  probe_in = where
  while not probe_in.is_dir():
    if probe_in.exists() or probe_in.is_symlink():  # a file (or a dangling link) on the way
      raise FlagError(f"{flag}: cannot create {path}: {probe_in} is not a directory")
    probe_in = probe_in.parent
  try:
    if probe_in == where:
      os.rmdir(tempfile.mkdtemp(prefix=".hx-write-check-", dir=where))
    else:
      first = probe_in / where.relative_to(probe_in).parts[0]
      os.mkdir(first)
      os.rmdir(first)
  except OSError as err:
    raise FlagError(f"{flag}: cannot create or write {path}: {err.strerror or err} in {probe_in}") from None


def module_overrides(items: list[str] | None, flag: str = "--module") -> dict:
  """ModuleConfig fields to change, from `NAME=VALUE` items (`mlp_hidden=16`, `cnn_channels=4:8`,
  `fold_step_norm=False`), each read as its field's type; a flag that is not one refused with a
  FlagError naming `flag`."""
  from hx.compile.modules.config import ModuleConfig  # imports JAX, which the other checks do not need

  if not items:
    return {}
  fields = {f.name: f for f in dataclasses.fields(ModuleConfig)}
  default = ModuleConfig()
  out = {}
  for item in items:
    name, sep, text = item.partition("=")
    if not sep or name not in fields:
      raise FlagError(f"{flag}: {item!r} is not NAME=VALUE with NAME one of {', '.join(fields)}")
    current = getattr(default, name)
    try:
      if isinstance(current, tuple):
        parts = [p for p in text.split(":") if p]
        value = tuple(int(p) for p in parts) if current and isinstance(current[0], int) else tuple(parts)
      elif isinstance(current, bool):  # bool("False") is True: read the words instead
        value = {"true": True, "1": True, "false": False, "0": False}[text.strip().lower()]
      else:
        value = type(current)(text)
    except (ValueError, KeyError):
      raise FlagError(f"{flag}: {name}={text!r} is not a {type(current).__name__}") from None
    out[name] = value
  return out


# ---------------------------------------------------------------------------------------------------
# Checks absl runs when it parses the flags.

# absl's prefix of a validator's message ("flag --tasks=0: " or "flags a=1, b=2: "), dropped where the
# message names its flag itself.
_ABSL_PREFIX = re.compile(r"flags? .*?: (?=--)")


def parse_flags(argv: list[str]) -> list[str]:
  """absl's flag parsing, for `app.run(main, flags_parser=parse_flags)`: a flag absl refuses (an unknown
  name, a value not of its type or not one of its words, a check of `check_flag` or `check_flags`) is one
  line on stderr, `error: ...`, and exit status 1. (absl's own parser says "FATAL Flags parsing error"
  and adds a line about --helpshort.) Returns what no flag took, the program first, as absl does.

  `--help` prints the binary's docstring and every flag hx defines in this process (`_help_lists_hx_flags`),
  the same from a console script (`hx-run`, `hx-cs1`, `hx-report`) as from `python -m hx.bin.run`."""
  _help_lists_hx_flags()
  try:
    return flags.FLAGS(argv)
  except flags.Error as err:
    print(f"error: {flag_error_line(err)}", file=sys.stderr, flush=True)
    sys.exit(1)


def _help_lists_hx_flags() -> None:
  """Makes absl's `--help` (its short help: the docstring of `__main__`, then the key flags of the module
  `sys.argv[0]` names) show the binary's docstring and the flags of hx's modules (the binary's own, and
  those it imports: `hx.bin.data_flags`, `hx.bin.executor_flags`), absl's own (--verbosity, ...) being
  left to --helpfull. Without this a console script shows neither: its `__main__` is the script pip
  wrote, which has no docstring and defines no flag, so absl printed only "Try --helpfull"."""
  main = sys.modules.get("__main__")
  binary = _calling_binary()
  if binary is not None and main is not None and main is not binary and not getattr(main, "__doc__", None):
    main.__doc__ = binary.__doc__
  for module, defined in flags.FLAGS.flags_by_module_dict().items():
    if module.startswith("hx.") or module == sys.argv[0]:
      for flag in defined:
        flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def _calling_binary() -> types.ModuleType | None:
  """The module of `hx.bin` whose function called `parse_flags` (through absl's `app.run`), or None."""
  frame = sys._getframe(1)
  while frame is not None:
    name = frame.f_globals.get("__name__", "")
    if name.startswith("hx.bin.") and name != __name__:
      return sys.modules.get(name)
    frame = frame.f_back
  return None


def flag_error_line(err: BaseException) -> str:
  """absl's refusal of the flags in one line: its first (absl puts each failed check on a line of its
  own), without absl's "flag --tasks=0: " where the message goes on to name the flag itself."""
  text = str(err).strip()
  first = text.splitlines()[0] if text else type(err).__name__
  match = _ABSL_PREFIX.match(first)
  return first[match.end():] if match else first


def check_flag(holder: flags.FlagHolder, problem: Problem) -> None:
  """Has absl refuse `holder`'s flag when it parses the flags (before `main`) if `problem(name, value)`
  says what is wrong with its value. `holder`: an absl `FlagHolder`."""
  name = holder.name

  def checker(value: FlagValue) -> bool:
    message = problem(name, value)
    if message is not None:
      raise flags.ValidationError(message)
    return True
  flags.register_validator(holder, checker)


def check_flags(holders: Sequence[flags.FlagHolder],
                problem: Callable[[Mapping[str, FlagValue]], "str | None"]) -> None:
  """Has absl refuse a combination of flags when it parses them if `problem({name: value})` says what is
  wrong with it (in words that start with the flag at fault)."""
  def checker(values: Mapping[str, FlagValue]) -> bool:
    message = problem(values)
    if message is not None:
      raise flags.ValidationError(message)
    return True
  flags.register_multi_flags_validator(list(holders), checker)


def parses(parse: Callable[[str], object]) -> Problem:
  """Text that `parse` (`hx.parse`, `hx.parse_type`) must accept when given: a ParseError's first line
  (the excerpt and caret below it are for a terminal)."""
  from hx.lang import ParseError

  def problem(name: str, value: FlagValue) -> str | None:
    if value is None:
      return None
    try:
      parse(value)
    except ParseError as err:
      return f"--{name}: parse error: {str(err).splitlines()[0]}"
    return None
  return problem


def at_least(minimum: int) -> Problem:
  """A number (or each of a list of numbers) that must be >= `minimum` when given."""
  def problem(name: str, value: FlagValue) -> str | None:
    for v in value if isinstance(value, list) else [value]:
      if v is not None and v < minimum:
        return f"--{name} must be >= {minimum}, got {v:g}"
    return None
  return problem


def positive(what: str) -> Problem:
  """A number that must be > 0 (and not NaN) when given; `what` says what it measures ("seconds")."""
  def problem(name: str, value: FlagValue) -> str | None:
    if value is not None and not value > 0:
      return f"--{name} must be a positive number of {what}, got {value:g}"
    return None
  return problem


def fraction(name: str, value: FlagValue) -> str | None:
  """A list of training fractions, each a number in (0, 1] (an empty item is left to `nonempty_lists`)."""
  items = [v.strip() for v in value or [] if v.strip()]
  try:
    numbers = [float(v) for v in items]
  except ValueError:
    return f"--{name}: {','.join(value)!r} is not a list of floats"
  for text, f in zip(items, numbers):
    if not 0 < f <= 1:
      return f"--{name}: training fraction {text} is outside (0, 1]"
  return None


def existing_path(path: str, flag: str, kind: str, what: str = "") -> str | None:
  """What is wrong with `path` as the value of `flag`, which names an existing `kind` ("file",
  "directory" or "file or directory"), or None. `what` says what it should hold, for the message."""
  p = Path(path)
  hint = f" ({what})" if what else ""
  if not p.exists():
    return f"{flag}: {path} does not exist{hint}"
  if kind == "file" and not p.is_file():
    return f"{flag}: {path} is {'a directory' if p.is_dir() else 'not a regular file'}, not a file{hint}"
  if kind == "directory" and not p.is_dir():
    return f"{flag}: {path} is a file, not a directory{hint}"
  if not os.access(p, os.R_OK):
    return f"{flag}: {path} cannot be read (no permission){hint}"
  return None


def existing(kind: str, what: str = "", allow: tuple[str, ...] = ()) -> Problem:
  """A path flag: when given, an existing `kind` (see `existing_path`), unless it is one of the words
  `allow` or starts with one of them and ':' ("tfds", "tfds:DIR")."""
  def problem(name: str, value: FlagValue) -> str | None:
    if value is None or any(value == word or value.startswith(word + ":") for word in allow):
      return None
    return existing_path(value, f"--{name}", kind, what)
  return problem


def needs(dependent: str, requirement: str, met: Callable[[Mapping[str, FlagValue]], bool],
          default: FlagValue = None) -> Callable[[Mapping[str, FlagValue]], "str | None"]:
  """For `check_flags`: refuses the flag `dependent` given (a value other than `default`) where
  `met(values)` is False, saying `--dependent <requirement>` ("needs --halving (it sets halving's first
  rung)")."""
  def problem(values: Mapping[str, FlagValue]) -> str | None:
    if values[dependent] != default and not met(values):
      return f"--{dependent} {requirement}"
    return None
  return problem
