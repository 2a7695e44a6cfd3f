"""Splits program and type text into tokens, each with its offset for error messages."""

from __future__ import annotations

import dataclasses
import re

from hx.lang.errors import ParseError

__all__ = ["Token", "tokenize", "TokenStream"]

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
    return "end of input" if self.kind == "eof" else repr(self.text)


def tokenize(text: str) -> list[Token]:
  """Tokens of `text`, ending with an 'eof' token. Raises ParseError on a character no token starts with."""
  tokens = []
  pos = 0
  while pos < len(text):
    m = _TOKEN.match(text, pos)
    if m is None:
      raise ParseError(text, pos, "a name, number or one of ( ) [ ] < > , . ^ { } * ? ∘ ->",
                       repr(text[pos]))
    if m.lastgroup != "space":
      tokens.append(Token(m.lastgroup, m.group(), pos))
    pos = m.end()
  tokens.append(Token("eof", "", len(text)))
  return tokens


class TokenStream:
  """A cursor over the tokens of one text, with helpers that raise ParseError at the right place."""

  def __init__(self, text: str):
    self.text = text
    self.tokens = tokenize(text)
    self.pos = 0

  def peek(self, ahead: int = 0) -> Token:
    return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

  def next(self) -> Token:
    tok = self.peek()
    self.pos += 1
    return tok

  def at(self, text: str, ahead: int = 0) -> bool:
    tok = self.peek(ahead)
    return tok.kind != "eof" and tok.text == text

  def error(self, expected: str, tok: Token | None = None) -> ParseError:
    tok = tok or self.peek()
    return ParseError(self.text, tok.offset, expected, tok.describe())

  def expect(self, text: str) -> Token:
    if not self.at(text):
      raise self.error(repr(text))
    return self.next()

  def expect_int(self, what: str = "an integer", minimum: int = 1) -> int:
    tok = self.peek()
    if tok.kind != "int":
      raise self.error(what)
    value = int(tok.text)
    if value < minimum:
      raise self.error(f"{what} of at least {minimum}")
    self.next()
    return value

  def expect_end(self) -> None:
    if self.peek().kind != "eof":
      raise self.error("end of input")
