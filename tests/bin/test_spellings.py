"""The binaries' spellings of strategies (`hx.bin.spellings`): each name gives its object with its default
settings, and an unknown one is one line naming the spellings."""

import pytest

from hx.bin.spellings import STRATEGIES, strategies_from_names, strategy_from_name
from hx.synth import Evolutionary, EvolutionConfig, TopDown


def test_each_spelling_gives_its_strategy_with_its_defaults():
  assert list(STRATEGIES) == ["topdown", "evolutionary"]
  assert strategy_from_name("topdown") == TopDown()
  assert strategy_from_name(" evolutionary ") == Evolutionary(EvolutionConfig())
  assert all(strategy_from_name(name).name == name for name in STRATEGIES)
  assert strategies_from_names(["evolutionary", "", "topdown"]) == (Evolutionary(), TopDown())
  assert strategies_from_names([]) == ()


@pytest.mark.parametrize("name", ["random", "top-down", "TopDown", ""])
def test_an_unknown_spelling_is_one_line_naming_the_spellings(name):
  with pytest.raises(ValueError) as err:
    strategy_from_name(name)
  assert str(err.value) == f"unknown strategy {name!r}; the strategies are topdown, evolutionary"
  with pytest.raises(ValueError, match="the strategies are topdown, evolutionary"):
    strategies_from_names(["topdown", name or "x"])
