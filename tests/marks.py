"""Marks shared by the test modules."""

import pytest


def fast_first(n, cases):
  """The first n of the parametrized `cases` in the fast suite, the others marked slow: for families of
  one-line checks that each start a new process (a binary: a few seconds with JAX's import), where the
  fast suite keeps a few and the slow suite, which CI also runs, all."""
  return [c if i < n else pytest.param(*c, marks=pytest.mark.slow) for i, c in enumerate(cases)]
