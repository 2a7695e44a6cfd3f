"""The language's errors: `ParseError` for text that is not a program or type, `HxTypeError` for
programs that cannot be typed."""

from __future__ import annotations

__all__ = ["ParseError", "HxTypeError"]


class ParseError(ValueError):
  """Text that does not parse.

  Attributes:
    line: 1-based line of the offending character.
    column: 1-based column of the offending character.
    expected: what the parser expected there (e.g. "')'", "a type").
    found: what it found instead.
  """

  def __init__(self, text: str, offset: int, expected: str, found: str):
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
      line_end = len(text)
    column = offset - line_start + 1
    source_line = text[line_start:line_end]
    caret = " " * (column - 1) + "^"
    super().__init__(
        f"line {line}, column {column}: expected {expected}, found {found}\n"
        f"  {source_line}\n  {caret}")
    self.line = line
    self.column = column
    self.expected = expected
    self.found = found
    self.offset = offset


class HxTypeError(TypeError):
  """A program that cannot be typed.

  Attributes:
    subterm: the printed subterm where the clash was found.
    expected: the type the context required (printed).
    actual: the type the subterm has (printed).
  """

  def __init__(self, message: str, subterm: str = "", expected: str = "", actual: str = ""):
    super().__init__(message)
    self.subterm = subterm
    self.expected = expected
    self.actual = actual
