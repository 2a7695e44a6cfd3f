"""The strategies' one shape (`hx.synth.strategies`): each is an object of its own settings that starts a
search, which proposes candidates from the last ones' scores; top-down proposes its enumeration once,
evolution each generation what `evolve` would have scored. Each strategy refuses, in one line, what does
not apply to it."""

import dataclasses
import math

import pytest

from hx.lang.paper import paper_library, task_type
from hx.synth.evolution import EvolutionConfig, evolve
from hx.synth.schedules import CheapFirst, Estimate, Halving, ToEnd
from hx.synth.space import SearchSpace
from hx.synth.strategies import (
  Evolutionary,
  EvolutionarySearch,
  SearchSetup,
  TopDown,
  TopDownSearch,
  check_strategy,
)
from hx.synth.synthesize import Budget
from hx.synth.topdown import enumerate_programs

SS_LIB = {k: v for k, v in paper_library("tab:SSProgs").items() if k in ("nn_ss_1", "nn_ss_2")}
CONFIG = EvolutionConfig(population=6, generations=5)


def score(candidates):
  """A deterministic score by the program's text (inf for some: failed)."""
  return [float(len(str(c.program)) % 7) if len(str(c.program)) % 5 else math.inf for c in candidates]


def drive(strategy):
  """The proposals, each scored by `score`, until the strategy stops."""
  batches, scores = [], {}
  while (batch := strategy.propose(scores)) is not None:
    batch = list(batch)
    batches.append([str(c.program) for c in batch])
    scores = {c.key: s for c, s in zip(batch, score(batch))}
  return batches


def test_topdown_proposes_its_enumeration_once():
  t = task_type("sum_digits")
  search = TopDown().start(SearchSetup(t, SS_LIB, limit=6, batch=2))
  assert isinstance(search, TopDownSearch) and search.batch == 2
  first = list(search.propose({}))
  assert [str(c.program) for c in first] == [str(c.program) for c in enumerate_programs(t, SS_LIB, limit=6)]
  assert search.propose({c.key: 0.0 for c in first}) is None
  assert search.enumeration.yielded == 6 and search.seconds == search.enumeration.seconds > 0
  assert search.equivalent == ()


def test_evolution_proposes_each_generation_what_evolve_scores():
  t = task_type("sum_digits")
  scored = []

  def recorded(candidates):
    scored.append([str(c.program) for c in candidates])
    return score(candidates)

  generations = list(evolve(t, SS_LIB, recorded, config=CONFIG, seed=4))
  search = Evolutionary(CONFIG).start(SearchSetup(t, SS_LIB, seed=4))
  assert isinstance(search, EvolutionarySearch) and search.batch is None and search.enumeration is None
  assert drive(search) == scored and len(generations) == CONFIG.generations + 1
  assert search.seconds > 0


def test_evolution_within_a_limit_and_a_stop():
  t = task_type("sum_digits")
  batches = drive(Evolutionary(CONFIG).start(SearchSetup(t, SS_LIB, seed=4, limit=4)))
  assert sum(map(len, batches)) == 4  # the proposal that reaches the limit is cut there
  calls = []
  stopped = Evolutionary(CONFIG).start(SearchSetup(t, SS_LIB, seed=4,
                                                   stop=lambda: calls.append(1) or len(calls) > 2))
  assert len(drive(stopped)) <= 2


def test_a_strategy_is_a_value_named_as_records_name_it():
  assert (TopDown.name, Evolutionary.name) == ("topdown", "evolutionary")
  assert TopDown() == TopDown() and Evolutionary() == Evolutionary(EvolutionConfig())
  assert Evolutionary(CONFIG) != Evolutionary() and Evolutionary(CONFIG).config is CONFIG
  assert dataclasses.fields(TopDown()) == ()  # Budget.enumerated bounds its expansions
  with pytest.raises(dataclasses.FrozenInstanceError):
    Evolutionary().config = CONFIG
  with pytest.raises(TypeError, match="Evolutionary's config must be an hx.synth.EvolutionConfig, got 20"):
    Evolutionary(20)


def test_topdown_takes_every_budget_schedule_and_space():
  space = SearchSpace(library_tasks=4, reused_programs=2)
  for schedule in (None, ToEnd(), Halving(), CheapFirst(), Estimate()):
    check_strategy(TopDown(), Budget(candidates=5, enumerated=100, schedule=schedule), space)


@pytest.mark.parametrize("budget,space,message", [
    (Budget(schedule=Halving()), SearchSpace(),
     "a schedule (Halving) is for the top-down strategy; the evolutionary one scores each generation to "
     "the end"),
    (Budget(schedule=Estimate()), SearchSpace(),
     "a schedule (Estimate) is for the top-down strategy; the evolutionary one scores each generation to "
     "the end"),
    (Budget(enumerated=500), SearchSpace(),
     "Budget.enumerated=500 bounds the partial programs the top-down search expands; the evolutionary "
     "search expands none: leave it None"),
    (Budget(), SearchSpace(library_tasks=4, reused_programs=2),
     "SearchSpace.reused_programs proposes earlier programs before the top-down enumeration; the "
     "evolutionary search draws its own initial population"),
])
def test_evolution_refuses_what_applies_to_the_topdown_search_only(budget, space, message):
  with pytest.raises(ValueError) as err:
    check_strategy(Evolutionary(CONFIG), budget, space)
  assert str(err.value) == message
  check_strategy(Evolutionary(CONFIG), Budget(candidates=3, seconds=60.0, schedule=ToEnd()), SearchSpace())


@pytest.mark.parametrize("given,named", [
    ("topdown", " (the name 'topdown' is how the binaries' flags spell one)"),
    ("evolutionary", " (the name 'evolutionary' is how the binaries' flags spell one)"),
    (TopDown, ""),
    (EvolutionConfig(), ""),
])
def test_a_strategy_that_is_no_object_names_the_objects_to_pass(given, named):
  with pytest.raises(TypeError) as err:
    check_strategy(given, Budget(), SearchSpace())
  assert str(err.value) == ("strategy must be a strategy object, hx.synth.TopDown() or "
                            f"hx.synth.Evolutionary(...), got {given!r}{named}")


def test_topdown_proposes_its_first_candidates_then_those_after_the_best_and_the_rest_within_the_limit():
  t = task_type("sum_digits")
  whole = list(enumerate_programs(t, SS_LIB, limit=8))
  first = [whole[5], whole[2]]  # two of the enumeration's, proposed on their own
  after = {}

  def then(best):
    after["best"] = best
    return [whole[0], whole[6]]

  search = TopDown().start(SearchSetup(t, SS_LIB, limit=4, first=first, then=then))
  assert [c.key for c in search.propose({})] == [whole[5].key, whole[2].key]
  second = list(search.propose({whole[5].key: 3.0, whole[2].key: 1.0}))
  assert after["best"] is whole[2]  # the lower score
  # The best's followers, then the enumeration without any proposed before, 4 in all (first apart).
  assert [c.key for c in second] == [c.key for c in (whole[0], whole[6], whole[1], whole[3])]
  assert search.propose({}) is None
  failed = TopDown().start(SearchSetup(t, SS_LIB, limit=2, first=first, then=then))
  list(failed.propose({}))
  assert [c.key for c in failed.propose({c.key: math.inf for c in first})] == [whole[0].key, whole[1].key]
  unbounded = TopDown().start(SearchSetup(t, SS_LIB, first=first))
  assert len(list(unbounded.propose({}))) == 2
  assert len(list(unbounded.propose({}))) == len(list(enumerate_programs(t, SS_LIB))) - 2  # none twice
  with pytest.raises(ValueError, match="before the top-down enumeration"):
    Evolutionary().start(SearchSetup(t, SS_LIB, first=first))
