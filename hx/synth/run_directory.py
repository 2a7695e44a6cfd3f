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

The layout's version is `RECORD_VERSION` (`hx.synth.jsonfiles`), 3. A directory of version 1 (or without a
version: written before hx recorded it) or 2 is read, and resumed:
- its settings.json of version 1 left the fields of `VERSION_1_OMITTED` out where they held their
  defaults, so `open_settings` fills them in from the settings asked for before it compares the two
  (`migrated_settings`);
- a long stream's run of version 1 or 2 spelt its recognize tasks "recognise", in the settings, the
  records, the record folders' names and the library's provenance, so `respell` renames those folders
  and rewrites those files with this hx's spelling (`RESPELLED`) when the run is opened, to be resumed
  (`open_settings`) or to rebuild its report (`hx.evaluation.build_report`, the stream's report);
then `open_settings` rewrites settings.json as version 3. Its records are read as they are: a record's
fields did not change. A directory of any other version is refused in one line that names the file and
the versions.

Resumed by this hx, a task that an older hx left unfinished trains again the candidates it had checkpointed
or kept: their files are named by a hash of what they train (`hx.canonical_json.content_key`), no longer by
reprs, so those files are not found (and are left where they are). Finished tasks are read from their
records, which no such name touches: they are not trained again.
"""

from __future__ import annotations

import datetime
import os
import re
import zlib
from pathlib import Path
from typing import Callable, Mapping

from hx.atomic import LOCK_FILE, write_atomically
from hx.jsonread import JsonValue
from hx.synth.jsonfiles import (
  RECORD_VERSION,
  JsonFileError,
  LayoutVersionError,
  read_json,
  read_settings_file,
  write_json,
)

__all__ = ["RECORD_VERSION", "SETTINGS_FILE", "SettingsMismatch", "task_dir", "fraction_file", "record_file",
           "library_dir", "checkpoint_dir", "candidates_dir", "training_seed", "open_settings",
           "VERSION_1_OMITTED", "migrated_settings", "RESPELLED", "respelled", "respell"]

SETTINGS_FILE = "settings.json"


VERSION_1_OMITTED: Mapping[str, JsonValue] = {
    # hx.synth.space.SearchSpace
    "library_tasks": None, "probed_tasks": None, "reused_programs": 0, "reuse_tolerance": 0.0,
    "reuse_standard_errors": 0.0,
    # hx.synth.schedules.CheapFirst
    "eta": None, "keep_at": 2.0, "free": False,
    # hx.compile.ModuleConfig
    "mlp_order": "bn_relu", "fold_step_norm": True,
    # hx.evaluation.EvalConfig
    "stream": None,
}
"""The settings fields a settings.json of layout version 1 left out where they held their defaults, by
name, with those defaults (as JSON values): fields added to the settings' dataclasses after runs had been
saved, which version 1's hx wrote only where they differed from their defaults, so that the earlier runs'
settings still matched. Version 2 writes every field; `migrated_settings` puts these back into a version 1
file's settings. Fixed: a field added from now on is written at every value, so the runs saved before it
hold other settings than the ones asked, and resuming them needs a migration of its own (a layout version
of its own), not an entry here."""


def migrated_settings(saved: JsonValue, asked: JsonValue) -> JsonValue:
  """The settings `saved` of a version 1 settings.json as versions 2 and 3 write them, for the run `asked`
  (the settings as JSON values): wherever `asked` holds a field of `VERSION_1_OMITTED` at its default (of the
  same JSON type: true is not 1) in an object where `saved` lacks it, the field is added to `saved`, at
  every depth (objects by key, arrays of equal length element by element). Anything else is left as
  `saved` holds it, to be compared with `asked` as it is: a field `saved` lacks that `asked` holds at
  another value (a run of other settings) stays missing."""
  if isinstance(saved, dict) and isinstance(asked, dict):
    out = {k: migrated_settings(v, asked[k]) if k in asked else v for k, v in saved.items()}
    for k, v in asked.items():
      if k not in saved and k in VERSION_1_OMITTED and _same_json(v, VERSION_1_OMITTED[k]):
        out[k] = v
    return out
  if isinstance(saved, list) and isinstance(asked, list) and len(saved) == len(asked):
    return [migrated_settings(s, a) for s, a in zip(saved, asked)]
  return saved


def _same_json(a: JsonValue, b: JsonValue) -> bool:
  """Whether two JSON values are equal as JSON (2 and 2.0 alike, true and 1 not)."""
  return a == b and isinstance(a, bool) == isinstance(b, bool)


RESPELLED: tuple[tuple[str, str], ...] = (("recognise", "recognize"),)
"""(old, new): the words a run directory of layout version 1 or 2 spelt otherwise than this hx does. A long
stream's task kind was "recognise" (task names "recognise_digit(7)", ...) where the paper's sequences and
the presets spell "recognize"; version 3 spells it so everywhere. No other name of a run holds the old
word, so replacing it anywhere in a run's names and JSON text changes those task names and nothing
else."""


def respelled(value: JsonValue) -> JsonValue:
  """`value` (a string, or JSON values at any depth, keys included) with every old word of `RESPELLED`
  replaced by its new one."""
  if isinstance(value, str):
    for old, new in RESPELLED:
      value = value.replace(old, new)
    return value
  if isinstance(value, dict):
    return {respelled(k): respelled(v) for k, v in value.items()}
  if isinstance(value, list):
    return [respelled(v) for v in value]
  return value


_KEYED_BY_CONTENT = ("checkpoints", "candidates")
"""The folders of a run whose files are named by a hash of what they train: their text is not respelt
(their names would no longer be their content's), so a candidate of a renamed task trains again, as
after any other change of what it trains."""


def respell(directory: os.PathLike | str) -> int:
  """Brings the names in the run directory `directory` (a `run_sequence` directory or an evaluation's, with
  every run below it) to layout version 3's spelling (`RESPELLED`), on disk, unless its settings.json is
  of version 3 already (then nothing is read):
  - every folder whose name holds an old word is renamed (records/TT_TASK, checkpoints/TT_TASK, ...);
  - every JSON file that holds one is rewritten (records, settings.json files, the library's and the
    networks' manifests, kept re-scores and sizes), but for those in `_KEYED_BY_CONTENT`.
  Each rename and rewrite is atomic and the whole is idempotent: interrupted, the next call finishes it.
  The settings.json's version is `open_settings`'s to write (a version 1 file needs the settings asked for).

  Returns:
    how many folders and files it changed.

  Raises:
    FileExistsError: a folder's new name is taken already (both named).
    hx.synth.jsonfiles.JsonFileError: settings.json is not readable, or of a layout this hx does not read.
  """
  directory = Path(directory)
  settings = directory / SETTINGS_FILE
  if settings.exists():
    read_settings_file(settings)  # refuses a newer layout before anything is changed
    if read_json(settings).get("record_version") == RECORD_VERSION:
      return 0
  changed = 0
  for here, folders, files in os.walk(directory, topdown=False):
    place = Path(here)
    keyed = any(part in _KEYED_BY_CONTENT for part in place.relative_to(directory).parts)
    for name in files if not keyed else ():
      if name.endswith(".json"):
        text = (place / name).read_text("utf-8")
        new = respelled(text)
        if new != text:
          write_atomically(place / name, lambda f, new=new: f.write(new), text=True)
          changed += 1
    for name in folders:
      if respelled(name) != name:
        source, target = place / name, place / respelled(name)
        if target.exists():
          raise FileExistsError(f"{source} cannot be renamed {target.name}, this hx's spelling of its "
                                f"task: {target} exists; move one of them away")
        source.rename(target)
        changed += 1
  return changed


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

  A settings.json of layout version 1 or 2 is compared as `respelled` and `migrated_settings` make it;
  where it is the same run, the directory is respelt (`respell`) and settings.json rewritten as version 3
  (unless `write` is False: then nothing is written) and the run resumes.

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
      settings file that cannot be read or is of a layout this hx does not read (the message names the
      file and the versions), other files and no settings file, or an older layout's folder whose
      respelt name is taken (`respell`: both named).
  """
  directory = Path(directory)
  path = directory / SETTINGS_FILE
  if path.exists():
    try:
      saved, started, version = read_settings_file(path)
    except LayoutVersionError as err:
      raise error(str(err)) from None
    except JsonFileError as err:
      raise error(f"{path} is not an {what}'s settings file ({err.problem})") from None
    if version != RECORD_VERSION:
      saved = respelled(saved)
    if version == 1:
      saved = migrated_settings(saved, settings)
    if saved == settings:
      merged = saved
    else:
      merged = merge(saved, settings) if merge is not None else None
    if merged is None:
      diff = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
      raise error(f"{directory} holds a run with other settings (differing: {', '.join(diff)}); "
                  f"{resume_hint}")
    if version != RECORD_VERSION and write:
      try:
        respell(directory)
      except FileExistsError as err:
        raise error(str(err)) from None
    if (merged != saved or version != RECORD_VERSION) and write:
      write_json(path, {"settings": merged, "started": started, "record_version": RECORD_VERSION})
    return started
  if directory.exists() and (not directory.is_dir() or any(p.name != LOCK_FILE for p in directory.iterdir())):
    raise error(f"{directory} is not empty and holds no {what} (no {SETTINGS_FILE})")
  if not write:
    return None
  started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
  write_json(path, {"settings": settings, "started": started, "record_version": RECORD_VERSION})
  return started
