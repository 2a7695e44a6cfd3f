import pytest
from hypothesis import given
from hypothesis import strategies as st

from hx.lang import parse
from hx.lang import program as P
from hx.lang.types import parse_type
from tests.lang import strategies

CS1_T3 = "compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))"


def test_size_counts_library_functions_and_combinators():
  assert P.size(parse("compose(nn_cs1_1, nn_cs1_2)")) == 3
  assert P.size(parse(CS1_T3)) == 6
  assert P.size(parse("compose(fold_l(nn_a, zeros(1)), map_l(nn_b))")) == 6
  assert P.size(parse("compose(repeat(10, conv_g(nn_a)), map_g(nn_b))")) == 6
  assert P.size(parse("compose(fix(conv_g(nn_a)), map_g(nn_b))")) == 6  # fix counts as repeat does
  assert P.size(parse("compose(?<Tensor<real>[1] -> Tensor<real>[1]>, nn_a)")) == 2


def test_subterm_positions_get_and_replace():
  p = parse(CS1_T3)
  positions = [pos for pos, _ in P.subterms(p)]
  assert positions == [(), (0,), (1,), (1, 0), (1, 0, 0), (1, 0, 1)]
  assert P.get(p, (1, 0, 1)) == P.Lib("nn_cs1_2")
  q = P.replace(p, (1, 0, 1), P.Fresh("nn_x"))
  assert str(q) == "compose(nn_cs1_7, map_l(compose(nn_cs1_8, nn_x)))"
  assert str(p) == CS1_T3  # the original is unchanged
  with pytest.raises(IndexError):
    P.get(p, (0, 0))
  with pytest.raises(IndexError):
    P.replace(p, (2,), P.Fresh("nn_x"))


def test_names_in_order_of_first_occurrence():
  p = parse("compose(lib.nn_b, compose(nn_z, compose(lib.nn_a, compose(nn_y, nn_z))))")
  assert P.fresh_names(p) == ("nn_z", "nn_y")
  assert P.library_names(p) == ("nn_b", "nn_a")


def test_as_library_reads_every_fresh_function_as_the_library_function_of_its_name():
  p = parse("compose(nn_cs1_3, map_l(compose(lib.nn_cs1_2, nn_cs1_1)))")
  assert P.as_library(p) == parse("compose(lib.nn_cs1_3, map_l(compose(lib.nn_cs1_2, lib.nn_cs1_1)))")
  assert P.fresh_names(P.as_library(p)) == () and P.library_names(P.as_library(p)) == (
      "nn_cs1_3", "nn_cs1_2", "nn_cs1_1")
  assert P.as_library(parse("nn_1")) == P.Lib("nn_1")


def test_canonical_renaming_identifies_programs_up_to_fresh_names():
  a = parse("compose(nn_cs1_7, map_l(compose(nn_cs1_8, lib.nn_cs1_2)))")
  b = parse("compose(nn_q, map_l(compose(nn_p, lib.nn_cs1_2)))")
  c = parse("compose(nn_q, map_l(compose(nn_q, lib.nn_cs1_2)))")  # one shared function
  assert a != b
  assert P.canonical(a) == P.canonical(b)
  assert str(P.canonical(a)) == "compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_2)))"
  assert P.canonical(c) != P.canonical(a)
  assert {P.canonical(a): 1}[P.canonical(b)] == 1


def test_fix_is_a_node_with_one_child():
  p = parse("fix(compose(conv_g(nn_a), conv_g(nn_b)))")
  assert isinstance(p, P.Fix) and P.children(p) == (p.fn,)
  assert [pos for pos, _ in P.subterms(p)] == [(), (0,), (0, 0), (0, 0, 0), (0, 1), (0, 1, 0)]
  assert P.replace(p, (0,), P.Fresh("nn_c")) == P.Fix(P.Fresh("nn_c"))
  assert P.canonical(p) == parse("fix(compose(conv_g(nn_1), conv_g(nn_2)))")
  assert hash(p) == hash(parse(str(p))) and p != P.Repeat(1, p.fn)


def test_holes_and_completeness():
  p = parse("compose(?<Tensor<real>[1] -> Tensor<real>[1]>, map_l(?<Tensor<real>[1] -> Tensor<real>[1]>))")
  assert [pos for pos, _ in P.holes(p)] == [(0,), (1, 0)]
  assert not P.is_complete(p)
  assert P.holes(p)[0][1].type == parse_type("Tensor<real>[1] -> Tensor<real>[1]")
  assert P.is_complete(parse(CS1_T3))


def test_nodes_validate_their_fields():
  with pytest.raises(ValueError):
    P.Map("t", P.Fresh("nn_a"))
  with pytest.raises(ValueError):
    P.Repeat(0, P.Fresh("nn_a"))
  with pytest.raises(ValueError):
    P.Zeros(0)


@given(strategies.programs, st.data())
def test_canonical_renaming_of_random_programs(p, data):
  names = P.fresh_names(p)
  new = data.draw(st.lists(strategies.names, min_size=len(names), max_size=len(names), unique=True))
  renamed = P.rename_fresh(p, {n: "nn_r" + m for n, m in zip(names, new)})
  assert P.canonical(renamed) == P.canonical(p)
  assert P.canonical(P.canonical(p)) == P.canonical(p)
  assert P.size(renamed) == P.size(p)
  assert len(P.fresh_names(renamed)) == len(names)


@given(strategies.programs)
def test_replace_at_every_position_round_trips(p):
  for pos, sub in P.subterms(p):
    assert P.get(p, pos) == sub
    assert P.replace(p, pos, sub) == p


def test_composition_chains():
  from hx.lang.program import chain, compose_chain
  a, b, c = (parse(n) for n in ("nn_a", "nn_b", "map_l(nn_c)"))
  assert chain(parse("compose(compose(nn_a, nn_b), map_l(nn_c))")) == [a, b, c]
  assert compose_chain([a, b, c]) == parse("compose(nn_a, compose(nn_b, map_l(nn_c)))")
  assert chain(a) == [a] and compose_chain([a]) == a
  with pytest.raises(ValueError):
    compose_chain([])
