"""Hypothesis strategies for random types and programs."""

from hypothesis import strategies as st

from hx.lang import program as P
from hx.lang.types import FunctionType, GraphType, ListType, TensorType, TypeVar

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)

tensor_types = st.builds(
    TensorType, st.sampled_from(["bool", "real"]),
    st.lists(st.integers(1, 64), min_size=1, max_size=4).map(tuple))

element_types = st.one_of(tensor_types, names.map(TypeVar))

value_types = st.one_of(
    element_types, element_types.map(ListType), element_types.map(GraphType))

types = st.recursive(value_types, lambda inner: st.builds(FunctionType, inner, inner), max_leaves=6)

fresh = names.map(lambda n: P.Fresh("nn_" + n))
library = names.map(P.Lib)
leaves = st.one_of(fresh, library, st.integers(1, 9).map(P.Zeros), types.map(P.Hole))
adts = st.sampled_from(["l", "g"])


def _extend(inner):
  return st.one_of(
      st.builds(P.Compose, inner, inner),
      st.builds(P.Map, adts, inner),
      st.builds(P.Fold, adts, inner, inner),
      st.builds(P.Conv, adts, inner),
      st.builds(P.Repeat, st.integers(1, 12), inner),
      st.builds(P.Fix, inner),
  )


programs = st.recursive(leaves, _extend, max_leaves=12)
