"""Evolutionary search over typed programs (the paper's appendix B.2).

A population of random well-typed programs evolves for a number of generations. Each generation:

  1. every program not scored before is scored (`score`: Tune's validation score, lower is better;
     scores are cached by equivalence class, `hx.synth.space.equivalence_key`, so nothing is trained
     twice, however often evolution rediscovers it);
  2. random proportional selection: the next population is the best program so far (elitism) and
     programs drawn with replacement with probability proportional to their fitness 1 / (score + 1e-6)
     (a failed program has fitness 0);
  3. crossovers: a share of the population is paired, and each pair swaps a random pair of subterms of
     the same type (and the same role: a fold step, fold start or conv kernel only swaps with another);
  4. mutations: each program is, with some probability, given a random subterm replaced by a random
     term of the same type.

Every program stays well typed by construction and is checked again after each operation (`infer`
with the fresh functions' types, and the compiler's buildability test); an operation that would break
either is retried, and after a few failures the program is left as it was. Random terms are grown by
the same hole filling as the top-down search (`hx.synth.space.fillers`), choosing fillers at random.
Everything is deterministic for a seed.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

from hx.lang import program as P
from hx.lang.errors import HxTypeError
from hx.lang.infer import infer
from hx.lang.types import Type
from hx.synth.space import (
  Candidate,
  Completer,
  SearchLibrary,
  SearchSpace,
  annotate_holes,
  check_candidate,
  equivalence_key,
  fillers,
  hole_role,
  program_cost,
)

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig

__all__ = ["EvolutionConfig", "Generation", "Evolution", "evolve", "random_candidate"]


@dataclasses.dataclass(frozen=True)
class EvolutionConfig:
  """Settings of the evolutionary search.

  Attributes:
    population: programs per generation (the paper preset's: 20).
    generations: generations at most (100).
    crossover_rate: share of the population paired for crossover each generation.
    mutation_rate: probability that a program is mutated each generation.
    tries: attempts at a well-typed, buildable crossover, mutation or random program before giving up.
  """
  population: int = 20
  generations: int = 100
  crossover_rate: float = 0.5
  mutation_rate: float = 0.3
  tries: int = 20

  def __post_init__(self):
    if self.population < 1 or self.generations < 0 or self.tries < 1:
      raise ValueError(f"bad EvolutionConfig: {self}")
    if not (0 <= self.crossover_rate <= 1 and 0 <= self.mutation_rate <= 1):
      raise ValueError(f"crossover and mutation rates must be in [0, 1]: {self}")


@dataclasses.dataclass(frozen=True)
class Generation:
  """One generation: its programs and their scores (nan for a failed program)."""
  index: int
  population: tuple[Candidate, ...]
  scores: tuple[float, ...]


class _Grower:
  """Grows random programs of a type, with fresh names that avoid a given set."""

  def __init__(self, completer: Completer, space: SearchSpace, rng: random.Random, tries: int):
    self.completer, self.space, self.rng, self.tries = completer, space, rng, tries
    self.lib_names = sorted(completer.library_types)

  def grow(self, t: Type, *, role: str | None = None, max_size: int | None = None,
           taken: Sequence[str] = ()) -> tuple[P.Program, dict[str, Type]] | None:
    """A random complete program of type `t` (fresh names not in `taken`) with its fresh types, or None.

    `role` restricts the root as `fillers` does for a fold step, fold start or conv kernel.
    """
    max_size = self.space.max_size if max_size is None else max_size
    for _ in range(self.tries):
      got = self._attempt(t, role, max_size, set(taken))
      if got is not None:
        return got
    return None

  def _attempt(self, t: Type, role: str | None, max_size: int, taken: set[str]):
    # A root that is a fold step, start or conv kernel is grown inside a stand-in parent so that
    # `fillers` sees the role.
    if role == "step":
      partial, offset = P.Fold("l", P.Hole(t), P.Zeros(1)), (0,)
    elif role == "start":
      partial, offset = P.Fold("l", P.Fresh("nn_step"), P.Hole(t)), (1,)
    elif role == "kernel":
      partial, offset = P.Conv("l", P.Hole(t)), (0,)
    else:
      partial, offset = P.Hole(t), ()
    names = (f"nn_g{i}" for i in range(1, 10_000) if f"nn_g{i}" not in taken)
    budget = [self.VISITS]
    return self._search(partial, offset, t, role, max_size, names, budget)

  VISITS = 400
  """Partial programs a random growth may visit (depth first, backtracking) before it gives up."""

  def _search(self, partial: P.Program, offset: P.Position, t: Type, role: str | None, max_size: int,
              names: Iterator[str], budget: list[int]):
    """Depth-first growth with random choices and backtracking: the first complete, typed, buildable
    program found, or None."""
    budget[0] -= 1
    if budget[0] < 0:
      return None
    holes = [(pos, h) for pos, h in P.holes(partial) if pos[:len(offset)] == offset]
    sub = P.get(partial, offset)
    if not holes:
      try:
        typing = infer(sub, self.completer.library_types, t)
      except HxTypeError:
        return None
      # A fold step, start or conv kernel is not a program of its own: the whole program is checked later.
      choices = list(self.completer.complete_types(sub, typing.fresh, check=role is None))
      return (sub, self.rng.choice(choices)) if choices else None
    pos, hole = holes[0]
    name = next(names)
    options = []
    for filler in fillers(partial, pos, hole, self.lib_names, self.space, name):
      new = P.replace(partial, pos, filler)
      new_sub = P.get(new, offset)
      if P.size(new_sub) > max_size or len(P.fresh_names(new_sub)) > self.space.max_fresh:
        continue
      try:
        typing = infer(new_sub, self.completer.library_types, t)
      except HxTypeError:
        continue
      options.append(P.replace(new, offset, annotate_holes(new_sub, typing.subterms)))
    self.rng.shuffle(options)
    # Leaves close the program: try them first more often as the size budget runs out.
    room = max_size - P.size(sub)
    if self.rng.random() > room / max(max_size, 1):
      options.sort(key=lambda o: bool(P.holes(P.get(o, pos))))
    for option in options:
      got = self._search(option, offset, t, role, max_size, names, budget)
      if got is not None:
        return got
    return None


def random_candidate(task_type: Type, completer: Completer, space: SearchSpace, rng: random.Random,
                     tries: int = 20) -> Candidate | None:
  """A random well-typed, buildable candidate of `task_type`, or None after `tries` failures."""
  got = _Grower(completer, space, rng, tries).grow(task_type)
  return None if got is None else _candidate(*got, space)


def _candidate(program: P.Program, fresh: Mapping[str, Type], space: SearchSpace) -> Candidate:
  names = P.fresh_names(program)
  mapping = {n: f"nn_{i}" for i, n in enumerate(names, 1)}
  program = P.rename_fresh(program, mapping)
  types = {mapping[n]: fresh[n] for n in names}
  return Candidate(program, tuple((n, types[n]) for n in P.fresh_names(program)),
                   program_cost(program, space.costs), equivalence_key(program, types))


class _Operators:
  """Crossover and mutation that keep programs well typed and buildable."""

  def __init__(self, task_type: Type, completer: Completer, space: SearchSpace, rng: random.Random,
               tries: int):
    self.task_type, self.completer, self.space, self.rng, self.tries = task_type, completer, space, rng, tries
    self.grower = _Grower(completer, space, rng, tries)

  def typed_positions(self, c: Candidate) -> list[tuple[P.Position, Type, str | None]]:
    """Every non-root subterm position of c with its type and role."""
    typing = infer(c.program, self.completer.library_types, self.task_type, fresh_types=c.fresh_types)
    return [(pos, t, hole_role(c.program, pos)) for pos, t in typing.subterms.items() if pos]

  def valid(self, program: P.Program, fresh: Mapping[str, Type]) -> bool:
    return (P.size(program) <= self.space.max_size and len(P.fresh_names(program)) <= self.space.max_fresh
            and check_candidate(program, fresh, self.completer.library_types, self.task_type)
            and self.completer.buildable(program, fresh))

  def _graft(self, host: Candidate, pos: P.Position, sub: P.Program,
             sub_types: Mapping[str, Type]) -> Candidate | None:
    """host with `sub` (its fresh functions renamed apart from host's) at pos, if valid."""
    taken = set(P.fresh_names(host.program))
    rename = {n: f"nn_x{i}" for i, n in enumerate(P.fresh_names(sub), 1)}
    assert not taken & set(rename.values())
    sub = P.rename_fresh(sub, rename)
    program = P.replace(host.program, pos, sub)
    fresh = {**host.fresh_types, **{rename[n]: t for n, t in sub_types.items() if n in rename}}
    fresh = {n: fresh[n] for n in P.fresh_names(program)}
    if not self.valid(program, fresh):
      return None
    return _candidate(program, fresh, self.space)

  def crossover(self, a: Candidate, b: Candidate) -> tuple[Candidate, Candidate] | None:
    pa, pb = self.typed_positions(a), self.typed_positions(b)
    pairs = [(x, y) for x in pa for y in pb if x[1] == y[1] and x[2] == y[2]]
    self.rng.shuffle(pairs)
    for (pos_a, _, _), (pos_b, _, _) in pairs[:self.tries]:
      sub_a, sub_b = P.get(a.program, pos_a), P.get(b.program, pos_b)
      if sub_a == sub_b:
        continue
      new_a = self._graft(a, pos_a, sub_b, {n: b.fresh_types[n] for n in P.fresh_names(sub_b)})
      new_b = self._graft(b, pos_b, sub_a, {n: a.fresh_types[n] for n in P.fresh_names(sub_a)})
      if new_a is not None and new_b is not None:
        return new_a, new_b
    return None

  def mutate(self, c: Candidate) -> Candidate | None:
    positions = [(pos, c.program, t, None) for pos, t in [((), self.task_type)]]
    positions += [(pos, c.program, t, role) for pos, t, role in self.typed_positions(c)]
    for _ in range(self.tries):
      pos, _, t, role = self.rng.choice(positions)
      room = self.space.max_size - P.size(c.program) + P.size(P.get(c.program, pos))
      got = self.grower.grow(t, role=role, max_size=max(1, room))
      if got is None:
        continue
      sub, types = got
      if sub == P.get(c.program, pos):
        continue
      new = self._graft(c, pos, sub, types)
      if new is not None and new.key != c.key:
        return new
    return None


def evolve(task_type: Type, library: SearchLibrary,
           score: Callable[[Sequence[Candidate]], Sequence[float]], *,
           config: EvolutionConfig = EvolutionConfig(), space: SearchSpace = SearchSpace(),
           module_config: ModuleConfig | None = None, seed: int = 0,
           stop: Callable[[], bool] | None = None) -> Iterator[Generation]:
  """Runs the evolutionary search, yielding each generation after it is scored.

  Args:
    task_type: the type of the program to find.
    library: an `hx.Library`, a mapping from library function names to types, or None.
    score: scores a batch of new candidates (validation score, lower is better; nan or inf for a
      candidate that failed). Called once per generation with the candidates never scored before.
    config: population, generations, rates.
    space: what programs may be built.
    module_config: the `hx.compile.ModuleConfig` buildability is decided with.
    seed: seeds every random choice.
    stop: called before scoring each generation; evolution ends when it returns True (a budget).

  Yields:
    `Generation` objects: index (0 for the initial population), population and scores.
  """
  search = Evolution(task_type, library, config=config, space=space, module_config=module_config, seed=seed)
  if not search.population:
    return
  while True:
    if stop is not None and stop():
      return
    new = search.unscored()
    if new:
      search.record(new, score(new))
    yield search.generation()
    if search.last:
      return
    search.advance()


class Evolution:
  """The evolutionary search one generation at a time, for a caller that scores each generation's new
  programs itself (`hx.synth.strategies.Evolutionary`; `evolve` drives it with a scoring function):

      search = Evolution(task_type, library, seed=0)
      while search.population:
        new = search.unscored()
        search.record(new, scores_of(new))
        generation = search.generation()
        if search.last:
          break
        search.advance()

  Attributes:
    population: the current generation's programs (empty where no random program could be built).
    index: the current generation's number (0: the initial population).
  """

  def __init__(self, task_type: Type, library: SearchLibrary, *, config: EvolutionConfig = EvolutionConfig(),
               space: SearchSpace = SearchSpace(), module_config: ModuleConfig | None = None, seed: int = 0):
    self.config = config
    self._rng = random.Random(seed)
    completer = Completer(library, space, module_config)
    self._ops = _Operators(task_type, completer, space, self._rng, config.tries)
    self._cache: dict[tuple, float] = {}  # scores by equivalence key: nothing is trained twice
    self.index = 0
    self.population = _initial_population(task_type, completer, space, self._rng, config)

  def unscored(self) -> list[Candidate]:
    """The current generation's programs never scored before, each once (by equivalence key)."""
    return list({c.key: c for c in self.population if c.key not in self._cache}.values())

  def record(self, candidates: Sequence[Candidate], scores: Sequence[float]) -> None:
    """The validation scores of `candidates` (nan or inf: failed), as `evolve`'s `score` returns them."""
    for c, s in zip(candidates, scores):
      self._cache[c.key] = float(s)

  def generation(self) -> Generation:
    """The current generation with its scores (every program's recorded)."""
    return Generation(self.index, tuple(self.population), tuple(self._cache[c.key] for c in self.population))

  @property
  def last(self) -> bool:
    """Whether the current generation is the last (`EvolutionConfig.generations` after the first)."""
    return self.index == self.config.generations

  def advance(self) -> None:
    """Breeds the next generation from the current one's scores (selection, crossover, mutation)."""
    scores = [self._cache[c.key] for c in self.population]
    self.population = _next_generation(self.population, scores, self._ops, self.config, self._rng)
    self.index += 1


def _initial_population(task_type: Type, completer: Completer, space: SearchSpace, rng: random.Random,
                        config: EvolutionConfig) -> list[Candidate]:
  """`config.population` random programs, distinct where the space allows (then filled up with copies);
  empty where none could be built."""
  population: list[Candidate] = []
  for _ in range(config.population * config.tries):
    if len(population) == config.population:
      break
    c = random_candidate(task_type, completer, space, rng, config.tries)
    if c is not None and all(c.key != p.key for p in population):
      population.append(c)
  if not population:
    return []
  # A space with fewer distinct programs than the population: fill it up with copies.
  return population + [rng.choice(population) for _ in range(config.population - len(population))]


def _fitness(s: float) -> float:
  return 0.0 if not math.isfinite(s) else 1.0 / (max(s, 0.0) + 1e-6)


def _next_generation(population: list[Candidate], scores: list[float], ops: _Operators,
                     config: EvolutionConfig, rng: random.Random) -> list[Candidate]:
  fitness = [_fitness(s) for s in scores]
  best = max(range(len(population)), key=lambda i: fitness[i])
  if sum(fitness) > 0:
    chosen = rng.choices(range(len(population)), weights=fitness, k=len(population) - 1)
  else:
    chosen = [rng.randrange(len(population)) for _ in range(len(population) - 1)]
  nxt = [population[best]] + [population[i] for i in chosen]
  # Elitism: the best program (index 0) takes part in crossover and mutation only through copies.
  order = list(range(1, len(nxt)))
  rng.shuffle(order)
  pairs = int(config.crossover_rate * len(order)) // 2
  for i, j in zip(order[:2 * pairs:2], order[1:2 * pairs:2]):
    got = ops.crossover(nxt[i], nxt[j])
    if got is not None:
      nxt[i], nxt[j] = got
  for i in range(1, len(nxt)):
    if rng.random() < config.mutation_rate:
      got = ops.mutate(nxt[i])
      if got is not None:
        nxt[i] = got
  return nxt
