"""The MLP and LSTM of `hx.compile.modules`, opened up so the baselines can reach inside them.

The baselines' networks are made of the very modules HOUDINI's programs are made of (same parameter
layout, same initialisation, same computation), but two of them need more than `apply_module` gives:

- progressive networks (`hx.baselines.pnn`) add lateral inputs to the pre-activations of a column's
  layers and read the hidden activations of earlier columns;
- the graph baseline (`hx.baselines.graph`) reads the LSTM's output at every step, not only the last.

The templates' own layers serve both: `mlp` below is `hx.compile.modules.mlp_layers` (which the `mlp`
template runs) with the output activation, and `lstm` is `hx.compile.modules.lstm_scan`, the `lstm`
template's recurrence. The parameter dicts are the templates' (`init_module`), so a module trained in
one place can be used in the other.

Shapes: R rows (batch examples, or list elements / graph nodes flattened), L list length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from hx.compile.modules.layers import Rows, activate, matmul
from hx.compile.modules.layers import apply_dense as dense
from hx.compile.modules.lstm import lstm_scan as lstm
from hx.compile.modules.mlp import mlp_layers

if TYPE_CHECKING:
  from hx.compile.modules.spec import ModuleSpec

__all__ = ["dense", "activate", "row_keys", "mlp", "lstm", "init_adapter", "adapter"]


def row_keys(rng: jax.Array, rows: int, site: int) -> jax.Array:
  """(rows,) PRNG keys, one per row, for the module call `site` (so two modules never share masks)."""
  key = jax.random.fold_in(rng, site)
  return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(rows))


def mlp(spec: ModuleSpec, params: dict, stats: dict, x: jax.Array, rows: Rows, *, logits: bool = False,
        hidden_extra: jax.Array | None = None,
        out_extra: jax.Array | None = None) -> tuple[jax.Array, jax.Array, dict]:
  """The `mlp` template with optional additions to its two pre-activations.

  Args:
    spec: the module's `ModuleSpec` (template "mlp").
    params, stats: its parameters and batch statistics (`init_module`).
    x: (R, ...) input (the template's arguments, flattened and concatenated).
    rows: the real rows (batch-norm statistics), the dropout keys, and whether it trains (batch statistics
      and dropout with keys) (`hx.compile.modules.Rows`).
    logits: skip the output activation.
    hidden_extra: (R, hidden) added to the hidden layer's pre-activation (before batch norm), or None.
    out_extra: (R, n_out) added to the output layer's pre-activation, or None.

  Returns:
    (y, hidden, new_stats): y (R, *output shape); hidden (R, hidden), the hidden activations after batch
    norm and ReLU (before dropout), which later progressive columns read; the updated statistics.
  """
  r = x.shape[0]
  y, hidden, new_stats = mlp_layers(spec, params, stats, x.reshape(r, -1).astype(jnp.float32), rows,
                                    hidden_extra=hidden_extra, out_extra=out_extra)
  y = y.reshape((r,) + spec.output.shape)
  return activate(y, "none" if logits else spec.activation), hidden, new_stats


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
