"""Search strategies: what proposes a synthesis's candidates, a batch at a time, from the scores of the
last batch (the symbolic module of the paper's section 3). A strategy is a small frozen dataclass of its
own settings, as a schedule is (`hx.synth.schedules`):

    hx.synthesize(task, library, SynthesisConfig(strategy=TopDown()))   # the default
    hx.synthesize(task, library, SynthesisConfig(strategy=Evolutionary(EvolutionConfig(population=10,
                                                                                       generations=20))))

- `TopDown` (name "topdown"; its search `TopDownSearch`, `hx.synth.topdown`): one batch, the enumeration
  in its order, taken from it as the schedule trains; the scores do not change the order. It has no
  settings of its own: the partial programs it may expand are `Budget.enumerated`, a budget as the
  candidates and the seconds are (and saved with them in a run's settings.json).
- `Evolutionary` (name "evolutionary"; its search `EvolutionarySearch`, `hx.synth.evolution`): a batch
  per generation, its programs not scored before; their scores choose the next generation's parents. Its
  settings: the population, generations and rates (`EvolutionConfig`).

Each strategy has a `name` (the text of records, of settings.json and of the methods `houdini_<name>`),
a `check(budget, space)` that refuses, in one line, the settings it has no use for (the evolutionary
search takes no schedule, no `Budget.enumerated` and no `SearchSpace.reused_programs`), and a
`start(setup)` that starts the running search of one task (a `Search`):

    search = strategy.start(SearchSetup(task.type, library, limit=20, seed=0))
    scores = {}
    while (batch := search.propose(scores)) is not None:
      results = train(batch)                      # under the budget's schedule (hx.synth.schedules)
      scores = {r.candidate.key: r.val_score if r.ok else math.inf for r in results}

`hx.synthesize` runs either the same way: the strategy proposes, the schedule trains, and the ranking
and the library's extension follow. The binaries spell a strategy by its name (`--strategy=evolutionary`,
read in `hx.bin.spellings`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator, Mapping, Protocol, Sequence

from hx.lang.types import Type
from hx.synth.evolution import Evolution, EvolutionConfig
from hx.synth.space import Candidate, SearchLibrary, SearchSpace
from hx.synth.topdown import EnumerationStats, enumerate_programs

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig

__all__ = ["Strategy", "TopDown", "Evolutionary", "EvolutionConfig", "check_strategy", "SearchSetup",
           "Search", "TopDownSearch", "EvolutionarySearch"]


def _never() -> bool:
  return False


@dataclasses.dataclass(frozen=True)
class SearchSetup:
  """What a synthesis starts one task's search from (`Strategy.start`); each strategy reads the fields
  that apply to it, and its `check` has refused the settings that would fill the others.

  Attributes:
    task_type, library: the programs' type, and the library they may call.
    space, module_config: what programs may be built, and the module sizes buildability is decided with.
    limit: candidates at most (`Budget.candidates`; None: no bound), `first` not counted.
    max_expanded: top-down: partial programs to expand at most (`Budget.enumerated`; None: no bound).
    batch: top-down: candidates handed to the executor at once (`Search.batch`).
    first, then: top-down: candidates proposed before the enumeration, and after the best of them
      (`TopDownSearch`; `SearchSpace.reused_programs`).
    seed: evolutionary: seeds the search's random choices.
    stop: evolutionary: called before each generation; the search ends when it returns True (the budget).
  """
  task_type: Type
  library: SearchLibrary
  space: SearchSpace = SearchSpace()
  module_config: ModuleConfig | None = None
  limit: int | None = None
  max_expanded: int | None = None
  batch: int | None = None
  first: Sequence[Candidate] = ()
  then: Callable[[Candidate], Sequence[Candidate]] | None = None
  seed: int = 0
  stop: Callable[[], bool] = _never


class Search(Protocol):
  """One task's running search (`Strategy.start`): proposes candidates from the scores of the ones
  proposed before.

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

  def exhausted(self, trained: int) -> str:
    """Why the search proposed no more than the `trained` programs it did (`Frontier.shortfall`
    where the budget was not spent)."""
    ...


class Strategy(Protocol):
  """A search strategy's settings (`TopDown`, `Evolutionary`): `SynthesisConfig.strategy` (`hx.synth.config`).

  Attributes:
    name: "topdown" or "evolutionary": the strategy in records, settings.json and the method ids
      (`houdini_<name>`), and the binaries' spelling of it.
  """
  name: ClassVar[str]

  def check(self, budget: Any, space: SearchSpace) -> None:
    """ValueError, one line, for a setting of the synthesis (its `hx.synth.Budget`, its `SearchSpace`)
    that does not apply to this strategy."""
    ...

  def start(self, setup: SearchSetup) -> Search:
    """The running search of one task."""
    ...


@dataclasses.dataclass(frozen=True)
class TopDown:
  """The top-down strategy, the paper's and `SynthesisConfig`'s default: the programs in the order of
  `hx.synth.topdown.enumerate_programs` (`SearchSpace.order`), trained as the budget's schedule says.

  It has no settings of its own, and takes every budget, schedule and search space: the partial programs
  it may expand are `Budget.enumerated`, a budget of work as the candidates and the seconds are (and saved
  with them in a run's settings.json); its order and its candidate filter are the `SearchSpace`'s.
  """

  name: ClassVar[str] = "topdown"

  def check(self, budget: Any, space: SearchSpace) -> None:
    """Nothing to refuse (`Strategy.check`)."""

  def start(self, setup: SearchSetup) -> TopDownSearch:
    """The enumeration of `setup.task_type`'s programs (`TopDownSearch`), within `limit` and
    `max_expanded`, with `first` and `then` ahead of it."""
    return TopDownSearch(setup)


_REUSED = ("SearchSpace.reused_programs proposes earlier programs before the top-down enumeration; the "
           "evolutionary search draws its own initial population")


@dataclasses.dataclass(frozen=True)
class Evolutionary:
  """The evolutionary strategy (the paper's appendix B.2, `hx.synth.evolution`): a population of typed
  programs bred for generations, each generation's new programs trained to the end.

  Attributes:
    config: the population, generations, crossover and mutation rates (`EvolutionConfig`; the default,
      the paper preset's: 20 programs, 100 generations at most).

  It takes no schedule (`Budget.schedule`: each generation trains to the end), no `Budget.enumerated`
  (it expands no partial programs) and no `SearchSpace.reused_programs` (it draws its own initial
  population): `check` refuses them. The synthesis's seed seeds its random choices.
  """

  name: ClassVar[str] = "evolutionary"

  config: EvolutionConfig = EvolutionConfig()

  def __post_init__(self):
    if not isinstance(self.config, EvolutionConfig):
      raise TypeError(f"Evolutionary's config must be an hx.synth.EvolutionConfig, got {self.config!r}")

  def check(self, budget: Any, space: SearchSpace) -> None:
    """ValueError where `budget` has a schedule or `enumerated`, or `space` has `reused_programs`."""
    schedule = getattr(budget, "schedule", None)
    if schedule is not None:
      raise ValueError(f"a schedule ({type(schedule).__name__}) is for the top-down strategy; the "
                       "evolutionary one scores each generation to the end")
    if getattr(budget, "enumerated", None) is not None:
      raise ValueError(f"Budget.enumerated={budget.enumerated} bounds the partial programs the top-down "
                       "search expands; the evolutionary search expands none: leave it None")
    if space.reused_programs:
      raise ValueError(_REUSED)

  def start(self, setup: SearchSetup) -> EvolutionarySearch:
    """The evolution of `setup.task_type`'s programs (`EvolutionarySearch`), seeded by `seed`, within
    `limit` and `stop`."""
    if setup.first or setup.then is not None or setup.max_expanded is not None:
      raise ValueError(_REUSED if setup.first or setup.then is not None else
                       "max_expanded bounds the top-down search; the evolutionary search expands no partial "
                       "programs")
    return EvolutionarySearch(setup.task_type, setup.library, space=setup.space,
                              module_config=setup.module_config, config=self.config, seed=setup.seed,
                              limit=setup.limit, stop=setup.stop)


def check_strategy(strategy: Strategy, budget: Any, space: SearchSpace) -> None:
  """Refuses a `strategy` that is no strategy object (a name, say), then what the strategy refuses of
  `budget` and `space` (`Strategy.check`).

  Raises:
    TypeError: `strategy` is not a strategy object; the message names the objects to pass.
    ValueError: a setting the strategy does not take.
  """
  if isinstance(strategy, type) or not all(callable(getattr(strategy, m, None)) for m in ("check", "start")) \
     or not isinstance(getattr(strategy, "name", None), str):
    spelled = (f" (the name {strategy!r} is how the binaries' flags spell one)" if isinstance(strategy, str)
               else "")
    raise TypeError(f"strategy must be a strategy object, hx.synth.TopDown() or hx.synth.Evolutionary(...), "
                    f"got {strategy!r}{spelled}")
  strategy.check(budget, space)


def _count(n: int, noun: str) -> str:
  """"1 program", "2 programs"."""
  return f"{n} {noun}{'' if n == 1 else 's'}"


class TopDownSearch:
  """The top-down search of one task (`TopDown.start`): `hx.synth.topdown.enumerate_programs` as one
  proposal, in its order; with `first`, a proposal of those candidates before it.

  Args:
    setup: what it searches (`SearchSetup`): the task type, library, space and module sizes as
      `enumerate_programs` takes them; `limit`, candidates at most (None: until the space is exhausted),
      `first` not counted; `max_expanded`, partial programs to expand at most (None: no bound); `batch`,
      candidates handed to the executor at once (`Search.batch`); `first`, candidates proposed on their
      own before the enumeration (`hx.synth.prior.reused_programs`: earlier programs scored as they are);
      `then`, given the best-scoring of `first` (none when every one failed), the candidates proposed
      ahead of the enumeration, counted in `limit` (`hx.synth.prior.one_fresh`: that program with one
      function new). The enumeration's candidates equivalent to one proposed before are not proposed
      again.
  """

  def __init__(self, setup: SearchSetup):
    self._task_type, self._library = setup.task_type, setup.library
    self._space, self._module_config = setup.space, setup.module_config
    self._limit, self._max_expanded = setup.limit, setup.max_expanded
    self.batch = setup.batch
    self._stats = EnumerationStats()
    self._first, self._then = tuple(setup.first), setup.then
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

  def exhausted(self, trained: int) -> str:
    space = self._space
    return (f"the search space holds only {_count(trained, 'program')} of type {self._task_type} (the "
            f"SearchSpace decides which: max_size {space.max_size}, max_fresh {space.max_fresh}, "
            "intermediate_types, combinators)")


class EvolutionarySearch:
  """The evolutionary search of one task (`Evolutionary.start`): each generation's programs not scored
  before as one proposal (`hx.synth.evolution.Evolution`), a generation at once (`batch` None).

  Args:
    task_type, library, space, module_config, config, seed: as `hx.synth.evolution.evolve` takes them.
    limit: candidates to train at most (None: no bound): a generation's proposal is cut to what is left,
      and those cut score inf.
    stop: called before each generation; the search ends when it returns True (the budget).
  """

  batch = None

  def __init__(self, task_type: Type, library: SearchLibrary, *, space: SearchSpace = SearchSpace(),
               module_config: ModuleConfig | None = None, config: EvolutionConfig = EvolutionConfig(),
               seed: int = 0, limit: int | None = None, stop: Callable[[], bool] = lambda: False):
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

  def exhausted(self, trained: int) -> str:
    return f"the evolutionary search proposed only {_count(trained, 'distinct program')}"
