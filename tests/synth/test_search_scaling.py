"""The top-down search on a growing library (`hx.synth.topdown`, benchmarks/search_scaling.py): the
shortcuts that keep it cheap (library functions of one type typed once per hole) change nothing it
yields. `data/search_scaling_order.json` holds the first 50 candidates the search yielded on a
30-function library before those shortcuts existed; the search must still yield exactly them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search_scaling import LIBRARY_CYCLE, TASKS, library
from hx.lang.types import parse_type
from hx.synth.space import SearchSpace
from hx.synth.topdown import EnumerationStats, enumerate_programs

FIXTURE = Path(__file__).resolve().parent / "data" / "search_scaling_order.json"
CASES = json.loads(FIXTURE.read_text("utf-8"))["cases"]


def _first(order: str, task: str, n: int, limit: int, stats: EnumerationStats | None = None) -> list[str]:
  space = SearchSpace(order=order)
  return [str(c) for c in enumerate_programs(parse_type(TASKS[task]), library(n), space=space, limit=limit,
                                             stats=stats)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['order']}-{c['task']}" for c in CASES])
def test_the_first_50_candidates_on_a_30_function_library_are_the_recorded_ones(case):
  assert case["functions"] == 30 and case["limit"] == 50 and len(case["candidates"]) == 50
  assert _first(case["order"], case["task"], case["functions"], case["limit"]) == case["candidates"]


def test_the_library_grows_by_appending_and_repeats_types():
  small, large = library(10), library(30)
  assert list(large)[:10] == list(small) and all(large[k] == v for k, v in small.items())
  assert len(large) == 30 and len(set(large.values())) < len(LIBRARY_CYCLE)  # two CNN types repeat
  assert library(0) == {}
  with pytest.raises(ValueError, match="non-negative"):
    library(-1)


def test_each_library_function_is_still_counted_as_proposed():
  """Functions of one type share one type check, but the counters still count one filler each: with
  twice the functions of every type, each expansion proposes twice as many library fillers."""
  stats = EnumerationStats()
  _first("cost", "image", 12, 1, stats)
  assert stats.proposed > stats.ill_typed > 0 and stats.expanded > 0
  # The first expansion (the task's hole) proposes the fresh function, all 12 functions and the
  # combinators; exactly one more filler per added function.
  one, two = EnumerationStats(), EnumerationStats()
  list(enumerate_programs(parse_type(TASKS["image"]), library(12), space=SearchSpace(order="cost"),
                          max_expanded=1, stats=one))
  list(enumerate_programs(parse_type(TASKS["image"]), library(13), space=SearchSpace(order="cost"),
                          max_expanded=1, stats=two))
  assert one.expanded == two.expanded == 1 and two.proposed == one.proposed + 1
