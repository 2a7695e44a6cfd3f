"""Search strategies: what proposes a synthesis's candidates, a batch at a time, from the scores of the
last batch (the symbolic module of the paper's section 3).

    search = make_strategy("evolutionary", task.type, library, limit=20, seed=0)
    scores = {}
    while (batch := search.propose(scores)) is not None:
      results = train(batch)                      # under the budget's schedule (hx.synth.schedules)
      scores = {r.candidate.key: r.val_score if r.ok else math.inf for r in results}

- "topdown" (`TopDown`, `hx.synth.topdown`): one batch, the enumeration in its order, taken from it as the
  schedule trains; the scores do not change the order.
- "evolutionary" (`Evolutionary`, `hx.synth.evolution`): a batch per generation, its programs not scored
  before; their scores choose the next generation's parents.

`hx.synthesize` runs either the same way: the strategy proposes, the schedule trains, and the ranking
and the library's extension follow.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from hx.lang.types import Type
from hx.synth.evolution import Evolution, EvolutionConfig
from hx.synth.space import Candidate, SearchSpace
from hx.synth.topdown import EnumerationStats, enumerate_programs

__all__ = ["STRATEGIES", "Strategy", "TopDown", "Evolutionary", "make_strategy"]

STRATEGIES = ("topdown", "evolutionary")
"""The strategies' names (`make_strategy`)."""


class Strategy(Protocol):
  """Proposes candidates from the scores of the ones proposed before.

  Attributes:
    batch: how many of its candidates go to the executor at once where a schedule trains them in order
      (`hx.synth.schedules.ToEnd`'s `batch`; None: a proposal at once).
    seconds: the time it has spent proposing so far.
    enumeration: the top-down search's counters (None for another strategy).
    equivalent: (program, the program trained for it) for each program it proposed again under
      another form, after training its first form (none under top-down, which proposes normal forms).
  """
  batch: int | None

  def propose(self, scores: Mapping[tuple, float]) -> Iterable[Candidate] | None:
    """The next candidates to train (an iterable the schedule takes them from), or None when the search
    is over. `scores`: the validation score (lower is better; inf for one that failed or was not
    trained to the end) of each candidate of the last proposal, by `Candidate.key`; {} at first."""
    ...

  @property
  def seconds(self) -> float: ...

  @property
  def enumeration(self) -> EnumerationStats | None: ...

  @property
  def equivalent(self) -> Sequence[tuple[Candidate, Candidate]]: ...


class TopDown:
  """The top-down strategy: `hx.synth.topdown.enumerate_programs` as one proposal, in its order; with
  `first`, a proposal of those candidates before it.

  Args:
    task_type, library, space, module_config: as `enumerate_programs` takes them.
    limit: candidates at most (None: until the space is exhausted), `first` not counted.
    max_expanded: partial programs to expand at most (None: no bound).
    batch: candidates handed to the executor at once (`Strategy.batch`).
    first: candidates proposed on their own before the enumeration (`hx.synth.prior.reused_programs`:
      earlier programs scored as they are).
    then: given the best-scoring of `first` (none when every one failed), the candidates proposed ahead
      of the enumeration, counted in `limit` (`hx.synth.prior.one_fresh`: that program with one function
      new). The enumeration's candidates equivalent to one proposed before are not proposed again.
  """

  def __init__(self, task_type: Type, library: Any, *, space: SearchSpace = SearchSpace(),
               module_config: Any = None, limit: int | None = None, max_expanded: int | None = None,
               batch: int | None = None, first: Sequence[Candidate] = (),
               then: Callable[[Candidate], Sequence[Candidate]] | None = None):
    self._task_type, self._library = task_type, library
    self._space, self._module_config = space, module_config
    self._limit, self._max_expanded = limit, max_expanded
    self.batch = batch
    self._stats = EnumerationStats()
    self._first, self._then = tuple(first), then
    self._then_seconds = 0.0
    self._proposals = 0

  def propose(self, scores: Mapping[tuple, float]) -> Iterable[Candidate] | None:
    """`first` (when given), then `then`'s candidates and the enumeration (lazy: a candidate is enumerated
    when the schedule takes it); then None."""
    self._proposals += 1
    if self._first and self._proposals == 1:
      return iter(self._first)
    if self._proposals > (2 if self._first else 1):
      return None
    ahead: list[Candidate] = []
    if self._then is not None:
      start = time.perf_counter()
      ranked = sorted((c for c in self._first if math.isfinite(scores.get(c.key, math.inf))),
                      key=lambda c: scores[c.key])
      ahead = list(self._then(ranked[0]))[:self._limit] if ranked else []
      self._then_seconds += time.perf_counter() - start
    if not self._first and not ahead:
      return self._enumeration(self._limit)
    keys = {c.key for c in (*self._first, *ahead)}
    rest = (c for c in self._enumeration(None) if c.key not in keys)
    left = None if self._limit is None else self._limit - len(ahead)
    return itertools.chain(ahead, rest if left is None else itertools.islice(rest, left))

  def _enumeration(self, limit: int | None) -> Iterator[Candidate]:
    return enumerate_programs(self._task_type, self._library, space=self._space, config=self._module_config,
                              limit=limit, max_expanded=self._max_expanded, stats=self._stats)

  @property
  def seconds(self) -> float:
    # The enumeration's own time (not its consumer's), and choosing what goes ahead of it.
    return self._stats.seconds + self._then_seconds

  @property
  def enumeration(self) -> EnumerationStats:
    return self._stats

  @property
  def equivalent(self) -> Sequence[tuple[Candidate, Candidate]]:
    return ()


class Evolutionary:
  """The evolutionary strategy: each generation's programs not scored before as one proposal
  (`hx.synth.evolution.Evolution`), a generation at once (`batch` None).

  Args:
    task_type, library, space, module_config, config, seed: as `hx.synth.evolution.evolve` takes them.
    limit: candidates to train at most (None: no bound): a generation's proposal is cut to what is left,
      and those cut score inf.
    stop: called before each generation; the search ends when it returns True (the budget).
  """

  batch = None

  def __init__(self, task_type: Type, library: Any, *, space: SearchSpace = SearchSpace(),
               module_config: Any = None, config: EvolutionConfig = EvolutionConfig(), seed: int = 0,
               limit: int | None = None, stop: Callable[[], bool] = lambda: False):
    self._make = lambda: Evolution(task_type, library, config=config, space=space,
                                   module_config=module_config, seed=seed)
    self._limit, self._stop = limit, stop
    self._search: Evolution | None = None
    self._pending: list[Candidate] | None = None  # the current generation's new programs, once proposed
    self._seen: dict[tuple, Candidate] = {}  # the programs trained, by equivalence key
    self._equivalent: list[tuple[Candidate, Candidate]] = []
    self._seconds = 0.0
    self._over = False

  def propose(self, scores: Mapping[tuple, float]) -> Iterable[Candidate] | None:
    """The next generation's programs not scored before (the first: the initial population's), after
    recording `scores` for the last; None once the last generation is scored or `stop` says so."""
    start = time.perf_counter()
    try:
      return self._next(scores)
    finally:
      self._seconds += time.perf_counter() - start

  def _next(self, scores: Mapping[tuple, float]) -> list[Candidate] | None:
    if self._search is None:
      self._search = self._make()  # the initial population: the search's first random choices
      self._over = not self._search.population
    elif self._pending is not None:
      self._search.record(self._pending, [scores.get(c.key, math.inf) for c in self._pending])
      self._pending = None
      self._end_generation()
    while not self._over:
      if self._stop():
        return None
      new = self._search.unscored()
      if new:
        room = len(new) if self._limit is None else max(self._limit - len(self._seen), 0)
        self._pending = new
        self._seen.update((c.key, c) for c in new[:room])
        return new[:room]
      self._end_generation()  # nothing new to score: the generation stands as it is
    return None

  def _end_generation(self) -> None:
    """Notes the scored generation's programs trained before under another form, and breeds the next
    one (none after the last)."""
    for c in self._search.generation().population:
      rep = self._seen.get(c.key)
      if rep is not None and rep.program != c.program and all(d.program != c.program
                                                              for d, _ in self._equivalent):
        self._equivalent.append((c, rep))
    if self._search.last:
      self._over = True
    else:
      self._search.advance()

  @property
  def seconds(self) -> float:
    return self._seconds

  @property
  def enumeration(self) -> None:
    return None

  @property
  def equivalent(self) -> Sequence[tuple[Candidate, Candidate]]:
    return tuple(self._equivalent)


def make_strategy(name: str, task_type: Type, library: Any, *, space: SearchSpace = SearchSpace(),
                  module_config: Any = None, limit: int | None = None, max_expanded: int | None = None,
                  batch: int | None = None, evolution: EvolutionConfig = EvolutionConfig(), seed: int = 0,
                  stop: Callable[[], bool] = lambda: False, first: Sequence[Candidate] = (),
                  then: Callable[[Candidate], Sequence[Candidate]] | None = None) -> Strategy:
  """The strategy `name` ("topdown" or "evolutionary") for programs of `task_type` over `library`.

  Args:
    space, module_config: what programs may be built, and the module sizes buildability is decided with.
    limit: candidates at most (None: no bound).
    max_expanded: top-down only: partial programs to expand at most.
    batch: top-down only: candidates handed to the executor at once (`Strategy.batch`).
    first, then: top-down only: candidates proposed before the enumeration, and after the best of them
      (`TopDown`).
    evolution, seed, stop: evolution only: its settings, its seed, and the budget it checks before each
      generation.

  Raises:
    ValueError: an unknown name, or `first` candidates for the evolutionary search.
  """
  if name == "topdown":
    return TopDown(task_type, library, space=space, module_config=module_config, limit=limit,
                   max_expanded=max_expanded, batch=batch, first=first, then=then)
  if first and name == "evolutionary":
    raise ValueError("candidates proposed first (SearchSpace.reused_programs) are for the top-down "
                     "strategy; the evolutionary search draws its own initial population")
  if name == "evolutionary":
    return Evolutionary(task_type, library, space=space, module_config=module_config, config=evolution,
                        seed=seed, limit=limit, stop=stop)
  raise ValueError(f"unknown strategy {name!r}; the strategies are {', '.join(STRATEGIES)}")
