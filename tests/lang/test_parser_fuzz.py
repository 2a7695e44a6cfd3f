"""Any text given to the program and type parsers gives a value or a `ParseError` with a line and
column inside the text: never another exception, and never a RecursionError, however deep the text
nests."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.lang import ParseError, infer, parse, parse_type
from hx.lang import program as P
from hx.lang.lexer import MAX_DEPTH, MAX_INT
from hx.lang.types import Type
from tests.lang import strategies

# The grammar's own tokens, so that random sequences of them reach deep into both parsers rather than
# stopping at the first character as most random text does.
_TOKENS = [
    "(", ")", "[", "]", "<", ">", ",", ".", "^", "{", "}", "?", "∘", "*", "->",
    "compose", "map_l", "map_g", "fold_l", "fold_g", "conv_l", "conv_g", "repeat", "fix", "zeros",
    "nn_a", "nn_b", "lib", "lib.nn_x", "nn_", "foo",
    "Tensor", "List", "Graph", "real", "bool", "int", "'a", "'b", "'",
    "0", "1", "2", "10", "007", "2147483648", "9" * 5000,
    " ", "\n", "\t", "$", "é", "\u2028",
]
_SPACES = st.sampled_from(["", " ", "\n"])

token_texts = st.lists(st.tuples(st.sampled_from(_TOKENS), _SPACES), max_size=40).map(
    lambda parts: "".join(tok + space for tok, space in parts))


def _mutations(text_strategy):
  """Texts of the strategy with one character deleted, inserted or replaced: near-misses of valid text."""
  @st.composite
  def mutate(draw):
    text = draw(text_strategy)
    i = draw(st.integers(0, len(text)))
    kind = draw(st.sampled_from(["delete", "insert", "replace"]))
    char = draw(st.sampled_from([tok for tok in _TOKENS if len(tok) <= 2]) | st.characters())
    if kind == "delete":
      return text[:i] + text[i + 1:]
    if kind == "insert":
      return text[:i] + char + text[i:]
    return text[:i] + char + text[i + 1:]
  return mutate()


program_texts = st.one_of(
    st.text(max_size=60), token_texts, strategies.programs.map(str),
    _mutations(strategies.programs.map(str)))
type_texts = st.one_of(
    st.text(max_size=60), token_texts, strategies.types.map(str), _mutations(strategies.types.map(str)))


def _assert_located(err: ParseError, text: str) -> None:
  """The error's line and column point at a character of `text` (or just past a line's end)."""
  lines = text.split("\n")
  assert 1 <= err.line <= len(lines), (err.line, text)
  assert 1 <= err.column <= len(lines[err.line - 1]) + 1, (err.column, text)
  assert str(err).startswith(f"line {err.line}, column {err.column}: expected ")
  # One message line, then the excerpt and its caret: never the whole of a long input twice.
  assert len(str(err).splitlines()) == 3
  assert all(len(line) < 200 for line in str(err).splitlines()[1:])


@settings(max_examples=300)
@given(program_texts)
def test_any_text_parses_to_a_program_that_prints_back_or_gives_a_located_parse_error(text):
  try:
    p = parse(text)
  except ParseError as err:
    _assert_located(err, text)
  else:
    assert parse(str(p)) == p


@settings(max_examples=300)
@given(type_texts)
def test_any_text_parses_to_a_type_that_prints_back_or_gives_a_located_parse_error(text):
  try:
    t = parse_type(text)
  except ParseError as err:
    _assert_located(err, text)
  else:
    assert parse_type(str(t)) == t


# Each nests its innermost text n levels deep in one of the parsers' recursive constructs.
_PROGRAM_NESTINGS = {
    "parentheses": lambda n: "(" * n + "nn_a" + ")" * n,
    "combinator arguments": lambda n: "map_l(" * n + "nn_a" + ")" * n,
    "juxtaposed arguments": lambda n: "fold_l(nn_a) " * n + "zeros(1)",
    "compositions": lambda n: "nn_a ∘ " * n + "nn_a",
    "powers": lambda n: "conv_g^2(" * n + "nn_a" + ")" * n,
    "a hole's type": lambda n: "?<" + "(" * n + "Tensor<real>[1]" + ")" * n + ">",
}
_TYPE_NESTINGS = {
    "parentheses": lambda n: "(" * n + "Tensor<real>[1]" + ")" * n,
    "arrows": lambda n: "Tensor<real>[1] -> " * n + "Tensor<real>[1]",
    "list elements": lambda n: "List<" * n + "'a" + ">" * n,
}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("construct", list(_PROGRAM_NESTINGS))
def test_programs_nested_too_deep_are_one_parse_error_not_a_recursion_error(construct, depth):
  text = _PROGRAM_NESTINGS[construct](depth)
  with pytest.raises(ParseError, match=f"nested deeper than {MAX_DEPTH}") as info:
    parse(text)
  _assert_located(info.value, text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("construct", list(_TYPE_NESTINGS))
def test_types_nested_too_deep_are_one_parse_error_not_a_recursion_error(construct, depth):
  text = _TYPE_NESTINGS[construct](depth)
  with pytest.raises(ParseError, match=f"nested deeper than {MAX_DEPTH}") as info:
    parse_type(text)
  _assert_located(info.value, text)


def _deepest(parse_fn, make):
  """The value of the deepest nesting of `make` that parses, with its depth."""
  for n in range(MAX_DEPTH, 0, -1):
    try:
      return n, parse_fn(make(n))
    except ParseError:
      continue
  raise AssertionError("no depth parses")


@pytest.mark.parametrize("construct", list(_PROGRAM_NESTINGS))
def test_the_deepest_program_accepted_can_be_printed_compared_hashed_and_typed(construct):
  # The bound exists so that the walks over a parsed program stay inside Python's recursion limit.
  n, p = _deepest(parse, _PROGRAM_NESTINGS[construct])
  assert n >= MAX_DEPTH // 4
  assert parse(str(p)) == p
  assert hash(p) == hash(parse(str(p)))
  assert P.size(P.canonical(p)) == P.size(p)
  try:
    infer(p)
  except TypeError:  # HxTypeError: some nestings are ill-typed; what matters is no RecursionError
    pass


# (Lists do not nest: List<List<...>> is refused whatever its depth.)
@pytest.mark.parametrize("construct", ["parentheses", "arrows"])
def test_the_deepest_type_accepted_prints_back(construct):
  n, t = _deepest(parse_type, _TYPE_NESTINGS[construct])
  assert n >= MAX_DEPTH // 2
  assert isinstance(parse_type(str(t)), Type.__args__)
  assert parse_type(str(t)) == t


@pytest.mark.parametrize("text, column", [
    ("zeros(2147483648)", 7),
    ("zeros(" + "9" * 5000 + ")", 7),  # past the digits int() converts at all
    ("repeat(" + "1" * 30 + ", nn_a)", 8),
    ("conv_g^" + "9" * 5000 + " nn_a", 8),
    ("?<Tensor<real>[" + "9" * 5000 + "]>", 16),
])
def test_integers_past_int32_are_a_parse_error(text, column):
  with pytest.raises(ParseError, match=f"at most {MAX_INT}") as info:
    parse(text)
  assert info.value.column == column
  _assert_located(info.value, text)


def test_the_largest_integer_and_leading_zeros_parse():
  assert parse(f"zeros({MAX_INT})") == P.Zeros(MAX_INT)
  assert parse("zeros(0007)") == P.Zeros(7)
  assert parse_type("Tensor<real>[" + "0" * 5000 + "3]") == parse_type("Tensor<real>[3]")


def test_a_long_line_is_shown_as_an_excerpt_around_the_column():
  text = "nn_a ∘ " * 50 + "@" + " ∘ nn_a" * 50
  with pytest.raises(ParseError) as info:
    parse(text)
  _, excerpt, caret = str(info.value).splitlines()
  assert excerpt.startswith("  ...") and excerpt.endswith("...")
  assert excerpt[caret.index("^")] == "@"


@pytest.mark.parametrize("fn", [parse, parse_type])
@pytest.mark.parametrize("value", [None, b"nn_a", 3])
def test_text_that_is_not_a_str_is_one_type_error(fn, value):
  with pytest.raises(TypeError, match=f"must be a str, got {type(value).__name__}"):
    fn(value)
