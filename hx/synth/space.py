"""The space of programs the synthesizers search: typed hole filling, costs, completion, equivalence.

Both synthesizers (top-down enumeration and evolution) grow programs the same way: a hole `?<T>` of a
partial program is filled by

  - a fresh function `nn_k` (a new neural function, trained for the task),
  - a library function `lib.NAME` whose type unifies with T,
  - a combinator with new holes: `compose(?, ?)`, `map_l(?)`, `map_g(?)`, `fold_l(?, ?)`,
    `fold_g(?, ?)`, `conv_l(?)`, `conv_g(?)`, `repeat(k, ?)` (k from `SearchSpace.repeat_counts`),
    `fix(?)` (the body applied until its value stops changing, `conv_g^*`; its body is filled as a
    repeat's is), or
  - `zeros(n)` in the start position of a fold (the only place the compiler accepts it);

and the result is type-checked at once with `hx.lang.infer` (the paper's appendix A rules; a hole is
assumed to have its annotated type): a partial program that cannot be typed is dropped. After each fill
the holes' annotations are replaced by their inferred types, so later fills see every constraint.

Only programs the compiler can build are proposed (`Completer`): a fold step is a single fresh or
library function and its start `zeros(n)`; a conv kernel is a single fresh or library function; every
fresh function's type has a module template (`hx.compile.modules.module_spec`); and the program is
finally checked by `hx.compile.compile_program` itself.

**Intermediate types.** Type variables left open in a complete program (the value between `nn_a` and
`map_l(...)`) are chosen by `SearchSpace`: the result of a fresh function from an image is that image's
CNN feature vector (`Tensor<real>[1024]` for 28x28 images at the paper's sizes: the paper's CNN has no
output layer). A module registered for A -> B (`hx.compile.register_module`: a user's encoder) makes B
the first choice of the open result of every fresh function from A, an image or any other tensor (then
that fresh function is the user's module: `compose(nn_1, nn_2)` with `nn_2 : A -> B` is an MLP after the
user's encoder); after it an image's CNN features; any other open type takes each of
`SearchSpace.intermediate_types` in turn (default
`Tensor<bool>[1]`, the recognizer output the paper's counting programs pass on, then `Tensor<real>[1]`;
the paper preset takes the authors' `AUTHORS_INTERMEDIATE_TYPES`, `Tensor<bool>[1]` then
`Tensor<real>[50]`). With these defaults every program the paper prints is reachable
(`hx.lang.paper.paper_library` types them with the same conventions).

**Equivalence.** Two programs are equivalent when their normal forms (`normal_form`) are equal up to
renaming of fresh functions, with the same types: composition is associative (chains are right-nested)
and `map(f) ∘ map(g)` is `map(f ∘ g)`. Both rules preserve the function computed and the modules
trained. The top-down search builds only normal forms (`compose`'s left child is never a `compose`, and
no `map` follows a `map` of the same kind in a chain), so it proposes one representative per class.
The authors' enumerator trains every form (`compose(compose(nn, map_l(nn)), map_l(nn))` and its normal
form are two candidates there), so a class comes in hx's order no later than in theirs.

**Order** (`SearchSpace.order`). "authors" (the default), the authors' enumerator (capergroup/houdini,
`HOUDINI/Synthesizer/SymbolicSynthesizer.py` over `SolverPQ.py`): partial programs in a queue by size
(`authors_size`: every node of their AST counts 1, holes included, so a combinator application counts 2),
ties first in first out, and a hole's fillers in the order fresh function, library functions (in the
order the library gained them), combinators (`compose`, then `SearchSpace.combinators` in its order: the
authors' library order is `AUTHORS_LIST_COMBINATORS` or `AUTHORS_GRAPH_COMBINATORS`). Complete programs
come out in order of size, and among programs of one size the one whose first holes took fresh functions
comes first: `compose(nn, map_l(compose(nn, lib.cnn)))` before `compose(lib.lstm, map_l(...))`. With a
growing library, the all-fresh and one-reuse programs the paper's tables print (LS tasks 5-9) come
before library-heavy ones of the same size, which the "cost" order put first. This order reaches every
rank-1 program of the paper's top-down tables within the paper preset's budgets
(`hx.evaluation.paper.rank1_positions`; the positions table in benchmarks/RESULTS.md).

"cost" (`Costs`, lower first), hx's earlier order: a fresh function 1, a library function 0.5 (reuse is
cheaper than training a new network), `map`, `fold`, `conv` and `repeat` 1 each, `compose` and a fold's
`zeros` start 0 (glue forced by the types). It puts transfer programs (`conv_g^10(nn) ∘ map_g(lib.f ∘
lib.g)`, `compose(lib.lstm, map_l(compose(lib.mlp, lib.cnn)))`) among the first few dozen, so a small
budget tries reuse first (the quick preset's four candidates), but as the library grows it fills the
paper's budgets with library combinations. A partial program's priority is its cost plus a lower bound
per hole (the cheapest leaf that could fill it), so complete programs come out in order of cost; ties go
to fewer fresh functions, then to the order of generation; within one cost the top-down search takes one
candidate per skeleton in turn (`hx.synth.topdown`). `fix` costs what `repeat` does in both orders.

**The authors' filter** (`SearchSpace.authors_filter`, on in the paper preset): a candidate is trained only
if the authors' code would train it (`authors_filter_reason`). It removes, among others, the adapters hx
could otherwise train (a fresh `Tensor<bool>[1] -> Tensor<bool>[1]` wrapped around library functions)
and a second MLP. Removing candidates never reorders the others.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import TYPE_CHECKING, Collection, Iterator, Mapping, Sequence, Union

from hx.lang import program as P
from hx.lang.errors import HxTypeError
from hx.lang.infer import infer
from hx.lang.types import (
  FunctionType,
  GraphType,
  ListType,
  TensorType,
  Type,
  TypeVar,
  function_parts,
  is_image,
  parse_type,
  substitute,
  type_variables,
)

__all__ = [
  "COMBINATORS", "Costs", "SearchSpace", "Candidate", "Completer", "normal_form", "equivalence_key",
  "hole_role", "fillers", "program_cost", "priority", "library_types_of", "check_candidate", "ORDERS",
  "AUTHORS_LIST_COMBINATORS", "AUTHORS_GRAPH_COMBINATORS", "AUTHORS_INTERMEDIATE_TYPES", "authors_size",
  "authors_filter_reason", "paper_space", "with_library_seed", "SearchLibrary",
]

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig
  from hx.synth.library import Library

SearchLibrary = Union["Library", Mapping[str, Type], None]
"""The library a search may call: an `hx.Library`, a mapping of library function names to types (each
function's module is then the template its type gets), or None (none)."""

COMBINATORS = ("map_l", "map_g", "fold_l", "fold_g", "conv_l", "conv_g", "repeat", "fix")
"""Combinators a search may use besides `compose` (always available)."""

AUTHORS_LIST_COMBINATORS = ("repeat", "map_l", "fold_l", "conv_l")
AUTHORS_GRAPH_COMBINATORS = ("conv_g", "map_g", "fold_g", "repeat")
"""The combinators of the authors' library, in its order (after `compose`; capergroup/houdini,
`HOUDINI/Eval/CS_LS.py` and `SummingSequence/EvaluatorSummingSeq.py` for the list sequences,
`HOUDINI/Eval/GraphSeq.py` for the graph ones): under the "authors" order a hole's combinator fillers
come in this order."""

ORDERS = ("authors", "cost")

AUTHORS_INTERMEDIATE_TYPES = (parse_type("Tensor<bool>[1]"), parse_type("Tensor<real>[50]"))
"""The open types the authors' search tries, after CNN features (capergroup/houdini, `HOUDINI/Eval/Task.py`:
`concreteTypes`): the recognizer's output, then a 50-wide real vector."""


@dataclasses.dataclass(frozen=True)
class Costs:
  """Cost of each node kind (see the module docstring)."""
  fresh: float = 1.0
  library: float = 0.5
  compose: float = 0.0
  map: float = 1.0
  fold: float = 1.0
  conv: float = 1.0
  repeat: float = 1.0
  zeros: float = 0.0


@dataclasses.dataclass(frozen=True)
class SearchSpace:
  """What programs a search may build, and which of those it trains wins.

  Attributes:
    intermediate_types: the types an open type variable may take (other than a CNN's features).
    image_features: the open result of a fresh function from an image is the CNN's feature vector.
    repeat_counts: the k of `repeat(k, e)` (the paper's programs use 9 and 10).
    combinators: the combinators allowed besides compose (a subset of `COMBINATORS`).
    max_size: the largest program (`hx.lang.size`, the paper's measure). The paper's programs have size
      at most 8 (e.g. `conv_g^10(nn) ∘ map_g(lib.f ∘ lib.g)`).
    max_fresh: the most fresh functions in a program (the paper's have at most 3).
    repeat_conv_only: `repeat` and `fix` only of a convolution (`conv_g^k`, `conv_g^*`, ...), the only
      use the paper's programs make of repeat; otherwise any function from a type to itself may be
      repeated.
    stacked_fresh: propose a fresh function applied right after another fresh function that does not
      take an image. Off by default: the inner network already ends in a learned output layer, so the
      pair is a deeper network of the same kind, not a new program structure (an MLP after a CNN is kept:
      the paper's CNN has no output layer; so is a pair one of which is a user's registered module,
      `hx.compile.register_module`: a network after a user's encoder is a structure of its own).
    normal_forms_only: propose only normal forms (`normal_form`): one program per equivalence class.
      Off only to count every program (benchmarks/count_programs.py).
    prune_templates: never propose a fresh function of a type no module template can have (e.g. one
      that returns an image). Off only to count every typed program.
    costs: the cost of each node kind (the "cost" order only).
    order: the top-down search's order (module docstring): "authors" (by size with holes, first in
      first out, fresh before library, as the authors' enumerator) or "cost" (by `costs`, fewer fresh
      functions first, one candidate per skeleton in turn).
    authors_filter: train only what the authors' code trains (`authors_filter_reason`): at most three
      fresh functions, each a CNN from an image to its features, an MLP from CNN features, an LSTM from a
      list of vectors or a two-argument (fold) step on vectors; at most one MLP, the library's counted;
      at most one `repeat`; at most two intermediate types chosen.
    library_tasks: offer the search the functions of at most this many earlier tasks, those whose
      programs' per-image functions best predict the task's targets in closed form
      (`hx.synth.prior.offered_library`), so that its cost stays bounded as the library grows; None
      (the paper's): the whole library.
    probed_tasks: with `library_tasks`, probe at most this many earlier tasks' functions to choose them,
      those most recently reused, half of them of the task's type (`hx.synth.prior.probed_sources`),
      so that the choice's own cost (a forward pass and a ridge fit per earlier task) stays bounded
      too; the others stay in the library and come back when a winner reuses them. None: probe every
      earlier task.
    reused_programs: with `library_tasks`, the top-down search first scores, as they are, the winning
      programs of at most this many of the best offered earlier tasks of the new task's type (every
      function frozen: nothing trained; on top of the budget's candidates), then trains the
      best-scoring one with its outermost function fresh and with its input-end function fresh, then
      its enumeration (`hx.synth.prior.reused_programs`, `one_fresh`: MNTDP's reuse of an earlier
      task's modules, one of them new). 0 (the paper's): the enumeration alone.
    reuse_tolerance: the winner is the candidate with the fewest fresh functions among those whose
      validation score is at most the best one's plus a margin, this fraction of it (or
      `reuse_standard_errors`' margin where that is wider), so that a task whose earlier program or
      functions serve it within that margin adds little or nothing to the library. Among equally few
      fresh functions the better score goes first; with the prior (`library_tasks`), first the
      candidate whose library functions the prior ranks best (its worst-ranked one earliest in the
      offered order): of two programs over interchangeable earlier functions, the one over the
      functions of the earlier tasks most like the new one. 0 (the paper's), with
      `reuse_standard_errors` 0: the best validation score wins.
    reuse_standard_errors: the winner rule's margin (`reuse_tolerance`) in standard errors of the best
      validation score: for an error rate p over n validation examples 100 * sqrt(q (1 - q) / n), q =
      p / 100 but at least 1 / n (a perfect score is known to about one example); for an RMSE r,
      r / sqrt(2 n) (a standard deviation's standard error under normal residuals). n counts examples,
      not list elements (a list's elements share their example's draw). Why: a relative margin is blind
      to how many examples a score rests on (10% of a 2% error is a fifth of one example in 100), and
      candidates a few validation examples apart are not told apart by them. 0: no such margin.
  """
  intermediate_types: tuple[Type, ...] = (parse_type("Tensor<bool>[1]"), parse_type("Tensor<real>[1]"))
  image_features: bool = True
  repeat_counts: tuple[int, ...] = (9, 10)
  combinators: tuple[str, ...] = COMBINATORS
  max_size: int = 8
  max_fresh: int = 3
  repeat_conv_only: bool = True
  stacked_fresh: bool = False
  normal_forms_only: bool = True
  prune_templates: bool = True
  costs: Costs = Costs()
  order: str = "authors"
  authors_filter: bool = False
  library_tasks: int | None = None
  probed_tasks: int | None = None
  reused_programs: int = 0
  reuse_tolerance: float = 0.0
  reuse_standard_errors: float = 0.0

  def __post_init__(self):
    if self.order not in ORDERS:
      raise ValueError(f"unknown search order {self.order!r}; the orders are {', '.join(ORDERS)}")
    bad = [c for c in self.combinators if c not in COMBINATORS]
    if bad:
      raise ValueError(f"unknown combinator(s) {bad}; the combinators are {', '.join(COMBINATORS)}")
    if any(not isinstance(t, TensorType) for t in self.intermediate_types):
      raise ValueError(f"intermediate types must be tensor types, got {self.intermediate_types}")
    if any(not isinstance(k, int) or k < 2 for k in self.repeat_counts):
      raise ValueError(f"repeat counts must be integers >= 2, got {self.repeat_counts}")
    if self.max_size < 1 or self.max_fresh < 0:
      raise ValueError(f"max_size must be >= 1 and max_fresh >= 0, got {self.max_size}, {self.max_fresh}")
    if self.library_tasks is not None and (not isinstance(self.library_tasks, int)
                                           or isinstance(self.library_tasks, bool) or self.library_tasks < 1):
      raise ValueError(f"library_tasks must be an integer >= 1 or None, got {self.library_tasks!r}")
    if self.probed_tasks is not None and (not isinstance(self.probed_tasks, int)
                                          or isinstance(self.probed_tasks, bool)
                                          or self.probed_tasks < (self.library_tasks or 1)):
      raise ValueError(f"probed_tasks must be an integer >= library_tasks ({self.library_tasks}) or None, "
                       f"got {self.probed_tasks!r}")
    if not isinstance(self.reused_programs, int) or isinstance(self.reused_programs, bool) \
       or self.reused_programs < 0:
      raise ValueError(f"reused_programs must be an integer >= 0, got {self.reused_programs!r}")
    for name in ("reuse_tolerance", "reuse_standard_errors"):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if self.reused_programs and self.library_tasks is None:
      raise ValueError("reused_programs needs library_tasks: the programs reused are those of the earlier "
                       "tasks the prior ranks best (hx.synth.prior)")


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A complete program with the types of its fresh functions: what a synthesizer trains.

  Attributes:
    program: the program, fresh functions named nn_1, nn_2, ... in order of first occurrence.
    types: (fresh name, type) pairs, in the same order; no type variables.
    cost: its cost (`program_cost`).
    key: its equivalence class (`equivalence_key`); equal keys compute the same function.
    seeded_as: what its training seed hashes in place of `key` (`hx.synth.jobs.job_seed`), or None for
      `key` itself: the key with a sequence's library functions renamed after its `library_seed`
      (`with_library_seed`), so that a sequence's name seeds nothing. Not part of equality.
  """
  program: P.Program
  types: tuple[tuple[str, Type], ...]
  cost: float
  key: tuple
  seeded_as: tuple | None = dataclasses.field(default=None, compare=False, repr=False)

  @property
  def fresh_types(self) -> dict[str, Type]:
    return dict(self.types)

  @property
  def seed_key(self) -> tuple:
    """What its training seed hashes: `seeded_as`, or else `key`."""
    return self.key if self.seeded_as is None else self.seeded_as

  @property
  def size(self) -> int:
    return P.size(self.program)

  def __str__(self) -> str:
    if not self.types:
      return str(self.program)
    return f"{self.program}  [{'; '.join(f'{n} : {t}' for n, t in self.types)}]"


# --- Equivalence ----------------------------------------------------------------------------------

def normal_form(p: P.Program) -> P.Program:
  """`p` with composition chains right-nested and adjacent maps of the same kind fused.

  compose(compose(f, g), h) -> compose(f, compose(g, h)); compose(map_l(f), map_l(g)) -> map_l(compose(f,
  g)), recursively. Both rewrite a program into one that computes the same function with the same
  modules.
  """
  kids = P.children(p)
  if kids and not isinstance(p, P.Compose):
    return P.with_children(p, tuple(normal_form(c) for c in kids))
  if not isinstance(p, P.Compose):
    return p
  chain: list[P.Program] = []
  for f in (normal_form(f) for f in P.chain(p)):
    for g in P.chain(f):
      last = chain[-1] if chain else None
      if isinstance(last, P.Map) and isinstance(g, P.Map) and last.adt == g.adt:
        chain[-1] = P.Map(g.adt, normal_form(P.Compose(last.fn, g.fn)))
      else:
        chain.append(g)
  return P.compose_chain(chain)


def equivalence_key(program: P.Program, fresh_types: Mapping[str, Type]) -> tuple:
  """A hashable key equal for programs that compute the same function (see `normal_form`) with fresh
  functions of the same types, whatever their names."""
  nf = normal_form(program)
  names = P.fresh_names(nf)
  mapping = {n: f"nn_{i}" for i, n in enumerate(names, 1)}
  return (str(P.rename_fresh(nf, mapping)), tuple(str(fresh_types[n]) for n in names))


def with_library_seed(candidate: Candidate, sequence: str, library_seed: int | str) -> Candidate:
  """`candidate` seeded as if the library functions of `sequence` it calls, `lib.nn_<sequence>_<k>`
  (`hx.synth.Library.add`'s names), were `lib.nn_<library_seed>_<k>` (`Candidate.seeded_as`).

  Why: a candidate's training seed hashes its equivalence key, which names the library functions it
  calls, and those are named after the sequence; so renaming a sequence changed its results. A
  sequence's `library_seed` (`hx.data.Sequence`) stands in for its name there: 0 by default for a
  user's, the paper's sequences their own names, with which their committed records were made (for
  them nothing changes). Library functions of other sequences keep their names.
  """
  label = str(library_seed)
  if label == sequence:
    return candidate
  mapping = {}
  for name in P.library_names(candidate.program):
    head, _, k = name.rpartition("_")
    if head == f"nn_{sequence}" and k.isdigit():
      mapping[name] = f"nn_{label}_{k}"
  if not mapping:
    return candidate
  program = candidate.program
  for pos, t in P.subterms(candidate.program):
    if isinstance(t, P.Lib) and t.name in mapping:
      program = P.replace(program, pos, P.Lib(mapping[t.name]))
  return dataclasses.replace(candidate, seeded_as=equivalence_key(program, candidate.fresh_types))


# --- Costs ----------------------------------------------------------------------------------------

_COST_FIELD = {P.Fresh: "fresh", P.Lib: "library", P.Compose: "compose", P.Map: "map", P.Fold: "fold",
               P.Conv: "conv", P.Repeat: "repeat", P.Fix: "repeat", P.Zeros: "zeros"}


def _node_cost(node: P.Program, costs: Costs) -> float:
  field = _COST_FIELD.get(type(node))
  return 0.0 if field is None else getattr(costs, field)


def program_cost(p: P.Program, costs: Costs = Costs()) -> float:
  """The cost of a (complete) program: the sum of its nodes' costs."""
  return sum(_node_cost(t, costs) for _, t in P.subterms(p))


def hole_role(p: P.Program, pos: P.Position) -> str | None:
  """What the subterm at `pos` is for: "step" or "start" of a fold, "kernel" of a conv, "body" of a
  repeat or a fix, else None."""
  if not pos:
    return None
  parent = P.get(p, pos[:-1])
  if isinstance(parent, P.Fold):
    return "step" if pos[-1] == 0 else "start"
  if isinstance(parent, P.Conv):
    return "kernel"
  if isinstance(parent, (P.Repeat, P.Fix)):
    return "body"
  return None


def priority(p: P.Program, costs: Costs, has_library: bool) -> float:
  """Cost of the filled nodes plus, per hole, the cheapest leaf that could fill it (a lower bound)."""
  leaf = min(costs.fresh, costs.library) if has_library else costs.fresh
  total = 0.0
  for pos, t in P.subterms(p):
    if isinstance(t, P.Hole):
      total += costs.zeros if hole_role(p, pos) == "start" else leaf
    else:
      total += _node_cost(t, costs)
  return total


_AUTHORS_NODE_SIZE = {P.Fresh: 1, P.Lib: 1, P.Hole: 1, P.Compose: 2, P.Map: 2, P.Fold: 2, P.Conv: 2,
                      P.Repeat: 3, P.Fix: 3, P.Zeros: 3}


def authors_size(p: P.Program) -> int:
  """The size the authors' enumerator orders by (capergroup/houdini, `ASTUtils.getSize`): every node of
  their AST counts 1, so a leaf (fresh, library function, hole) 1, a combinator application 2 (the
  application and the combinator) plus its arguments, `repeat(k, e)` 3 plus e (k is a node), `zeros(n)`
  3. `fix` (ours) counts as `repeat` does."""
  return sum(_AUTHORS_NODE_SIZE[type(t)] for _, t in P.subterms(p))


# --- Filling holes ----------------------------------------------------------------------------------

_VAR_NAMES = itertools.count(1)


def _var() -> TypeVar:
  # Hole variables live in their own namespace in `infer` (not the solver's "_N"), so any unique names do.
  return TypeVar(f"v{next(_VAR_NAMES)}")


def _hole_fn() -> P.Hole:
  return P.Hole(FunctionType(_var(), _var()))


def _may_be_fresh(t: Type, role: str | None) -> bool:
  """False if no module template can ever have type t (a quick test; the compiler decides at the end)."""
  if isinstance(t, TypeVar):
    return True
  args, result = function_parts(t)
  if not args or len(args) > (2 if role == "step" else 1):
    return False
  if isinstance(result, (ListType, GraphType, FunctionType)) or is_image(result):
    return False
  for a in args:
    if isinstance(a, (GraphType, FunctionType)):
      return False
    if isinstance(a, ListType) and (len(args) > 1 or is_image(a.elem)):
      return False
  return True


def _chain_predecessor(p: P.Program, pos: P.Position) -> P.Program | None:
  """The function applied just before (outside of) the one at `pos` in its composition chain, if any."""
  if not pos or not isinstance(P.get(p, pos[:-1]), P.Compose):
    return None
  if pos[-1] == 1:
    return P.get(p, pos[:-1] + (0,))
  up = pos[:-1]
  if up and up[-1] == 1 and isinstance(P.get(p, up[:-1]), P.Compose):
    return P.get(p, up[:-1] + (0,))
  return None


def fillers(p: P.Program, pos: P.Position, hole: P.Hole, library: Sequence[str], space: SearchSpace,
            fresh_name: str) -> Iterator[P.Program]:
  """The subprograms that may replace the hole at `pos` of `p` (not yet type-checked: `infer` decides).

  Only normal forms are proposed (see the module docstring), and only forms the compiler can build: a
  fold's step and a conv's kernel are single functions, a fold's start is `zeros(n)`.
  """
  role = hole_role(p, pos)
  t = hole.type
  if role == "start":
    if isinstance(t, TensorType):
      if t.atom == "real" and len(t.shape) == 1:
        yield P.Zeros(t.shape[0])
    elif isinstance(t, TypeVar) and space.order == "cost":
      # The authors' `zeros` leaves its width open when the fold's state type is: that program never
      # completes there, so the "authors" order proposes nothing either.
      for c in space.intermediate_types:
        if c.atom == "real" and len(c.shape) == 1:
          yield P.Zeros(c.shape[0])
    return
  if not isinstance(t, (FunctionType, TypeVar)):
    return
  if role == "body" and space.repeat_conv_only:
    for c in space.combinators:
      if c.startswith("conv_"):
        yield P.Conv(c[-1], P.Hole(FunctionType(ListType(_var()), _var())))
    return
  if not space.prune_templates or _may_be_fresh(t, role):
    yield P.Fresh(fresh_name)
  for name in library:
    yield P.Lib(name)
  if role not in (None, "body"):
    return
  parent = P.get(p, pos[:-1]) if pos else None
  normal = space.normal_forms_only
  if not (normal and isinstance(parent, P.Compose) and pos[-1] == 0):
    yield P.Compose(_hole_fn(), _hole_fn())
  before = _chain_predecessor(p, pos)
  for c in space.combinators:
    if c == "repeat":
      if not isinstance(parent, (P.Repeat, P.Fix)):
        for k in space.repeat_counts:
          v = _var()
          yield P.Repeat(k, P.Hole(FunctionType(v, v)))
      continue
    if c == "fix":
      if not isinstance(parent, (P.Repeat, P.Fix)):
        v = _var()
        yield P.Fix(P.Hole(FunctionType(v, v)))
      continue
    kind, adt = c.split("_")
    if kind == "map":
      if not (normal and isinstance(before, P.Map) and before.adt == adt):
        yield P.Map(adt, _hole_fn())
    elif kind == "fold":
      s = _var()
      yield P.Fold(adt, P.Hole(FunctionType(s, FunctionType(_var(), s))), P.Hole(s))
    else:
      yield P.Conv(adt, P.Hole(FunctionType(ListType(_var()), _var())))


def annotate_holes(p: P.Program, subterm_types: Mapping[P.Position, Type]) -> P.Program:
  """`p` with each hole's annotation replaced by its inferred type."""
  for pos, _ in P.holes(p):
    p = P.replace(p, pos, P.Hole(subterm_types[pos]))
  return p


def library_types_of(library: SearchLibrary) -> dict[str, Type]:
  """Name -> type of a library given as an `hx.Library`, a mapping of names to types, or None."""
  if library is None:
    return {}
  if hasattr(library, "types"):
    return dict(library.types())
  return dict(library)


# --- Completing a program --------------------------------------------------------------------------

class Completer:
  """Turns a complete program with open types into the candidates the compiler can build.

  Args:
    library: an `hx.Library` (its module specs are used), a mapping name -> type (each function's
      module is then the template its type gets, as for a fresh function), or None.
    space: the search space (intermediate types).
    config: the `hx.compile.ModuleConfig` fresh functions would be built with (default: the paper's).
  """

  def __init__(self, library: SearchLibrary, space: SearchSpace, config: ModuleConfig | None = None):
    from hx.compile.modules.choice import module_spec
    from hx.compile.modules.config import ModuleConfig

    self.config = ModuleConfig() if config is None else config
    self.space = space
    self.library_types = library_types_of(library)
    if hasattr(library, "specs"):
      self.library_specs = dict(library.specs())
    else:
      self.library_specs = {}
      for name, t in self.library_types.items():
        try:
          self.library_specs[name] = module_spec(t, self.config, name=f"lib.{name}")
        except TypeError:
          pass  # no module for this type: programs using it are not buildable

  def _features(self, image: TensorType) -> Type | None:
    from hx.compile.modules.cnn import cnn_features

    f = cnn_features(image, self.config)
    return TensorType("real", (f,)) if f else None

  @staticmethod
  def _registered(*args: Type) -> list[Type]:
    """The output types of the modules registered for a function of `args` (`register_module`), in the
    order they were registered."""
    from hx.compile.modules.registry import registered_modules

    return [r.output for r in registered_modules().values() if r.args == args]

  @staticmethod
  def _is_registered(t: Type) -> bool:
    """Whether a fresh function of type `t` gets a user's registered module (`register_module`)."""
    from hx.compile.modules.registry import registered_modules

    return any(r.type == t for r in registered_modules().values())

  def _choices(self, fresh: Mapping[str, Type]) -> list[tuple[str, list[Type]]]:
    """Each open type variable with the types it may take. The open result of a fresh function whose
    arguments are known takes first the output type of each module registered for those arguments (a
    user's encoder: `hx.compile.register_module`); then, from an image, the CNN's features (with
    `image_features`), or else the intermediate types."""
    choices: dict[str, list[Type]] = {}
    for t in fresh.values():
      args, result = function_parts(t)
      if not isinstance(result, TypeVar) or any(type_variables(a) for a in args):
        continue
      options = self._registered(*args)
      image = len(args) == 1 and is_image(args[0])
      features = self._features(args[0]) if image and self.space.image_features else None
      if features is not None:
        options.append(features)
      elif options:  # what the open type takes without a registration, after the registered ones
        options += self.space.intermediate_types
      if options:
        choices.setdefault(result.name, list(dict.fromkeys(options)))
    for t in fresh.values():
      for v in sorted(type_variables(t)):
        choices.setdefault(v, list(self.space.intermediate_types))
    return list(choices.items())

  def _stacked(self, program: P.Program, fresh: Mapping[str, Type]) -> bool:
    """Whether a fresh function is applied right after a fresh function that does not take an image,
    neither of them a user's registered module."""
    for _, t in P.subterms(program):
      if isinstance(t, P.Compose):
        chain = P.chain(t)
        for outer, inner in zip(chain, chain[1:]):
          if isinstance(outer, P.Fresh) and isinstance(inner, P.Fresh):
            args, _ = function_parts(fresh[inner.name])
            if not (len(args) == 1 and is_image(args[0])) and not (
                self._is_registered(fresh[inner.name]) or self._is_registered(fresh[outer.name])):
              return True
    return False

  def authors_reason(self, program: P.Program, fresh: Mapping[str, Type]) -> str | None:
    """Why the authors' code would not train `program` with these fresh types, or None if it would
    (`authors_filter_reason`)."""
    # A user's module of one argument takes the CNN's place (its output counts as features).
    features = {spec.output for spec in self.library_specs.values()
                if spec.template == "cnn" or (spec.template == "user" and len(spec.inputs) == 1)}
    for t in fresh.values():
      args, _ = function_parts(t)
      if len(args) == 1:
        f = self._features(args[0]) if is_image(args[0]) else None
        if f is not None:
          features.add(f)
        features.update(self._registered(args[0]))
    templates = [self.library_specs[t.name].template for _, t in P.subterms(program)
                 if isinstance(t, P.Lib) and t.name in self.library_specs]
    repeats = sum(isinstance(t, (P.Repeat, P.Fix)) for _, t in P.subterms(program))
    user = {n for n, t in fresh.items() if self._is_registered(t)}
    return authors_filter_reason(fresh, features, templates, repeats, user=user)

  def buildable(self, program: P.Program, fresh: Mapping[str, Type]) -> bool:
    """Whether the compiler builds `program` with these fresh types (no type variables), and the space
    admits it."""
    from hx.compile.lower import compile_program

    if not self.space.stacked_fresh and self._stacked(program, fresh):
      return False
    if self.space.authors_filter and self.authors_reason(program, fresh) is not None:
      return False
    if any(n not in self.library_specs for n in P.library_names(program)):
      return False
    try:
      compile_program(program, fresh, self.config, self.library_specs)
    except (ValueError, TypeError, NotImplementedError):
      return False
    return True

  def complete_types(self, program: P.Program, fresh: Mapping[str, Type], *,
                     check: bool = True) -> Iterator[dict[str, Type]]:
    """Each choice of the open types in `fresh` (fresh name -> type, maybe with type variables), in the
    order of `SearchSpace.intermediate_types`; with `check`, only those the compiler builds."""
    choices = self._choices(fresh)
    if self.space.authors_filter and len(choices) > AUTHORS_MAX_OPEN_TYPES:
      return
    for combo in itertools.product(*(opts for _, opts in choices)):
      assignment = {v: t for (v, _), t in zip(choices, combo)}
      types = {n: substitute(t, assignment) for n, t in fresh.items()}
      if not check or self.buildable(program, types):
        yield types

  def complete(self, program: P.Program, fresh: Mapping[str, Type], cost: float) -> Iterator[Candidate]:
    """The buildable candidates of a complete program whose fresh types may hold type variables, one per
    choice of the open types (`complete_types`), with fresh functions renamed nn_1, nn_2, ..."""
    names = P.fresh_names(program)
    mapping = {n: f"nn_{i}" for i, n in enumerate(names, 1)}
    program = P.rename_fresh(program, mapping)
    fresh = {mapping[n]: t for n, t in fresh.items() if n in mapping}
    for types in self.complete_types(program, fresh):
      yield Candidate(program, tuple((n, types[n]) for n in P.fresh_names(program)), cost,
                      equivalence_key(program, types))


AUTHORS_MAX_FRESH = 3
AUTHORS_MAX_MLPS = 1
AUTHORS_MAX_OPEN_TYPES = 2
"""The authors' candidate filter (capergroup/houdini, `HOUDINI/InterpreterFilters.py`, `is_evaluable`, and
`SymbolicSynthesizer.genProgs`, which chooses at most two open intermediate types)."""


def authors_filter_reason(fresh: Mapping[str, Type], features: set[Type], library_templates: Sequence[str],
                          repeats: int, *, user: Collection[str] = ()) -> str | None:
  """Why the authors' code would not train a candidate, or None if it would.

  Their `is_evaluable` admits at most three fresh functions, each of one of these types: an image to its
  CNN features (a CNN), CNN features to a vector (an MLP), a list of vectors to a vector (an LSTM, or a
  graph convolution's kernel), or two vectors to a vector (a fold's step). Every other fresh function is
  refused, a vector to a vector among them (its check of a vector argument ends in a refusal either way).
  At most one MLP: fresh ones and library ones (`library_templates` has a template per library function
  occurrence). At most one `repeat` (hx's `fix` counts as one). A user's registered module (`user`,
  ours: the authors' code has none) is admitted as their CNN is, in the place of a network of theirs.

  Args:
    fresh: fresh name -> type, without type variables.
    features: the types of CNN features in the program (hx's CNN features are a vector, the authors' a
      64x4x4 tensor, so "from features" is told from "from a vector" by the type).
    library_templates: the module template of each library function occurrence.
    repeats: the number of `repeat` and `fix` nodes.
    user: the fresh functions that are a user's registered modules (`hx.compile.register_module`).
  """
  if len(fresh) > AUTHORS_MAX_FRESH:
    return f"more than {AUTHORS_MAX_FRESH} fresh functions"
  def vector(t: Type) -> bool:  # a vector that is not CNN features (the authors' 2-d tensor)
    return isinstance(t, TensorType) and len(t.shape) == 1 and t not in features

  mlps = sum(t == "mlp" for t in library_templates)
  for name, t in fresh.items():
    args, result = function_parts(t)
    if name in user:
      pass
    elif len(args) == 1 and is_image(args[0]):
      if result not in features:
        return f"{name} : {t} takes an image to something other than CNN features"
    elif len(args) == 1 and args[0] in features and vector(result):
      mlps += 1
    elif len(args) == 1 and isinstance(args[0], ListType) and vector(args[0].elem) and vector(result):
      pass
    elif len(args) == 2 and all(vector(a) for a in args) and vector(result):
      pass
    else:
      return f"{name} : {t} is not a CNN, an MLP from CNN features, an LSTM or a fold step"
  if mlps > AUTHORS_MAX_MLPS:
    return f"{mlps} MLPs (fresh and library)"
  if repeats > 1:
    return f"{repeats} repeats"
  return None


def paper_space(graphs: bool = False) -> SearchSpace:
  """The search the paper preset runs: the authors' order, their candidate filter, their intermediate
  types, and their library's combinators in its order: those of the graph sequences if `graphs`, else
  those of the list and image sequences (`AUTHORS_LIST_COMBINATORS`); hx's `fix` is not among them."""
  return SearchSpace(order="authors", authors_filter=True, intermediate_types=AUTHORS_INTERMEDIATE_TYPES,
                     combinators=AUTHORS_GRAPH_COMBINATORS if graphs else AUTHORS_LIST_COMBINATORS)


def check_candidate(program: P.Program, fresh_types: Mapping[str, Type], library_types: Mapping[str, Type],
                    task_type: Type) -> bool:
  """Whether `program` with these fresh types has the task's type (the evolutionary search's check)."""
  try:
    infer(program, library_types, task_type, fresh_types=fresh_types)
  except HxTypeError:
    return False
  return True
