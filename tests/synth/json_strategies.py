"""Hypothesis strategies for fuzzing the readers of hx's JSON files: any JSON value, and a well-formed
value with one field mutated (its value replaced by one of another type, removed, negated, made NaN, or
an extra key added beside it)."""

import copy
import math
from typing import Any, Iterator

from hypothesis import strategies as st

_SCALARS = (st.none() | st.booleans() | st.integers(-2**40, 2**40)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))

json_values = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
"""Any JSON value Python's json module writes (NaN and infinities included: it writes them as NaN and
Infinity, and reads them back)."""


def paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
  """Every path (keys and indices from the root) to a value inside `value`, the root's () first."""
  yield prefix
  if isinstance(value, dict):
    for k, v in value.items():
      yield from paths(v, prefix + (k,))
  elif isinstance(value, list):
    for i, v in enumerate(value):
      yield from paths(v, prefix + (i,))


def _get(value: Any, path: tuple) -> Any:
  for k in path:
    value = value[k]
  return value


def _negated(x: Any) -> Any:
  """A number negated (and made non-zero, so that it is below any minimum of 0); others as they are."""
  if isinstance(x, bool) or not isinstance(x, (int, float)):
    return -1
  return -x if x else -1


@st.composite
def mutated(draw, value: Any, what: list | None = None) -> Any:
  """A deep copy of `value` with one place mutated (see the module docstring)."""
  where = draw(st.sampled_from(what if what is not None else list(paths(value))))
  kind = draw(st.sampled_from(["replace", "delete", "extra", "negative", "nan"]))
  out = copy.deepcopy(value)
  if not where:  # the root: only replaced
    return draw(json_values)
  parent, key = _get(out, where[:-1]), where[-1]
  if kind == "replace":
    parent[key] = draw(json_values)
  elif kind == "delete":
    del parent[key]
  elif kind == "extra":
    target = parent[key] if isinstance(parent[key], dict) else parent
    if isinstance(target, dict):
      target[draw(st.text(max_size=8))] = draw(json_values)
    else:
      target.append(draw(json_values))
  elif kind == "negative":
    parent[key] = _negated(parent[key])
  else:
    parent[key] = math.nan
  return out
