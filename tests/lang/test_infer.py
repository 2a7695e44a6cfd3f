import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hx.lang import HxTypeError, infer, parse
from hx.lang import program as P
from hx.lang.infer import typable
from hx.lang.types import ListType, TypeVar, parse_type
from tests.lang import strategies

T = parse_type
IMAGE = "Tensor<real>[1][28][28]"
LIB = {
    "cnn": T(f"{IMAGE} -> Tensor<real>[1024]"),
    "mlp": T("Tensor<real>[1024] -> Tensor<bool>[1]"),
    "step": T("Tensor<real>[1] -> Tensor<real>[1] -> Tensor<real>[1]"),
    "kernel": T("List<Tensor<real>[2]> -> Tensor<real>[2]"),
    "poly": T("'x -> 'x"),
}
COUNT = T(f"List<{IMAGE}> -> Tensor<real>[1]")
GRAPH = T("Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>")


def test_compose_and_map_give_each_fresh_function_its_type():
  typing = infer(parse("compose(nn_a, map_l(compose(nn_b, lib.cnn)))"), LIB, COUNT)
  assert typing.type == COUNT
  assert typing.fresh["nn_b"].arg == T("Tensor<real>[1024]")
  elem = typing.fresh["nn_b"].result
  assert isinstance(elem, TypeVar)  # unconstrained: the synthesizer chooses
  assert typing.fresh["nn_a"] == T(f"List<{elem}> -> Tensor<real>[1]")
  assert typing.subterms[(1,)] == T(f"List<{IMAGE}> -> List<{elem}>")


def test_fold_step_is_state_then_element():
  typing = infer(parse("compose(fold_l(nn_s, zeros(1)), map_l(lib.mlp))"), LIB)
  assert typing.fresh["nn_s"] == T("Tensor<real>[1] -> Tensor<bool>[1] -> Tensor<real>[1]")
  assert typing.type == T("List<Tensor<real>[1024]> -> Tensor<real>[1]")


def test_graph_program_repeat_conv_map():
  typing = infer(parse("compose(conv_g^10(nn_k), map_g(compose(nn_r, nn_c)))"), LIB, GRAPH)
  assert typing.fresh["nn_k"] == T("List<Tensor<real>[2]> -> Tensor<real>[2]")
  assert typing.fresh["nn_r"].result == T("Tensor<real>[2]")
  assert typing.fresh["nn_c"].arg == T("Tensor<real>[3][28][28]")


def test_conv_l_and_fold_g():
  typing = infer(parse("compose(fold_g(lib.step, zeros(1)), map_g(nn_a))"), LIB)
  assert typing.type.result == T("Tensor<real>[1]")
  assert typing.fresh["nn_a"].result == T("Tensor<real>[1]")
  typing = infer(parse("conv_l(lib.kernel)"), LIB)
  assert typing.type == T("List<Tensor<real>[2]> -> List<Tensor<real>[2]>")


def test_a_fresh_name_used_twice_has_one_type():
  typing = infer(parse("compose(nn_a, nn_a)"), LIB, T("Tensor<real>[4] -> Tensor<real>[4]"))
  assert typing.fresh["nn_a"] == T("Tensor<real>[4] -> Tensor<real>[4]")
  with pytest.raises(HxTypeError):
    infer(parse("compose(nn_a, nn_a)"), LIB, T("Tensor<real>[4] -> Tensor<real>[5]"))


def test_polymorphic_library_functions_are_instantiated_per_use():
  typing = infer(parse("compose(lib.poly, compose(lib.mlp, lib.poly))"), LIB)
  assert typing.type == T("Tensor<real>[1024] -> Tensor<bool>[1]")


def test_holes_have_their_annotated_type():
  p = parse("compose(?<List<Tensor<real>[5]> -> Tensor<real>[1]>, map_l(nn_a))")
  typing = infer(p, LIB, T(f"List<{IMAGE}> -> Tensor<real>[1]"))
  assert typing.fresh["nn_a"] == T(f"{IMAGE} -> Tensor<real>[5]")
  with pytest.raises(HxTypeError):
    infer(parse("compose(?<Tensor<real>[5] -> Tensor<real>[1]>, map_l(nn_a))"), LIB, COUNT)


def _error(text, expected=None):
  with pytest.raises(HxTypeError) as info:
    infer(parse(text), LIB, expected)
  return info.value


def test_swapped_compose_arguments_name_the_subterm_and_both_types():
  err = _error("compose(lib.cnn, lib.mlp)")
  assert err.subterm == "lib.cnn"
  assert err.actual == f"{IMAGE} -> Tensor<real>[1024]"
  assert err.expected.startswith("Tensor<bool>[1] -> ")
  assert "Tensor<bool>[1] vs Tensor<real>[1][28][28]" in str(err)


def test_map_l_over_a_graph_is_rejected_at_the_map():
  err = _error("compose(nn_a, map_l(nn_b))", GRAPH)
  assert err.subterm == "map_l(nn_b)"
  assert err.expected.startswith("Graph<Tensor<real>[3][28][28]> -> ")
  assert err.actual.startswith("List<")


def test_fold_whose_step_does_not_match_its_start_value():
  err = _error("fold_l(lib.step, zeros(2))")
  assert err.subterm == "zeros(2)"
  assert (err.expected, err.actual) == ("Tensor<real>[1]", "Tensor<real>[2]")


def test_tensor_shape_mismatch_is_an_error():
  err = _error("compose(lib.mlp, lib.cnn)", T("Tensor<real>[1][32][32] -> Tensor<bool>[1]"))
  assert "Tensor<real>[1][32][32] vs Tensor<real>[1][28][28]" in str(err)
  err = _error("compose(lib.mlp, lib.cnn)", T(f"{IMAGE} -> Tensor<real>[1]"))
  assert "Tensor<real>[1] vs Tensor<bool>[1]" in str(err)


def test_lists_hold_tensors_only():
  err = _error("map_l(map_l(nn_a))")
  assert "is not a tensor type" in str(err)


def test_a_variable_inside_a_list_stays_a_tensor():
  # ?<Tensor<bool>[1] -> List<'a>> after ?<'a> would make 'a a function and List<'a> ill-formed.
  p = parse("compose(?<Tensor<bool>[1] -> List<'a>>, ?<'a>)")
  with pytest.raises(HxTypeError, match="not a tensor type"):
    infer(p, {})
  typing = infer(parse("compose(?<List<'a> -> Tensor<real>[1]>, map_l(?<'b -> 'a>))"), {})
  assert typing.type.arg == ListType(typing.type.arg.elem)


def test_repeat_needs_an_endofunction():
  err = _error("repeat(3, lib.mlp)")
  assert err.subterm == "lib.mlp"


def test_fix_needs_an_endofunction_and_names_both_types():
  typing = infer(parse("compose(fix(conv_g(nn_k)), map_g(nn_r))"), {}, GRAPH)
  assert typing.fresh["nn_k"] == T("List<Tensor<real>[2]> -> Tensor<real>[2]")
  assert typing.subterms[(0,)] == T("Graph<Tensor<real>[2]> -> Graph<Tensor<real>[2]>")
  err = _error("fix(lib.mlp)")
  assert err.subterm == "lib.mlp"
  assert err.actual == "Tensor<real>[1024] -> Tensor<bool>[1]"
  assert err.expected == "Tensor<real>[1024] -> Tensor<real>[1024]"
  assert "fixed point" in str(err) and "Tensor<real>[1024] vs Tensor<bool>[1]" in str(err)
  err = _error("fix(conv_g(nn_k))", T("Graph<Tensor<real>[2]> -> Graph<Tensor<real>[3]>"))
  assert err.subterm == "fix(conv_g(nn_k))"
  assert err.expected == "Graph<Tensor<real>[2]> -> Graph<Tensor<real>[3]>"
  assert err.actual == "Graph<Tensor<real>[2]> -> Graph<Tensor<real>[2]>"


def test_unknown_library_function():
  err = _error("compose(nn_a, lib.nope)")
  assert "unknown library function lib.nope" in str(err)


def test_program_type_against_expected():
  err = _error("compose(lib.mlp, lib.cnn)", COUNT)
  assert err.subterm == "lib.cnn"  # the expected input (a list) reaches lib.cnn through compose


@given(strategies.programs)
def test_inference_on_random_programs_either_types_or_raises_a_type_error(p):
  try:
    typing = infer(p, {})
  except HxTypeError as err:
    assert str(err)
    return
  # Every subterm is typed, and typing again against the inferred type agrees (up to the names of
  # type variables).
  assert () in typing.subterms
  assert _alpha(infer(p, {}, typing.type).type) == _alpha(typing.type)


def _alpha(t):
  names = {}
  return parse_type(re.sub(r"'\w+", lambda m: names.setdefault(m.group(), f"'v{len(names)}"), str(t)))


def test_given_fresh_types_constrain_and_clash():
  count = parse("compose(nn_a, map_l(compose(nn_b, lib.cnn)))")
  typing = infer(count, LIB, COUNT, fresh_types={"nn_b": T("Tensor<real>[1024] -> Tensor<bool>[1]")})
  assert typing.fresh["nn_a"] == T("List<Tensor<bool>[1]> -> Tensor<real>[1]")
  with pytest.raises(HxTypeError, match="nn_b"):
    infer(count, LIB, COUNT, fresh_types={"nn_b": T("Tensor<real>[10] -> Tensor<bool>[1]")})


# Programs over LIB's functions (so that many type), fresh functions, zeros and annotated holes.
_LIB_PROGRAMS = st.recursive(
    st.one_of(strategies.fresh, st.sampled_from(sorted(LIB)).map(P.Lib), st.integers(1, 9).map(P.Zeros),
              strategies.types.map(P.Hole)),
    strategies._extend, max_leaves=8)


@given(_LIB_PROGRAMS, st.one_of(st.none(), strategies.types))
def test_typable_says_whether_infer_succeeds(p, expected):
  try:
    infer(p, LIB, expected)
    typed = True
  except HxTypeError:
    typed = False
  assert typable(p, LIB, expected) is typed


def test_typable_on_library_functions_in_contexts():
  contexts = [T(t) for t in (f"{IMAGE} -> 'a", "'a -> Tensor<bool>[1]", "Tensor<real>[1] -> 'a -> 'a",
                             "List<'a> -> 'a", "Tensor<real>[1024] -> Tensor<real>[1024]", "'a")]
  got = {(name, str(c)): typable(P.Lib(name), LIB, c) for name in LIB for c in contexts}
  assert got[("cnn", f"{IMAGE} -> 'a")] and got[("poly", "Tensor<real>[1024] -> Tensor<real>[1024]")]
  assert not got[("cnn", "'a -> Tensor<bool>[1]")] and not got[("step", "List<'a> -> 'a")]
  assert got[("kernel", "List<'a> -> 'a")]  # List<Tensor<real>[2]> -> Tensor<real>[2] fits it
  assert not typable(parse("lib.nope"), LIB)
