"""Losses and metrics of the training loop (Tune), as small pure functions of predictions and targets.

Every function here works on one batch of *items*: an item is an example (for tensor outputs) or one
list element / graph node of an example (for list and graph outputs, `Objective.per_element`). With
`item_ndim` leading item axes (1: (B,), 2: (B, L) or (B, N)):

  predictions y: (*items, *shape) float, the program's output: raw values for `real` outputs; for
    `bool` outputs logits (before the sigmoid / softmax) when `Objective.from_logits`, else
    probabilities;
  targets t: as `hx.compile.values.Split` says: float (*items, *shape) for real and Tensor<bool>[1];
    int32 class indices (*items,) for Tensor<bool>[k] with k > 1 (loss "ce").

Cross-entropies from logits use log-sigmoid / log-softmax: exact values and gradients however confident a
mistake is (logit -17 for a positive, or the wrong class ahead by 20, still gets a gradient of about 1).
From probabilities (programs whose output is not known to be logits) they clip the probabilities to
[1e-7, 1 - 1e-7] before the log, which keeps the loss finite but gives such a confident mistake a
gradient of exactly 0: Tune uses logits whenever the compiled program can give them
(`hx.compile.lower.CompiledProgram.output_logits`).

Losses return one value per item (mean over the item's components); metrics return a per-item sum and a
per-item count, so that sums over chunks and masked items combine exactly:
  "error": percentage of wrongly classified items (count 1 per item);
  "rmse": root of the mean squared error over all components of all items (count = components per item).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from hx.lang.objectives import LOSSES, METRICS, Objective, objective_for_type

__all__ = ["LOSSES", "METRICS", "Objective", "objective_for_type", "item_loss", "item_metric",
           "finish_metric", "standard_error"]

# Probabilities are clipped this far from 0 and 1 before the log of the cross-entropies when the program
# outputs probabilities (not logits): log(0) would turn the loss infinite for one confident mistake.
_EPS = 1e-7


def _mean_trailing(x: jax.Array, item_ndim: int) -> jax.Array:
  axes = tuple(range(item_ndim, x.ndim))
  return jnp.mean(x, axis=axes) if axes else x


def item_loss(objective: Objective, y: jax.Array, t: jax.Array) -> jax.Array:
  """Per-item loss, shape (*items,): mean over the item's components (see the module docstring)."""
  n = objective.item_ndim
  y = y.astype(jnp.float32)
  if objective.loss == "mse":
    return _mean_trailing(jnp.square(y - t), n)
  if objective.loss == "bce":
    if objective.from_logits:
      # log(1 - sigmoid(z)) = log_sigmoid(-z): exact for any z.
      return _mean_trailing(-(t * jax.nn.log_sigmoid(y) + (1.0 - t) * jax.nn.log_sigmoid(-y)), n)
    p = jnp.clip(y, _EPS, 1.0 - _EPS)
    return _mean_trailing(-(t * jnp.log(p) + (1.0 - t) * jnp.log1p(-p)), n)
  # "ce": y (*items, k) probabilities or logits, t (*items,) int32 classes.
  t = t[..., None].astype(jnp.int32)
  if objective.from_logits:
    return -jnp.take_along_axis(jax.nn.log_softmax(y, axis=-1), t, axis=-1)[..., 0]
  p = jnp.take_along_axis(y, t, axis=-1)[..., 0]
  return -jnp.log(jnp.clip(p, _EPS, 1.0))


def item_metric(objective: Objective, y: jax.Array, t: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Per-item (sum, count), each (*items,) float32; see `finish_metric` for the score."""
  n = objective.item_ndim
  y = y.astype(jnp.float32)
  if objective.metric_component is not None:
    y, t = y[..., objective.metric_component], t[..., objective.metric_component]
  item_shape = y.shape[:n]
  if objective.metric == "rmse":
    sq = jnp.square(y - t)
    components = math.prod(sq.shape[n:])
    return jnp.sum(sq, axis=tuple(range(n, sq.ndim))), jnp.full(item_shape, float(components), jnp.float32)
  # "error"
  if objective.loss == "ce":
    wrong = (jnp.argmax(y, axis=-1) != t).astype(jnp.float32)
  else:
    # Thresholded 0/1 outputs: an item is wrong if any of its components is (sigmoid(z) > 0.5 iff z > 0).
    threshold = 0.0 if objective.from_logits else 0.5
    wrong = jnp.any((y > threshold) != (t > 0.5), axis=tuple(range(n, y.ndim))).astype(jnp.float32)
  return wrong, jnp.ones(item_shape, jnp.float32)


def finish_metric(objective: Objective, total: float, count: float) -> float:
  """The score from summed per-item sums and counts: 100 * wrong / count, or sqrt(sse / count)."""
  if count <= 0:
    return float("nan")
  if objective.metric == "rmse":
    return float((total / count) ** 0.5)
  return float(100.0 * total / count)


def standard_error(metric: str, score: float, examples: int) -> float:
  """The standard error of a `metric` score over `examples` independent examples, from the score alone:
  "error" (a percentage p): 100 * sqrt(q (1 - q) / n), q = p / 100 but at least 1 / n (a perfect score
  is known to about one example, not exactly); "rmse" (r): r / sqrt(2 n), the standard error of a
  standard deviation under normal residuals. NaN for no examples or a score that is not finite."""
  if examples <= 0 or not math.isfinite(score):
    return float("nan")
  if metric == "rmse":
    return float(abs(score) / math.sqrt(2.0 * examples))
  if metric != "error":
    raise ValueError(f"unknown metric {metric!r}; the metrics are {', '.join(METRICS)}")
  q = min(max(score / 100.0, 1.0 / examples), 1.0)
  return float(100.0 * math.sqrt(q * (1.0 - q) / examples))
