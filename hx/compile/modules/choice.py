"""Which module template a function type gets: `module_spec` (see `hx.compile.modules` for the
templates), a registered user module before any of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hx.compile.modules.cnn import cnn_layout
from hx.compile.modules.config import ModuleConfig
from hx.compile.modules.layers import _size
from hx.compile.modules.registry import _registered_for, _user_spec
from hx.compile.modules.spec import ModuleSpec, NoTemplateError, UnresolvedTypeError, _activation
from hx.lang.types import (
  FunctionType,
  GraphType,
  ListType,
  TensorType,
  Type,
  function_parts,
  is_image,
  type_variables,
)

if TYPE_CHECKING:
  from hx.compile.modules.spec import HyperValue

__all__ = ["module_spec"]


def _is_vector_like(t: Type) -> bool:
  """Whether `t` is a tensor type that is not an image."""
  return isinstance(t, TensorType) and not is_image(t)


def module_spec(fn_type: Type, config: ModuleConfig = ModuleConfig(), *, role: str | None = None,
                name: str = "<function>") -> ModuleSpec:
  """The module template a function of type `fn_type` gets (the templates: `hx.compile.modules`).

  Args:
    fn_type: the function's type, without type variables.
    config: sizes.
    role: None, or "kernel" for the direct kernel of a conv_g / conv_l (graph-kernel template instead of
      an LSTM for `List<T> -> U`).
    name: the function's name, for error messages.

  A type registered with `register_module` gets the user's module ("user" template) whatever `config`
  and `role` say.

  Raises:
    UnresolvedTypeError: the type has type variables.
    NoTemplateError: no template fits the type.
  """
  if role not in (None, "kernel"):
    raise ValueError(f"role must be None or 'kernel', got {role!r}")
  if type_variables(fn_type):
    raise UnresolvedTypeError(
      f"fresh function {name} has unresolved type {fn_type}: its architecture is not determined "
      "(resolve the type variables first)")
  registered = _registered_for(fn_type)
  if registered is not None:  # the user's own module comes before any template
    return _user_spec(registered)
  args, out = function_parts(fn_type)

  def refuse(why: str) -> NoTemplateError:
    return NoTemplateError(f"no neural module template for {name} : {fn_type} ({why})")

  if not args:
    raise refuse("not a function")
  if not isinstance(out, TensorType):
    raise refuse("the result must be a tensor")
  if is_image(out):
    raise refuse("no template produces an image")
  act = _activation(out)
  c = config
  if len(args) == 1 and is_image(args[0]):
    a = args[0]
    layout = cnn_layout(a, c)
    if layout is None:
      raise refuse(f"image {a} too small for one 3x3 convolution with {c.cnn_pool}x{c.cnn_pool} pooling")
    channels, kernel, f = layout
    head = out != TensorType("real", (f,))
    hyper = dict(channels=channels, kernel=kernel, pool=c.cnn_pool,
                 dropout=c.cnn_dropout, features=f, output_layer=head)
    return ModuleSpec("cnn", (a,), out, act if head else "none", tuple(sorted(hyper.items())))
  if 1 <= len(args) <= 2 and all(_is_vector_like(a) for a in args):
    hyper = dict(hidden=c.mlp_hidden, dropout=c.mlp_dropout, bn_momentum=c.bn_momentum,
                 bn_epsilon=c.bn_epsilon)
    if c.mlp_order != "bn_relu":  # named only where it differs: earlier specs and libraries keep their keys
      hyper["order"] = c.mlp_order
    if len(args) == 2 and not c.fold_step_norm:  # two arguments: a fold step (`hx.compile.lower`)
      hyper["batch_norm"] = False
    return ModuleSpec("mlp", tuple(args), out, act, tuple(sorted(hyper.items())))
  if len(args) == 1 and isinstance(args[0], ListType) and _is_vector_like(args[0].elem):
    if role == "kernel":
      return _graph_kernel_spec(args[0], out, act, c, refuse)
    return ModuleSpec("lstm", (args[0],), out, act, (("hidden", c.lstm_hidden),))
  if any(isinstance(a, FunctionType) for a in args):
    raise refuse("it takes a function")
  if any(isinstance(a, GraphType) for a in args):
    raise refuse("a graph argument needs a combinator (map_g, fold_g, conv_g)")
  if len(args) > 2:
    raise refuse("more than two arguments")
  raise refuse("unsupported argument types")


def _graph_kernel_spec(arg: ListType, out: TensorType, act: str, c: ModuleConfig,
                       refuse: Callable[[str], NoTemplateError]) -> ModuleSpec:
  """The direct kernel of a conv_g / conv_l over neighbours `arg` (`List<T> -> U`): the slot kernel or
  the pair kernel of `c.graph_kernel`."""
  if c.graph_kernel == "slots":
    hyper: dict[str, HyperValue] = dict(hidden=c.graph_slot_hidden, layers=c.graph_slot_layers,
                                        slots=c.graph_slots)
    template = "slot_kernel"
  else:
    hyper = dict(hidden=c.graph_hidden, message=c.graph_message, aggregations=tuple(c.graph_aggregations))
    template = "graph_kernel"
  # Recorded only where they apply, so that the default's specs (and library entries) are unchanged.
  if c.graph_update == "residual" and out == arg.elem:
    hyper["update"] = "residual"
  if c.graph_keep and out == arg.elem:
    if c.graph_keep >= _size(out):
      raise refuse(f"ModuleConfig.graph_keep={c.graph_keep} keeps every component of {out}: nothing "
                   "is left to learn")
    hyper["keep"] = c.graph_keep
  return ModuleSpec(template, (arg,), out, act, tuple(sorted(hyper.items())))
