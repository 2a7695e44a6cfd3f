"""Marks shared by the test modules."""

import pytest


def fast_first(n, cases, ids=None):
  """The first n of the parametrized `cases` (tuples of arguments) in the fast suite, the others marked
  slow: for families of checks that each take seconds (a binary in a new process, a report rebuilt), where
  the fast suite keeps a few and the slow suite, which CI also runs, all. `ids`: the cases' test ids."""
  ids = ids if ids is not None else [None] * len(cases)
  return [pytest.param(*c, id=name, marks=() if i < n else pytest.mark.slow)
          for i, (c, name) in enumerate(zip(cases, ids))]
