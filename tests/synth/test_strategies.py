"""The strategies' one shape (`hx.synth.strategies`): each proposes candidates from the last ones' scores;
top-down proposes its enumeration once, evolution each generation what `evolve` would have scored."""

import math

import pytest

from hx.lang.paper import paper_library, task_type
from hx.synth.evolution import EvolutionConfig, evolve
from hx.synth.strategies import STRATEGIES, Evolutionary, TopDown, make_strategy
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
  search = make_strategy("topdown", t, SS_LIB, limit=6, batch=2)
  assert isinstance(search, TopDown) and search.batch == 2
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
  search = make_strategy("evolutionary", t, SS_LIB, evolution=CONFIG, seed=4)
  assert isinstance(search, Evolutionary) and search.batch is None and search.enumeration is None
  assert drive(search) == scored and len(generations) == CONFIG.generations + 1
  assert search.seconds > 0


def test_evolution_within_a_limit_and_a_stop():
  t = task_type("sum_digits")
  batches = drive(make_strategy("evolutionary", t, SS_LIB, evolution=CONFIG, seed=4, limit=4))
  assert sum(map(len, batches)) == 4  # the proposal that reaches the limit is cut there
  calls = []
  stopped = make_strategy("evolutionary", t, SS_LIB, evolution=CONFIG, seed=4,
                          stop=lambda: calls.append(1) or len(calls) > 2)
  assert len(drive(stopped)) <= 2


def test_an_unknown_strategy_is_one_line():
  assert STRATEGIES == ("topdown", "evolutionary")
  with pytest.raises(ValueError, match="unknown strategy 'random'; the strategies are topdown, evolutionary"):
    make_strategy("random", task_type("sum_digits"), SS_LIB)


def test_topdown_proposes_its_first_candidates_then_those_after_the_best_and_the_rest_within_the_limit():
  t = task_type("sum_digits")
  whole = list(enumerate_programs(t, SS_LIB, limit=8))
  first = [whole[5], whole[2]]  # two of the enumeration's, proposed on their own
  after = {}

  def then(best):
    after["best"] = best
    return [whole[0], whole[6]]

  search = make_strategy("topdown", t, SS_LIB, limit=4, first=first, then=then)
  assert [c.key for c in search.propose({})] == [whole[5].key, whole[2].key]
  second = list(search.propose({whole[5].key: 3.0, whole[2].key: 1.0}))
  assert after["best"] is whole[2]  # the lower score
  # The best's followers, then the enumeration without any proposed before, 4 in all (first apart).
  assert [c.key for c in second] == [c.key for c in (whole[0], whole[6], whole[1], whole[3])]
  assert search.propose({}) is None
  failed = make_strategy("topdown", t, SS_LIB, limit=2, first=first, then=then)
  list(failed.propose({}))
  assert [c.key for c in failed.propose({c.key: math.inf for c in first})] == [whole[0].key, whole[1].key]
  unbounded = make_strategy("topdown", t, SS_LIB, first=first)
  assert len(list(unbounded.propose({}))) == 2
  assert len(list(unbounded.propose({}))) == len(list(enumerate_programs(t, SS_LIB))) - 2  # none twice
  with pytest.raises(ValueError, match="top-down strategy"):
    make_strategy("evolutionary", t, SS_LIB, first=first)
