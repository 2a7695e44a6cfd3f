"""HOUDINI types: tensors over `bool`/`real`, lists and graphs of tensors, functions, type variables.

Text forms (round-trip exact through `parse_type` and `str`):

    Tensor<real>[1][28][28]      a tensor; shapes exclude the batch axis, every dimension >= 1
    List<Tensor<bool>[1]>        a list of tensors
    Graph<Tensor<real>[2]>       a graph whose nodes hold tensors
    A -> B -> C                  functions; '->' associates to the right: A -> (B -> C)
    'a                           a type variable (inference only)

All types are frozen, hashable dataclasses.
"""

from __future__ import annotations

import dataclasses
from typing import Union

from hx.lang.lexer import TokenStream

__all__ = [
    "ATOMS", "TensorType", "ListType", "GraphType", "FunctionType", "TypeVar", "Type",
    "parse_type", "is_tensor", "is_image", "type_variables", "substitute", "function_parts",
]

ATOMS = ("bool", "real")


@dataclasses.dataclass(frozen=True)
class TensorType:
  """`Tensor<atom>[m1]...[mk]`: a tensor of shape `shape` (no batch axis) over `atom`."""
  atom: str
  shape: tuple[int, ...]

  def __post_init__(self):
    if self.atom not in ATOMS:
      raise ValueError(f"tensor atom must be one of {ATOMS}, got {self.atom!r}")
    if not self.shape or any(not isinstance(m, int) or m < 1 for m in self.shape):
      raise ValueError(f"tensor shape must be one or more dimensions >= 1, got {self.shape!r}")

  def __str__(self) -> str:
    return f"Tensor<{self.atom}>" + "".join(f"[{m}]" for m in self.shape)


@dataclasses.dataclass(frozen=True)
class ListType:
  """`List<TT>`: a list of values of tensor type `elem`."""
  elem: "Type"

  def __str__(self) -> str:
    return f"List<{self.elem}>"


@dataclasses.dataclass(frozen=True)
class GraphType:
  """`Graph<TT>`: a graph whose nodes hold values of tensor type `elem`."""
  elem: "Type"

  def __str__(self) -> str:
    return f"Graph<{self.elem}>"


@dataclasses.dataclass(frozen=True)
class FunctionType:
  """`arg -> result`."""
  arg: "Type"
  result: "Type"

  def __str__(self) -> str:
    left = f"({self.arg})" if isinstance(self.arg, FunctionType) else str(self.arg)
    return f"{left} -> {self.result}"


@dataclasses.dataclass(frozen=True)
class TypeVar:
  """`'name`: an unknown type, solved by inference."""
  name: str

  def __str__(self) -> str:
    return f"'{self.name}"


Type = Union[TensorType, ListType, GraphType, FunctionType, TypeVar]


def is_tensor(t: Type) -> bool:
  return isinstance(t, TensorType)


def is_image(t: Type) -> bool:
  """True for a tensor of rank 3 (channels, height, width), the input of a CNN."""
  return isinstance(t, TensorType) and len(t.shape) == 3


def function_parts(t: Type) -> tuple[list[Type], Type]:
  """Splits `A1 -> ... -> An -> R` (R not a function) into ([A1, ..., An], R)."""
  args = []
  while isinstance(t, FunctionType):
    args.append(t.arg)
    t = t.result
  return args, t


def type_variables(t: Type) -> set[str]:
  """Names of the type variables in `t`."""
  if isinstance(t, TypeVar):
    return {t.name}
  if isinstance(t, (ListType, GraphType)):
    return type_variables(t.elem)
  if isinstance(t, FunctionType):
    return type_variables(t.arg) | type_variables(t.result)
  return set()


def substitute(t: Type, mapping: dict[str, Type]) -> Type:
  """`t` with each variable named in `mapping` replaced (once, not recursively)."""
  if isinstance(t, TypeVar):
    return mapping.get(t.name, t)
  if isinstance(t, ListType):
    return ListType(substitute(t.elem, mapping))
  if isinstance(t, GraphType):
    return GraphType(substitute(t.elem, mapping))
  if isinstance(t, FunctionType):
    return FunctionType(substitute(t.arg, mapping), substitute(t.result, mapping))
  return t


def parse_type(text: str) -> Type:
  """Parses the text form of a type; raises `hx.ParseError` with line and column on bad syntax (also
  past `hx.lang.lexer.MAX_DEPTH` levels of nesting)."""
  stream = TokenStream(text)
  t = parse_type_from(stream)
  stream.expect_end()
  return t


def parse_type_from(stream: TokenStream) -> Type:
  """Parses one type at the stream's cursor (used by the program parser for holes)."""
  left = _parse_simple(stream)
  if stream.peek().kind == "arrow":
    stream.next()
    # The result is nested one level deeper (A -> B -> C is A -> (B -> C)); see lexer.MAX_DEPTH.
    with stream.nested():
      return FunctionType(left, parse_type_from(stream))
  return left


def _parse_elem(stream: TokenStream, adt: str) -> Type:
  stream.expect("<")
  start = stream.peek()
  elem = parse_type_from(stream)
  if not isinstance(elem, (TensorType, TypeVar)):
    raise stream.error(f"a tensor type inside {adt}<...>", start)
  stream.expect(">")
  return elem


def _parse_simple(stream: TokenStream) -> Type:
  # Every recursion of the type parser passes through here: one level per call bounds its depth.
  with stream.nested():
    return _parse_simple_at_depth(stream)


def _parse_simple_at_depth(stream: TokenStream) -> Type:
  tok = stream.peek()
  if tok.kind == "tyvar":
    stream.next()
    return TypeVar(tok.text[1:])
  if tok.kind == "punct" and tok.text == "(":
    stream.next()
    t = parse_type_from(stream)
    stream.expect(")")
    return t
  if tok.kind == "ident" and tok.text == "Tensor":
    stream.next()
    stream.expect("<")
    atom = stream.peek()
    if atom.kind != "ident" or atom.text not in ATOMS:
      raise stream.error("'bool' or 'real'")
    stream.next()
    stream.expect(">")
    shape = []
    if not stream.at("["):
      raise stream.error("'[' (a tensor needs at least one dimension)")
    while stream.at("["):
      stream.next()
      shape.append(stream.expect_int("a tensor dimension"))
      stream.expect("]")
    return TensorType(atom.text, tuple(shape))
  if tok.kind == "ident" and tok.text == "List":
    stream.next()
    return ListType(_parse_elem(stream, "List"))
  if tok.kind == "ident" and tok.text == "Graph":
    stream.next()
    return GraphType(_parse_elem(stream, "Graph"))
  raise stream.error("a type (Tensor<...>[...], List<...>, Graph<...>, 'var or '(')")
