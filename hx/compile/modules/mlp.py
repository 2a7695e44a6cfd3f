"""The `mlp` template: one or two non-image tensors -> tensor (see `hx.compile.modules`). The arguments,
flattened and concatenated (a fold step `S -> A -> S` takes (state, element)), go through Dense(hidden)
-> masked batch norm -> ReLU (or ReLU -> batch norm) -> dropout -> Dense(prod(output shape)) -> output
activation."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.modules.layers import Rows, _dense, _size, activate, apply_dense, batch_norm, row_dropout
from hx.compile.modules.reference_layers import _ref_activate, _ref_dense, _ref_relu, _ref_vector
from hx.compile.modules.spec import ModuleSpec

__all__ = ["mlp_layers"]


def _init_mlp(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  n_in = sum(_size(a) for a in spec.inputs)
  h = spec["hidden"]
  params = {"hidden": _dense(keys[0], n_in, h), "out": _dense(keys[1], h, _size(spec.output))}
  if not spec.get("batch_norm", True):
    return params, {}
  params["bn"] = {"scale": jnp.ones((h,), jnp.float32), "bias": jnp.zeros((h,), jnp.float32)}
  stats = {"bn": {"mean": jnp.zeros((h,), jnp.float32), "var": jnp.ones((h,), jnp.float32)}}
  return params, stats


def mlp_layers(spec: ModuleSpec, params: dict, stats: dict, x: jax.Array, rows: Rows, *,
               hidden_extra: jax.Array | None = None,
               out_extra: jax.Array | None = None) -> tuple[jax.Array, jax.Array, dict]:
  """The `mlp` template's layers on x (R, n_in) float32, its arguments flattened and concatenated:
  Dense -> masked batch norm -> ReLU (or ReLU -> batch norm under the spec's "order" "relu_bn",
  `ModuleConfig.mlp_order`) -> dropout (training, with keys) -> Dense, with optional additions to the two
  pre-activations (a progressive network's lateral inputs, `hx.baselines.layers.mlp`).

  Args:
    rows: the rows' mask (batch-norm statistics), dropout keys and mode (`Rows`; `recompute` not read).
    hidden_extra: (R, hidden) added to the hidden layer's pre-activation (before batch norm), or None.
    out_extra: (R, n_out) added to the output layer's pre-activation, or None.

  Returns:
    (y, hidden, new_stats): y (R, n_out), the output layer's pre-activation; hidden (R, hidden), the
    hidden activations after batch norm and ReLU, in the spec's order (before dropout); the updated batch
    statistics.
  """
  h = apply_dense(params["hidden"], x)
  if hidden_extra is not None:
    h = h + hidden_extra
  new_stats = {}
  if not spec.get("batch_norm", True):
    h = jax.nn.relu(h)
  elif spec.get("order", "bn_relu") == "relu_bn":
    h, new_stats["bn"] = batch_norm(jax.nn.relu(h), params["bn"], stats["bn"], rows.mask, rows.train,
                                    spec["bn_momentum"], spec["bn_epsilon"])
  else:
    h, new_stats["bn"] = batch_norm(h, params["bn"], stats["bn"], rows.mask, rows.train, spec["bn_momentum"],
                                    spec["bn_epsilon"])
    h = jax.nn.relu(h)
  hidden = h
  if rows.train and rows.keys is not None and spec["dropout"] > 0:
    h = row_dropout(h, rows.keys, spec["dropout"], h.shape[1:])
  y = apply_dense(params["out"], h)
  if out_extra is not None:
    y = y + out_extra
  return y, hidden, new_stats


def _apply_mlp(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
               activation: str) -> tuple[jax.Array, dict]:
  r = inputs[0].shape[0]
  x = jnp.concatenate([a.reshape(r, -1).astype(jnp.float32) for a in inputs], -1)
  y, _, new_stats = mlp_layers(spec, params, stats, x, rows)
  return activate(y.reshape((r,) + spec.output.shape), activation), new_stats


def _reference_mlp(spec: ModuleSpec, p: dict, s: dict, args: Sequence[np.ndarray]) -> np.ndarray:
  h = _ref_dense(p["hidden"], np.concatenate([_ref_vector(a) for a in args]))
  if not spec.get("batch_norm", True):
    return _ref_activate(_ref_dense(p["out"], _ref_relu(h)), spec.activation).reshape(spec.output.shape)
  bn, stats_bn = p["bn"], s["bn"]
  relu_first = spec.get("order", "bn_relu") == "relu_bn"
  if relu_first:
    h = _ref_relu(h)
  h = (h - stats_bn["mean"]) / np.sqrt(stats_bn["var"] + spec["bn_epsilon"]) * bn["scale"] + bn["bias"]
  if not relu_first:
    h = _ref_relu(h)
  return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)
