"""The layers the templates share, in JAX on R rows: dense layers (and their initialisers), the output
activations, per-row dropout and masked batch norm, all float32 with float32 products on every
backend (`PRECISION`); and `Rows`, the R rows a module runs on and how (its mask, dropout keys and mode).
Parameters are plain dicts of arrays: a dense layer {"w": (n_in, n_out), "b": (n_out,)}, a batch norm
{"scale": (F,), "bias": (F,)} with statistics {"mean": (F,), "var": (F,)}."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from jax import lax

from hx.lang.types import Type

__all__ = ["PRECISION", "Rows", "activate", "apply_dense", "batch_norm", "matmul", "row_dropout"]


@dataclasses.dataclass(frozen=True)
class Rows:
  """The R rows a module runs on, and how (`hx.compile.modules.apply_module`, every template's `apply`).

  A JAX pytree: `mask` and `keys` are its leaves, `train` and `recompute` part of its structure (static),
  so a jitted function taking a Rows compiles once per mode, as under `static_argnames`.

  Attributes:
    mask: (R,) bool, the rows that are real (only they enter batch-norm statistics).
    keys: (R,) per-row PRNG keys for dropout, or None for no dropout.
    train: bool; batch statistics (and, with keys, dropout) if True, running statistics if False.
    recompute: bool; the call runs inside a loop (repeat's body): a graph kernel then recomputes its pair
      network in the backward pass instead of keeping it (the same values and gradients; faster there).
  """
  mask: jax.Array
  keys: jax.Array | None = None
  train: bool = False
  recompute: bool = False


jax.tree_util.register_dataclass(Rows, data_fields=("mask", "keys"), meta_fields=("train", "recompute"))


# Initialisation. Weights: LeCun normal (flax's Dense/Conv default), biases zero (Tune may then start
# the output layer of a regression's last module at the targets' mean: TuneConfig.bias_from_targets),
# LSTM recurrent weights orthogonal per gate. Never jit(vmap(...)) the LSTM init (DESIGN.md: QR
# deadlock on 2 CPUs).


def _size(t: Type) -> int:
  """The number of values of a tensor type: the product of its shape."""
  return math.prod(t.shape)


def _dense(rng: jax.Array, n_in: int, n_out: int, zero: bool = False) -> dict:
  """A fresh dense layer {"w": (n_in, n_out) LeCun normal, or zeros with `zero`, "b": (n_out,) zeros},
  float32."""
  w = jnp.zeros((n_in, n_out), jnp.float32) if zero else jax.nn.initializers.lecun_normal()(
      rng, (n_in, n_out), jnp.float32)
  return {"w": w, "b": jnp.zeros((n_out,), jnp.float32)}


def _uniform_dense(rng: jax.Array, n_in: int, n_out: int) -> dict:
  """A dense layer as PyTorch starts one (`nn.Linear`, `nn.Conv2d`): weights and biases uniform in
  +-1/sqrt(n_in). The slot kernel's layers start so, as the authors' grid kernel does: with its inputs'
  large distances (the bound, ~64) and ten applications in a row, a replacing kernel started from
  `_dense`'s LeCun-normal weights stayed far from the authors' RMSE after an epoch of GS2 task 2, where
  this start reached it (benchmarks/notes/2026-11-24-gs2-slot-kernel.md)."""
  bound = 1.0 / math.sqrt(n_in)
  kw, kb = jax.random.split(rng)
  return {"w": jax.random.uniform(kw, (n_in, n_out), jnp.float32, -bound, bound),
          "b": jax.random.uniform(kb, (n_out,), jnp.float32, -bound, bound)}


# Float32 products on every backend. XLA's default precision on NVIDIA GPUs rounds the operands of
# float32 matmuls and convolutions to TF32 (a 10-bit mantissa): on an H100 that moved the reference
# tests' outputs by ~1e-3 and broke the graph kernel's exact Bellman-Ford distances
# (benchmarks/RESULTS.md, "On a GPU"). XLA:CPU computes float32 either way, so CPU results are unchanged.
PRECISION = lax.Precision.HIGHEST


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
  """a @ b in float32 on every backend (`PRECISION`)."""
  return jnp.matmul(a, b, precision=PRECISION)


def apply_dense(p: dict, x: jax.Array) -> jax.Array:
  """x (R, n_in) @ w + b -> (R, n_out), p = {"w": (n_in, n_out), "b": (n_out,)}.

  Not `flax.linen.Dense`, although `Dense(precision=PRECISION)` compiles to the very same program (the
  same optimised HLO in a training step): the templates are functions of plain parameter dicts, whose
  names ("w", "b") the saved libraries and checkpoints, the baselines and the hand-set weights of the
  tests use; a flax Module would name them "kernel" and "bias", or need its own dict built per call.
  """
  return matmul(x, p["w"]) + p["b"]


def activate(y: jax.Array, activation: str) -> jax.Array:
  """The templates' output activations: "sigmoid", "softmax" (last axis) or "none"."""
  if activation == "sigmoid":
    return jax.nn.sigmoid(y)
  if activation == "softmax":
    return jax.nn.softmax(y, axis=-1)
  return y


def row_dropout(x: jax.Array, keys: jax.Array, rate: float, keep_shape: tuple[int, ...],
                 spatial: bool = False) -> jax.Array:
  """Inverted dropout with one PRNG key per row of x (R, ...).

  The keep mask has shape (R, *keep_shape): x's trailing axes, or with `spatial` one entry per channel
  of an NHWC x, broadcast over height and width (spatial dropout drops whole feature maps).
  """
  keep = jax.vmap(lambda k: jax.random.bernoulli(k, 1.0 - rate, keep_shape))(keys)
  if spatial:
    keep = keep[:, None, None, :]
  return jnp.where(keep, x / (1.0 - rate), 0.0)


def batch_norm(h: jax.Array, p: dict, s: dict, mask: jax.Array, train: bool, momentum: float,
                eps: float) -> tuple[jax.Array, dict]:
  """Batch norm over rows of h (R, F); in training, statistics over the rows where mask (R,) is True.

  Not `flax.linen.BatchNorm(mask=...)`: on a call whose rows are all padding (mask all False) flax sets
  the running statistics to NaN (a mean over no rows), where this keeps them; and its default variance
  is E[h^2] - E[h]^2, not the two-pass mean of squared deviations computed here.
  """
  if train:
    w = mask.astype(h.dtype)[:, None]
    n = jnp.sum(w)
    denom = jnp.maximum(n, 1.0)
    mean = jnp.sum(h * w, 0) / denom
    var = jnp.sum(jnp.square(h - mean) * w, 0) / denom
    upd = lambda old, new: jnp.where(n > 0, momentum * old + (1.0 - momentum) * lax.stop_gradient(new), old)
    s = {"mean": upd(s["mean"], mean), "var": upd(s["var"], var)}
  else:
    mean, var = s["mean"], s["var"]
  return (h - mean) * lax.rsqrt(var + eps) * p["scale"] + p["bias"], s
