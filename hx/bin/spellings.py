"""The binaries' spellings of the settings hx takes as objects: a search strategy by its name.

    strategy_from_name("evolutionary")          # hx.synth.Evolutionary(), its default settings
    strategies_from_names(["topdown", "evolutionary"])

`hx.synthesize`, `hx.synth.run_sequence` and `hx.evaluation.EvalConfig.make` take strategy objects
(`hx.synth.TopDown()`, `hx.synth.Evolutionary(EvolutionConfig(...))`); a name is how a flag (hx-run's
--strategy), a sequence file's `strategies` or a benchmark's argument writes one, and is read here only.
A strategy's name is its class's `name` (the text of records and of the methods houdini_<name>).
"""

from __future__ import annotations

from typing import Iterable

from hx.synth.strategies import Evolutionary, Strategy, TopDown

__all__ = ["STRATEGIES", "strategy_from_name", "strategies_from_names"]

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
