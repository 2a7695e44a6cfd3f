"""The `slot_kernel` template: `List<T> -> U` in the kernel position of conv_g / conv_l under
`ModuleConfig.graph_kernel="slots"` (see `hx.compile.modules`): a network over the neighbour list's
slots in order, the authors' grid kernel. It has no float64 reference (`Template.reference`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hx.compile.modules.graph_kernel import Neighbourhoods, _kept, _residual, _update
from hx.compile.modules.layers import Rows, _dense, _size, _uniform_dense, activate, apply_dense
from hx.compile.modules.spec import ModuleSpec


def _slot_kernel(spec: ModuleSpec, params: dict, values: jax.Array, valid: jax.Array) -> jax.Array:
  """The slot kernel on R lists values (R, K, *elem) with mask (R, K), slot 0 the node itself:
  (R, prod(output)) pre-activation (see the slot_kernel template)."""
  r, k = values.shape[:2]
  if k != spec["slots"]:
    raise ValueError(f"a slot kernel built for lists of {spec['slots']} slots (ModuleConfig.graph_slots) got "
                     f"lists of {k}: conv_g on a grid's neighbour table has 5 (hx.data.grids.K), conv_l's "
                     "window 2 * conv_window + 1")
  valid = valid.astype(bool)
  x = jnp.where(valid[..., None], values.reshape(r, k, -1).astype(jnp.float32), 0.0)
  h = jnp.concatenate([x.reshape(r, -1), valid.astype(jnp.float32)], -1)
  for layer in params["hidden"]:
    h = jax.nn.relu(apply_dense(layer, h))
  return _update(spec, x[:, 0], apply_dense(params["out"], h))


def _init_slot_kernel(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  d, h = _size(spec.inputs[0].elem), spec["hidden"]
  sizes = [spec["slots"] * (d + 1)] + [h] * spec["layers"]
  hidden = tuple(_uniform_dense(jax.random.fold_in(keys[0], i), a, b)
                 for i, (a, b) in enumerate(zip(sizes, sizes[1:])))
  n_out = _size(spec.output) - _kept(spec)
  out = _dense(keys[1], h, n_out, zero=True) if _residual(spec) else _uniform_dense(keys[1], h, n_out)
  return {"hidden": hidden, "out": out}, {}


def _apply_slot_kernel(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
                       activation: str) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  if isinstance(lb, Neighbourhoods):
    raise NotImplementedError("a slot kernel reads its neighbour list by slot (direction); edge lists have "
                              "no slot order: use ModuleConfig.graph_kernel='pairs' on edge-list graphs")
  y = _slot_kernel(spec, params, lb.values, lb.mask)
  return activate(y.reshape((lb.values.shape[0],) + spec.output.shape), activation), stats
