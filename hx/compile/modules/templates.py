"""The table of templates (`TEMPLATES`, and `USER_TEMPLATE` for the user's modules) and what runs a module
by its spec: `init_module`, `apply_module`, `reference_module`, `linear_output` and `set_output_bias`.

Every template's `_init_T(spec, keys)` takes the 4 keys `init_module` splits its key into and returns
(params, batch_stats). Every `_apply_T(spec, params, stats, inputs, rows, *, activation)` (`rows` a
`Rows`) returns (y (R, *output shape), new_stats), as `apply_module` documents. Every
`_reference_T(spec, params, stats, args)` takes float64 parameters and one example's arguments and
returns the output (output shape, float64).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.modules.cnn import _apply_cnn, _init_cnn, _reference_cnn
from hx.compile.modules.graph_kernel import _apply_graph_kernel, _init_graph_kernel, _reference_graph_kernel
from hx.compile.modules.layers import Rows
from hx.compile.modules.lstm import _apply_lstm, _init_lstm, _reference_lstm
from hx.compile.modules.mlp import _apply_mlp, _init_mlp, _reference_mlp
from hx.compile.modules.slot_kernel import _apply_slot_kernel, _init_slot_kernel
from hx.compile.modules.spec import ModuleSpec
from hx.compile.modules.user import _apply_user, _init_user, _reference_user

__all__ = [
  "TEMPLATES", "USER_TEMPLATE", "Template", "apply_module", "init_module", "linear_output",
  "reference_module", "set_output_bias",
]


class Template(NamedTuple):
  """One module template (the templates: `hx.compile.modules`): how it starts, runs and is defined.

  Attributes:
    init: (spec, keys (4,)) -> (params, batch_stats), fresh parameters.
    apply: (spec, params, stats, inputs, rows, *, activation) -> (y, new_stats), the module on the R rows
      of `rows` (a `Rows`) with the output activation `activation` (`apply_module`).
    reference: (spec, params, stats, args) -> y, the module on one example in inference mode in float64
      NumPy (`reference_module`); None for the slot kernel, whose slots are positions (a grid cell's
      directions) that the reference interpreter's neighbour lists do not keep. A user module's reference
      runs the user's own function (in float32) on the one example: it is the module's definition.
    output_layer: spec -> the params entry of the module's linear output layer (a Dense {"w", "b"} whose
      output, before the output activation, is the module's whole output), or None: a CNN whose output
      is its features, and the graph kernels (their output passes kept components through, or adds the
      node's value), and a user module (its layers are the user's).
  """
  init: Callable[..., tuple[dict, dict]]
  apply: Callable[..., tuple[jax.Array, dict]]
  reference: Callable[..., np.ndarray] | None
  output_layer: Callable[[ModuleSpec], str | None]


TEMPLATES: Mapping[str, Template] = MappingProxyType({
  "mlp": Template(_init_mlp, _apply_mlp, _reference_mlp, lambda spec: "out"),
  "cnn": Template(_init_cnn, _apply_cnn, _reference_cnn,
                  lambda spec: "out" if spec["output_layer"] else None),
  "lstm": Template(_init_lstm, _apply_lstm, _reference_lstm, lambda spec: "out"),
  "graph_kernel": Template(_init_graph_kernel, _apply_graph_kernel, _reference_graph_kernel,
                           lambda spec: None),
  "slot_kernel": Template(_init_slot_kernel, _apply_slot_kernel, None, lambda spec: None),
})
"""hx's own templates, by name. A user's module (`register_module`) is the template "user", outside this
table: its architecture is the registration's, not a function of the type."""

USER_TEMPLATE = Template(_init_user, _apply_user, _reference_user, lambda spec: None)
"""The "user" template: whatever module `registration_of(spec)` names, initialised and applied."""


def _template(spec: ModuleSpec) -> Template:
  if spec.template == "user":
    return USER_TEMPLATE
  if spec.template not in TEMPLATES:
    raise ValueError(f"unknown template {spec.template!r}")
  return TEMPLATES[spec.template]


def init_module(spec: ModuleSpec, rng: jax.Array) -> tuple[dict, dict]:
  """Fresh parameters and batch statistics for `spec`: (params, batch_stats), nested dicts of arrays."""
  return _template(spec).init(spec, jax.random.split(rng, 4))


def apply_module(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
                 logits: bool = False) -> tuple[jax.Array, dict]:
  """Runs the module on R rows.

  Args:
    spec: the module's spec.
    params, stats: its parameters and batch statistics (from `init_module`).
    inputs: one array `(R, *arg shape)` per argument, or one ListBatch (`(R, L, *elem)`, (R, L)) for the
      lstm and graph_kernel templates, or (graph_kernel only) one `Neighbourhoods` of R nodes.
    rows: the rows' mask and dropout keys, and the mode: training or not, recomputed in the backward
      pass or not (`Rows`).
    logits: skip the output activation (sigmoid / softmax): y is then the pre-activation, for losses
      computed from logits (`hx.compile.losses`, exact gradients for confident mistakes).

  Returns:
    (y, new_stats): y of shape `(R, *output shape)`; new_stats equal to stats unless training with BN.
  """
  return _template(spec).apply(spec, params, stats, inputs, rows,
                               activation="none" if logits else spec.activation)


def reference_module(spec: ModuleSpec, params: dict, stats: dict,
                     args: Sequence[np.ndarray | list[np.ndarray]]) -> np.ndarray:
  """One module on one example in inference mode, in float64 NumPy (`hx.compile.reference`).

  Args:
    spec: the module's spec.
    params, stats: its parameters and running statistics (any arrays; computed in float64).
    args: one value per argument: arrays of the argument shapes, or (lstm, graph_kernel) a list of arrays.

  Returns:
    the output, of the spec's output shape (float64).
  """
  reference = _template(spec).reference
  if reference is None:
    raise NotImplementedError(f"no float64 reference for the {spec.template} template (Template.reference)")
  as_float64 = lambda tree: jax.tree.map(lambda a: np.asarray(a, np.float64), tree)
  return reference(spec, as_float64(params), as_float64(stats), args)


def linear_output(spec: ModuleSpec) -> bool:
  """Whether the module's whole output is its linear output layer's: a layer with no activation after
  it (`Template.output_layer`, and the output activation "none")."""
  return _template(spec).output_layer(spec) is not None and spec.activation == "none"


def set_output_bias(spec: ModuleSpec, params: dict, bias: jax.typing.ArrayLike) -> dict:
  """`params` with the bias of the module's linear output layer (`Template.output_layer`) set to `bias`,
  (prod(output shape),) values in any float dtype (cast to the bias's); the other entries shared.

  Raises:
    ValueError: the module has no linear output layer, or `bias` is not of its size.
  """
  layer = _template(spec).output_layer(spec)
  if layer is None:
    raise ValueError(f"module {spec} has no linear output layer")
  old = params[layer]["b"]
  if np.size(bias) != old.size:
    raise ValueError(f"an output bias of {np.size(bias)} values for module {spec}, whose bias has {old.size}")
  return dict(params, **{layer: dict(params[layer], b=jnp.asarray(bias, old.dtype).reshape(old.shape))})
