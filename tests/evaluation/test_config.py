"""The presets per sequence: module sizes (`Preset.modules`), search spaces and budgets."""

from __future__ import annotations

import dataclasses

import pytest

from hx.compile import compile_program
from hx.compile.modules import ModuleConfig
from hx.evaluation.config import ConfigError, EvalConfig
from hx.lang.parser import parse
from hx.lang.types import parse_type
from hx.presets import EVALUATION_PRESETS
from hx.synth.space import SearchSpace

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
