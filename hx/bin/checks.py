"""How the binaries refuse what cannot work: one line on stderr, `error: ...`, and exit status 1, before
anything is written; never a traceback, never a silent default.

    try:
      no_arguments(argv)
      nonempty_lists(_FRACTIONS, _METHODS)
      writable_directory(Path(_OUTPUT.value), "--output_dir")
    except FlagError as err:
      return refuse(err)

A bad value absl itself can tell (an integer flag given "x", an enum flag given another word) absl refuses
when it parses the flags, also with exit status 1.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["FlagError", "refuse", "one_line", "no_arguments", "nonempty_lists", "writable_directory",
           "module_overrides"]


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


def nonempty_lists(*holders: Any) -> None:
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
  from hx.compile.modules import ModuleConfig  # imports JAX, which the other checks do not need

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
