"""Parses program text into the AST of `hx.lang.program`.

Accepted notations (the paper's, so every program printed in its tables parses):

    nn_a   lib.nn_cs1_2   zeros(1)   ?<Tensor<real>[1]>
    compose(f, g)     f ∘ g     f . g          infix composition is right-associative; f ∘ g ∘ h is
                                               compose(f, compose(g, h))
    map_l(e)   map_l e   map_g(e)
    fold_l(e, z)   fold_l e z   fold_l(e) z
    conv_l(e)   conv_g e   conv_g^10(e)   conv_g^{10} e      c^k e is repeat(k, c e)
    repeat(k, e)
    fix(e)   fix e   conv_g^*(e)   conv_g^{*} e                c^* e is fix(c e): e applied until its
                                                               value stops changing

Combinators take their arguments either all inside one pair of parentheses, separated by commas, or
by juxtaposition (each argument then a name, a parenthesised program, or a combinator applied with
parentheses); the two may be mixed as in `fold_l(e) z`. Application binds tighter than composition.
"""

from __future__ import annotations

import re

from hx.lang import program as P
from hx.lang.errors import ParseError
from hx.lang.lexer import Token, TokenStream
from hx.lang.types import parse_type_from

__all__ = ["parse", "COMBINATOR_ARGUMENTS"]

# name -> argument kinds ('p' a program, 'i' a positive integer)
COMBINATOR_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "compose": ("p", "p"),
    "map_l": ("p",), "map_g": ("p",),
    "fold_l": ("p", "p"), "fold_g": ("p", "p"),
    "conv_l": ("p",), "conv_g": ("p",),
    "repeat": ("i", "p"),
    "fix": ("p",),
    "zeros": ("i",),
}

_FRESH = re.compile(r"nn_[A-Za-z0-9_]+\Z")


def parse(text: str) -> P.Program:
  """Parses `text` into a program; raises `hx.ParseError` (line, column, expected) if it is not one,
  among others if it nests deeper than `hx.lang.lexer.MAX_DEPTH` or writes an integer above `MAX_INT`."""
  stream = TokenStream(text)
  if stream.peek().kind == "eof":
    raise stream.error("a program")
  prog = _expr(stream)
  if stream.peek().kind != "eof":
    raise stream.error("end of program, ',' or a composition operator (∘ or .)")
  return prog


def _is_compose_op(stream: TokenStream) -> bool:
  return stream.at("∘") or stream.at(".")


def _expr(stream: TokenStream) -> P.Program:
  left = _primary(stream, juxtaposed=False)
  if _is_compose_op(stream):
    stream.next()
    # The right operand is nested one level deeper (f ∘ g ∘ h is compose(f, compose(g, h))).
    with stream.nested():
      return P.Compose(left, _expr(stream))
  return left


def _build(name: str, args: list) -> P.Program:
  if name == "compose":
    return P.Compose(*args)
  if name == "repeat":
    return P.Repeat(*args)
  if name == "zeros":
    return P.Zeros(*args)
  if name == "fix":
    return P.Fix(*args)
  kind, adt = name.split("_")
  cls = {"map": P.Map, "fold": P.Fold, "conv": P.Conv}[kind]
  return cls(adt, *args)


def _power(stream: TokenStream) -> int | str | None:
  """Parses an optional `^k`, `^{k}`, `^*` or `^{*}` after a combinator name ("*" for the last two)."""
  if not stream.at("^"):
    return None
  stream.next()
  braced = stream.at("{")
  if braced:
    stream.next()
  if stream.at("*"):
    stream.next()
    k: int | str = "*"
  else:
    k = stream.expect_int("a repeat count or '*'")
  if braced:
    stream.expect("}")
  return k


def _argument(stream: TokenStream, kind: str) -> object:
  if kind == "i":
    return stream.expect_int("a positive integer")
  return _primary(stream, juxtaposed=True)


def _call(stream: TokenStream, name_tok: Token, juxtaposed: bool) -> P.Program:
  """A combinator application; `juxtaposed` means it is itself an argument, so it needs parentheses."""
  power = _power(stream)
  if power is None:
    return _applied(stream, name_tok, juxtaposed)
  # c^k e prints as repeat(k, c e) and c^* e as fix(c e), one level deeper than written: counted here so
  # that the printed form of every program this accepts parses too.
  with stream.nested():
    node = _applied(stream, name_tok, juxtaposed)
  return P.Fix(node) if power == "*" else P.Repeat(power, node)


def _applied(stream: TokenStream, name_tok: Token, juxtaposed: bool) -> P.Program:
  """The combinator `name_tok` applied to its arguments, which follow at the cursor."""
  name = name_tok.text
  kinds = COMBINATOR_ARGUMENTS[name]
  args: list = []
  if stream.at("("):
    stream.next()
    while True:
      kind = kinds[len(args)]
      args.append(stream.expect_int("a positive integer") if kind == "i" else _expr(stream))
      if len(args) == len(kinds) or not stream.at(","):
        break
      stream.next()
    if not stream.at(")"):
      if len(args) == len(kinds):
        raise stream.error(f"')' ({name} takes {len(kinds)} argument{'s' * (len(kinds) > 1)})")
      raise stream.error("',' or ')'")
    close = stream.next()
    if len(args) < len(kinds) and not _starts_argument(stream, kinds[len(args)]):
      raise stream.error(f"',' and argument {len(args) + 1} of {name} ({name} takes {len(kinds)} arguments)",
                         close)
  if len(args) < len(kinds):
    if juxtaposed and not args:
      raise stream.error(f"'(' after {name} (an argument combinator needs its arguments in parentheses)")
    while len(args) < len(kinds):
      if not _starts_argument(stream, kinds[len(args)]):
        raise stream.error(f"argument {len(args) + 1} of {name}")
      args.append(_argument(stream, kinds[len(args)]))
  try:
    return _build(name, args)
  except ValueError as e:
    raise ParseError(stream.text, name_tok.offset, f"valid arguments to {name}", str(e)) from None


def _starts_argument(stream: TokenStream, kind: str) -> bool:
  tok = stream.peek()
  if kind == "i":
    return tok.kind == "int"
  return tok.kind == "ident" or (tok.kind == "punct" and tok.text in "(?")


def _primary(stream: TokenStream, juxtaposed: bool) -> P.Program:
  # Every recursion of the parser passes through here, so one level per call bounds its depth.
  with stream.nested():
    return _primary_at_depth(stream, juxtaposed)


def _primary_at_depth(stream: TokenStream, juxtaposed: bool) -> P.Program:
  tok = stream.peek()
  if tok.kind == "punct" and tok.text == "(":
    stream.next()
    inner = _expr(stream)
    stream.expect(")")
    return inner
  if tok.kind == "punct" and tok.text == "?":
    stream.next()
    stream.expect("<")
    t = parse_type_from(stream)
    stream.expect(">")
    return P.Hole(t)
  if tok.kind != "ident":
    raise stream.error("a program (a name, a combinator, zeros(n), ?<type> or '(')")
  stream.next()
  if tok.text == "lib":
    stream.expect(".")
    name = stream.peek()
    if name.kind != "ident":
      raise stream.error("a library function name after 'lib.'")
    stream.next()
    return P.Lib(name.text)
  if tok.text in COMBINATOR_ARGUMENTS:
    return _call(stream, tok, juxtaposed)
  if _FRESH.match(tok.text):
    return P.Fresh(tok.text)
  raise ParseError(stream.text, tok.offset,
                   "a combinator (" + ", ".join(COMBINATOR_ARGUMENTS)
                   + "), a fresh function nn_NAME or lib.NAME",
                   f"unknown name {tok.text!r}")
