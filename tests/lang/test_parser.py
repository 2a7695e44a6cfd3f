import pytest
from hypothesis import given

from hx.lang import ParseError, parse
from hx.lang import program as P
from hx.lang.types import parse_type
from tests.lang import strategies

A, B, C = P.Fresh("nn_a"), P.Fresh("nn_b"), P.Fresh("nn_c")


@pytest.mark.parametrize("text, expected", [
    ("nn_a", A),
    ("lib.nn_cs1_2", P.Lib("nn_cs1_2")),
    ("zeros(3)", P.Zeros(3)),
    ("compose(nn_a, nn_b)", P.Compose(A, B)),
    ("nn_a ∘ nn_b", P.Compose(A, B)),
    ("nn_a . nn_b", P.Compose(A, B)),
    ("nn_a ∘ nn_b ∘ nn_c", P.Compose(A, P.Compose(B, C))),
    ("(nn_a ∘ nn_b) ∘ nn_c", P.Compose(P.Compose(A, B), C)),
    ("map_l(nn_a)", P.Map("l", A)),
    ("map_g nn_a", P.Map("g", A)),
    ("map_l nn_a ∘ nn_b", P.Compose(P.Map("l", A), B)),
    ("fold_l(nn_a, zeros(1))", P.Fold("l", A, P.Zeros(1))),
    ("fold_l nn_a zeros(1)", P.Fold("l", A, P.Zeros(1))),
    ("fold_g(nn_a) zeros(2)", P.Fold("g", A, P.Zeros(2))),
    ("conv_l(nn_a)", P.Conv("l", A)),
    ("conv_g^10(nn_a)", P.Repeat(10, P.Conv("g", A))),
    ("conv_g^{9} (nn_a)", P.Repeat(9, P.Conv("g", A))),
    ("conv_g^10 lib.nn_x", P.Repeat(10, P.Conv("g", P.Lib("nn_x")))),
    ("repeat(4, conv_g(nn_a))", P.Repeat(4, P.Conv("g", A))),
    ("fix(conv_g(nn_a))", P.Fix(P.Conv("g", A))),
    ("fix conv_g(nn_a)", P.Fix(P.Conv("g", A))),
    ("conv_g^*(nn_a)", P.Fix(P.Conv("g", A))),
    ("conv_g^{*} nn_a ∘ map_g(nn_b)", P.Compose(P.Fix(P.Conv("g", A)), P.Map("g", B))),
    ("fix(fix(nn_a))", P.Fix(P.Fix(A))),
    ("map_l map_g(nn_a)", P.Map("l", P.Map("g", A))),
    ("?<Tensor<real>[1] -> Tensor<bool>[1]>", P.Hole(parse_type("Tensor<real>[1] -> Tensor<bool>[1]"))),
    ("compose(\n  nn_a,\n  nn_b\n)", P.Compose(A, B)),
])
def test_parses_the_papers_notations(text, expected):
  assert parse(text) == expected


def test_the_papers_graph_program_in_main_text_notation():
  text = "(conv_g^{10} (nn_gs2_3)) ∘ (map_g (lib.nn_gs2_1 ∘ lib.nn_gs2_2))"
  p = parse(text)
  assert str(p) == "compose(repeat(10, conv_g(nn_gs2_3)), map_g(compose(lib.nn_gs2_1, lib.nn_gs2_2)))"


def test_printing_is_canonical():
  assert str(parse("(fold_l nn_ss_3 zeros(1)) ∘ map_l(nn_ss_4 ∘ lib.nn_ss_2)")) == (
      "compose(fold_l(nn_ss_3, zeros(1)), map_l(compose(nn_ss_4, lib.nn_ss_2)))")


@given(strategies.programs)
def test_round_trip_random_programs(p):
  assert parse(str(p)) == p


@pytest.mark.parametrize("text, line, column, expected", [
    ("compose(nn_a, nn_b", 1, 19, "')'"),
    ("compose(nn_a, nn_b))", 1, 20, "end of program"),
    ("map_l(nn_a", 1, 11, "')'"),
    ("(nn_a ∘ nn_b", 1, 13, "')'"),
    ("mapp_l(nn_a)", 1, 1, "unknown name 'mapp_l'"),
    ("compose(nn_a, foo)", 1, 15, "unknown name 'foo'"),
    ("compose(nn_a)", 1, 13, "argument 2 of compose"),
    ("fold_l(nn_a)", 1, 12, "argument 2 of fold_l"),
    ("map_l", 1, 6, "argument 1 of map_l"),
    ("compose(nn_a, nn_b, nn_c)", 1, 19, "compose takes 2 arguments"),
    ("repeat(nn_a, nn_b)", 1, 8, "a positive integer"),
    ("zeros(0)", 1, 7, "at least 1"),
    ("conv_g^(nn_a)", 1, 8, "a repeat count"),
    ("conv_g^{*(nn_a)", 1, 10, "'}'"),
    ("fix(nn_a, nn_b)", 1, 9, "fix takes 1 argument"),
    ("fix", 1, 4, "argument 1 of fix"),
    ("nn_a * nn_b", 1, 6, "end of program"),
    ("lib.(nn_a)", 1, 5, "a library function name"),
    ("nn_a ∘", 1, 7, "a program"),
    ("", 1, 1, "a program"),
    ("map_l map_l nn_a", 1, 13, "'('"),
    ("?<Tensor<real>>", 1, 15, "'['"),
    ("compose(nn_a,\n        nn_b))", 2, 14, "end of program"),
    ("nn_a @ nn_b", 1, 6, "a name"),
])
def test_malformed_text_reports_line_and_column(text, line, column, expected):
  with pytest.raises(ParseError) as info:
    parse(text)
  err = info.value
  assert (err.line, err.column) == (line, column), str(err)
  assert expected in str(err)


def test_parse_error_message_shows_the_line_and_a_caret():
  with pytest.raises(ParseError) as info:
    parse("compose(nn_a,\n  map_l(nn_b)")
  lines = str(info.value).splitlines()
  assert lines[0].startswith("line 2, column 14:")
  assert lines[1] == "    map_l(nn_b)"
  assert lines[2] == "  " + " " * 13 + "^"
