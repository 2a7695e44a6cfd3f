"""The output bias started at the training targets' mean (`TuneConfig.bias_from_targets`), on compiled
programs: which programs it applies to (`CompiledProgram.output_slot`), what Tune starts from, and that
it is what makes a regression onto large targets learn within its first epoch."""

from __future__ import annotations

import dataclasses

import chex
import jax
import numpy as np
import pytest

from hx.compile.losses import Objective
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig
from hx.compile.tuning import TuneConfig, TuneData, initial_variables, output_bias_from_targets, tune
from hx.compile.values import Split
from hx.lang.parser import parse
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import CFG, IMG, spec

MSE = Objective("mse", "rmse")
REAL2 = "Tensor<real>[2]"


def _compiled(text: str, types: dict[str, str], library: dict[str, str] | None = None,
              config: ModuleConfig = CFG):
  return compile_program(parse(text), {k: parse_type(v) for k, v in types.items()}, config,
                         {k: spec(v) for k, v in (library or {}).items()})


@pytest.mark.parametrize("text, types, library, name", [
  ("nn_1", {"nn_1": f"{IMG} -> {REAL2}"}, None, "nn_1"),
  ("compose(nn_a, map_l(compose(nn_b, nn_c)))",
   {"nn_a": "List<Tensor<real>[1]> -> Tensor<real>[1]", "nn_b": "Tensor<real>[4] -> Tensor<real>[1]",
    "nn_c": f"{IMG} -> Tensor<real>[4]"}, None, "nn_a"),
  ("compose(nn_a, nn_b)", {"nn_a": "Tensor<real>[3] -> Tensor<real>[1]", "nn_b": f"{IMG} -> Tensor<real>[3]"},
   None, "nn_a"),
  # Nested compositions: the module applied last is nn_b's, after a library function.
  ("compose(compose(nn_b, nn_a), lib.f)",
   {"nn_a": "Tensor<real>[3] -> Tensor<real>[4]", "nn_b": "Tensor<real>[4] -> Tensor<real>[1]"},
   {"f": f"{IMG} -> Tensor<real>[3]"}, "nn_b"),
])
def test_output_slot_is_the_fresh_module_applied_last(text, types, library, name):
  compiled = _compiled(text, types, library)
  # The module applied last is the leftmost of the compose chain, hence always the first fresh slot.
  slot = compiled.output_slot
  assert slot == 0 and compiled.fresh_slots[slot] == name
  assert "out" in compiled.init(jax.random.key(0))["params"][slot]
  assert compiled.specs[name].activation == "none"


@pytest.mark.parametrize("text, types, library", [
  # A library function at the output: nothing of it trains.
  ("compose(lib.f, nn_a)", {"nn_a": f"{IMG} -> Tensor<real>[3]"},
   {"f": "Tensor<real>[3] -> Tensor<real>[1]"}),
  # An output activation (a classifier): its bias is not on the targets' scale.
  ("nn_1", {"nn_1": f"{IMG} -> Tensor<bool>[1]"}, None),
  # A list output (one value per element).
  ("map_l(nn_1)", {"nn_1": "Tensor<real>[3] -> Tensor<real>[1]"}, None),
  # A CNN whose output is its features: no output layer.
  ("nn_1", {"nn_1": f"{IMG} -> Tensor<real>[8]"}, None),
  # A fold at the output: its state, not a module's output layer.
  ("fold_l(nn_1, zeros(1))", {"nn_1": "Tensor<real>[1] -> Tensor<real>[1] -> Tensor<real>[1]"}, None),
])
def test_no_output_slot(text, types, library):
  assert _compiled(text, types, library).output_slot is None


def _image_regression(offset: tuple[float, float], n: int = 240, seed: int = 0) -> TuneData:
  """12x12 images whose target is (mean pixel, 2 x max pixel) plus `offset`; no table."""
  rng = np.random.default_rng(seed)

  def split(m):
    x = rng.uniform(0, 1, size=(m, 1, 12, 12)).astype(np.float32)
    t = np.stack([x.mean((1, 2, 3)), 2 * x.max((1, 2, 3))], 1) + np.asarray(offset, np.float32)
    return Split(x, t.astype(np.float32))
  return TuneData(split(n), split(60), split(60))


def test_tune_starts_from_the_targets_mean():
  compiled = _compiled("nn_1", {"nn_1": f"{IMG} -> {REAL2}"})
  data = _image_regression((3.0, 50.0))
  config = TuneConfig(epochs=0, batch_size=20)
  mean = np.asarray(data.train.targets, np.float64).mean(0)
  start = initial_variables(compiled, config, MSE, data.train.targets)
  np.testing.assert_allclose(np.asarray(start["params"][0]["out"]["b"]), mean, rtol=1e-6)
  # Nothing else moves: the other parameters are `compiled.init`'s with Tune's key.
  plain = initial_variables(compiled, config)
  np.testing.assert_array_equal(np.asarray(plain["params"][0]["out"]["b"]), np.zeros(2, np.float32))
  chex.assert_trees_all_equal(start["params"][0]["convs"], plain["params"][0]["convs"])
  np.testing.assert_array_equal(np.asarray(start["params"][0]["out"]["w"]),
                                np.asarray(plain["params"][0]["out"]["w"]))
  # tune (0 epochs: it reports what it starts from) starts there; with the option off, from zeros.
  r = tune(compiled, (), data, MSE, config)
  np.testing.assert_allclose(np.asarray(r.variables["params"][0]["out"]["b"]), mean, rtol=1e-6)
  off = tune(compiled, (), data, MSE, dataclasses.replace(config, bias_from_targets=False))
  np.testing.assert_array_equal(np.asarray(off.variables["params"][0]["out"]["b"]), np.zeros(2))


def test_untouched_where_it_does_not_apply():
  compiled = _compiled("nn_1", {"nn_1": f"{IMG} -> {REAL2}"})
  data = _image_regression((3.0, 50.0))
  variables = compiled.init(jax.random.key(0))
  for objective in (Objective("bce", "error"), Objective("mse", "rmse", per_element=True)):
    assert output_bias_from_targets(compiled, variables, objective, data.train.targets) is variables
  # Targets of another size than the output.
  assert output_bias_from_targets(compiled, variables, MSE, np.zeros((5, 3), np.float32)) is variables
  # Targets that are not one array (a pytree).
  assert output_bias_from_targets(compiled, variables, MSE, (data.train.targets,)) is variables
  mapped = _compiled("map_l(nn_1)", {"nn_1": "Tensor<real>[3] -> Tensor<real>[1]"})
  values = mapped.init(jax.random.key(0))
  assert output_bias_from_targets(mapped, values, MSE, np.ones((4, 5, 1), np.float32)) is values


def test_targets_far_from_zero_are_learnt_in_the_first_epoch():
  """Targets around (3, 50): from a zero bias, Adam (1e-3) walks ~0.001 a step and one epoch of 12 steps
  leaves the RMSE near the offset's 35; from the mean it starts at the spread of the targets (< 1)."""
  compiled = _compiled("nn_1", {"nn_1": f"{IMG} -> {REAL2}"},
                       config=dataclasses.replace(CFG, cnn_dropout=0.0))
  data = _image_regression((3.0, 50.0))
  config = TuneConfig(epochs=1, batch_size=20)
  on = tune(compiled, (), data, MSE, config)
  off = tune(compiled, (), data, MSE, dataclasses.replace(config, bias_from_targets=False))
  assert on.test_score < 1.0
  assert off.test_score > 30.0


def test_a_list_program_starts_its_head_at_the_mean_count():
  compiled = _compiled("compose(nn_a, map_l(nn_b))",
                       {"nn_a": "List<Tensor<real>[1]> -> Tensor<real>[1]",
                        "nn_b": "Tensor<real>[3] -> Tensor<real>[1]"})
  rng = np.random.default_rng(0)
  mask = np.arange(5)[None, :] < rng.integers(2, 6, size=(40, 1))
  targets = (10.0 + mask.sum(1, keepdims=True)).astype(np.float32)
  start = initial_variables(compiled, TuneConfig(), MSE, targets)
  assert compiled.output_slot == 0
  np.testing.assert_allclose(np.asarray(start["params"][0]["out"]["b"]), [targets.mean()], rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(start["params"][1]["out"]["b"]), [0.0])
