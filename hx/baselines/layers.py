"""The MLP and LSTM of `hx.compile.modules`, opened up so the baselines can reach inside them.

The baselines' networks are made of the very modules HOUDINI's programs are made of (same parameter
layout, same initialisation, same computation), but two of them need more than `apply_module` gives:

- progressive networks (`hx.baselines.pnn`) add lateral inputs to the pre-activations of a column's
  layers and read the hidden activations of earlier columns;
- the graph baseline (`hx.baselines.graph`) reads the LSTM's output at every step, not only the last.

`mlp` and `lstm` below compute exactly what the `mlp` and `lstm` templates compute (tests compare them
with `hx.compile.modules.apply_module`), with these extra inputs and outputs. The parameter dicts are
the templates' (`init_module`), so a module trained in one place can be used in the other.

Shapes: R rows (batch examples, or list elements / graph nodes flattened), L list length.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from hx.compile.modules import PRECISION, activate, batch_norm, matmul, row_dropout
from hx.compile.modules import apply_dense as dense

__all__ = ["dense", "activate", "row_keys", "mlp", "lstm", "init_adapter", "adapter"]


def row_keys(rng: Any, rows: int, site: int) -> jax.Array:
  """(rows,) PRNG keys, one per row, for the module call `site` (so two modules never share masks)."""
  key = jax.random.fold_in(rng, site)
  return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(rows))


def mlp(spec: Any, params: dict, stats: dict, x: jax.Array, *, mask: jax.Array, keys: jax.Array | None,
        train: bool, logits: bool = False, hidden_extra: jax.Array | None = None,
        out_extra: jax.Array | None = None) -> tuple[jax.Array, jax.Array, dict]:
  """The `mlp` template with optional additions to its two pre-activations.

  Args:
    spec: the module's `ModuleSpec` (template "mlp").
    params, stats: its parameters and batch statistics (`init_module`).
    x: (R, n_in) input (the template's arguments, flattened and concatenated).
    mask: (R,) bool, the real rows (batch-norm statistics).
    keys: (R,) dropout keys, or None for no dropout.
    train: batch statistics and dropout (with keys) if True.
    logits: skip the output activation.
    hidden_extra: (R, hidden) added to the hidden layer's pre-activation (before batch norm), or None.
    out_extra: (R, n_out) added to the output layer's pre-activation, or None.

  Returns:
    (y, hidden, new_stats): y (R, *output shape); hidden (R, hidden), the hidden activations after batch
    norm and ReLU (before dropout), which later progressive columns read; the updated statistics.
  """
  r = x.shape[0]
  h = dense(params["hidden"], x.reshape(r, -1).astype(jnp.float32))
  if hidden_extra is not None:
    h = h + hidden_extra
  h, bn = batch_norm(h, params["bn"], stats["bn"], mask, train, spec["bn_momentum"], spec["bn_epsilon"])
  hidden = jax.nn.relu(h)
  h = hidden
  if train and keys is not None and spec["dropout"] > 0:
    h = row_dropout(h, keys, spec["dropout"], h.shape[1:])
  y = dense(params["out"], h)
  if out_extra is not None:
    y = y + out_extra
  y = y.reshape((r,) + spec.output.shape)
  return activate(y, "none" if logits else spec.activation), hidden, {"bn": bn}


def lstm(params: dict, values: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The `lstm` template's recurrence (gates i, f, g, o), without its output layer.

  Args:
    params: the template's parameters (w_i, w_h, b; "out" is not used here).
    values: (R, L, D) inputs.
    mask: (R, L) bool; a row's real steps are a prefix, and the state does not change on padded steps.

  Returns:
    (states, last): states (R, L, H), the hidden state after each step (the last real state repeated
    on padded steps); last (R, H), the state after the last real step (zeros for an empty list).
  """
  r, length = values.shape[:2]
  x = values.reshape(r, length, -1).astype(jnp.float32)
  hsz = params["w_h"].shape[0]
  # The input projection for all steps at once.
  xw = jnp.einsum("rld,dg->lrg", x, params["w_i"], precision=PRECISION) + params["b"]

  def step(carry, inp):
    hh, cc = carry
    g_in, m = inp
    g = g_in + matmul(hh, params["w_h"])
    i, f, gg, o = jnp.split(g, 4, axis=-1)
    c_new = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(gg)
    h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
    m = m[:, None]
    h_keep = jnp.where(m, h_new, hh)
    return (h_keep, jnp.where(m, c_new, cc)), h_keep

  zero = jnp.zeros((r, hsz), jnp.float32)
  (last, _), states = lax.scan(step, (zero, zero), (xw, jnp.swapaxes(mask.astype(bool), 0, 1)))
  return jnp.swapaxes(states, 0, 1), last


def init_adapter(rng: jax.Array, n_in: int, width: int, n_out: int | None) -> dict:
  """Parameters of a progressive network's lateral adapter (Rusu et al. 2016, section 2):
  a(h) = U relu(V (alpha * h) + c), alpha a learned scalar starting at 1 (the authors' code's start),
  V (n_in, width) with bias c, U (width, n_out) without bias; with n_out None there is no U (the
  adapter's output is concatenated to the layer's input instead of added to its pre-activation).
  Weights LeCun normal, as every dense layer of the templates."""
  k1, k2 = jax.random.split(rng)
  init = jax.nn.initializers.lecun_normal()
  p = {"alpha": jnp.ones((), jnp.float32), "v": {"w": init(k1, (n_in, width), jnp.float32),
                                                 "b": jnp.zeros((width,), jnp.float32)}}
  if n_out is not None:
    p["u"] = init(k2, (width, n_out), jnp.float32)
  return p


def adapter(p: dict, h: jax.Array) -> jax.Array:
  """The adapter of `init_adapter` applied to h (R, n_in): (R, n_out), or (R, width) without U."""
  a = jax.nn.relu(dense(p["v"], p["alpha"] * h))
  return matmul(a, p["u"]) if "u" in p else a
