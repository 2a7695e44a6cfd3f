"""Splits program and type text into tokens, each with its offset for error messages."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Iterator

from hx.lang.errors import ParseError

__all__ = ["Token", "tokenize", "TokenStream", "MAX_DEPTH", "MAX_INT"]

# The deepest nesting the parsers accept: each parenthesis, combinator argument, composition or arrow
# operand and hole is one level. The parsers and every walk over the trees they build (printing,
# equality, hashing, inference) recurse once or a few times per level, so an unbounded depth would end
# in a RecursionError; 100 is far beyond any program the paper or a search writes (under 15) and keeps
# those walks well inside Python's default limit of 1000 frames.
MAX_DEPTH = 100

# The largest integer literal (a repeat count, a zeros size, a tensor dimension): int32's largest, the
# type XLA gives shapes and loop counters. It also keeps `int()` away from Python's limit on the digits
# it converts (4300), whose ValueError is no ParseError.
MAX_INT = 2**31 - 1

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<arrow>->)
  | (?P<tyvar>'[A-Za-z_][A-Za-z0-9_]*)
  | (?P<int>[0-9]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()\[\]<>,.^{}?∘*])
""", re.VERBOSE)


@dataclasses.dataclass(frozen=True)
class Token:
  """One token: its kind ('arrow', 'tyvar', 'int', 'ident', 'punct', 'eof'), its text and offset."""
  kind: str
  text: str
  offset: int

  def describe(self) -> str:
    """The token as an error message shows it; a long one (a number of 5,000 digits) cut to its start."""
    if self.kind == "eof":
      return "end of input"
    if len(self.text) > _DESCRIBED:
      return f"{self.text[:_DESCRIBED]!r}... ({len(self.text)} characters)"
    return repr(self.text)


# The most characters of one token an error message shows.
_DESCRIBED = 20


def tokenize(text: str) -> list[Token]:
  """Tokens of `text`, ending with an 'eof' token. Raises ParseError on a character no token starts with."""
  return list(_scan(text))


def _scan(text: str) -> Iterator[Token]:
  """The tokens of `tokenize`, one at a time."""
  pos = 0
  while pos < len(text):
    m = _TOKEN.match(text, pos)
    if m is None:
      raise ParseError(text, pos, "a name, number or one of ( ) [ ] < > , . ^ { } * ? ∘ ->",
                       repr(text[pos]))
    if m.lastgroup != "space":
      yield Token(m.lastgroup, m.group(), pos)
    pos = m.end()
  yield Token("eof", "", len(text))


class TokenStream:
  """A cursor over the tokens of one text, with helpers that raise ParseError at the right place.

  Tokens are read as the parser reaches them, so that an error near the start of a long text (nesting
  past `MAX_DEPTH` in 100,000 parentheses) is raised without reading the rest.
  """

  def __init__(self, text: str):
    if not isinstance(text, str):
      raise TypeError(f"program and type text must be a str, got {type(text).__name__}")
    self.text = text
    self.tokens: list[Token] = []
    self._unread = _scan(text)
    self.pos = 0
    self.depth = 0

  def peek(self, ahead: int = 0) -> Token:
    """The token `ahead` past the cursor ('eof' past the end)."""
    want = self.pos + ahead
    while len(self.tokens) <= want and (not self.tokens or self.tokens[-1].kind != "eof"):
      self.tokens.append(next(self._unread))
    return self.tokens[min(want, len(self.tokens) - 1)]

  @contextlib.contextmanager
  def nested(self) -> Iterator[None]:
    """One level deeper for the parse inside the `with`; ParseError at the cursor past `MAX_DEPTH`."""
    if self.depth >= MAX_DEPTH:
      raise self.error(f"at most {MAX_DEPTH} levels of nesting", found=f"text nested deeper than {MAX_DEPTH}")
    self.depth += 1
    try:
      yield
    finally:
      self.depth -= 1

  def next(self) -> Token:
    tok = self.peek()
    self.pos += 1
    return tok

  def at(self, text: str, ahead: int = 0) -> bool:
    tok = self.peek(ahead)
    return tok.kind != "eof" and tok.text == text

  def error(self, expected: str, tok: Token | None = None, found: str | None = None) -> ParseError:
    """A ParseError at `tok` (the cursor's token by default); `found` defaults to the token itself."""
    tok = tok or self.peek()
    return ParseError(self.text, tok.offset, expected, tok.describe() if found is None else found)

  def expect(self, text: str) -> Token:
    if not self.at(text):
      raise self.error(repr(text))
    return self.next()

  def expect_int(self, what: str = "an integer", minimum: int = 1) -> int:
    tok = self.peek()
    if tok.kind != "int":
      raise self.error(what)
    # Compared as digits first: int() refuses texts of over 4300 digits with a plain ValueError.
    digits = tok.text.lstrip("0") or "0"
    if len(digits) > len(str(MAX_INT)) or int(digits) > MAX_INT:
      raise self.error(f"{what} of at most {MAX_INT}")
    value = int(digits)
    if value < minimum:
      raise self.error(f"{what} of at least {minimum}")
    self.next()
    return value

  def expect_end(self) -> None:
    if self.peek().kind != "eof":
      raise self.error("end of input")
