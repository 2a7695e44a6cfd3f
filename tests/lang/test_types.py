import pytest
from hypothesis import given

from hx.lang import ParseError, parse_type
from hx.lang.types import FunctionType, GraphType, ListType, TensorType, TypeVar, function_parts
from tests.lang import strategies

REAL1 = TensorType("real", (1,))


@pytest.mark.parametrize("text, expected", [
    ("Tensor<real>[1][28][28]", TensorType("real", (1, 28, 28))),
    ("Tensor<bool>[1]", TensorType("bool", (1,))),
    ("List<Tensor<real>[1]>", ListType(REAL1)),
    ("Graph<'a>", GraphType(TypeVar("a"))),
    ("Tensor<real>[1] -> Tensor<real>[1] -> Tensor<real>[1]",
     FunctionType(REAL1, FunctionType(REAL1, REAL1))),
    ("(Tensor<real>[1] -> Tensor<real>[1]) -> Tensor<real>[1]",
     FunctionType(FunctionType(REAL1, REAL1), REAL1)),
])
def test_parse_type_gives_exact_values(text, expected):
  assert parse_type(text) == expected
  assert str(expected) == text


def test_arrow_is_right_associative_and_printing_keeps_needed_parentheses():
  t = parse_type("(Tensor<real>[1] -> Tensor<real>[1]) -> Tensor<real>[1] -> Tensor<real>[1]")
  assert str(t) == "(Tensor<real>[1] -> Tensor<real>[1]) -> Tensor<real>[1] -> Tensor<real>[1]"
  args, result = function_parts(t)
  assert len(args) == 2 and result == REAL1


def test_types_are_hashable_values():
  a = parse_type("List<Tensor<real>[1]> -> Tensor<real>[1]")
  b = parse_type("List<Tensor<real>[1]>   ->Tensor<real>[1]")
  assert a == b and hash(a) == hash(b)
  assert len({a, b}) == 1
  with pytest.raises(AttributeError):
    a.arg = REAL1


@given(strategies.types)
def test_round_trip_random_types(t):
  assert parse_type(str(t)) == t


@pytest.mark.parametrize("text, line, column, expected", [
    ("Tensor<int>[1]", 1, 8, "'bool' or 'real'"),
    ("Tensor<real>", 1, 13, "'['"),
    ("Tensor<real>[0]", 1, 14, "tensor dimension"),
    ("Tensor<real>[2", 1, 15, "']'"),
    ("List<List<Tensor<real>[1]>>", 1, 6, "a tensor type inside List"),
    ("Tensor<real>[1] ->", 1, 19, "a type"),
    ("Tensor<real>[1]\n  -> Matrix", 2, 6, "a type"),
    ("(Tensor<real>[1]", 1, 17, "')'"),
    ("Tensor<real>[1] Tensor<real>[1]", 1, 17, "end of input"),
    ("Tensor<real>[1] $", 1, 17, "a name"),
])
def test_bad_type_syntax_reports_position(text, line, column, expected):
  with pytest.raises(ParseError) as info:
    parse_type(text)
  err = info.value
  assert (err.line, err.column) == (line, column), str(err)
  assert expected in str(err)
  assert isinstance(err, ValueError)


def test_tensor_type_validates_its_fields():
  with pytest.raises(ValueError, match="atom"):
    TensorType("int", (1,))
  with pytest.raises(ValueError, match="shape"):
    TensorType("real", ())
