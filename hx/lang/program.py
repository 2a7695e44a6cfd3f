"""The immutable AST of HOUDINI programs, and the utilities the synthesizers need.

Nodes (all frozen, hashable dataclasses; `str(node)` prints the canonical text form):

    Fresh(name)              nn_NAME: a fresh neural function, trained for this task
    Lib(name)                lib.NAME: a frozen neural function from the library (name without 'lib.')
    Compose(f, g)            f after g
    Map(adt, fn)             map_l / map_g  (adt is 'l' or 'g')
    Fold(adt, fn, init)      fold_l / fold_g; fn has type B -> A -> B, init has type B
    Conv(adt, fn)            conv_l / conv_g; fn has type List<A> -> B
    Repeat(k, fn)            fn applied k >= 1 times
    Fix(fn)                  fn applied until its value stops changing (a fixed point; the paper's
                             conv_g^* e is Fix(Conv('g', e))); see `Fix`
    Zeros(n)                 the constant Tensor<real>[n] of zeros
    Hole(type)               ?<type>: missing code of a known type (partial programs only)

A position is a tuple of child indices from the root: () is the root, (1, 0) the first child of the
second child. Children are numbered in the order the printed form shows them.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Union

from hx.lang.types import Type

__all__ = [
    "Fresh", "Lib", "Compose", "Map", "Fold", "Conv", "Repeat", "Fix", "Zeros", "Hole", "Program",
    "Position", "children", "with_children", "subterms", "get", "replace", "size", "holes",
    "fresh_names", "library_names", "as_library", "rename_fresh", "canonical", "is_complete", "chain",
    "compose_chain",
]

ADTS = ("l", "g")


def _check_adt(adt: str) -> None:
  if adt not in ADTS:
    raise ValueError(f"adt must be 'l' (list) or 'g' (graph), got {adt!r}")


@dataclasses.dataclass(frozen=True)
class Fresh:
  name: str

  def __str__(self) -> str:
    return self.name


@dataclasses.dataclass(frozen=True)
class Lib:
  name: str

  def __str__(self) -> str:
    return f"lib.{self.name}"


@dataclasses.dataclass(frozen=True)
class Compose:
  f: "Program"
  g: "Program"

  def __str__(self) -> str:
    return f"compose({self.f}, {self.g})"


@dataclasses.dataclass(frozen=True)
class Map:
  adt: str
  fn: "Program"

  def __post_init__(self):
    _check_adt(self.adt)

  def __str__(self) -> str:
    return f"map_{self.adt}({self.fn})"


@dataclasses.dataclass(frozen=True)
class Fold:
  adt: str
  fn: "Program"
  init: "Program"

  def __post_init__(self):
    _check_adt(self.adt)

  def __str__(self) -> str:
    return f"fold_{self.adt}({self.fn}, {self.init})"


@dataclasses.dataclass(frozen=True)
class Conv:
  adt: str
  fn: "Program"

  def __post_init__(self):
    _check_adt(self.adt)

  def __str__(self) -> str:
    return f"conv_{self.adt}({self.fn})"


@dataclasses.dataclass(frozen=True)
class Repeat:
  k: int
  fn: "Program"

  def __post_init__(self):
    if not isinstance(self.k, int) or self.k < 1:
      raise ValueError(f"repeat count must be an integer >= 1, got {self.k!r}")

  def __str__(self) -> str:
    return f"repeat({self.k}, {self.fn})"


@dataclasses.dataclass(frozen=True)
class Fix:
  """`fix(fn)`: fn applied to its own output until the value stops changing, `fix(e) : A -> A` if
  `e : A -> A`.

  The paper's notation `conv_g^* e` (and `conv_g^{*} e`) parses to `Fix(Conv("g", e))`. How the loop
  stops (a tolerance on the largest change, a cap on the iterations) and how it is differentiated is the
  compiler's business (`hx.compile.fixpoint.FixConfig`); the AST carries no numbers, so that one program
  means the same function under any such configuration.
  """
  fn: "Program"

  def __str__(self) -> str:
    return f"fix({self.fn})"


@dataclasses.dataclass(frozen=True)
class Zeros:
  n: int

  def __post_init__(self):
    if not isinstance(self.n, int) or self.n < 1:
      raise ValueError(f"zeros size must be an integer >= 1, got {self.n!r}")

  def __str__(self) -> str:
    return f"zeros({self.n})"


@dataclasses.dataclass(frozen=True)
class Hole:
  type: Type

  def __str__(self) -> str:
    return f"?<{self.type}>"


Program = Union[Fresh, Lib, Compose, Map, Fold, Conv, Repeat, Fix, Zeros, Hole]
Position = tuple[int, ...]

_CHILD_FIELDS = {
    Compose: ("f", "g"), Map: ("fn",), Fold: ("fn", "init"), Conv: ("fn",), Repeat: ("fn",), Fix: ("fn",),
}


# The same fields as getters: `children` runs millions of times in one enumeration of the search space.
_CHILD_GETTERS = {
    Compose: lambda p: (p.f, p.g), Map: lambda p: (p.fn,), Fold: lambda p: (p.fn, p.init),
    Conv: lambda p: (p.fn,), Repeat: lambda p: (p.fn,), Fix: lambda p: (p.fn,),
}


def children(p: Program) -> tuple[Program, ...]:
  """The direct subprograms of `p`, in printed order."""
  get = _CHILD_GETTERS.get(type(p))
  return () if get is None else get(p)


def with_children(p: Program, new: tuple[Program, ...]) -> Program:
  """`p` with its direct subprograms replaced by `new` (same count)."""
  fields = _CHILD_FIELDS.get(type(p), ())
  if len(new) != len(fields):
    raise ValueError(f"{type(p).__name__} has {len(fields)} children, got {len(new)}")
  return _REBUILD[type(p)](p, new) if fields else p


# `with_children` without `dataclasses.replace`'s generic path (a million calls in one enumeration); the
# constructors still run their checks.
_REBUILD = {
    Compose: lambda p, k: Compose(k[0], k[1]), Map: lambda p, k: Map(p.adt, k[0]),
    Fold: lambda p, k: Fold(p.adt, k[0], k[1]), Conv: lambda p, k: Conv(p.adt, k[0]),
    Repeat: lambda p, k: Repeat(p.k, k[0]), Fix: lambda p, k: Fix(k[0]),
}


def subterms(p: Program, prefix: Position = ()) -> Iterator[tuple[Position, Program]]:
  """Every (position, subterm) of `p` in pre-order, the root first."""
  # An explicit stack rather than nested generators (one per level), which cost more than the walk.
  stack = [(prefix, p)]
  while stack:
    pos, t = stack.pop()
    yield pos, t
    kids = children(t)
    for i in range(len(kids) - 1, -1, -1):
      stack.append((pos + (i,), kids[i]))


def get(p: Program, pos: Position) -> Program:
  """The subterm of `p` at `pos`; IndexError if there is none."""
  for i in pos:
    kids = children(p)
    if not 0 <= i < len(kids):
      raise IndexError(f"no subterm at position {pos} in {p}")
    p = kids[i]
  return p


def replace(p: Program, pos: Position, new: Program) -> Program:
  """`p` with the subterm at `pos` replaced by `new`."""
  if not pos:
    return new
  kids = list(children(p))
  if not 0 <= pos[0] < len(kids):
    raise IndexError(f"no subterm at position {pos} in {p}")
  kids[pos[0]] = replace(kids[pos[0]], pos[1:], new)
  return with_children(p, tuple(kids))


def size(p: Program) -> int:
  """The paper's size: occurrences of library functions (fresh, frozen, zeros) and combinators.

  Holes count 0, so the size of a partial program is a lower bound on that of its completions.
  """
  return (0 if isinstance(p, Hole) else 1) + sum(size(c) for c in children(p))


def holes(p: Program) -> list[tuple[Position, Hole]]:
  """The holes of `p` with their positions, in pre-order."""
  return [(pos, t) for pos, t in subterms(p) if isinstance(t, Hole)]


def is_complete(p: Program) -> bool:
  return not holes(p)


def _unique(names: Iterator[str]) -> tuple[str, ...]:
  return tuple(dict.fromkeys(names))


def fresh_names(p: Program) -> tuple[str, ...]:
  """Names of the fresh functions of `p`, each once, in order of first occurrence (pre-order)."""
  return _unique(_fresh_in(p))


def _fresh_in(p: Program) -> Iterator[str]:
  if isinstance(p, Fresh):
    yield p.name
  for c in children(p):
    yield from _fresh_in(c)


def library_names(p: Program) -> tuple[str, ...]:
  """Names (without 'lib.') of the library functions of `p`, each once, in order of first occurrence."""
  return _unique(t.name for _, t in subterms(p) if isinstance(t, Lib))


def as_library(p: Program) -> Program:
  """`p` with every fresh function read as the library function of the same name: a program whose
  functions were all frozen into the library under the names it already uses (a run's winner as its
  records name it, a provenance program)."""
  if isinstance(p, Fresh):
    return Lib(p.name)
  kids = children(p)
  return with_children(p, tuple(as_library(c) for c in kids)) if kids else p


def rename_fresh(p: Program, mapping: dict[str, str]) -> Program:
  """`p` with fresh function names renamed by `mapping` (names not in it are kept)."""
  if isinstance(p, Fresh):
    return Fresh(mapping.get(p.name, p.name))
  kids = children(p)
  return with_children(p, tuple(rename_fresh(c, mapping) for c in kids)) if kids else p


def canonical(p: Program) -> Program:
  """`p` with fresh functions renamed nn_1, nn_2, ... in order of first occurrence.

  Two programs that differ only in the names of their fresh functions have equal canonical forms; a
  fresh name used twice (shared weights) stays shared.
  """
  return rename_fresh(p, {n: f"nn_{i}" for i, n in enumerate(fresh_names(p), 1)})


def chain(p: Program) -> list[Program]:
  """The functions of a composition chain, outermost first: compose(f, compose(g, h)) and
  compose(compose(f, g), h) both give [f, g, h]; a program that is not a composition gives [p]."""
  if isinstance(p, Compose):
    return chain(p.f) + chain(p.g)
  return [p]


def compose_chain(functions: list[Program] | tuple[Program, ...]) -> Program:
  """The right-nested composition of `functions` (outermost first): [f, g, h] -> compose(f, compose(g,
  h)); a single function is itself."""
  if not functions:
    raise ValueError("cannot compose an empty chain of functions")
  out = functions[-1]
  for f in reversed(functions[:-1]):
    out = Compose(f, out)
  return out
