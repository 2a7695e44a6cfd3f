"""The benchmarks' fix flags (`--fix_horizon`, `--fix_tolerance` of synthesis.py and
studies/relaxation_learning.py, both parsed by synthesis.py's `fix_config`) reach FixConfig, and bad
text is refused with the flag's name; synthesis.py's executor specs."""

from __future__ import annotations

import re

import pytest

from benchmarks import synthesis
from benchmarks.synthesis import fix_config
from hx.compile.fixpoint import FixConfig


def test_fix_flags_set_the_training_horizon_and_tolerance_and_nothing_else():
  config = fix_config("16,32")
  assert config == FixConfig(train_horizon=(16, 32))
  assert config.horizon() == (16, 32)
  assert fix_config(None, 0.05) == FixConfig(tolerance=0.05)
  assert fix_config("8,8", 0.1) == FixConfig(train_horizon=(8, 8), tolerance=0.1)
  assert fix_config() is None


@pytest.mark.parametrize("text", ["16", "16,32,48", "a,b", "32,16", "0,4"])
def test_a_bad_fix_horizon_names_the_flag_and_the_text(text):
  with pytest.raises(SystemExit, match=rf"--fix_horizon '{text}'.*expected LO,HI"):
    fix_config(text)


def test_a_negative_tolerance_is_refused():
  with pytest.raises(SystemExit, match="--fix_tolerance -1.0"):
    fix_config(None, -1.0)


def test_the_paper_combinators_are_all_but_fix_and_a_bad_name_is_refused():
  from benchmarks.synthesis import search_space
  from hx.synth import COMBINATORS, SearchSpace, paper_space

  assert search_space(None) == SearchSpace(order="cost")
  assert search_space(None, "authors") == SearchSpace()
  assert search_space("authors", graphs=True) == paper_space(graphs=True)
  paper = search_space("paper").combinators
  assert "fix" not in paper and set(paper) == set(COMBINATORS) - {"fix"}
  assert search_space("map_g, conv_g,repeat").combinators == ("map_g", "conv_g", "repeat")
  with pytest.raises(SystemExit, match=r"--combinators 'map_g,loop'.*unknown combinator"):
    search_space("map_g,loop")


def test_the_paper_space_keeps_gs2_task_2s_program_and_drops_its_fix_form():
  from benchmarks.synthesis import search_space
  from hx.lang import infer
  from hx.lang.paper import default_type_variables, paper_library_before, paper_programs
  from hx.synth import equivalence_key
  from hx.synth.topdown import enumerate_programs

  table = "fig:GS2Progs-main"
  library = paper_library_before(table, 2)
  paper = next(p for p in paper_programs() if p.table == table and p.task_number == 2 and p.rank == 1)
  fresh = default_type_variables(infer(paper.program, library, paper.type).fresh)
  key = equivalence_key(paper.program, fresh)
  for space, has_fix in ((search_space("paper"), False), (search_space(None), True)):
    # The first 30 (the synthesis benchmark trains the first 25 of GS2 task 2: the paper's program is 22nd).
    seen = list(enumerate_programs(paper.type, library, space=space, limit=30))
    assert key in [c.key for c in seen]
    assert any("fix(" in str(c.program) for c in seen) == has_fix


@pytest.mark.slow
def test_the_synthesis_seed_changes_the_training_seeds_and_not_the_data():
  from benchmarks.synthesis import main

  common = ["--task", "cs1:1", "--preset", "quick", "--fraction", "0.2", "--candidates", "2", "--epochs", "1",
            "--executors", "local", "--schedules", "full", "--in_process"]

  def scores(out):
    return [(program, val) for program, _, val, *_ in out["runs"][0]["ranked"]]

  plain = main(common)
  same = main(common + ["--synthesis_seed", "0"])
  other = main(common + ["--synthesis_seed", "3"])
  assert (plain["seed"], plain["synthesis_seed"], other["seed"], other["synthesis_seed"]) == (0, 0, 0, 3)
  assert scores(same) == scores(plain)
  # The same two programs on the same data, trained from other initial parameters.
  assert sorted(p for p, _ in scores(other)) == sorted(p for p, _ in scores(plain))
  assert dict(scores(other)) != dict(scores(plain))


def test_processes_executors_by_spec_and_a_bad_option_is_named():
  plain, label = synthesis._executor("processes:2x1", None)
  lending, lending_label = synthesis._executor("processes:2x1:lend", None)
  try:
    assert (plain.workers, plain.threads, plain.lend, label) == (2, 1, False, "processes 2x1")
    assert (lending.workers, lending.threads, lending.lend) == (2, 1, True)
    assert lending_label == "processes 2x1 lending"
  finally:
    plain.close()
    lending.close()
  with pytest.raises(SystemExit, match="unknown option 'wide' of executor 'processes:2x1:wide'"):
    synthesis._executor("processes:2x1:wide", None)


def test_the_cheap_schedule_names_its_probe_and_a_bad_one_is_refused():
  from benchmarks.synthesis import _cheap_schedule
  from hx.synth.schedules.cheap_first import CheapFirst

  assert _cheap_schedule("cheap") == CheapFirst() == CheapFirst(probe_steps=80)
  assert _cheap_schedule("cheap:40") == CheapFirst(probe_steps=40)
  assert _cheap_schedule("cheap:40:2") == CheapFirst(probe_steps=40, keep=2)
  assert _cheap_schedule("cheap:40:all") == CheapFirst(probe_steps=40, keep=None)
  assert _cheap_schedule("cheap:40").keep == 3
  assert _cheap_schedule("cheap:40:3:4") == CheapFirst(probe_steps=40, keep=3, eta=4)
  assert _cheap_schedule("cheap:40:all:2") == CheapFirst(probe_steps=40, keep=None, eta=2)
  assert _cheap_schedule("cheap:40:3@2") == CheapFirst(probe_steps=40, keep=3, keep_at=2.0)
  assert _cheap_schedule("cheap:40:3").keep_at == 2 and _cheap_schedule("cheap:40").keep_at == 2
  assert _cheap_schedule("cheap:40:3@probe") == CheapFirst(probe_steps=40, keep=3, keep_at=None)
  assert _cheap_schedule("cheap:40:2@1.5:4") == CheapFirst(probe_steps=40, keep=2, keep_at=1.5, eta=4)
  assert _cheap_schedule("cheap:40:3@2+free") == CheapFirst(probe_steps=40, keep=3, keep_at=2.0, free=True)
  assert _cheap_schedule("cheap+free") == CheapFirst(free=True) and not _cheap_schedule("cheap:40").free
  for name in ("cheap:x", "cheap:0", "cheap:4:0", "cheap:4:2:1", "cheap:4:2:x", "cheap:4:2:4:1",
               "cheap:4:3@0", "cheap:4:3@x", "cheap:4:3+fre", "cheap:4:3+"):
    with pytest.raises(SystemExit, match=rf"schedule '{re.escape(name)}': cheap, cheap:S, cheap:S:K or "
                       "cheap:S:K:ETA"):
      _cheap_schedule(name)


def test_program_types_reads_name_type_pairs_and_refuses_bad_text_with_the_flag():
  from benchmarks.synthesis import program_types
  from hx.lang import parse_type

  assert program_types(None) == {} and program_types(" ") == {}
  assert program_types("nn_1=List<Tensor<real>[50]> -> Tensor<real>[1]; nn_2 = Tensor<real>[1024] -> "
                       "Tensor<real>[50]") == {
      "nn_1": parse_type("List<Tensor<real>[50]> -> Tensor<real>[1]"),
      "nn_2": parse_type("Tensor<real>[1024] -> Tensor<real>[50]")}
  with pytest.raises(SystemExit, match=r"--program_types 'nn_1 List'.*NAME=TYPE"):
    program_types("nn_1 List")
  with pytest.raises(SystemExit, match=r"--program_types 'nn_1=List<'.*nn_1's type 'List<'"):
    program_types("nn_1=List<")


def test_one_program_text_with_two_candidates_is_told_apart_by_its_fresh_types():
  """`compose(nn_1, map_l(compose(nn_2, nn_3)))` on a list-to-number task is two candidates with an empty
  library, one per type between MLP and counter (bool[1] first, real[1] second); --program_types picks."""
  from benchmarks.synthesis import find_candidate, program_types
  from hx.lang import parse_type
  from hx.synth import Library

  task = parse_type("List<Tensor<real>[1][28][28]> -> Tensor<real>[1]")
  text = "compose(nn_1, map_l(compose(nn_2, nn_3)))"
  first_order, first = find_candidate(task, Library(), text)
  assert str(dict(first.types)["nn_2"]) == "Tensor<real>[1024] -> Tensor<bool>[1]"
  real = program_types("nn_2=Tensor<real>[1024] -> Tensor<real>[1]")
  order, cand = find_candidate(task, Library(), text, real)
  assert str(cand.program) == text and order > first_order
  assert str(dict(cand.types)["nn_1"]) == "List<Tensor<real>[1]> -> Tensor<real>[1]"
  assert find_candidate(task, Library(), text, program_types("nn_3=Tensor<real>[1][28][28] -> "
                                                             "Tensor<real>[1024]"))[0] == first_order
  with pytest.raises(SystemExit, match=r"no candidate with fresh types.*nn_1=List<Tensor<bool>\[1\]>"):
    find_candidate(task, Library(), text, program_types("nn_2=Tensor<real>[1024] -> Tensor<real>[7]"))
  with pytest.raises(SystemExit, match="is not among the task's first 50 candidates"):
    find_candidate(task, Library(), "compose(nn_1, nn_2)", limit=50)


@pytest.mark.parametrize("flag", ["--program_types=nn_1=Tensor<real>[1] -> Tensor<real>[1]",
                                  "--program_seeds=1,2"])
def test_the_program_flags_are_refused_without_a_program(flag):
  with pytest.raises(SystemExit, match=rf"{flag.split('=')[0]} .*applies to --program, which is not given"):
    synthesis.main(["--task", "cs1:1", flag])


def test_bad_program_types_are_refused_before_any_data_is_built(monkeypatch):
  """The flag's text is checked first: no MNIST path, no task and no library are needed to refuse it."""
  import hx.data

  monkeypatch.setattr(hx.data, "sequence", lambda *a, **k: pytest.fail("data built before the refusal"))
  with pytest.raises(SystemExit, match=r"--program_types 'nn_1 List'.*NAME=TYPE"):
    synthesis.main(["--task", "cs1:3", "--program", "compose(nn_1, nn_2)", "--program_types", "nn_1 List",
                    "--mnist", "/nonexistent/mnist.pkl.gz"])
