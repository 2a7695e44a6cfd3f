"""Type inference for (partial) programs: the paper's appendix A rules, solved by unification.

    compose(f, g) : A -> C          if  g : A -> B  and  f : B -> C
    map_a(e)      : a<A> -> a<B>    if  e : A -> B                      (a is List or Graph)
    fold_a(e, z)  : a<A> -> B       if  e : B -> A -> B  and  z : B
    conv_a(e)     : a<A> -> a<B>    if  e : List<A> -> B
    repeat(k, e)  : A -> A          if  e : A -> A
    fix(e)        : A -> A          if  e : A -> A                      (e applied until its value
                                                                         stops changing)
    zeros(n)      : Tensor<real>[n]
    ?<T>          : T               (a hole is assumed to have its annotated type)
    nn_x          : a fresh type, the same for every occurrence of nn_x (or the type given for it)
    lib.x         : its type in the library (type variables in it are instantiated per use)

The elements of lists and graphs must be tensor types; tensor atoms and shapes must match exactly.
Expected types flow down (the expected type of compose(f, g) gives g's input and f's output), so an
error is reported at the smallest subterm that cannot have the type its context requires.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Callable, Mapping, Union

from hx.lang import program as P
from hx.lang.errors import HxTypeError
from hx.lang.types import FunctionType, GraphType, ListType, TensorType, Type, TypeVar, type_variables

__all__ = ["Typing", "infer", "typable"]


@dataclasses.dataclass(frozen=True)
class Typing:
  """The result of `infer`.

  Attributes:
    type: the program's type.
    fresh: each fresh function's name -> its type. Type variables are left where nothing constrains
      them (e.g. the feature vector between two fresh functions); a synthesizer chooses them.
    subterms: each position (see `hx.lang.program`) -> the type of the subterm there.
  """
  type: Type
  fresh: dict[str, Type]
  subterms: dict[P.Position, Type]


class _Clash(Exception):
  """Two types that do not unify; `detail` (printed types) is built only when an error reports it: a
  search drops ill-typed programs by the hundred thousand, and printing their types cost more than
  finding the clash."""

  def __init__(self, explain: Callable[[], str]):
    super().__init__()
    self._explain = explain

  @property
  def detail(self) -> str:
    return self._explain()


# Where a subterm sits, for error messages: a text, or (parent, note) for "its place in PARENT NOTE",
# printed only when an error is reported (printing every parent on every inference cost more than
# inferring, in a search).
_Context = Union[str, tuple]


def _where(context: _Context) -> str:
  return context if isinstance(context, str) else f"its place in {context[0]}{context[1]}"


class _Solver:

  def __init__(self, library_types: Mapping[str, Type], fresh_types: Mapping[str, Type],
               explain: bool = True):
    self.library_types = library_types
    self.explain = explain  # False: a clash stays a _Clash, no HxTypeError (nor its message) is built
    self.fresh_types = fresh_types
    self.subst: dict[str, Type] = {}
    self.tensor_only: set[str] = set()
    self.counter = itertools.count(1)
    self.fresh_vars: dict[str, Type] = {}
    self.hole_vars: dict[str, TypeVar] = {}
    self.subterms: dict[P.Position, Type] = {}

  def var(self, tensor: bool = False) -> TypeVar:
    v = TypeVar(f"_{next(self.counter)}")
    if tensor:
      self.tensor_only.add(v.name)
    return v

  def walk(self, t: Type) -> Type:
    while isinstance(t, TypeVar) and t.name in self.subst:
      t = self.subst[t.name]
    return t

  def resolve(self, t: Type) -> Type:
    t = self.walk(t)
    if isinstance(t, ListType):
      return ListType(self.resolve(t.elem))
    if isinstance(t, GraphType):
      return GraphType(self.resolve(t.elem))
    if isinstance(t, FunctionType):
      return FunctionType(self.resolve(t.arg), self.resolve(t.result))
    return t

  def occurs(self, name: str, t: Type) -> bool:
    return name in type_variables(self.resolve(t))

  def bind(self, v: TypeVar, t: Type) -> None:
    if isinstance(t, TypeVar):
      if v.name in self.tensor_only:
        self.tensor_only.add(t.name)
      self.subst[v.name] = t
      return
    if self.occurs(v.name, t):
      raise _Clash(lambda: f"{v} occurs in {self.resolve(t)} (an infinite type)")
    if v.name in self.tensor_only and not isinstance(t, TensorType):
      raise _Clash(lambda: f"{self.resolve(t)} is not a tensor type (lists and graphs hold tensors)")
    self.subst[v.name] = t

  def unify(self, a: Type, b: Type) -> None:
    a, b = self.walk(a), self.walk(b)
    if a == b:
      return
    if isinstance(a, TypeVar):
      return self.bind(a, b)
    if isinstance(b, TypeVar):
      return self.bind(b, a)
    if type(a) is not type(b):
      raise _Clash(lambda: f"{self.resolve(a)} vs {self.resolve(b)}")
    if isinstance(a, TensorType):
      raise _Clash(lambda: f"{a} vs {b}")
    if isinstance(a, (ListType, GraphType)):
      return self.unify(a.elem, b.elem)
    self.unify(a.arg, b.arg)
    self.unify(a.result, b.result)

  def instantiate(self, t: Type, mapping: dict[str, TypeVar]) -> Type:
    if isinstance(t, TypeVar):
      if t.name not in mapping:
        mapping[t.name] = self.var()
      return mapping[t.name]
    if isinstance(t, (ListType, GraphType)):
      elem = self.instantiate(t.elem, mapping)
      # A variable that stands for list or graph elements may only become a tensor.
      self.unify(elem, self.var(tensor=True))
      return type(t)(elem)
    if isinstance(t, FunctionType):
      return FunctionType(self.instantiate(t.arg, mapping), self.instantiate(t.result, mapping))
    return t

  def annotation(self, node: P.Program, t: Type, mapping: dict[str, TypeVar]) -> Type:
    """`t` (a hole's, a library function's or the expected type) with its variables instantiated."""
    try:
      return self.instantiate(t, mapping)
    except _Clash as clash:
      if not self.explain:
        raise
      raise HxTypeError(f"type error: the type {t} of {node} cannot hold ({clash.detail})",
                        subterm=str(node), expected=str(t), actual=str(t)) from None

  def require(self, node: P.Program, actual: Type, expected: Type | None, context: _Context) -> None:
    if expected is None:
      return
    try:
      self.unify(expected, actual)
    except _Clash as clash:
      if not self.explain:
        raise
      raise HxTypeError(
          f"type error: {node} has type {self.resolve(actual)}, but {_where(context)} requires "
          f"{self.resolve(expected)} ({clash.detail})",
          subterm=str(node), expected=str(self.resolve(expected)),
          actual=str(self.resolve(actual))) from None

  def infer(self, node: P.Program, pos: P.Position, expected: Type | None, context: _Context) -> Type:
    t = self.synth(node, pos, expected, context)
    self.require(node, t, expected, context)
    self.subterms[pos] = t
    return t

  def synth(self, node: P.Program, pos: P.Position, expected: Type | None, context: _Context) -> Type:
    """The type of `node`; for combinators, `expected` is checked first so errors point at `node`."""
    if isinstance(node, P.Fresh):
      if node.name not in self.fresh_vars:
        known = self.fresh_types.get(node.name)
        self.fresh_vars[node.name] = self.var() if known is None else self.annotation(node, known, {})
      return self.fresh_vars[node.name]
    if isinstance(node, P.Lib):
      if node.name not in self.library_types:
        raise HxTypeError(f"unknown library function lib.{node.name} (the library has "
                          f"{len(self.library_types)} functions)", subterm=str(node))
      return self.annotation(node, self.library_types[node.name], {})
    if isinstance(node, P.Hole):
      return self.annotation(node, node.type, self.hole_vars)
    if isinstance(node, P.Zeros):
      return TensorType("real", (node.n,))
    inside = (node, "")
    if isinstance(node, P.Compose):
      a, b, c = self.var(), self.var(), self.var()
      whole = FunctionType(a, c)
      self.require(node, whole, expected, context)
      self.infer(node.g, pos + (1,), FunctionType(a, b), inside)
      self.infer(node.f, pos + (0,), FunctionType(b, c), inside)
      return whole
    if isinstance(node, (P.Repeat, P.Fix)):
      a = self.var()
      whole = FunctionType(a, a)
      self.require(node, whole, expected, context)
      why = "a function from a type to itself" + (
          ", iterated to a fixed point" if isinstance(node, P.Fix) else "")
      self.infer(node.fn, pos + (0,), whole, (node, f" ({why})"))
      return whole
    adt = ListType if node.adt == "l" else GraphType
    a = self.var(tensor=True)
    if isinstance(node, P.Fold):
      b = self.var()
      whole = FunctionType(adt(a), b)
      self.require(node, whole, expected, context)
      self.infer(node.fn, pos + (0,), FunctionType(b, FunctionType(a, b)),
                 (node, " (a step from state and element to state)"))
      self.infer(node.init, pos + (1,), b, (node, " (the start value, of the step's state type)"))
      return whole
    b = self.var(tensor=True)
    whole = FunctionType(adt(a), adt(b))
    self.require(node, whole, expected, context)
    arg = a if isinstance(node, P.Map) else ListType(a)
    self.infer(node.fn, pos + (0,), FunctionType(arg, b), inside)
    return whole


def _solve(program: P.Program, solver: _Solver, expected: Type | None) -> tuple[_Solver, Type]:
  """Runs `solver` on `program` against `expected`: (the solver, the program's type, unresolved)."""
  if expected is not None:
    # The expected type's variables share one namespace with the holes' (not with the solver's own).
    expected = solver.annotation(program, expected, solver.hole_vars)
  return solver, solver.infer(program, (), expected, "the expected type" if expected is not None else "")


def infer(program: P.Program, library_types: Mapping[str, Type] | None = None,
          expected: Type | None = None, fresh_types: Mapping[str, Type] | None = None) -> Typing:
  """Infers the type of `program` (holes allowed) and of each of its fresh functions.

  Args:
    program: a (partial) program.
    library_types: the type of each library function, by name without the 'lib.' prefix.
    expected: the type the program must have (e.g. the task's type), or None. Its type variables
      are the same variables as those of the same name in the program's holes.
    fresh_types: optional types of fresh functions, by name (a synthesizer that has chosen them, e.g.
      for a subterm moved from one program to another); a fresh function not named here gets a type
      variable. Type variables in these types are instantiated per function.

  Returns:
    A `Typing` whose types have all solved variables substituted.

  Raises:
    HxTypeError: naming the subterm and the two types that clash, or an unknown library function.
  """
  solver, t = _solve(program, _Solver(library_types or {}, fresh_types or {}), expected)
  return Typing(
      type=solver.resolve(t),
      fresh={name: solver.resolve(v) for name, v in solver.fresh_vars.items()},
      subterms={pos: solver.resolve(s) for pos, s in sorted(solver.subterms.items())})


def typable(program: P.Program, library_types: Mapping[str, Type] | None = None,
            expected: Type | None = None) -> bool:
  """Whether `infer(program, library_types, expected)` would succeed; cheaper when it would not (no error
  message is built), for a search that drops ill-typed programs by the hundred thousand."""
  try:
    _solve(program, _Solver(library_types or {}, {}, explain=False), expected)
  except (_Clash, HxTypeError):
    return False
  return True
