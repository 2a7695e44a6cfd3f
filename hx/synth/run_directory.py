"""A run directory: its layout, its seeds, its record version and its settings file.

One HOUDINI run over a sequence (`hx.synth.run_sequence`) writes

    DIR/settings.json                       {"settings": what the run is, "started": its start time,
                                             "record_version": the layout's version}
    DIR/records/TT_TASK/fraction_F.json     one record per task and fraction
    DIR/libraries/after_TT/                 the library after task TT
    DIR/checkpoints/TT_TASK/fraction_F/     candidates' training saved as it goes, until task TT is saved
    DIR/candidates/TT_TASK/fraction_F/      finished candidates' kept outcomes, until task TT is saved

and an evaluation (`hx.evaluation.run`) writes one such directory per method and instance under
DIR/<method>/seed_<S>/ (a baseline's `networks/after_TT/` in place of `libraries/`), with a
settings.json of its own at DIR. Both check a settings file the same way (`open_settings`) and seed
every training by the same formula (`training_seed`), so that HOUDINI and the baselines train a task at
a fraction with one seed, and a resumed run gives what an uninterrupted one gives.

The layout's version is `RECORD_VERSION` (`hx.synth.jsonfiles`): a directory of another version is refused
in one line that names it (`open_settings`), one without a version (written before hx recorded it) is
read as version 1.
"""

from __future__ import annotations

import datetime
import re
import zlib
from pathlib import Path
from typing import Callable

from hx.atomic import LOCK_FILE
from hx.synth.jsonfiles import RECORD_VERSION, JsonFileError, LayoutVersionError, read_settings, write_json

__all__ = ["RECORD_VERSION", "SETTINGS_FILE", "SettingsMismatch", "task_dir", "fraction_file", "record_file",
           "library_dir", "checkpoint_dir", "candidates_dir", "training_seed", "open_settings"]

SETTINGS_FILE = "settings.json"


class SettingsMismatch(ValueError):
  """A result directory holds a run with other settings than the ones asked for."""


def task_dir(index: int, name: str) -> str:
  """The folder name of task `index` (1-based) named `name`: "TT_NAME", the name's unsafe characters
  replaced by "_"."""
  return f"{index:02d}_" + re.sub(r"[^A-Za-z0-9_().-]+", "_", name)


def fraction_file(fraction: float) -> str:
  """The file name of a record at training fraction `fraction`: "fraction_F.json"."""
  return f"fraction_{fraction:g}.json"


def record_file(directory: Path, index: int, name: str, fraction: float) -> Path:
  """DIR/records/TT_TASK/fraction_F.json: the record of task `index` (1-based) at `fraction`."""
  return Path(directory) / "records" / task_dir(index, name) / fraction_file(fraction)


def library_dir(directory: Path, index: int) -> Path:
  """DIR/libraries/after_TT: the library saved after task `index` (1-based)."""
  return Path(directory) / "libraries" / f"after_{index:02d}"


def checkpoint_dir(directory: Path, index: int, name: str, fraction: float | None = None) -> Path:
  """DIR/checkpoints/TT_TASK[/fraction_F]: training saved as it goes for task `index` (1-based)."""
  folder = Path(directory) / "checkpoints" / task_dir(index, name)
  return folder if fraction is None else folder / f"fraction_{fraction:g}"


def candidates_dir(directory: Path, index: int, name: str, fraction: float | None = None) -> Path:
  """DIR/candidates/TT_TASK[/fraction_F]: the finished candidates' kept outcomes for task `index`."""
  folder = Path(directory) / "candidates" / task_dir(index, name)
  return folder if fraction is None else folder / f"fraction_{fraction:g}"


def training_seed(instance: int, index: int, fraction: float) -> int:
  """The seed of every training for task `index` (0-based) at `fraction` in instance `instance` (a
  sequence's seed): a hash of the three, never the clock, in [0, 2**31)."""
  return zlib.crc32(repr((instance, index, round(fraction, 6))).encode()) & 0x7FFFFFFF


def open_settings(directory: Path, settings: dict, *, what: str = "hx run", resume_hint: str =
                  "use another directory, or the same settings to resume it",
                  merge: Callable[[dict, dict], dict | None] | None = None,
                  error: type[Exception] = SettingsMismatch, write: bool = True) -> str | None:
  """Writes DIR/settings.json for a new run, or checks it against `settings` for a resumed one.

  Args:
    directory: the run directory (created if missing).
    settings: the run's settings as JSON values.
    what: what the directory holds, for messages ("hx run", "hx evaluation").
    resume_hint: the end of the message refusing other settings.
    merge: (saved, asked) -> the settings to save instead, when a run that differs from the saved one is
      the same run (an evaluation with more instantiations); None: they differ.
    error: the exception raised.
    write: False to check only, writing nothing (a binary's early refusal, before the process holds the
      directory: `hx.atomic.hold_directory`; the run writes once it holds it).

  Returns:
    the run's start time (ISO 8601, UTC, seconds), as first saved; None for a new run checked only.

  Raises:
    `error`: the directory holds a run with other settings (the message names the differing keys), a
      settings file that cannot be read or is of another layout's version (the message names both), or
      other files and no settings file.
  """
  directory = Path(directory)
  path = directory / SETTINGS_FILE
  if path.exists():
    try:
      saved, started = read_settings(path)
    except LayoutVersionError as err:
      raise error(str(err)) from None
    except JsonFileError as err:
      raise error(f"{path} is not an {what}'s settings file ({err.problem})") from None
    if saved == settings:
      return started
    merged = merge(saved, settings) if merge is not None else None
    if merged is None:
      diff = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
      raise error(f"{directory} holds a run with other settings (differing: {', '.join(diff)}); "
                  f"{resume_hint}")
    if merged != saved and write:
      write_json(path, {"settings": merged, "started": started, "record_version": RECORD_VERSION})
    return started
  if directory.exists() and (not directory.is_dir() or any(p.name != LOCK_FILE for p in directory.iterdir())):
    raise error(f"{directory} is not empty and holds no {what} (no {SETTINGS_FILE})")
  if not write:
    return None
  started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
  write_json(path, {"settings": settings, "started": started, "record_version": RECORD_VERSION})
  return started
