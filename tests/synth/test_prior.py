"""The data-driven prior over library functions (`hx.synth.prior`): the probe's error on exact cases, and
on tasks trained for real, the earlier task a repeat relates to offered first."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np
import pytest

import hx
from hx.compile.values import ListBatch, Split
from hx.evaluation.config import ConfigError
from hx.synth.jsonfiles import jsonable
from hx.synth.prior import offered_library, probe_error, probe_errors, probed_sources, source_scores
from hx.synth.space import SearchSpace


def _split(idx, targets):
  return Split(np.asarray(idx), np.asarray(targets))


def test_features_that_are_the_targets_have_no_error_and_constant_ones_are_the_mean():
  rng = np.random.default_rng(0)
  y = rng.normal(size=(80, 1)).astype(np.float32)
  outputs = np.concatenate([y, y])  # row i and row 80 + i hold example i's target
  train, val = _split(np.arange(40), y[:40]), _split(np.arange(120, 160), y[40:])
  assert probe_error(outputs, train, val, per_element=False, ridge=1e-6) == pytest.approx(0.0, abs=1e-6)
  constant = np.ones((160, 3))
  # No feature varies: the fit is the training mean, exactly the baseline.
  assert probe_error(constant, train, val, per_element=False, ridge=1e-2) == pytest.approx(1.0, abs=1e-12)


def test_a_list_is_probed_by_the_sum_of_its_elements_and_classes_as_one_hot():
  rng = np.random.default_rng(1)
  is_three = (rng.random(50) < 0.4).astype(np.float64)[:, None]  # a probe's output per image
  values = rng.integers(0, 50, (60, 6))
  mask = np.arange(6)[None, :] < rng.integers(1, 7, 60)[:, None]  # real elements first
  counts = (is_three[values, 0] * mask).sum(1, keepdims=True).astype(np.float32)
  train = Split(ListBatch(values[:40], mask[:40]), counts[:40])
  val = Split(ListBatch(values[40:], mask[40:]), counts[40:])
  assert probe_error(is_three, train, val, per_element=False, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)
  # Per element: each list element's own target.
  per = np.where(mask, is_three[values, 0], 0.0)[..., None].astype(np.float32)
  elements = (Split(ListBatch(values[:40], mask[:40]), per[:40]),
              Split(ListBatch(values[40:], mask[40:]), per[40:]))
  assert probe_error(is_three, *elements, per_element=True, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)
  labels = rng.integers(0, 3, 60)
  one_hot = np.eye(3)[labels]
  outputs = np.zeros((60, 3))
  outputs[:] = one_hot  # row i is example i's class as one-hot
  classes = _split(np.arange(40), labels[:40]), _split(np.arange(40, 60), labels[40:])
  assert probe_error(outputs, *classes, per_element=False, ridge=1e-8) == pytest.approx(0.0, abs=1e-6)


def _squares(rng, n):
  x = rng.normal(0, 0.2, (n, 1, 8, 8)).astype(np.float32)
  rows, cols = rng.integers(0, 6, n), rng.integers(0, 6, n)
  for i in range(n):
    x[i, 0, rows[i]:rows[i] + 3, cols[i]:cols[i] + 3] += 1.5
  return x, rows, cols


def _task(name, which, seed):
  """Is the square in the top half ("top") or in the left half ("left") of an 8x8 image."""
  rng = np.random.default_rng(seed)

  def split(n):
    x, rows, cols = _squares(rng, n)
    return x, ((rows if which == "top" else cols) + 1 < 4).astype(np.int64)

  return hx.Task.from_arrays(name, "Tensor<real>[1][8][8] -> Tensor<bool>[1]", split(200), split(100),
                             split(100), training={"epochs": 4, "batch_size": 32})


@pytest.fixture(scope="module")
def two_tasks():
  """The library after "is_top" and "is_left", each one fresh network trained for real."""
  library, config = None, hx.SynthesisConfig(budget=hx.Budget(candidates=1))
  for seed, (name, which) in enumerate([("is_top", "top"), ("is_left", "left")]):
    library = hx.synthesize(_task(name, which, seed), library, config, sequence="sq").library
  return library


def test_a_repeated_task_is_offered_its_earlier_instance_first(two_tasks):
  library = two_tasks
  left_again, top_again = _task("is_left_again", "left", 7), _task("is_top_again", "top", 8)
  scores = source_scores(library, left_again)
  assert scores["sq/is_left"] < 0.5 < scores["sq/is_top"]  # the other task's features predict nothing
  assert offered_library(library, left_again, 1).names == ("nn_sq_2",)
  assert offered_library(library, top_again, 1).names == ("nn_sq_1",)
  offered = offered_library(library, top_again, 1)
  assert offered.counters == library.counters  # names given after it continue the whole library's
  assert offered["nn_sq_1"] == library["nn_sq_1"]
  assert offered_library(library, top_again, None) is library
  with pytest.raises(ValueError, match="at least 1 earlier task"):
    offered_library(library, top_again, 0)


def test_the_offered_functions_are_listed_best_first_and_the_search_tries_them_so(two_tasks):
  from hx.synth.topdown import enumerate_programs

  library = two_tasks
  left_again, top_again = _task("is_left_again", "left", 7), _task("is_top_again", "top", 8)
  assert library.names == ("nn_sq_1", "nn_sq_2")
  # Both tasks offered: the function whose features predict the task comes first, whatever its age.
  assert offered_library(library, left_again, 2).names == ("nn_sq_2", "nn_sq_1")
  assert offered_library(library, top_again, 2).names == ("nn_sq_1", "nn_sq_2")
  errors = probe_errors(library, left_again)
  assert set(errors) == {("nn_sq_1",), ("nn_sq_2",)} and errors[("nn_sq_2",)] < errors[("nn_sq_1",)]

  def first_reused(offered):
    for c in enumerate_programs(left_again.type, offered, space=SearchSpace(order="authors"), limit=8):
      if hx.lang.program.library_names(c.program):
        return hx.lang.program.library_names(c.program)
  assert first_reused(library) == ("nn_sq_1",)  # the library's order: the oldest first
  assert first_reused(offered_library(library, left_again, 2)) == ("nn_sq_2",)


def test_a_bounded_search_extends_the_whole_library_and_says_what_it_was_offered(two_tasks):
  library = two_tasks
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=3), space=SearchSpace(library_tasks=1))
  result = hx.synthesize(_task("is_left_again", "left", 7), library, config, sequence="sq")
  assert result.offered == ("nn_sq_2",)
  used = {n for r in result.entries for n in hx.lang.program.library_names(r.program)}
  assert used <= {"nn_sq_2"}  # nn_sq_1 was not offered
  assert set(library.names) <= set(result.library.names) and len(result.library) > len(library)
  unbounded = hx.synthesize(_task("is_left_again", "left", 7), library,
                            hx.SynthesisConfig(budget=hx.Budget(candidates=1)), sequence="sq")
  assert unbounded.offered is None


def test_inputs_without_an_image_table_are_offered_the_latest_tasks(two_tasks):
  rng = np.random.default_rng(3)
  x = rng.normal(size=(60, 4)).astype(np.float32)
  vectors = hx.Task.from_arrays("vec", "Tensor<real>[4] -> Tensor<real>[1]", (x[:40], x[:40, :1]),
                                (x[40:], x[40:, :1]), (x[40:], x[40:, :1]))
  assert set(source_scores(two_tasks, vectors).values()) == {None}
  assert offered_library(two_tasks, vectors, 1).names == ("nn_sq_2",)  # the latest


def test_the_bound_is_a_search_setting_written_at_its_default_too():
  assert jsonable(SearchSpace())["library_tasks"] is None
  assert jsonable(SearchSpace(library_tasks=8))["library_tasks"] == 8
  for bad in (0, -1, 2.5, True):
    with pytest.raises(ValueError, match="library_tasks must be an integer >= 1"):
      SearchSpace(library_tasks=bad)
  config = hx.EvalConfig.make("cs1", search={"library_tasks": 3, "order": "cost"})
  assert config.space.library_tasks == 3 and config.space.order == "cost"
  with pytest.raises(ConfigError, match="unknown search setting.*the settings are order, authors_filter, "
                                        "library_tasks, probed_tasks"):
    hx.EvalConfig.make("cs1", search={"libary_tasks": 3})
  with pytest.raises(ConfigError, match="search: library_tasks must be"):
    hx.EvalConfig.make("cs1", search={"library_tasks": 0})


def test_the_binary_reads_the_bound_from_its_search_flag():
  from hx.bin.run import parse_search

  assert parse_search("cost,library_tasks=8") == {"order": "cost", "library_tasks": 8}
  assert parse_search(None) == {}
  for bad in ("library_tasks=0", "library_tasks=x"):
    with pytest.raises(ValueError, match="library_tasks=.*expected an integer >= 1"):
      parse_search(bad)


def _grown(programs, outputs=None):
  """A library grown by one task per program (frozen, untrained functions): each program's fresh
  functions are nn_1 (image -> Tensor<bool>[1], or Tensor<bool>[1] -> Tensor<bool>[1] after a library
  function; `outputs[i]` another output type for program i) and may call the earlier tasks' functions."""
  from hx.compile import ModuleConfig, compile_program
  from hx.synth.library import Library, Trained

  config = ModuleConfig(mlp_hidden=8, cnn_channels=(2, 4), lstm_hidden=8)
  library = Library()
  for i, text in enumerate(programs):
    program = hx.lang.parse(text)
    arg = "Tensor<bool>[1]" if hx.lang.program.library_names(program) else "Tensor<real>[1][28][28]"
    out = outputs[i] if outputs else "Tensor<bool>[1]"
    compiled = compile_program(program, {"nn_1": hx.lang.types.parse_type(f"{arg} -> {out}")},
                               config, library.specs())
    variables = compiled.init(jax.random.key(i))
    library = library.add(Trained(compiled, variables), sequence="t", task=f"task_{i + 1}",
                          when="2026-01-01T00:00:00").library
  return library


def test_the_probed_sources_are_those_a_winner_used_most_recently():
  # Task 4's winner calls task 1's function: task 1 was used at task 4, after tasks 2 and 3.
  library = _grown(["nn_1", "nn_1", "nn_1", "compose(nn_1, lib.nn_t_1)", "nn_1"])
  assert probed_sources(library, 3) == {"t/task_5", "t/task_4", "t/task_1"}
  assert probed_sources(library, 2) == {"t/task_5", "t/task_4"}  # equal last use: the later first
  assert probed_sources(library, None) == probed_sources(library, 5) == {f"t/task_{i}" for i in range(1, 6)}


def test_half_the_probed_sources_have_the_new_tasks_type():
  # Task 1 recognizes (-> Tensor<bool>[1]); tasks 2-5 classify (-> Tensor<bool>[5]), used later.
  five = "Tensor<bool>[5]"
  library = _grown(["nn_1"] * 5, ["Tensor<bool>[1]", five, five, five, five])
  recognize = hx.lang.types.parse_type("Tensor<real>[1][28][28] -> Tensor<bool>[1]")
  classify = hx.lang.types.parse_type(f"Tensor<real>[1][28][28] -> {five}")
  assert probed_sources(library, 2) == {"t/task_5", "t/task_4"}
  # A repeat of task 1 probes it, however long ago it was used, and the most recent other task.
  assert probed_sources(library, 2, recognize) == {"t/task_1", "t/task_5"}
  assert probed_sources(library, 3, recognize) == {"t/task_1", "t/task_5", "t/task_4"}
  assert probed_sources(library, 2, classify) == {"t/task_5", "t/task_4"}
  assert probed_sources(library, None, recognize) == {f"t/task_{i}" for i in range(1, 6)}


def test_a_retired_source_is_not_probed_and_is_offered_after_the_probed_ones(two_tasks):
  library = two_tasks
  top_again = _task("is_top_again", "top", 8)
  # Probing only the latest task: is_top (the one that predicts the task) is retired, not scored.
  assert source_scores(library, top_again, only=probed_sources(library, 1))["sq/is_top"] is None
  assert offered_library(library, top_again, 1, probed=1).names == ("nn_sq_2",)
  assert offered_library(library, top_again, 1, probed=2).names == ("nn_sq_1",)
  with pytest.raises(ValueError, match="must probe at least the 1 earlier tasks"):
    offered_library(library, top_again, 1, probed=0)


def test_the_probe_bound_is_a_search_setting():
  from hx.bin.run import parse_search

  assert jsonable(SearchSpace(library_tasks=8))["probed_tasks"] is None
  assert jsonable(SearchSpace(library_tasks=8, probed_tasks=24))["probed_tasks"] == 24
  for bad in (4, 0, 2.5, True):
    with pytest.raises(ValueError, match="probed_tasks must be an integer >= library_tasks"):
      SearchSpace(library_tasks=8, probed_tasks=bad)
  config = hx.EvalConfig.make("cs1", search={"library_tasks": 3, "probed_tasks": 6})
  assert config.space.probed_tasks == 6
  assert parse_search("library_tasks=8,probed_tasks=24") == {"library_tasks": 8, "probed_tasks": 24}
  with pytest.raises(ValueError, match="probed_tasks=x: expected an integer >= 1"):
    parse_search("probed_tasks=x")



def test_a_list_task_probes_image_level_programs_and_every_function_of_a_probe_is_ranked_by_it():
  from hx.data import Sources
  from hx.presets import STREAM_PRESETS

  # Task 1 recognizes from its own CNN; task 2 reads task 1's CNN output through a layer of its own.
  library = _grown(["nn_1", "compose(nn_1, lib.nn_t_1)", "nn_1"])
  count = STREAM_PRESETS["small"].stream(0, 4, Sources()).instance(0).build(3)  # count_digit(7): a list task
  assert str(count.type).startswith("List<Tensor<real>[1][28][28]>")
  errors = probe_errors(library, count)
  # Image-level sources probe a list task element by element (their whole program is the per-image part).
  assert set(errors) == {("nn_t_1",), ("nn_t_2", "nn_t_1"), ("nn_t_3",)}
  offered = offered_library(library, count, 3)
  position = {n: i for i, n in enumerate(library.names)}
  best = {n: min(e for run, e in errors.items() if n in run) for n in library.names}
  assert offered.names == tuple(sorted(library.names, key=lambda n: (best[n], position[n])))
  # nn_t_1 ranks by the better of its own probe and the run through task 2's layer.
  assert best["nn_t_1"] == min(errors[("nn_t_1",)], errors[("nn_t_2", "nn_t_1")])


def test_earlier_programs_of_the_tasks_type_are_reused_as_they_are_and_with_one_function_fresh():
  from hx.compile import ModuleConfig
  from hx.data import Sources
  from hx.presets import STREAM_PRESETS
  from hx.synth.prior import offer, one_fresh, reused_programs
  from hx.synth.space import Completer

  # Task 2's program reads task 1's CNN through a layer of its own; task 3 is a lone network; task 4
  # classifies into five (another type).
  library = _grown(["nn_1", "compose(nn_1, lib.nn_t_1)", "nn_1", "nn_1"],
                   ["Tensor<bool>[1]"] * 3 + ["Tensor<bool>[5]"])
  recognize = STREAM_PRESETS["small"].stream(0, 4, Sources()).instance(0).build(1)  # recognize_digit(7)
  prior = offer(library, recognize, 4)
  assert sorted(prior.sources) == ["t/task_1", "t/task_2", "t/task_3", "t/task_4"]
  config = ModuleConfig(mlp_hidden=8, cnn_channels=(2, 4), lstm_hidden=8)
  completer = Completer(prior.library, SearchSpace(), config)
  ranked = prior._replace(sources=("t/task_4", "t/task_2", "t/task_1", "t/task_3"))
  # In the prior's order, those of the task's type only, nothing fresh.
  assert [str(c) for c in reused_programs(ranked, recognize.type, 4, completer)] == [
      "compose(lib.nn_t_2, lib.nn_t_1)", "lib.nn_t_1", "lib.nn_t_3"]
  assert [str(c) for c in reused_programs(ranked, recognize.type, 2, completer)] == [
      "compose(lib.nn_t_2, lib.nn_t_1)", "lib.nn_t_1"]
  two = hx.lang.parse("compose(lib.nn_t_2, lib.nn_t_1)")
  assert [str(c) for c in one_fresh(two, recognize.type, completer)] == [
      "compose(nn_1, lib.nn_t_1)  [nn_1 : Tensor<bool>[1] -> Tensor<bool>[1]]",
      "compose(lib.nn_t_2, nn_1)  [nn_1 : Tensor<real>[1][28][28] -> Tensor<bool>[1]]"]
  assert [str(c) for c in one_fresh(hx.lang.parse("lib.nn_t_3"), recognize.type, completer)] == [
      "nn_1  [nn_1 : Tensor<real>[1][28][28] -> Tensor<bool>[1]]"]
  # A count task's type is none of these programs': nothing to reuse as it is.
  count = STREAM_PRESETS["small"].stream(0, 4, Sources()).instance(0).build(3)
  assert reused_programs(offer(library, count, 4), count.type, 4, completer) == []


def test_a_search_scores_earlier_programs_as_they_are_then_trains_the_best_with_one_function_fresh(two_tasks):
  library = two_tasks
  space = SearchSpace(library_tasks=2, reused_programs=2)
  result = hx.synthesize(_task("is_left_again", "left", 7), library,
                         hx.SynthesisConfig(budget=hx.Budget(candidates=2), space=space), sequence="sq")
  ranked = sorted(result.entries, key=lambda r: r.order)
  # Both earlier programs as they are (nothing trained, on top of the budget), is_left's (it predicts
  # its repeat, is_top's not) with its network fresh, then the enumeration's first not seen (by size:
  # a fresh network, then the library's, then a CNN and an MLP).
  assert [str(r.program) for r in ranked] == ["lib.nn_sq_2", "lib.nn_sq_1", "nn_1",
                                              "compose(nn_1, nn_2)"]
  assert ranked[0].val_score < ranked[1].val_score
  assert result.candidates_trained == 4
  with pytest.raises(ValueError, match="reused_programs proposes earlier programs before the top-down"):
    hx.SynthesisConfig(strategy=hx.synth.Evolutionary(), space=space)


def test_within_the_reuse_tolerance_the_fewest_fresh_functions_win(two_tasks):
  library, task = two_tasks, _task("is_left_again", "left", 7)
  budget = hx.Budget(candidates=2)
  strict = hx.synthesize(task, library, hx.SynthesisConfig(
      budget=budget, space=SearchSpace(library_tasks=2, reused_programs=1)), sequence="sq")
  best = min(r.val_score for r in strict.trained)
  assert strict.best.val_score == best and strict.best.fresh_types  # is_left's network afresh wins
  assert len(strict.library) == len(library) + 1
  # The earlier network as it is trains nothing: within a wide tolerance it wins, the library unchanged.
  loose_space = SearchSpace(library_tasks=2, reused_programs=1, reuse_tolerance=10.0)
  loose = hx.synthesize(task, library, hx.SynthesisConfig(budget=budget, space=loose_space), sequence="sq")
  assert str(loose.best.program) == "lib.nn_sq_2" and loose.best.rank == 1
  assert best < loose.best.val_score <= best * 11
  assert loose.library.names == library.names
  # The others keep their order by validation score.
  rest = [r.val_score for r in loose.trained[1:]]
  assert rest == sorted(rest)


def test_reused_programs_is_a_search_setting_that_needs_the_prior():
  from hx.bin.run import parse_search

  assert jsonable(SearchSpace(library_tasks=8))["reused_programs"] == 0
  assert jsonable(SearchSpace(library_tasks=8, reused_programs=1))["reused_programs"] == 1
  for bad in (-1, 1.5, True):
    with pytest.raises(ValueError, match="reused_programs must be an integer >= 0"):
      SearchSpace(library_tasks=8, reused_programs=bad)
  with pytest.raises(ValueError, match="reused_programs needs library_tasks"):
    SearchSpace(reused_programs=1)
  config = hx.EvalConfig.make("cs1", search={"library_tasks": 3, "reused_programs": 2})
  assert config.space.reused_programs == 2
  assert parse_search("library_tasks=8,reused_programs=1") == {"library_tasks": 8, "reused_programs": 1}
  with pytest.raises(ValueError, match="reused_programs=x: expected an integer >= 0"):
    parse_search("reused_programs=x")


def test_within_standard_errors_of_the_best_the_fewest_fresh_functions_win(two_tasks):
  from hx.compile.losses import standard_error

  library, task = two_tasks, _task("is_left_again", "left", 7)
  budget, space = hx.Budget(candidates=2), SearchSpace(library_tasks=2, reused_programs=1)
  config = hx.SynthesisConfig(budget=budget, space=space)
  strict = hx.synthesize(task, library, config, sequence="sq")
  best = strict.best.val_score
  as_is = next(r.val_score for r in strict.trained if str(r.program) == "lib.nn_sq_2")
  assert as_is > best and strict.best.fresh_types
  # How many standard errors of the best score (100 validation examples) the earlier network is away.
  k = (as_is - best) / standard_error("error", best, 100)
  wide = hx.synthesize(task, library, dataclasses.replace(
      config, space=dataclasses.replace(space, reuse_standard_errors=k * 1.01)), sequence="sq")
  assert str(wide.best.program) == "lib.nn_sq_2" and wide.library.names == library.names
  narrow = hx.synthesize(task, library, dataclasses.replace(
      config, space=dataclasses.replace(space, reuse_standard_errors=k * 0.99)), sequence="sq")
  assert str(narrow.best.program) == str(strict.best.program)


@pytest.mark.parametrize("name", ["reuse_tolerance", "reuse_standard_errors"])
def test_the_winner_rules_margins_are_search_settings_of_numbers_at_least_0(name):
  from hx.bin.run import parse_search

  assert jsonable(SearchSpace())[name] == 0.0
  assert jsonable(SearchSpace(**{name: 0.1}))[name] == 0.1
  for bad in (-0.1, math.inf, True, "0.1"):
    with pytest.raises(ValueError, match=f"{name} must be a number >= 0"):
      SearchSpace(**{name: bad})
  assert parse_search(f"{name}=2") == {name: 2.0}
  for bad in ("x", "-1", "inf"):
    with pytest.raises(ValueError, match=f"{name}={bad}: expected a number >= 0"):
      parse_search(f"{name}={bad}")
  assert getattr(hx.EvalConfig.make("cs1", search={name: 0.2}).space, name) == 0.2
  with pytest.raises(ConfigError, match=f"search: {name} must be a number >= 0, got -1"):
    hx.EvalConfig.make("cs1", search={name: -1})
