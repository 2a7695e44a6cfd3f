"""The presets per sequence: module sizes (`Preset.modules`), search spaces and budgets; HOUDINI's
strategies as objects, one method each, and what each refuses; a caller's budget and training changes."""

from __future__ import annotations

import dataclasses

import pytest

from hx.compile import compile_program
from hx.compile.modules import ModuleConfig
from hx.evaluation.config import ConfigError, EvalConfig
from hx.lang.parser import parse
from hx.lang.types import parse_type
from hx.presets import EVALUATION_PRESETS
from hx.synth.config import Budget
from hx.synth.evolution import EvolutionConfig
from hx.synth.schedules import Halving
from hx.synth.space import SearchSpace
from hx.synth.strategies import Evolutionary, TopDown

IMAGE = "Tensor<real>[3][28][28]"
STATE = "Tensor<real>[2]"


@pytest.mark.parametrize("sequence", ["gs1", "gs2"])
def test_the_paper_preset_gives_the_graph_sequences_the_authors_grid_kernel(sequence):
  c = EvalConfig.make(sequence, preset="paper").module_config
  assert c == dataclasses.replace(ModuleConfig(), graph_kernel="slots", graph_update="replace", graph_keep=1)
  assert (c.graph_slot_hidden, c.graph_slot_layers, c.graph_slots) == (100, 5, 5)
  # GS2 task 2's program: its relaxation is a slot kernel that passes the cost through.
  program = parse("compose(repeat(10, conv_g(nn_1)), map_g(nn_2))")
  fresh = {"nn_1": parse_type(f"List<{STATE}> -> {STATE}"), "nn_2": parse_type(f"{IMAGE} -> {STATE}")}
  spec = compile_program(program, fresh, c, {}).specs["nn_1"]
  assert spec.template == "slot_kernel" and dict(spec.hyper)["keep"] == 1


def test_the_quick_preset_widens_ss_modules_only_and_the_caller_has_the_last_word():
  quick = EVALUATION_PRESETS["quick"].module_config
  ss = EvalConfig.make("ss", preset="quick").module_config
  assert ss == dataclasses.replace(quick, mlp_hidden=256, lstm_hidden=100)
  assert (quick.mlp_hidden, quick.lstm_hidden) == (64, 32)
  for sequence in ("cs1", "cs2", "cs3", "ls"):
    assert EvalConfig.make(sequence, preset="quick").module_config == quick
  assert EvalConfig.make("ss", preset="paper").module_config == ModuleConfig()
  mine = EvalConfig.make("ss", preset="quick", module_overrides={"lstm_hidden": 8}).module_config
  assert (mine.mlp_hidden, mine.lstm_hidden) == (256, 8)


def test_other_sequences_and_presets_keep_their_sizes_and_the_caller_has_the_last_word():
  assert EvalConfig.make("cs1", preset="paper").module_config == ModuleConfig()
  assert EvalConfig.make("gs2", preset="quick").module_config == EVALUATION_PRESETS["quick"].module_config
  c = EvalConfig.make("gs2", preset="paper", module_overrides={"graph_kernel": "pairs", "graph_keep": 0})
  assert (c.module_config.graph_kernel, c.module_config.graph_keep) == ("pairs", 0)
  with pytest.raises(ConfigError, match="graph_keep"):
    EvalConfig.make("gs2", preset="paper", module_overrides={"graph_keep": -1})


def test_the_quick_preset_searches_the_graph_sequences_as_the_paper_preset_does():
  from hx.evaluation.paper import rank1_positions
  from hx.synth import paper_space

  for sequence in ("gs1", "gs2"):
    c = EvalConfig.make(sequence, preset="quick")
    assert c.space == paper_space(graphs=True) and {b.candidates for b in c.budgets} == {30}
  cs1 = EvalConfig.make("cs1", preset="quick")
  assert cs1.space.order == "cost" and not cs1.space.authors_filter
  assert {b.candidates for b in cs1.budgets} == {4}
  # Within its budgets, every rank-1 program of the paper's graph tables (at the paper's module sizes,
  # whose types the paper's programs have): a graph convolution over the regressor's outputs, where the
  # cost order's first four candidates are per-cell networks (map_g).
  quick = EvalConfig.make("gs2", preset="quick")
  positions = list(rank1_positions("paper", space=quick.space, tables=["tab:GS1Progs", "tab:GS2Progs"]))
  assert len(positions) == 5 and all(p.position <= quick.budgets[1].candidates for p in positions), positions
  first = list(rank1_positions("paper", space=SearchSpace(order="cost"), tables=["tab:GS2Progs"]))
  assert first[1].position > 4 and first[2].position > 4


def test_each_strategy_object_is_a_houdini_method_with_its_settings():
  small = Evolutionary(EvolutionConfig(population=4, generations=2))
  c = EvalConfig.make("cs1", methods=[small, TopDown(), "llt"])
  assert c.methods == ("houdini_evolutionary", "houdini_topdown", "llt")
  assert c.strategies == (small, TopDown())
  assert c.strategy("houdini_evolutionary") is small and c.strategy("houdini_topdown") == TopDown()
  assert EvalConfig.make("cs1").strategies == (TopDown(),)
  # "houdini" is the top-down search; a strategy object beside it is HOUDINI once more.
  named = EvalConfig.make("cs1", methods=["llt", "houdini", Evolutionary()])
  assert named.methods == ("houdini_topdown", "houdini_evolutionary", "llt")
  assert named.strategies == (TopDown(), Evolutionary())
  assert EvalConfig.make("cs1", methods=["houdini", "llt"]).strategies == (TopDown(),)
  assert EvalConfig.make("cs1", methods=["llt"]).strategies == (TopDown(),)  # as before: no HOUDINI run


@pytest.mark.parametrize("methods, message", [
    (("topdown",), "unknown method 'topdown'; the methods are houdini, standalone, llt, pnn, "
                   "standalone_with_fold, replay, ewc, or HOUDINI's strategy objects (hx.synth.TopDown(), "
                   "hx.synth.Evolutionary(...))"),
    ((TopDown, "llt"), "methods: strategy must be a strategy object, hx.synth.TopDown() or "
                       "hx.synth.Evolutionary(...), got <class 'hx.synth.strategies.TopDown'>"),
    ((), "methods is empty: give at least one, or None for the default"),
    ((TopDown(), TopDown()), "a strategy is named twice in topdown, topdown: each is the method "
                             "houdini_<name>"),
    (("houdini", TopDown()), "a strategy is named twice in topdown, topdown: each is the method "
                             "houdini_<name>"),
    (("houdini", "houdini"), "a method is named twice in houdini, houdini"),
])
def test_strategies_that_are_no_objects_or_twice_the_same_method_are_refused(methods, message):
  with pytest.raises(ConfigError) as err:
    EvalConfig.make("cs1", methods=methods)
  assert str(err.value) == message


def test_the_evolutionary_strategys_own_check_refuses_a_schedule_and_reused_programs():
  with pytest.raises(ConfigError) as err:
    EvalConfig.make("cs1", methods=[TopDown(), Evolutionary()], budget={"schedule": Halving()})
  assert str(err.value) == ("a schedule (Halving) is for the top-down strategy; the evolutionary one scores "
                            "each generation to the end")
  with pytest.raises(ConfigError, match="SearchSpace.reused_programs proposes earlier programs"):
    EvalConfig.make("cs1", methods=[Evolutionary()], search={"library_tasks": 2, "reused_programs": 1})
  EvalConfig.make("cs1", methods=[TopDown()], budget={"schedule": Halving()},
                  search={"library_tasks": 2, "reused_programs": 1})


def test_the_settings_write_a_strategys_own_settings_only_where_they_are_not_its_defaults():
  from hx.evaluation.runner import settings_json

  plain = settings_json(EvalConfig.make("cs1", methods=[TopDown(), Evolutionary()]))
  assert plain["methods"] == ["houdini_topdown", "houdini_evolutionary"]
  assert "strategies" not in plain and "strategy_settings" not in plain  # as runs wrote them before
  small = EvolutionConfig(population=4, generations=2)
  changed = settings_json(EvalConfig.make("cs1", methods=[Evolutionary(small)]))
  assert changed["strategy_settings"] == {"evolutionary": {"config": {
      "population": 4, "generations": 2, "crossover_rate": 0.5, "mutation_rate": 0.3, "tries": 20}}}
  assert {k: changed[k] for k in changed if k not in ("strategy_settings", "methods")} == {
      k: plain[k] for k in plain if k != "methods"}


def test_a_budget_given_is_every_tasks_and_its_changes_keep_the_presets_candidates():
  # The paper preset's SS trains 10 candidates on task 1 and 100 on task 2 (the sequence's default: 20).
  assert EvalConfig.make("ss", preset="paper").budgets == (Budget(candidates=10), Budget(candidates=100))
  whole = Budget(candidates=5, seconds=30.0, schedule=Halving(eta=3))
  c = EvalConfig.make("ss", preset="paper", budget=whole)
  assert c.budget == whole and c.budgets == (whole, whole)
  assert EvalConfig.make("ss", preset="paper", budget=Budget(candidates=None)).budgets == (
      Budget(candidates=None), Budget(candidates=None))  # no limit
  changed = EvalConfig.make("ss", preset="paper", budget={"seconds": 30.0, "schedule": Halving(eta=3)})
  assert changed.budget == Budget(candidates=20, seconds=30.0, schedule=Halving(eta=3))
  assert changed.budgets == (Budget(candidates=10, seconds=30.0, schedule=Halving(eta=3)),
                             Budget(candidates=100, seconds=30.0, schedule=Halving(eta=3)))
  assert EvalConfig.make("ss", preset="paper", budget={"candidates": 7}).budgets == (
      Budget(candidates=7), Budget(candidates=7))


@pytest.mark.parametrize("budget, message", [
    ({"candidate": 3}, "unknown budget setting(s) candidate; the settings are candidates, enumerated, "
                       "seconds, schedule"),
    ({"seconds": 0}, "Budget.seconds must be positive or None, got 0"),
    ({"schedule": "halving"}, "Budget.schedule must be a schedule of hx.synth.schedules (ToEnd, Halving, "
                              "CheapFirst, Estimate) or None, got 'halving'"),
])
def test_a_budget_setting_that_cannot_work_is_refused_naming_it(budget, message):
  with pytest.raises(ConfigError) as err:
    EvalConfig.make("cs1", budget=budget)
  assert str(err.value) == message


def test_the_training_changes_reach_every_kinds_tune_config():
  kinds = dict(EvalConfig.make("gs2").tune_configs)
  assert len(kinds) == 3 and len({c.epochs for c in kinds.values()}) > 1  # the preset's differ by kind
  c = EvalConfig.make("gs2", training={"epochs": 2})
  assert {k: t.epochs for k, t in c.tune_configs} == dict.fromkeys(kinds, 2)
  assert {k: dataclasses.replace(t, epochs=2, min_steps=0) for k, t in kinds.items()} == dict(c.tune_configs)
  all_of_them = dict(EvalConfig.make("cs1", training={
      "epochs": 3, "batch_size": 16, "learning_rate": 0.01, "patience": 2, "bias_from_targets": False,
  }).tune_configs)
  assert set(all_of_them) == {"count_digit", "recognize_digit"}
  for t in all_of_them.values():
    assert (t.epochs, t.batch_size, t.learning_rate, t.patience, t.bias_from_targets) == (
        3, 16, 0.01, 2, False)
  # None leaves a setting as the preset has it.
  unchanged = EvalConfig.make("cs1", training={"patience": None})
  assert unchanged.tune_configs == EvalConfig.make("cs1").tune_configs


@pytest.mark.parametrize("training, message", [
    ({"epoch": 2}, "unknown training setting(s) epoch; the settings are epochs, batch_size, learning_rate, "
                   "patience, bias_from_targets"),
    ({"epochs": 2, "min_steps": 1, "lr": 0.1}, "unknown training setting(s) lr, min_steps; the settings "
                                                "are epochs, batch_size, learning_rate, patience, "
                                                "bias_from_targets"),
    ({"epochs": 0}, "epochs must be >= 1, got 0"),
    ({"patience": 0}, "patience must be >= 1, got 0"),
    ({"epochs": 2.5}, "training: epochs must be an integer, got 2.5"),
    ({"bias_from_targets": 0}, "training: bias_from_targets must be True or False, got 0"),
    ({"batch_size": 0}, "task 'count_digit(1)': training settings: TuneConfig.batch_size must be >= 1, "
                        "got 0"),
    ({"learning_rate": -1.0}, "task 'count_digit(1)': training settings: TuneConfig.learning_rate must be "
                              ">= 0, got -1.0"),
])
def test_a_training_setting_that_cannot_work_is_refused_naming_it(training, message):
  with pytest.raises(ConfigError) as err:
    EvalConfig.make("cs1", training=training)
  assert str(err.value) == message
