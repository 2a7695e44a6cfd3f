"""The presets' module sizes per sequence (`Preset.modules`)."""

from __future__ import annotations

import dataclasses

import pytest

from hx.compile import compile_program
from hx.compile.modules import ModuleConfig
from hx.evaluation.config import PRESETS, ConfigError, EvalConfig
from hx.lang.parser import parse
from hx.lang.types import parse_type

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


def test_other_sequences_and_presets_keep_their_sizes_and_the_caller_has_the_last_word():
  assert EvalConfig.make("cs1", preset="paper").module_config == ModuleConfig()
  assert EvalConfig.make("gs2", preset="quick").module_config == PRESETS["quick"].module_config
  c = EvalConfig.make("gs2", preset="paper", module_overrides={"graph_kernel": "pairs", "graph_keep": 0})
  assert (c.module_config.graph_kernel, c.module_config.graph_keep) == ("pairs", 0)
  with pytest.raises(ConfigError, match="graph_keep"):
    EvalConfig.make("gs2", preset="paper", module_overrides={"graph_keep": -1})
