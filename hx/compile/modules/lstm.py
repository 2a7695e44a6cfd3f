"""The `lstm` template: `List<T>` (T a non-image tensor, flattened) -> tensor (see `hx.compile.modules`):
an LSTM (gates i, f, g, o; forget-gate bias 1) over each list's valid prefix, then Dense(last valid
hidden state) -> output activation. Its recurrent weights start orthogonal per gate: never
jit(vmap(...)) its init (DESIGN.md: QR deadlock on 2 CPUs)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hx.compile.modules.layers import PRECISION, Rows, _dense, _size, activate, apply_dense, matmul
from hx.compile.modules.reference_layers import _ref_activate, _ref_dense, _ref_sigmoid, _ref_vector
from hx.compile.modules.spec import ModuleSpec

__all__ = ["lstm_scan"]


def _init_lstm(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  h = spec["hidden"]
  n_in = _size(spec.inputs[0].elem)
  w_i = jax.nn.initializers.lecun_normal()(keys[0], (n_in, 4 * h), jnp.float32)
  orth = jax.nn.initializers.orthogonal()
  w_h = jnp.concatenate([orth(jax.random.fold_in(keys[1], g), (h, h), jnp.float32) for g in range(4)], 1)
  b = jnp.zeros((4 * h,), jnp.float32).at[h:2 * h].set(1.0)  # forget gate starts open
  return {"w_i": w_i, "w_h": w_h, "b": b, "out": _dense(keys[2], h, _size(spec.output))}, {}


def lstm_scan(params: dict, values: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The `lstm` template's recurrence (gates i, f, g, o), without its output layer; the graph baseline
  (`hx.baselines.graph`) reads its every step. (Steps nobody reads cost nothing: XLA drops them.)

  Not flax's `OptimizedLSTMCell` under `nn.RNN` (not timed): its parameters are one kernel per gate for
  the input and the recurrent state, where saved modules hold one (D, 4H) and one (H, 4H) matrix, and
  the cell projects the input inside every step, where this projects all steps' at once before the scan.

  Args:
    params: the template's parameters (w_i, w_h, b; "out" is not used here).
    values: (R, L, *elem) inputs.
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


def _apply_lstm(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
                activation: str) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  _, last = lstm_scan(params, lb.values, lb.mask)
  y = apply_dense(params["out"], last).reshape((lb.values.shape[0],) + spec.output.shape)
  return activate(y, activation), stats


def _reference_lstm(spec: ModuleSpec, p: dict, s: dict, args: Sequence[list[np.ndarray]]) -> np.ndarray:
  n = spec["hidden"]
  h, c = np.zeros(n), np.zeros(n)
  for a in args[0]:
    g = _ref_vector(a) @ p["w_i"] + h @ p["w_h"] + p["b"]
    i, f, gg, o = g[:n], g[n:2 * n], g[2 * n:3 * n], g[3 * n:]
    c = _ref_sigmoid(f) * c + _ref_sigmoid(i) * np.tanh(gg)
    h = _ref_sigmoid(o) * np.tanh(c)
  return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)
