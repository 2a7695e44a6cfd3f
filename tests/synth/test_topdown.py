"""Top-down enumeration (`hx.synth.topdown`): order, typing, buildability, equivalence, reachability of
every program the paper prints. Nothing is trained here."""

import itertools

import pytest

from hx.compile import compile_program
from hx.lang import infer, parse, size
from hx.lang.paper import (
  default_type_variables,
  paper_library_before,
  paper_programs,
  paper_tables,
  task_type,
)
from hx.lang.types import parse_type
from hx.synth.space import Completer, SearchSpace, equivalence_key, normal_form
from hx.synth.topdown import EnumerationStats, enumerate_programs

T = parse_type


def _library(table: str, before_task: int) -> dict:
  """The paper's library when `table`'s task `before_task` starts: the rank-1 functions of earlier tasks."""
  return paper_library_before(table, before_task)


def _structure(program) -> str:
  """The normal form's text with fresh names canonical (types ignored)."""
  return equivalence_key(program, {n: T("Tensor<real>[1]") for n in _fresh(program)})[0]


def _fresh(program):
  from hx.lang import fresh_names
  return fresh_names(program)


def test_ss_task_2_best_program_is_among_the_first_50():
  lib = _library("tab:SSProgs", 2)
  assert set(lib) == {"nn_ss_1", "nn_ss_2"}
  target = _structure(parse("compose(fold_l(nn_a, zeros(1)), map_l(compose(nn_b, lib.nn_ss_2)))"))
  first = [_structure(c.program) for c in enumerate_programs(task_type("sum_digits"), lib, limit=50)]
  assert target in first


def test_gs1_task_2_graph_convolution_program_is_among_the_first_60():
  lib = _library("tab:GS1Progs", 2)
  first = list(enumerate_programs(task_type("shortest_path_street"), lib, limit=60))
  hits = [c for c in first if str(c.program).startswith("compose(repeat(") and "conv_g(" in str(c.program)
          and "map_g(" in str(c.program)]
  assert hits, [str(c.program) for c in first]
  # The paper's best program itself, with the regressor reused.
  target = _structure(parse("compose(conv_g^10(nn_k), map_g(compose(lib.nn_gs1_1, lib.nn_gs1_2)))"))
  assert target in [_structure(c.program) for c in first]


def test_candidates_are_typed_buildable_distinct_and_in_cost_order():
  lib = _library("tab:CS1Progs", 3)
  t = task_type("count_digit")
  stats = EnumerationStats()
  cands = list(enumerate_programs(t, lib, limit=40, stats=stats))
  assert len(cands) == 40 and stats.yielded == 40 and stats.ill_typed > 0
  costs = [c.cost for c in cands]
  assert costs == sorted(costs)
  assert len({c.key for c in cands}) == len(cands)
  completer = Completer(lib, SearchSpace())
  for c in cands:
    typing = infer(c.program, lib, t, fresh_types=c.fresh_types)
    assert typing.type == t
    assert all(not isinstance(v, type(T("'a"))) for v in c.fresh_types.values())
    assert c.program == normal_form(c.program)
    assert size(c.program) <= SearchSpace().max_size
    compile_program(c.program, c.fresh_types, library=completer.library_specs)


def test_order_is_deterministic_and_the_limit_stops_it():
  lib = _library("tab:CS1Progs", 4)
  t = task_type("count_digit")
  a = [str(c) for c in enumerate_programs(t, lib, limit=15)]
  b = [str(c) for c in itertools.islice(enumerate_programs(t, lib), 15)]
  assert a == b and len(a) == 15


def test_recognition_without_library_starts_with_the_papers_program():
  cands = list(enumerate_programs(task_type("recognize_digit"), None, limit=3))
  # The single CNN with an output layer, then the paper's MLP after CNN features.
  assert str(cands[0].program) == "nn_1"
  assert cands[0].fresh_types["nn_1"] == task_type("recognize_digit")
  assert str(cands[1].program) == "compose(nn_1, nn_2)"
  assert cands[1].fresh_types["nn_2"] == T("Tensor<real>[1][28][28] -> Tensor<real>[1024]")


def test_limits_of_the_space_are_respected():
  space = SearchSpace(max_size=4, max_fresh=1)
  cands = list(enumerate_programs(task_type("count_digit"), _library("tab:CS1Progs", 3), space=space))
  assert cands and all(size(c.program) <= 4 and len(c.fresh_types) <= 1 for c in cands)
  space = SearchSpace(combinators=("map_l",), repeat_counts=(3,))
  progs = [str(c.program) for c in enumerate_programs(task_type("count_digit"), None, space=space)]
  assert progs and not any(w in p for p in progs for w in ("fold", "conv", "repeat"))
  with pytest.raises(ValueError, match="unknown combinator"):
    SearchSpace(combinators=("map_x",))


def test_normal_form_merges_associativity_and_map_fusion():
  a = parse("compose(compose(nn_9, map_l(nn_10)), map_l(nn_11))")
  b = parse("compose(nn_1, map_l(compose(nn_2, nn_3)))")
  c = parse("compose(nn_1, compose(map_l(nn_2), map_l(nn_3)))")
  assert normal_form(a) == parse("compose(nn_9, map_l(compose(nn_10, nn_11)))")
  types_a = {"nn_9": T("'x"), "nn_10": T("'y"), "nn_11": T("'z")}
  types_b = {"nn_1": T("'x"), "nn_2": T("'y"), "nn_3": T("'z")}
  assert equivalence_key(a, types_a) == equivalence_key(b, types_b) == equivalence_key(c, types_b)
  # Different types: different classes.
  assert equivalence_key(b, {**types_b, "nn_3": T("'w")}) != equivalence_key(b, types_b)
  # Not equivalent: a map after something else, and maps of different kinds stay apart.
  assert normal_form(parse("compose(map_l(nn_a), compose(nn_b, map_l(nn_c)))")) == parse(
      "compose(map_l(nn_a), compose(nn_b, map_l(nn_c)))")


def _check_tables(tables):
  missing = []
  for table in tables:
    progs = [p for p in paper_programs() if p.table == table]
    for n in sorted({p.task_number for p in progs}):
      lib = _library(table, n)
      tp = [p for p in progs if p.task_number == n]
      wanted = {}
      for p in tp:
        fresh = default_type_variables(infer(p.program, lib, p.type).fresh)
        wanted.setdefault(equivalence_key(p.program, fresh), []).append(p.text)
      # The whole search space in its order, stopped once every printed program has come up.
      for c in enumerate_programs(tp[0].type, lib):
        wanted.pop(c.key, None)
        if not wanted:
          break
      missing += [(table, n, text) for texts in wanted.values() for text in texts]
  assert not missing


@pytest.mark.slow
def test_the_papers_programs_are_reachable_cs1_ss_gs2():
  _check_tables(["tab:CS1Progs", "tab:SSProgs", "fig:GS2Progs-main"])


@pytest.mark.slow
def test_every_program_the_paper_prints_is_reachable():
  _check_tables([t for t in paper_tables() if not t.startswith("text:")])


def test_within_a_cost_each_skeleton_gets_its_turn_before_any_repeats():
  """Under the "cost" order."""
  from hx.synth.topdown import _skeleton
  img, f = "Tensor<real>[1][28][28]", "Tensor<real>[1024]"
  lib = {**{f"cnn{i}": T(f"{img} -> {f}") for i in range(3)},
         **{f"mlp{i}": T(f"{f} -> Tensor<bool>[1]") for i in range(3)}}
  cands = list(enumerate_programs(task_type("count_digit"), lib, space=SearchSpace(order="cost"), limit=120))
  levels = {}
  for c in cands:
    levels.setdefault(c.cost, []).append(_skeleton(c.program))
  checked = 0
  for skeletons in levels.values():
    distinct = list(dict.fromkeys(skeletons))
    if len(skeletons) > len(distinct):
      checked += 1
      assert skeletons[:len(distinct)] == distinct
  assert checked  # some level really had several library combinations of one skeleton
  # The 3 x 3 all-library counting programs do not come before the other structures of their cost.
  first = cands[:5]
  assert len({_skeleton(c.program) for c in first}) >= 3


def test_the_search_proposes_fix_over_a_graph_convolution_at_the_cost_of_repeat():
  from hx.lang import program as P
  from hx.synth.space import Costs, fillers, program_cost

  lib = _library("tab:GS1Progs", 2)
  first = list(enumerate_programs(task_type("shortest_path_graph_mnist"), lib, limit=60))
  texts = [_structure(c.program) for c in first]
  fix = _structure(parse("compose(fix(conv_g(nn_k)), map_g(compose(lib.nn_gs1_1, lib.nn_gs1_2)))"))
  ten = _structure(parse("compose(conv_g^10(nn_k), map_g(compose(lib.nn_gs1_1, lib.nn_gs1_2)))"))
  assert fix in texts and ten in texts
  cost = {t: c.cost for t, c in zip(texts, first)}
  assert cost[fix] == cost[ten]
  assert program_cost(parse("fix(conv_g(nn_a))"), Costs(repeat=2.5)) == 2.5 + 1.0 + 1.0  # fix, conv, nn_a
  # A fix's body is filled as a repeat's: a convolution (repeat_conv_only), and never another loop.
  hole = P.Hole(T("Graph<Tensor<real>[2]> -> Graph<Tensor<real>[2]>"))
  body = list(fillers(P.Fix(hole), (0,), hole, [], SearchSpace(), "nn_1"))
  assert body and all(isinstance(f, P.Conv) for f in body)
  free = SearchSpace(repeat_conv_only=False)
  body = list(fillers(P.Fix(hole), (0,), hole, [], free, "nn_1"))
  assert any(isinstance(f, P.Map) for f in body) and not any(isinstance(f, (P.Fix, P.Repeat)) for f in body)
  top = list(fillers(hole, (), hole, [], free, "nn_1"))
  assert sum(isinstance(f, P.Fix) for f in top) == 1
  no_fix = SearchSpace(combinators=tuple(c for c in SearchSpace().combinators if c != "fix"))
  assert not any("fix(" in str(c.program) for c in enumerate_programs(task_type("shortest_path_graph_mnist"),
                                                                         lib, space=no_fix, limit=60))


def test_the_filler_precheck_drops_only_what_inference_drops(monkeypatch):
  """Fillers that cannot have the type their hole's context allows are skipped before the whole program
  is inferred; with that check off (every filler inferred), the same candidates come out in the same
  order, with the same counts."""
  import hx.synth.topdown as topdown

  lib = _library("tab:LS2Progs", 3)
  assert len(lib) >= 4
  t = [p for p in paper_programs() if p.table == "tab:LS2Progs" and p.task_number == 3][0].type

  def run():
    stats = EnumerationStats()
    return [(str(c.program), c.cost, sorted(map(str, c.fresh_types.items())))
            for c in enumerate_programs(t, lib, stats=stats)], stats

  checked, stats_checked = run()
  monkeypatch.setattr(topdown, "typable", lambda *args: True)
  inferred, stats_inferred = run()
  assert checked == inferred and len(checked) >= 30
  counts = lambda s: (s.proposed, s.ill_typed, s.too_big, s.complete, s.unbuildable)
  assert counts(stats_checked) == counts(stats_inferred)
  assert stats_checked.ill_typed > 0


# --- The authors' order and filter -----------------------------------------------------------------

def test_authors_size_counts_every_node_of_their_ast():
  from hx.lang import program as P
  from hx.synth.space import authors_size

  # compose(a, b): the application, `compose`, a, b; a hole and a leaf count 1; zeros(n) and repeat(k, e)
  # count their number as a node.
  assert authors_size(parse("compose(nn_a, nn_b)")) == 4
  assert authors_size(parse("compose(nn_a, map_l(compose(nn_b, lib.f)))")) == 9
  assert authors_size(parse("compose(fold_l(nn_a, zeros(1)), map_l(nn_b))")) == 11
  assert authors_size(parse("compose(conv_g^10(nn_a), map_g(nn_b))")) == 11
  assert authors_size(parse("fix(conv_g(nn_a))")) == authors_size(parse("repeat(9, conv_g(nn_a))")) == 6
  assert authors_size(P.Hole(T("Tensor<real>[1]"))) == 1


def test_authors_order_is_by_size_first_in_first_out_fresh_before_library():
  from hx.synth.space import authors_size

  lib = _library("tab:CS1Progs", 4)
  space = SearchSpace(authors_filter=True)
  cands = list(enumerate_programs(task_type("count_digit"), lib, space=space, limit=60))
  sizes = [authors_size(c.program) for c in cands]
  assert sizes == sorted(sizes) and all(c.cost == authors_size(c.program) for c in cands)
  first = [str(c.program) for c in cands[:8]]
  # The first hole (the outermost function) takes a fresh function before any library one, the next hole
  # likewise, and library functions come in the library's order.
  assert first[0] == first[1] == "compose(nn_1, map_l(compose(nn_2, nn_3)))"  # two intermediate types
  assert first[2] == "compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_2)))"
  assert first[4] == "compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_4)))"
  assert first[6] == "compose(nn_1, map_l(compose(lib.nn_cs1_1, nn_2)))"
  lib_first = next(i for i, c in enumerate(cands) if str(c.program).startswith("compose(lib."))
  assert all(str(c.program).startswith("compose(nn_1") for c in cands[:lib_first])


def test_authors_order_enqueues_a_repeat_once_its_count_is_chosen():
  """The authors' `repeat` has its count as a hole of its own: repeat(9, ...) and repeat(10, ...) enter the
  queue when that hole is filled, after what was queued at the same size meanwhile, so every repeat-9
  program comes before every repeat-10 one."""
  lib = _library("tab:GS2Progs", 3)
  cands = [str(c.program) for c in enumerate_programs(task_type("shortest_path_street"), lib,
                                                       space=SearchSpace(authors_filter=True), limit=40)]
  nines = [i for i, c in enumerate(cands) if "repeat(9," in c]
  tens = [i for i, c in enumerate(cands) if "repeat(10," in c]
  assert nines and tens and max(nines) < min(tens)
  costed = [str(c.program) for c in enumerate_programs(task_type("shortest_path_street"), lib,
                                                        space=SearchSpace(order="cost"), limit=40)]
  # hx's cost order puts a program's two counts side by side instead.
  pairs = zip(costed, costed[1:])
  assert any("repeat(10," in b and a.replace("repeat(9,", "repeat(10,") == b for a, b in pairs)


def test_the_authors_filter_reasons():
  from hx.synth.space import authors_filter_reason

  feats = {T("Tensor<real>[1024]")}
  img, f = "Tensor<real>[1][28][28]", "Tensor<real>[1024]"
  ok = {"nn_1": T("List<Tensor<bool>[1]> -> Tensor<real>[1]"), "nn_2": T(f"{f} -> Tensor<bool>[1]"),
        "nn_3": T(f"{img} -> {f}")}
  assert authors_filter_reason(ok, feats, [], 0) is None
  step = {"nn_1": T("Tensor<real>[1] -> Tensor<real>[50] -> Tensor<real>[1]")}
  assert authors_filter_reason(step, feats, ["mlp"], 0) is None  # a fold step is not counted as an MLP
  cases = [
      ({"nn_1": T("Tensor<bool>[1] -> Tensor<bool>[1]")}, [], 0, "is not a CNN"),  # an adapter
      ({"nn_1": T(f"{img} -> Tensor<bool>[1]")}, [], 0, "other than CNN features"),
      ({"nn_1": T(f"List<{f}> -> Tensor<real>[1]")}, [], 0, "is not a CNN"),  # an LSTM over features
      ({"nn_1": T(f"{f} -> Tensor<bool>[1]")}, ["mlp"], 0, "2 MLPs"),  # the library's MLP counts
      ({"nn_1": T(f"{f} -> Tensor<bool>[1]"), "nn_2": T(f"{f} -> Tensor<real>[50]")}, [], 0, "2 MLPs"),
      ({}, [], 2, "2 repeats"),
      ({f"nn_{i}": T(f"{img} -> {f}") for i in range(4)}, [], 0, "more than 3 fresh"),
  ]
  for fresh, templates, repeats, reason in cases:
    assert reason in authors_filter_reason(fresh, feats, templates, repeats)


def test_the_authors_filter_drops_adapters_and_programs_of_three_open_types():
  lib = _library("tab:CS1Progs", 4)
  t = task_type("count_digit")
  free = list(enumerate_programs(t, lib, space=SearchSpace(), limit=300))
  kept = list(enumerate_programs(t, lib, space=SearchSpace(authors_filter=True), limit=300))
  assert {c.key for c in kept} < {c.key for c in free}
  adapter = "compose(nn_1, map_l(compose(nn_2, compose(lib.nn_cs1_1, lib.nn_cs1_2))))"
  assert adapter in {str(c.program) for c in free} and adapter not in {str(c.program) for c in kept}
  completer = Completer(lib, SearchSpace(authors_filter=True))
  three = parse("compose(nn_a, map_l(compose(nn_b, compose(nn_c, nn_d))))")
  fresh = infer(three, lib, t).fresh
  assert list(completer.complete_types(three, fresh, check=False)) == []
  # Kept candidates are still in the order the unfiltered search gives them.
  order = {c.key: i for i, c in enumerate(free)}
  places = [order[c.key] for c in kept if c.key in order]
  assert places == sorted(places)
