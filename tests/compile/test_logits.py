"""Cross-entropies from logits: terminal module calls, `apply(logits=True)`, exact gradients for confident
mistakes, and Tune choosing logits for a compiled program."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.losses import Objective, item_loss, item_metric
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig
from hx.compile.tuning import TuneConfig, TuneData, resolve_objective, tune
from hx.compile.values import ListBatch, Split
from hx.lang import program as P
from hx.lang.parser import parse
from hx.lang.types import parse_type

F = P.Fresh
CFG = ModuleConfig(mlp_hidden=8, mlp_dropout=0.0, lstm_hidden=4, graph_hidden=4, graph_message=2)
R4, B1, B3 = "Tensor<real>[4]", "Tensor<bool>[1]", "Tensor<bool>[3]"


def _compile(text: str, fresh: dict[str, str]):
  return compile_program(parse(text), {n: parse_type(t) for n, t in fresh.items()}, CFG)


def _jit_apply(cp):
  """cp.apply jitted (eager application runs op by op: seconds per call)."""
  return jax.jit(cp.apply, static_argnames=("train", "logits"))


@pytest.mark.parametrize("text, fresh, activation", [
    ("nn_a", {"nn_a": f"{R4} -> {B1}"}, "sigmoid"),
    ("nn_a", {"nn_a": f"{R4} -> {B3}"}, "softmax"),
    ("nn_a", {"nn_a": f"{R4} -> Tensor<real>[1]"}, "none"),
    ("compose(nn_a, nn_b)", {"nn_a": f"{B1} -> {B1}", "nn_b": f"{R4} -> {B1}"}, "sigmoid"),
    # The LSTM at the root is terminal; the MLPs mapped over the list are not.
    ("compose(nn_a, map_l(nn_b))", {"nn_a": f"List<{B1}> -> {B1}", "nn_b": f"{R4} -> {B1}"}, "sigmoid"),
    ("map_l(nn_b)", {"nn_b": f"{R4} -> {B1}"}, "sigmoid"),
    ("repeat(1, conv_g(nn_k))", {"nn_k": f"List<{B1}> -> {B1}"}, "sigmoid"),
    # Inside repeat k > 1 a call's output feeds the next iteration: never terminal.
    ("compose(repeat(3, conv_g(nn_k)), map_g(nn_b))", {"nn_k": f"List<{B1}> -> {B1}",
                                                      "nn_b": f"{R4} -> {B1}"}, "mixed"),
    # A fold's step is not terminal either: nothing is known of the output.
    ("fold_l(nn_s, zeros(1))", {"nn_s": f"Tensor<real>[1] -> {R4} -> Tensor<real>[1]"}, "mixed"),
])
def test_output_activation_follows_the_terminal_calls(text, fresh, activation):
  cp = _compile(text, fresh)
  assert cp.output_activation == activation
  assert cp.output_logits == (activation in ("sigmoid", "softmax"))


def test_logits_skip_only_the_terminal_activation():
  # nn_b's sigmoid is inside the program and must stay; nn_a's, at the output, is skipped.
  cp = _compile("compose(nn_a, nn_b)", {"nn_a": f"{B1} -> {B1}", "nn_b": f"{R4} -> {B1}"})
  variables = cp.init(jax.random.key(0))
  x = jax.random.normal(jax.random.key(1), (6, 4))
  apply = _jit_apply(cp)
  probs = apply(variables, (), x, train=False)
  logits = apply(variables, (), x, train=False, logits=True)
  np.testing.assert_allclose(jax.nn.sigmoid(logits), probs, rtol=1e-6, atol=1e-7)
  assert not np.allclose(logits, probs)
  # Training mode too, with the same batch statistics.
  (y_p, s_p), (y_l, s_l) = (apply(variables, (), x, train=True, rng=jax.random.key(2), logits=lg)
                            for lg in (False, True))
  np.testing.assert_allclose(jax.nn.sigmoid(y_l), y_p, rtol=1e-6, atol=1e-7)
  chex.assert_trees_all_equal(s_p, s_l)


def _confident(out: str, bias: list[float]):
  """An MLP R4 -> out whose output layer is zero but for its bias: every example gets logits `bias`."""
  cp = _compile("nn_a", {"nn_a": f"{R4} -> {out}"})
  variables = cp.init(jax.random.key(0))
  p = variables["params"][0]
  p = {**p, "out": {"w": jnp.zeros_like(p["out"]["w"]), "b": jnp.asarray(bias, jnp.float32)}}
  return cp, {"params": (p,), "batch_stats": variables["batch_stats"]}


def _bias_gradient(cp, variables, objective, x, t):
  apply_logits = objective.from_logits

  def loss(params):
    y = cp.apply({"params": params, "batch_stats": variables["batch_stats"]}, (), x, train=False,
                 logits=apply_logits)
    return jnp.mean(item_loss(objective, y, t))

  return np.asarray(jax.jit(jax.grad(loss))(variables["params"])[0]["out"]["b"])


def test_a_confident_binary_mistake_gets_the_exact_gradient():
  cp, variables = _confident(B1, [-17.0])
  x = jax.random.normal(jax.random.key(3), (5, 4))
  t = jnp.ones((5, 1))
  objective = resolve_objective(cp, Objective("bce", "error"))
  assert objective.from_logits
  # d/dz of -log(sigmoid(z)) is sigmoid(z) - 1: -1 + 4e-8 at z = -17.
  np.testing.assert_allclose(_bias_gradient(cp, variables, objective, x, t), [jax.nn.sigmoid(-17.0) - 1.0],
                             rtol=1e-6)
  # From clipped probabilities the same mistake gets no gradient at all: what logits fix.
  assert _bias_gradient(cp, variables, Objective("bce", "error"), x, t).tolist() == [0.0]
  # The loss itself is exact: softplus(17).
  y = _jit_apply(cp)(variables, (), x, train=False, logits=True)
  np.testing.assert_allclose(item_loss(objective, y, t), np.log1p(np.exp(17.0)), rtol=1e-6)


def test_a_wrong_class_ahead_by_twenty_gets_the_exact_gradient():
  cp, variables = _confident(B3, [20.0, 0.0, 0.0])
  x = jax.random.normal(jax.random.key(4), (4, 4))
  t = jnp.ones((4,), jnp.int32)  # class 1, behind class 0 by 20
  objective = resolve_objective(cp, Objective("ce", "error"))
  assert objective.from_logits
  p = np.asarray(jax.nn.softmax(jnp.array([20.0, 0.0, 0.0])))
  np.testing.assert_allclose(_bias_gradient(cp, variables, objective, x, t), p - np.array([0.0, 1.0, 0.0]),
                             rtol=1e-5, atol=1e-12)
  assert np.all(_bias_gradient(cp, variables, Objective("ce", "error"), x, t) == 0.0)
  y = _jit_apply(cp)(variables, (), x, train=False, logits=True)
  np.testing.assert_allclose(item_loss(objective, y, t), 20.0 + np.log1p(2 * np.exp(-20.0)), rtol=1e-6)
  wrong, _ = item_metric(objective, y, t)
  assert wrong.tolist() == [1.0] * 4


def test_metrics_threshold_logits_at_zero():
  objective = Objective("bce", "error", from_logits=True)
  y = jnp.array([[-0.1], [0.1], [-3.0], [2.0]])
  t = jnp.array([[0.0], [1.0], [1.0], [0.0]])
  wrong, count = item_metric(objective, y, t)
  assert wrong.tolist() == [0.0, 0.0, 1.0, 1.0] and count.tolist() == [1.0] * 4
  with pytest.raises(ValueError, match="from_logits"):
    Objective("mse", "rmse", from_logits=True)


def test_tune_trains_a_confident_mistake_out_of_a_compiled_program():
  cp, variables = _confident(B1, [-17.0])
  rng = np.random.default_rng(0)
  x = rng.normal(size=(80, 4)).astype(np.float32)
  split = Split(x, np.ones((80, 1), np.float32))
  data = TuneData(split, split, split)
  config = TuneConfig(learning_rate=0.1, batch_size=20, epochs=1)
  result = tune(cp, (), data, Objective("bce", "error"), config, variables=variables)
  assert result.failed is None and result.objective.from_logits
  # Adam moves the bias by about the learning rate per step (4 steps) towards the positive class; from
  # clipped probabilities its gradient, and so its update, would be exactly 0.
  bias = float(result.variables["params"][0]["out"]["b"][0])
  assert bias > -17.0 + 0.3, bias


def test_models_without_logits_keep_probabilities():
  class Plain:
    key = "plain"

  assert not resolve_objective(Plain(), Objective("bce", "error")).from_logits
  # A program whose output activation does not match the loss keeps probabilities too.
  cp = _compile("nn_a", {"nn_a": f"{R4} -> {B1}"})
  assert not resolve_objective(cp, Objective("ce", "error")).from_logits
  assert resolve_objective(cp, Objective("mse", "rmse")) == Objective("mse", "rmse")


def test_list_of_bool_outputs_use_logits_per_element():
  cp = _compile("map_l(nn_b)", {"nn_b": f"{R4} -> {B1}"})
  objective = resolve_objective(cp, Objective("bce", "error", per_element=True))
  assert objective.from_logits
  variables = cp.init(jax.random.key(0))
  mask = jnp.arange(5)[None, :] < jnp.array([[2], [5], [1]])
  x = ListBatch(jax.random.normal(jax.random.key(1), (3, 5, 4)), mask)
  y = cp.apply(variables, (), x, train=False, logits=True)
  np.testing.assert_allclose(jax.nn.sigmoid(y.values), cp.apply(variables, (), x, train=False).values,
                             rtol=1e-6, atol=1e-7)
