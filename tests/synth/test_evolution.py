"""Evolutionary search (`hx.synth.evolution`) without training: programs stay well typed and buildable
through many generations, nothing is scored twice, selection favours better scores, determinism."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.lang import infer, size
from hx.lang.paper import paper_library, task_type
from hx.synth.evolution import EvolutionConfig, _Operators, evolve, random_candidate
from hx.synth.space import Completer, SearchSpace, equivalence_key

SS_LIB = {k: v for k, v in paper_library("tab:SSProgs").items() if k in ("nn_ss_1", "nn_ss_2")}
GS_LIB = {k: v for k, v in paper_library("tab:GS1Progs").items() if k in ("nn_gs1_1", "nn_gs1_2")}
CASES = [("sum_digits", SS_LIB), ("shortest_path_street", GS_LIB), ("count_digit", None),
         ("recognize_digit", None)]


def _check(c, lib, t, completer):
  typing = infer(c.program, lib or {}, t, fresh_types=c.fresh_types)
  assert typing.type == t
  assert size(c.program) <= SearchSpace().max_size
  assert completer.buildable(c.program, c.fresh_types), str(c)
  assert c.key == equivalence_key(c.program, c.fresh_types)


@pytest.mark.parametrize("kind,lib", [
    c if c[0] != "recognize_digit" else pytest.param(*c, marks=pytest.mark.slow) for c in CASES])
def test_every_program_of_every_generation_is_well_typed_and_nothing_is_scored_twice(kind, lib):
  t = task_type(kind)
  completer = Completer(lib, SearchSpace())
  scored = []

  def score(cands):
    scored.extend(c.key for c in cands)
    return [float(len(str(c.program)) % 7) for c in cands]

  gens = list(evolve(t, lib, score, config=EvolutionConfig(population=8, generations=25), seed=3))
  assert len(gens) == 26
  for g in gens:
    assert len(g.population) == 8
    for c in g.population:
      _check(c, lib, t, completer)
  assert len(scored) == len(set(scored))
  # Elitism: the best score never gets worse.
  best = [min(g.scores) for g in gens]
  assert best == sorted(best, reverse=True)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_crossover_and_mutation_keep_programs_typed(seed):
  t = task_type("sum_digits")
  space = SearchSpace()
  completer = Completer(SS_LIB, space)
  rng = random.Random(seed)
  ops = _Operators(t, completer, space, rng, 20)
  a = random_candidate(t, completer, space, rng)
  b = random_candidate(t, completer, space, rng)
  assert a is not None and b is not None
  got = ops.crossover(a, b)
  for c in (got or ()):
    _check(c, SS_LIB, t, completer)
  m = ops.mutate(a)
  if m is not None:
    _check(m, SS_LIB, t, completer)
    assert m.key != a.key


def test_selection_converges_on_the_best_scored_structure():
  t = task_type("sum_digits")

  def score(cands):  # fold programs are "good"
    return [0.1 if "fold_l" in str(c.program) else 10.0 for c in cands]

  gens = list(evolve(t, SS_LIB, score, config=EvolutionConfig(population=10, generations=15), seed=0))
  last = gens[-1].population
  assert sum("fold_l" in str(c.program) for c in last) >= 6


def test_deterministic_for_a_seed_and_stoppable():
  t = task_type("count_digit")
  score = lambda cands: [1.0] * len(cands)
  cfg = EvolutionConfig(population=6, generations=5)
  a = [[str(c) for c in g.population] for g in evolve(t, None, score, config=cfg, seed=7)]
  b = [[str(c) for c in g.population] for g in evolve(t, None, score, config=cfg, seed=7)]
  assert a == b
  calls = []
  gens = list(evolve(t, None, score, config=cfg, seed=7, stop=lambda: calls.append(1) or len(calls) > 2))
  assert len(gens) == 2


def test_bad_config_is_refused():
  with pytest.raises(ValueError):
    EvolutionConfig(population=0)
  with pytest.raises(ValueError):
    EvolutionConfig(mutation_rate=1.5)
