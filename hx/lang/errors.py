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
    source_line, caret_at = _excerpt(text[line_start:line_end], column - 1)
    caret = " " * caret_at + "^"
    super().__init__(
        f"line {line}, column {column}: expected {expected}, found {found}\n"
        f"  {source_line}\n  {caret}")
    self.line = line
    self.column = column
    self.expected = expected
    self.found = found
    self.offset = offset


# The widest excerpt of the offending line a message shows: a line of 100,000 parentheses would
# otherwise print twice (the line, then the caret's padding).
_EXCERPT = 80


def _excerpt(line: str, index: int) -> tuple[str, int]:
  """At most `_EXCERPT` characters of `line` around `index` ('...' marks a cut), and where `index` is
  in them. Characters that do not print (a tab, a form feed, a Unicode line separator, which the lexer
  takes for space) show as U+FFFD, one column each, so that the excerpt stays one line above its caret."""
  if line.endswith("\r"):  # a CRLF file's line
    line = line[:-1]
  line = "".join(c if c.isprintable() else "\ufffd" for c in line)
  if len(line) <= _EXCERPT:
    return line, index
  start = max(0, min(index - _EXCERPT // 2, len(line) - _EXCERPT))
  end = start + _EXCERPT
  head = "..." if start > 0 else ""
  tail = "..." if end < len(line) else ""
  return head + line[start:end] + tail, index - start + len(head)


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
