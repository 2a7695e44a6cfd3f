"""The `user` template: the module `register_module` registered for a function's exact type (see
`hx.compile.modules`), initialised and applied through its `Registration`; no batch statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.modules.layers import Rows, activate
from hx.compile.modules.reference_layers import _ref_activate
from hx.compile.modules.registry import registration_of
from hx.compile.modules.spec import ModuleSpec

if TYPE_CHECKING:
  import chex


def _init_user(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  return registration_of(spec).init_params(keys[0]), {}


def _apply_user(spec: ModuleSpec, params: chex.ArrayTree, stats: dict, inputs: tuple, rows: Rows, *,
                activation: str) -> tuple[jax.Array, dict]:
  # No rows read (mask, keys, train): a user module is a pure function of its parameters (`register_module`).
  r = registration_of(spec)
  xs = tuple(jnp.asarray(x).astype(jnp.float32) for x in inputs)
  y = r.apply_params(params, *xs)
  want = (xs[0].shape[0],) + spec.output.shape
  if tuple(jnp.shape(y)) != want:
    raise ValueError(f"module {r.name!r} ({r.describe()}) for {r.type} gave shape {tuple(jnp.shape(y))} "
                     f"on inputs of shape {', '.join(str(x.shape) for x in xs)}; the type needs {want}")
  return activate(jnp.asarray(y).astype(jnp.float32), activation), stats


def _reference_user(spec: ModuleSpec, p: chex.ArrayTree, s: dict, args: Sequence[np.ndarray]) -> np.ndarray:
  # The user's function is the module's definition: run it (in float32, as it trains) on one row.
  r = registration_of(spec)
  params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), p)
  y = r.apply_params(params, *(jnp.asarray(np.asarray(a), jnp.float32)[None] for a in args))
  return _ref_activate(np.asarray(y, np.float64)[0], spec.activation).reshape(spec.output.shape)
