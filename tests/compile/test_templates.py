"""The table of module templates (`hx.compile.modules.TEMPLATES`): every template the types can ask for is
in it, with an init, an apply and (but the slot kernel) a float64 reference that agree; the output layer
each template owns (`set_output_bias`, `linear_output`); the LSTM recurrence the baselines share."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.baselines import layers
from hx.canonical_json import content_key, jsonable
from hx.compile.modules import (
  TEMPLATES,
  Rows,
  apply_module,
  init_module,
  linear_output,
  lstm_scan,
  reference_module,
  set_output_bias,
)
from hx.compile.values import ListBatch
from tests.compile.lowering_helpers import CFG, IMG, jit_apply_module, randomize, spec

# One type per template (and per kind of output layer), with the role it needs.
CASES = {
  "mlp": ("Tensor<real>[3] -> Tensor<real>[2] -> Tensor<real>[2]", None),
  "mlp relu_bn": ("Tensor<real>[3] -> Tensor<real>[2] -> Tensor<real>[2]", None),
  "fold step without batch norm": ("Tensor<real>[3] -> Tensor<real>[2] -> Tensor<real>[3]", None),
  "cnn": (f"{IMG} -> Tensor<real>[3]", None),
  "cnn features": (f"{IMG} -> Tensor<real>[8]", None),
  "lstm": ("List<Tensor<real>[2]> -> Tensor<real>[2]", None),
  "graph_kernel": ("List<Tensor<real>[2]> -> Tensor<real>[2]", "kernel"),
  "slot_kernel": ("List<Tensor<real>[2]> -> Tensor<real>[2]", "kernel"),
}


def _spec(case: str):
  text, role = CASES[case]
  config = dataclasses.replace(CFG, graph_kernel="slots") if case == "slot_kernel" else CFG
  if case == "mlp relu_bn":
    config = dataclasses.replace(CFG, mlp_order="relu_bn")
  if case == "fold step without batch norm":
    config = dataclasses.replace(CFG, fold_step_norm=False)
  return spec(text, role, config)


def _inputs(s, rows: int, rng: np.random.Generator) -> tuple:
  """Random inputs of `rows` rows for the spec: arrays, or one ListBatch of lists of 1-5 (5 for slots)."""
  if s.template in ("lstm", "graph_kernel", "slot_kernel"):
    k = 5
    lengths = np.full(rows, k) if s.template == "slot_kernel" else rng.integers(1, k + 1, size=rows)
    mask = np.arange(k)[None, :] < lengths[:, None]
    elem = s.inputs[0].elem.shape
    return (ListBatch(jnp.asarray(rng.normal(size=(rows, k) + elem), jnp.float32), jnp.asarray(mask)),)
  return tuple(jnp.asarray(rng.normal(size=(rows,) + a.shape), jnp.float32) for a in s.inputs)


def _example(inputs: tuple, i: int) -> list:
  """Row i of the inputs as the reference takes it: arrays, or a list of the valid elements."""
  if isinstance(inputs[0], ListBatch):
    lb = inputs[0]
    return [[np.asarray(lb.values[i, j]) for j in range(int(np.sum(lb.mask[i])))]]
  return [np.asarray(a[i]) for a in inputs]


def test_the_table_covers_every_template_the_types_ask_for():
  assert set(TEMPLATES) == {_spec(c).template for c in CASES}
  assert set(TEMPLATES) == {"mlp", "cnn", "lstm", "graph_kernel", "slot_kernel"}
  assert [name for name, t in TEMPLATES.items() if t.reference is None] == ["slot_kernel"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_init_apply_and_reference_agree(case):
  s = _spec(case)
  params, stats = init_module(s, jax.random.key(0))
  params, stats = randomize(params, 1), randomize(stats, 2)
  inputs = _inputs(s, 4, np.random.default_rng(3))
  y, new_stats = jit_apply_module(s, params, stats, inputs, Rows(jnp.ones(4, bool)))
  assert y.shape == (4,) + s.output.shape
  assert jax.tree.structure(new_stats) == jax.tree.structure(stats)
  if TEMPLATES[s.template].reference is None:
    with pytest.raises(NotImplementedError, match="no float64 reference"):
      reference_module(s, params, stats, _example(inputs, 0))
    return
  for i in range(4):
    want = reference_module(s, params, stats, _example(inputs, i))
    assert want.dtype == np.float64 and want.shape == s.output.shape
    np.testing.assert_allclose(np.asarray(y[i]), want, rtol=1e-4, atol=1e-5)


def test_the_mlp_order_is_the_batch_norm_s_place():
  # The authors' order (ReLU, then batch norm) and hx's (batch norm, then ReLU) differ on the same
  # parameters; the default spec does not name an order, so specs and libraries made before keep their
  # keys, and an unknown order is refused.
  hx, authors = _spec("mlp"), _spec("mlp relu_bn")
  assert "order" not in dict(hx.hyper) and authors["order"] == "relu_bn" and hx.get("order") is None
  params, stats = init_module(hx, jax.random.key(0))
  params, stats = randomize(params, 1), randomize(stats, 2)
  inputs = _inputs(hx, 4, np.random.default_rng(3))
  run = [jit_apply_module(s, params, stats, inputs, Rows(jnp.ones(4, bool)))[0]
         for s in (hx, authors)]
  assert not np.allclose(np.asarray(run[0]), np.asarray(run[1]))
  with pytest.raises(ValueError, match="mlp_order"):
    dataclasses.replace(CFG, mlp_order="bn_after")
  # Checkpoint keys hold the config's canonical JSON (hx.canonical_json): every field, the default's too.
  assert jsonable(CFG)["mlp_order"] == "bn_relu"
  assert content_key(dataclasses.replace(CFG, mlp_order="relu_bn")) != content_key(CFG)


def test_only_a_fold_step_loses_its_batch_norm():
  # fold_step_norm=False takes the batch norm out of two-argument MLPs (fold steps) alone; the default
  # spec names nothing, so earlier specs stay as they were (settings and keys name every field).
  off = dataclasses.replace(CFG, fold_step_norm=False)
  step = _spec("fold step without batch norm")
  assert step["batch_norm"] is False and _spec("mlp").get("batch_norm") is None
  params, stats = init_module(step, jax.random.key(0))
  assert set(params) == {"hidden", "out"} and stats == {}
  one = spec("Tensor<real>[3] -> Tensor<real>[2]", None, off)
  assert one.get("batch_norm") is None and "bn" in init_module(one, jax.random.key(0))[0]
  assert jsonable(CFG)["fold_step_norm"] is True and content_key(off) != content_key(CFG)


def test_unknown_templates_are_refused():
  s = _spec("mlp")
  bad = dataclasses.replace(s, template="rnn")
  for call in (lambda: init_module(bad, jax.random.key(0)), lambda: linear_output(bad),
               lambda: reference_module(bad, {}, {}, [])):
    with pytest.raises(ValueError, match="unknown template 'rnn'"):
      call()


@pytest.mark.parametrize("case, layer", [("mlp", "out"), ("cnn", "out"), ("lstm", "out"),
                                         ("cnn features", None), ("graph_kernel", None),
                                         ("slot_kernel", None)])
def test_each_template_owns_its_output_layer(case, layer):
  s = _spec(case)
  params, _ = init_module(s, jax.random.key(0))
  assert TEMPLATES[s.template].output_layer(s) == layer
  assert linear_output(s) is (layer is not None)
  n = int(np.prod(s.output.shape))
  if layer is None:
    with pytest.raises(ValueError, match="has no linear output layer"):
      set_output_bias(s, params, np.zeros(n))
    return
  bias = np.arange(n, dtype=np.float64) + 0.5
  new = set_output_bias(s, params, bias)
  assert new[layer]["b"].dtype == jnp.float32 and new[layer]["b"].shape == params[layer]["b"].shape
  np.testing.assert_array_equal(np.asarray(new[layer]["b"]), bias.astype(np.float32))
  assert new[layer]["w"] is params[layer]["w"]  # the rest is shared, unchanged
  assert all(new[k] is params[k] for k in params if k != layer)
  np.testing.assert_array_equal(np.asarray(params[layer]["b"]), np.zeros(n))  # the given params unchanged
  with pytest.raises(ValueError, match=f"an output bias of {n + 1} values"):
    set_output_bias(s, params, np.zeros(n + 1))


def test_an_output_activation_means_no_linear_output():
  assert not linear_output(spec("Tensor<real>[3] -> Tensor<bool>[1]"))
  assert linear_output(spec("Tensor<real>[3] -> Tensor<real>[1]"))


def test_the_baselines_lstm_and_mlp_are_the_templates():
  s = _spec("lstm")
  params, stats = init_module(s, jax.random.key(4))
  (lb,) = _inputs(s, 6, np.random.default_rng(5))
  assert layers.lstm is lstm_scan
  states, last = lstm_scan(params, lb.values, lb.mask)
  lengths = np.asarray(lb.mask).sum(1)
  np.testing.assert_array_equal(np.asarray(last), np.asarray(states)[np.arange(6), lengths - 1])
  y, _ = apply_module(s, params, stats, (lb,), Rows(jnp.ones(6, bool)))
  np.testing.assert_allclose(np.asarray(y), np.asarray(last @ params["out"]["w"] + params["out"]["b"]),
                             rtol=1e-6, atol=1e-6)
