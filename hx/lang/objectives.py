"""What a task is trained and scored with: its loss and metric (`Objective`), and the paper's for each
output type (`objective_for_type`).

Plain values, no JAX: the data layer gives each task its objective (`hx.data.Task.objective`) and Tune
computes it (`hx.compile.losses`, which re-exports these names, holds the losses and metrics themselves).
"""

from __future__ import annotations

import dataclasses

from hx.lang.types import GraphType, ListType, TensorType, Type

__all__ = ["LOSSES", "METRICS", "Objective", "objective_for_type"]

LOSSES = ("mse", "bce", "ce")
METRICS = ("error", "rmse")


@dataclasses.dataclass(frozen=True)
class Objective:
  """What Tune minimises and how it scores; hashable (part of the cache key of the jitted functions).

  Attributes:
    loss: "mse" (real outputs), "bce" (Tensor<bool>[1], probabilities vs 0/1 targets) or "ce"
      (Tensor<bool>[k], probabilities (.., k) vs int32 class indices).
    metric: "error" (classification error, %) or "rmse"; lower is better for both.
    metric_component: if set, the metric looks only at this component of the last axis of predictions
      and targets (e.g. 1, the distance, of a (cost, distance) node state); the loss still uses all.
    per_element: the output is a list or graph: items are the elements / nodes, scored only where the
      input's mask (a ListBatch's or GraphBatch's `mask`) is True.
    from_logits: predictions of "bce" / "ce" are logits (before the sigmoid / softmax): losses use
      log-sigmoid / log-softmax, the error thresholds logits at 0 (argmax for classes). Tune sets it
      when the compiled program can return logits; False: predictions are probabilities.
  """
  loss: str
  metric: str
  metric_component: int | None = None
  per_element: bool = False
  from_logits: bool = False

  def __post_init__(self):
    if self.loss not in LOSSES:
      raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
    if self.metric not in METRICS:
      raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
    if self.metric_component is not None and self.loss == "ce":
      raise ValueError("metric_component does not apply to class-index targets (loss 'ce')")
    if self.from_logits and self.loss == "mse":
      raise ValueError("from_logits applies to the cross-entropies ('bce', 'ce'), not to loss 'mse'")

  @property
  def item_ndim(self) -> int:
    """Leading item axes of predictions and targets: 1 (B,) or 2 (B, L|N)."""
    return 2 if self.per_element else 1


def objective_for_type(output: Type, *, metric_component: int | None = None) -> Objective:
  """The paper's objective for a program's output type.

  Tensor<bool>[1]: "bce" + "error"; Tensor<bool>[k], k > 1 (any other bool shape is read as classes over
  the last axis): "ce" + "error"; Tensor<real>[...]: "mse" + "rmse". List<T> / Graph<T>: T's objective
  scored per element.
  """
  per_element = False
  if isinstance(output, (ListType, GraphType)):
    per_element, output = True, output.elem
  if not isinstance(output, TensorType):
    raise ValueError(f"cannot train a program whose output type is {output}")
  if output.atom == "real":
    return Objective("mse", "rmse", metric_component, per_element)
  if output.shape == (1,):
    return Objective("bce", "error", metric_component, per_element)
  return Objective("ce", "error", metric_component, per_element)
