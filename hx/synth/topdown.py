"""Top-down enumeration: typed partial programs in a priority queue (the paper's appendix B.1).

    for candidate in hx.synth.enumerate(task.type, library, limit=20):
      print(candidate)

The queue starts with the single hole `?<task type>`. Each step pops the partial program of least
priority and fills its first hole (in pre-order) with every filler `hx.synth.space.fillers` proposes; a
result that cannot be typed is dropped at once, one that exceeds the size or fresh-function limits too. A
popped complete program is turned into candidates by choosing its open intermediate types
(`hx.synth.space.Completer`), keeping only those the compiler builds (and, with
`SearchSpace.authors_filter`, those the authors' code trains). This is the order a synthesizer trains
them in.

The priority is the space's order (`SearchSpace.order`, the module docstring of `hx.synth.space`):
  - "authors": the program's size as the authors count it (`hx.synth.space.authors_size`, holes
    included), ties first in, first out; a hole's fillers enter the queue fresh function first, then
    library functions, then combinators. Their `repeat` leaves its count a hole of its own, filled when
    that partial program is popped, so `repeat(9, ?)` and `repeat(10, ?)` enter the queue then, not
    beside the other fillers: this queue does the same with a placeholder entry.
  - "cost": the program's cost plus a lower bound per hole (`hx.synth.space.priority`), ties to fewer
    fresh functions. Within one cost, candidates are taken one per skeleton in turn (a skeleton is a
    program with its library functions' names erased, so `compose(nn, map_l(lib.a))` and
    `compose(nn, map_l(lib.b))` share one): with a large library, a budget of 20 would otherwise go to
    every combination of library functions in one structure before another structure of the same cost
    is tried.

Only normal forms are generated (right-nested composition, fused maps), so no two candidates are
equivalent; a candidate whose key was seen anyway is skipped. Everything is deterministic.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import time
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from hx.lang import program as P
from hx.lang.errors import HxTypeError
from hx.lang.infer import infer, typable
from hx.lang.types import FunctionType, GraphType, ListType, Type, TypeVar
from hx.synth.space import (
  Candidate,
  Completer,
  SearchLibrary,
  SearchSpace,
  annotate_holes,
  authors_size,
  fillers,
  priority,
)

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig

__all__ = ["EnumerationStats", "enumerate_programs"]


@dataclasses.dataclass
class EnumerationStats:
  """Counters of one enumeration (updated while it runs).

  Attributes:
    expanded: partial programs taken from the queue and expanded.
    proposed: fillings tried; ill_typed: of those, dropped because they could not be typed;
      too_big: dropped by the size or fresh-function limit.
    complete: complete programs reached; unbuildable: of those, with no buildable choice of types.
    yielded: candidates produced.
    seconds: time spent in the enumeration (not in the consumer).
  """
  expanded: int = 0
  proposed: int = 0
  ill_typed: int = 0
  too_big: int = 0
  complete: int = 0
  unbuildable: int = 0
  yielded: int = 0
  seconds: float = 0.0


def enumerate_programs(task_type: Type, library: SearchLibrary = None, *, space: SearchSpace = SearchSpace(),
                       config: ModuleConfig | None = None, limit: int | None = None,
                       max_expanded: int | None = None,
                       stats: EnumerationStats | None = None) -> Iterator[Candidate]:
  """Yields the candidates of type `task_type` in the order a top-down synthesizer trains them.

  Args:
    task_type: the type of the program to find, e.g. `List<Tensor<real>[1][28][28]> -> Tensor<real>[1]`.
    library: an `hx.Library`, a mapping from library function names to types, or None.
    space: what programs may be built (intermediate types, repeat counts, limits, costs).
    config: the `hx.compile.ModuleConfig` used to decide which programs the compiler builds.
    limit: stop after this many candidates (None: until the space is exhausted).
    max_expanded: stop after expanding this many partial programs (None: no bound).
    stats: if given, updated with counters as the enumeration runs.

  Yields:
    `hx.synth.space.Candidate` objects, without training anything.
  """
  stats = EnumerationStats() if stats is None else stats
  ordered = _best_first(task_type, library, space, config, max_expanded, stats)
  if space.order == "cost":
    ordered = _round_robin(ordered)
  count = 0
  for candidate in ordered:
    stats.yielded += 1
    yield candidate
    count += 1
    if limit is not None and count >= limit:
      return


def _skeleton(p: P.Program) -> str:
  """The program with its library functions' names erased: programs that differ only in which library
  functions they call share a skeleton."""
  if isinstance(p, P.Lib):
    return "lib"
  kids = P.children(p)
  return str(P.with_children(p, tuple(P.Lib(_skeleton(k)) for k in kids))) if kids else str(p)


def _round_robin(candidates: Iterator[Candidate]) -> Iterator[Candidate]:
  """A stream in nondecreasing cost, each cost's candidates one per skeleton in turn (in order of first
  appearance): a large library cannot fill the budget with one structure over every combination of its
  functions before other structures of the same cost get their turn.

  The first turn (each skeleton's first candidate, in order of first appearance) is the order in which new
  skeletons appear, so it is yielded as they appear; only the later turns wait for the cost's last
  candidate. A small budget is then spent before a large library's cheapest cost is exhausted (the same
  sequence: only less of the search runs).
  """
  groups: dict[str, list[Candidate]] = {}
  cost = None
  for c in candidates:
    if groups and c.cost != cost:
      yield from _later_turns(groups)
      groups = {}
    cost = c.cost
    group = groups.setdefault(_skeleton(c.program), [])
    group.append(c)
    if len(group) == 1:
      yield c
  yield from _later_turns(groups)


def _later_turns(groups: dict[str, list[Candidate]]) -> Iterator[Candidate]:
  """The candidates of one cost after each skeleton's first: the second of each skeleton (in order of
  first appearance), then the third, ..."""
  for i in range(1, max((len(g) for g in groups.values()), default=0)):
    yield from (g[i] for g in groups.values() if i < len(g))


def _best_first(task_type: Type, library: SearchLibrary, space: SearchSpace, config: ModuleConfig | None,
                max_expanded: int | None, stats: EnumerationStats) -> Iterator[Candidate]:
  """The candidates in nondecreasing priority (best-first search over partial programs); their `cost` is
  their priority (`authors_size` under the authors' order)."""
  completer = Completer(library, space, config)
  lib_types = completer.library_types
  index = _library_index(lib_types)
  costs = space.costs
  authors = space.order == "authors"

  def rank(p: P.Program) -> float:
    return authors_size(p) if authors else priority(p, costs, bool(lib_types))
  seq = itertools.count()
  start = P.Hole(task_type)
  # Entries: (priority, tie, sequence number, partial program, deferred). Under the "cost" order ties go
  # to fewer fresh functions, under the authors' to the first in. `deferred` holds the programs that one
  # entry stands for until it is popped: the authors' `repeat` leaves its count k a hole of its own, so
  # repeat(9, ?) and repeat(10, ?) enter their queue only once that hole is filled.
  queue: list[tuple] = [(rank(start), 0, next(seq), start, ())]
  seen: set[tuple] = set()
  # What every filling shares; `checked` holds the filler prechecks done so far (`_precheck_key`).
  search = _Filling(index, task_type, space, stats, checked={})
  clock = time.perf_counter()
  while queue:
    if max_expanded is not None and stats.expanded >= max_expanded:
      break
    cost, _, _, partial, deferred = heapq.heappop(queue)
    if partial is None:
      for tie, p in deferred:
        heapq.heappush(queue, (cost, tie, next(seq), p, ()))
      continue
    holes = P.holes(partial)
    if not holes:
      stats.complete += 1
      typing = infer(partial, lib_types, task_type)
      found = False
      for candidate in completer.complete(partial, typing.fresh, cost):
        if candidate.key in seen:
          continue
        seen.add(candidate.key)
        found = True
        stats.seconds += time.perf_counter() - clock
        yield candidate
        clock = time.perf_counter()
      stats.unbuildable += not found
      continue
    stats.expanded += 1
    repeats: list[tuple[int, P.Program]] = []
    lib_rank = None  # every library function in one hole ranks alike (the rank sees only node kinds)
    for new, filler, fresh in _fillings(partial, holes[0], search):
      tie = 0 if authors else fresh
      if authors and isinstance(filler, P.Repeat):
        if not repeats:
          heapq.heappush(queue, (rank(new), tie, next(seq), None, repeats))
        repeats.append((tie, new))
        continue
      if isinstance(filler, P.Lib):
        lib_rank = rank(new) if lib_rank is None else lib_rank
      heapq.heappush(queue, (lib_rank if isinstance(filler, P.Lib) else rank(new), tie, next(seq), new, ()))
  stats.seconds += time.perf_counter() - clock


_LIBRARY_SLOT = "<library>"
"""The one library name `_fillings` passes `hx.synth.space.fillers` (no function has it: names are
identifiers): the filler it gets back marks where the library's functions go in the fillers' order."""


@dataclasses.dataclass(frozen=True)
class _LibraryIndex:
  """The library's functions by type.

  Attributes:
    types: name -> type.
    names: the names in the library's order (the order functions were added).
    groups: each distinct type, in order of first appearance, with the positions in `names` of its
      functions (increasing).
  """
  types: dict[str, Type]
  names: tuple[str, ...]
  groups: tuple[tuple[Type, tuple[int, ...]], ...]


def _library_index(lib_types: dict[str, Type]) -> _LibraryIndex:
  """`lib_types` grouped by type (`_LibraryIndex`)."""
  groups: dict[Type, list[int]] = {}
  for i, t in enumerate(lib_types.values()):
    groups.setdefault(t, []).append(i)
  return _LibraryIndex(lib_types, tuple(lib_types), tuple((t, tuple(g)) for t, g in groups.items()))


class _Filling(NamedTuple):
  """What every filling of one enumeration's holes shares (`_fillings`).

  Attributes:
    index: the library's functions by type (`_LibraryIndex`).
    task_type: the type of the programs enumerated.
    space: the search space (its fillers, size and fresh-function limits).
    stats: the enumeration's counters, updated as fillers are proposed and refused.
    checked: the filler prechecks done so far (`_precheck_key` -> typable), shared by every hole.
  """
  index: _LibraryIndex
  task_type: Type
  space: SearchSpace
  stats: EnumerationStats
  checked: dict[tuple, bool]


def _fillings(partial: P.Program, first_hole: tuple[P.Position, P.Hole], search: _Filling
              ) -> Iterator[tuple[P.Program, P.Program, int]]:
  """(the filled program, its holes annotated; the filler; its fresh functions) for each filler of
  `partial`'s first hole within the space's size and fresh-function limits that types, in the fillers'
  order; counts the others in `search.stats`. The library's functions are looked up by type
  (`_library_fillings`).
  """
  index, task_type, space, stats, checked = search
  pos, hole = first_hole
  known = set(P.fresh_names(partial))
  name = f"nn_{len(known) + 1}"
  # A hole has size 0, so filling it adds the filler's size and whatever fresh names are new in it.
  base_size = P.size(partial)
  contexts: list[Type] = []  # the type the rest of `partial` allows at `pos`, once a filler needs it

  def context() -> Type:
    if not contexts:
      contexts.append(_context_type(partial, pos, index.types, task_type))
    return contexts[0]
  slot = [_LIBRARY_SLOT] if index.names else []
  for filler in fillers(partial, pos, hole, slot, space, name):
    if isinstance(filler, P.Lib):
      yield from _library_fillings(partial, pos, base_size, len(known), context, search)
      continue
    stats.proposed += 1
    fresh = len(known.union(P.fresh_names(filler)))
    if base_size + P.size(filler) > space.max_size or fresh > space.max_fresh:
      stats.too_big += 1
      continue
    filled = _typed_filling(partial, pos, filler, index.types, context(), task_type, checked)
    if filled is None:
      stats.ill_typed += 1
      continue
    yield filled, filler, fresh


def _library_fillings(partial: P.Program, pos: P.Position, base_size: int, fresh: int,
                      context: Callable[[], Type], search: _Filling
                      ) -> Iterator[tuple[P.Program, P.Program, int]]:
  """`_fillings` of the library's functions, in the library's order, each counted in `stats` as one
  filler.

  They are typed once per type, not per function: inference sees a library function only through its
  type, so two of one type fill the hole alike (both fail, or both give every other hole the same
  annotation). A growing library repeats its types (a CNN, a recognizer per task), so a hole costs its
  library's distinct types, plus one step per function that fits.
  """
  index, task_type, space, stats, checked = search
  stats.proposed += len(index.names)
  if base_size + 1 > space.max_size or fresh > space.max_fresh:  # a library function adds size 1
    stats.too_big += len(index.names)
    return
  fits: list[tuple[int, P.Program]] = []  # (position in the library, the hole filled by its group's first)
  for _, positions in index.groups:
    filler = P.Lib(index.names[positions[0]])
    filled = _typed_filling(partial, pos, filler, index.types, context(), task_type, checked)
    if filled is None:
      stats.ill_typed += len(positions)
      continue
    fits.extend((i, filled) for i in positions)
  for i, filled in sorted(fits, key=lambda f: f[0]):
    filler = P.Lib(index.names[i])
    yield (filled if P.get(filled, pos) == filler else P.replace(filled, pos, filler)), filler, fresh


def _typed_filling(partial: P.Program, pos: P.Position, filler: P.Program, lib_types: dict[str, Type],
                   context: Type, task_type: Type, checked: dict[tuple, bool]) -> P.Program | None:
  """`partial` with `filler` at `pos` and its holes annotated with their inferred types, or None if it
  cannot be typed (checked first on the filler alone against `context`, `_context_type`; the check's
  answer is kept in `checked`)."""
  key = _precheck_key(filler, lib_types, context)
  ok = checked.get(key)
  if ok is None:
    ok = checked[key] = typable(filler, lib_types, context)
  if not ok:
    return None
  new = P.replace(partial, pos, filler)
  try:
    typing = infer(new, lib_types, task_type)
  except HxTypeError:
    return None
  return annotate_holes(new, typing.subterms)


def _precheck_key(filler: P.Program, lib_types: dict[str, Type], context: Type) -> tuple:
  """What `typable(filler, lib_types, context)` depends on, hashable: equal keys, equal answers.

  The check sees a library function only through its type (its variables instantiated afresh), a fresh
  function only as a new variable (its name is irrelevant), and the variables of the context and of the
  filler's holes only up to renaming: they are instantiated into the solver's own variables, and the two
  sets of names never meet (the context's are the solver's "_N", the holes' "vN"). So the key is the
  filler with library functions replaced by their types and fresh names dropped, and every variable of
  filler and context renamed in order of first occurrence (one injective renaming for both). Contexts
  recur across partial programs (`_1 -> Tensor<real>[1]` in every composition's left hole), so most
  prechecks of a long search are looked up.
  """
  names: dict[str, str] = {}
  return _canonical_program(filler, lib_types, names), _canonical_type(context, names)


def _canonical_type(t: Type, names: dict[str, str]) -> Type:
  """`t` with each variable renamed to `c<k>`, k its order of first occurrence across calls sharing
  `names` (updated)."""
  if isinstance(t, TypeVar):
    if t.name not in names:
      names[t.name] = f"c{len(names) + 1}"
    return TypeVar(names[t.name])
  if isinstance(t, ListType):
    return ListType(_canonical_type(t.elem, names))
  if isinstance(t, GraphType):
    return GraphType(_canonical_type(t.elem, names))
  if isinstance(t, FunctionType):
    return FunctionType(_canonical_type(t.arg, names), _canonical_type(t.result, names))
  return t


def _canonical_program(p: P.Program, lib_types: dict[str, Type], names: dict[str, str]
                       ) -> tuple[object, ...] | P.Program:
  """`p` as `_precheck_key` sees it: library functions as their types, fresh functions unnamed, holes'
  variables renamed (`_canonical_type`), in pre-order."""
  if isinstance(p, P.Lib):
    return ("lib", lib_types.get(p.name), p.name if p.name not in lib_types else None)
  if isinstance(p, P.Fresh):
    return ("fresh",)
  if isinstance(p, P.Hole):
    return ("hole", _canonical_type(p.type, names))
  kids = P.children(p)
  if not kids:
    return p
  # The node's kind and its fields other than children (a map's adt, a repeat's count), then its children.
  return (type(p).__name__, getattr(p, "adt", None), getattr(p, "k", None)) + tuple(
      _canonical_program(k, lib_types, names) for k in kids)


def _context_type(partial: P.Program, pos: P.Position, lib_types: dict[str, Type], task_type: Type) -> Type:
  """The most general type the rest of `partial` allows at `pos` (its hole's annotation left out).

  A filler that cannot have this type (`hx.lang.infer.typable`) cannot fill the hole: the filled
  program's constraints are the rest's and the filler's, whose type variables (its holes', its library
  functions' instances, its new fresh function's) are its own, so `infer` on the whole program would fail
  too. The search checks the filler alone first, without building error messages, and infers the whole
  program only for fillers that pass: most fillers of a large library's search are ill-typed (the same
  programs come out, in the same order: tests/synth/test_topdown.py).
  """
  loose = P.replace(partial, pos, P.Hole(TypeVar("v_context")))
  return infer(loose, lib_types, task_type).subterms[pos]

