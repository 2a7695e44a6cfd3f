"""Schedules: how a synthesis trains the candidates its search proposes (`Budget.schedule`).

    budget = Budget(candidates=20, schedule=parse_schedule("halving:eta=4,first=2"))
    schedule_text(budget.schedule)             # "halving": both are Halving's defaults

Every schedule is a small frozen dataclass with one method, `run` (the `Schedule` protocol): it trains the
candidates through the synthesis's executor and returns a `ScheduleResult`, every candidate's result and
the estimate of each it stopped before the end.

- `ToEnd`, text `to_end` (the default): every candidate to the end, the paper's way.
- `Halving`, `halving` (`hx.synth.schedules.halving`): successive halving.
- `CheapFirst`, `cheap_first` (`hx.synth.schedules.cheap_first`): every candidate probed, the cheap ones
  and the costly ones ahead of them trained to the end.
- `Estimate`, `estimate` (`hx.synth.schedules.estimate`): every candidate estimated, the best trained to
  the end.

The last three are ours (for the top-down strategy only). As text (`parse_schedule`, the binaries'
`--schedule`) a schedule is its name, then, after a colon, the settings that differ from its defaults:
`halving:eta=2,equal=time`, `cheap_first:probe=40,keep=none,free=true`, `estimate:method=head,keep=8`.
A key is a field's name (`val` for `val_examples`, `probe` for `probe_steps`), and `none` is None.
"""

from __future__ import annotations

import dataclasses

from hx.synth.options import option_text, read_options
from hx.synth.schedules.base import Schedule, ScheduleResult, Scored, Train, as_estimates, never
from hx.synth.schedules.cheap_first import CheapFirst
from hx.synth.schedules.estimate import Estimate
from hx.synth.schedules.halving import Halving
from hx.synth.schedules.to_end import ToEnd

__all__ = ["Schedule", "ScheduleResult", "Scored", "Train", "never", "as_estimates", "ToEnd", "Halving",
           "CheapFirst", "Estimate", "SCHEDULES", "parse_schedule", "schedule_text", "schedule_keys"]

SCHEDULES = {cls.NAME: cls for cls in (ToEnd, Halving, CheapFirst, Estimate)}
"""The schedules by the name their text starts with."""


def schedule_keys(cls: type) -> dict[str, str]:
  """A schedule class's keys as text writes them, each with the kind of its field ("int", "float | None",
  ...), in the fields' order."""
  names = {field: key for key, field in cls.KEYS.items()}
  return {names.get(f.name, f.name): str(f.type) for f in dataclasses.fields(cls)}


def parse_schedule(text: str) -> ToEnd | Halving | CheapFirst | Estimate:
  """The schedule `text` describes: `NAME` or `NAME:KEY=VALUE,...` (the module docstring), e.g.
  `halving:eta=4,first=2,val=200`; the fields not given keep their defaults.

  Raises:
    ValueError: one line naming the unknown schedule, key or bad value and listing what would do, or
      saying what the schedule refuses (`Halving needs eta >= 2 ...`).
  """
  choices = {name: schedule_keys(cls) for name, cls in SCHEDULES.items()}
  name, options = read_options(text, choices, "schedule")
  cls = SCHEDULES[name]
  fields = {key: field for field, key in zip((f.name for f in dataclasses.fields(cls)), choices[name])}
  try:
    return cls(**{fields[key]: value for key, value in options.items()})
  except ValueError as err:
    raise ValueError(f"{text.strip()}: {err}") from None


def schedule_text(schedule: Schedule | None) -> str:
  """`schedule` (or None, `ToEnd()`) as `parse_schedule` reads it back: its name and the fields that
  differ from their defaults."""
  schedule = ToEnd() if schedule is None else schedule
  cls = type(schedule)
  if SCHEDULES.get(getattr(cls, "NAME", None)) is not cls:
    raise ValueError(f"{schedule!r} is not a schedule of hx.synth.schedules ({', '.join(SCHEDULES)})")
  keys = schedule_keys(cls)
  items = [f"{key}={option_text(getattr(schedule, f.name))}"
           for f, key in zip(dataclasses.fields(cls), keys) if getattr(schedule, f.name) != f.default]
  return cls.NAME + (":" + ",".join(items) if items else "")
