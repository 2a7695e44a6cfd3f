"""What a module is built from: `ModuleSpec`, a frozen and hashable value that names a template, the
function's argument and result types and the template's sizes (never parameter values); the output
activation a result type asks for; and the errors of a function type that no template fits."""

from __future__ import annotations

import dataclasses
from typing import Union

from hx.lang.types import FunctionType, TensorType, Type

__all__ = ["ModuleSpec", "NoTemplateError", "UnresolvedTypeError"]


class NoTemplateError(TypeError):
  """A fresh function's type has no neural module template (e.g. it takes a function)."""


class UnresolvedTypeError(NoTemplateError):
  """A fresh function's type still contains type variables, so its architecture is not determined."""


HyperValue = Union[bool, int, float, str, tuple["HyperValue", ...]]
"""A size in `ModuleSpec.hyper`: a number, a flag, a name, or a tuple of them (a CNN's channels, a graph
kernel's aggregations)."""


@dataclasses.dataclass(frozen=True)
class ModuleSpec:
  """Everything needed to build a module, nothing about parameter values. Frozen and hashable.

  Attributes:
    template: "mlp" | "cnn" | "lstm" | "graph_kernel" | "slot_kernel" | "user" (`register_module`; its
      hyper holds ("name", the registered name) only).
    inputs: the argument types, in order (two for a fold step `S -> A -> S`).
    output: the result type (a tensor type).
    activation: "sigmoid" | "softmax" | "none", from the output type.
    hyper: the sizes the template uses, as sorted (name, value) pairs; read with `spec[name]`.
  """
  template: str
  inputs: tuple[Type, ...]
  output: Type
  activation: str
  hyper: tuple[tuple[str, HyperValue], ...]

  def __getitem__(self, name: str) -> HyperValue:
    for k, v in self.hyper:
      if k == name:
        return v
    raise KeyError(f"{self.template} spec has no size {name!r}")

  def get(self, name: str, default: HyperValue | None = None) -> HyperValue | None:
    """`spec[name]`, or `default` where the spec has no such size."""
    try:
      return self[name]
    except KeyError:
      return default

  @property
  def type(self) -> Type:
    t = self.output
    for a in reversed(self.inputs):
      t = FunctionType(a, t)
    return t

  def __str__(self) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in self.hyper)
    return f"{self.template}[{self.type}; {sizes}]"


def _activation(t: TensorType) -> str:
  """The output activation of result type `t`: "none" for `real`, "softmax" for `Tensor<bool>[k]` with
  k > 1, else "sigmoid" (elementwise)."""
  if t.atom == "real":
    return "none"
  return "softmax" if len(t.shape) == 1 and t.shape[0] > 1 else "sigmoid"
