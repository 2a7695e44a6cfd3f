"""The binaries' spellings of the settings hx takes as objects: a search strategy by its name, an
executor by its name and settings.

    strategy_from_name("evolutionary")          # hx.synth.Evolutionary(), its default settings
    strategies_from_names(["topdown", "evolutionary"])
    parse_executor("processes:workers=4,threads=1,lend=true")   # hx.synth.Processes(4, 1, lend=True)

`hx.synth.SynthesisConfig` and `hx.evaluation.EvalConfig.make` take strategy objects
(`hx.synth.TopDown()`, `hx.synth.Evolutionary(EvolutionConfig(...))`), and `hx.synthesize` and
`hx.synth.run_sequence` executor settings (`hx.synth.Local()`, `hx.synth.Processes(...)`,
`hx.synth.Ray(...)`); a name is how a flag (hx-run's --strategy and --executor), a sequence file's
`strategies` or a benchmark's argument writes one, and is read here only. A strategy's name is its
class's `name` (the text of records and of the methods houdini_<name>).
"""

from __future__ import annotations

from typing import Iterable

from hx.synth.executors import Local, Processes, Ray, default_executor
from hx.synth.options import read_options
from hx.synth.strategies import Evolutionary, Strategy, TopDown

__all__ = ["STRATEGIES", "strategy_from_name", "strategies_from_names", "EXECUTORS", "EXECUTOR_KEYS",
           "parse_executor"]

STRATEGIES: dict[str, type] = {cls.name: cls for cls in (TopDown, Evolutionary)}
"""The strategies by their spelling (`Strategy.name`), each made with its default settings."""


def strategy_from_name(name: str) -> Strategy:
  """The strategy `name` spells ("topdown", "evolutionary"), with its default settings.

  Raises:
    ValueError: one line naming the unknown name and the spellings.
  """
  cls = STRATEGIES.get(name.strip())
  if cls is None:
    raise ValueError(f"unknown strategy {name.strip()!r}; the strategies are {', '.join(STRATEGIES)}")
  return cls()


def strategies_from_names(names: Iterable[str]) -> tuple[Strategy, ...]:
  """`strategy_from_name` of each of `names` (blank ones left out), in order.

  Raises:
    ValueError: an unknown name (`strategy_from_name`).
  """
  return tuple(strategy_from_name(n) for n in names if n.strip())


EXECUTORS: dict[str, type] = {"local": Local, "processes": Processes, "ray": Ray}
"""The executor settings by their spelling (the text before the colon)."""

EXECUTOR_KEYS: dict[str, dict[str, str]] = {
    "auto": {},
    "local": {},
    "processes": {"workers": "int | None", "threads": "int | None", "lend": "bool", "max_retries": "int",
                  "job_timeout": "float | None"},
    "ray": {"address": "str | None", "num_cpus": "int | None", "cpus_per_job": "int", "max_retries": "int"},
}
"""Per spelling, its keys (the fields of its settings, `EXECUTORS`) and their kinds (`hx.synth.options`)."""


def parse_executor(text: str) -> Local | Processes | Ray:
  """The executor settings `text` spells: `NAME` or `NAME:KEY=VALUE,...` (`EXECUTOR_KEYS`), e.g.
  `processes:workers=4,threads=1,lend=true`, `ray:address=auto`, `local`; `auto` (no keys) is
  `hx.synth.executors.default_executor()` (which looks at this machine's backend and cores). A key not
  given keeps its default (`hx.synth.Processes`, `hx.synth.Ray`). Nothing starts: call the result's
  `start()`, or pass it to `hx.synthesize`.

  Raises:
    ValueError: one line naming the unknown executor, key or bad value and listing what would do, or
      saying what the settings refuse (`processes:workers=0: bad Processes settings: ...`).
  """
  name, options = read_options(text, EXECUTOR_KEYS, "executor")
  if name == "auto":
    return default_executor()
  try:
    return EXECUTORS[name](**options)
  except ValueError as err:
    raise ValueError(f"{text.strip()}: {err}") from None
