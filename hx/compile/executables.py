"""What Tune runs on the device: the traced functions (a training step, an evaluation over a split's chunks)
and the cache of their compiled executables.

The training step takes and returns a `TrainState` (its buffers donated); an evaluation returns the
sums a score is finished from. Each is compiled ahead of time for the shapes of its arguments and cached
by (its name, a key of what it computes, those shapes): `hx.compile.tuning` (module docstring) says what
candidates share an executable, and `tune_stats` counts the traces and compilations.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import time
from typing import TYPE_CHECKING, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from hx.compile.batching import signature
from hx.compile.losses import Objective, item_loss, item_metric
from hx.lang.values import ELEMENT_BATCHES, gather, take

if TYPE_CHECKING:
  import chex

  from hx.compile.tune_inputs import Tunable
  from hx.lang.values import Array, Batch, Inputs

__all__ = ["TrainState", "tune_stats", "clear_tune_caches", "release_unused_executables",
           "cached_executables", "executable", "resolve_objective", "apply_for", "make_train_step",
           "make_eval", "make_per_image", "gathered"]


class TrainState(NamedTuple):
  """The training loop's carry: what a training step takes (donated) and returns; a pytree.

  Attributes:
    params: the trainable parameters, the variables' "params" collection (a pytree of float32 arrays).
    collections: the other variable collections ({"batch_stats": ...}, or {}), as the steps update them.
    opt_state: the optimiser's state for `params` (optax Adam's step count and moments).
    loss_sum: () float32, the summed training loss of the epoch's steps so far.
    bad_step: () int32, the step (within the epoch, from 0) of the epoch's first non-finite loss; -1: none.
    bad_loss: () float32, that loss (0 when there is none).
  """
  params: chex.ArrayTree
  collections: dict[str, chex.ArrayTree]
  opt_state: optax.OptState
  loss_sum: jax.Array
  bad_step: jax.Array
  bad_loss: jax.Array

  @property
  def variables(self) -> dict:
    """{"params": params, **collections}: the variables as `apply` takes them."""
    return {"params": self.params, **self.collections}

  @staticmethod
  def begin(params: chex.ArrayTree, collections: dict[str, chex.ArrayTree], opt_state: optax.OptState,
            loss_sum: jax.typing.ArrayLike = 0.0) -> TrainState:
    """A carry with fresh accumulators on the device: the loss sum `loss_sum` (0, or what a paused epoch
    had summed) and no bad step. New buffers, as the steps consume (donate) the carry's."""
    loss, bad_step, bad_loss = jax.device_put((np.float32(loss_sum), np.int32(-1), np.float32(0.0)))
    return TrainState(params, collections, opt_state, loss, bad_step, bad_loss)

  def next_epoch(self) -> TrainState:
    """The same parameters and optimiser state, with the fresh accumulators of a new epoch (`begin`)."""
    return TrainState.begin(self.params, self.collections, self.opt_state)


# ----------------------------------------------------------------------------------------------------
# Cached executables.

_TRACES: collections.Counter[str] = collections.Counter()
_COMPILES: collections.Counter[str] = collections.Counter()
_MAX_EXECUTABLES = 256
_EXECUTABLES: collections.OrderedDict[tuple, jax.stages.Compiled] = collections.OrderedDict()
_USED: set[tuple] = set()
"""The keys of the executables used since the last `release_unused_executables`."""


def tune_stats() -> dict[str, dict[str, int]]:
  """How many times each jitted function was traced and compiled in this process (for tests)."""
  return {"traces": dict(_TRACES), "compiles": dict(_COMPILES), "cached_executables": len(_EXECUTABLES)}


def cached_executables(name: str) -> list[jax.stages.Compiled]:
  """The cached compiled executables of the function `name` ("train_step", "eval", "eval_fused"), the
  least recently used first (e.g. to read a training step's `cost_analysis`)."""
  return [exe for (kind, *_), exe in _EXECUTABLES.items() if kind == name]


def clear_tune_caches() -> None:
  """Forgets the cached executables and resets `tune_stats()`."""
  _EXECUTABLES.clear()
  _USED.clear()
  _TRACES.clear()
  _COMPILES.clear()


def release_unused_executables() -> int:
  """Forgets the cached executables not used since the last call (or since the process began), and
  returns how many. Called between the tasks of a long run (`hx.compile.release.release_between_tasks`):
  a task's executables stay for the next task, which may train programs of the same structure, and those
  of tasks before it go, so that the cache holds one task's working set rather than the last 256 of a
  stream's."""
  unused = [key for key in _EXECUTABLES if key not in _USED]
  for key in unused:
    del _EXECUTABLES[key]
  _USED.clear()
  return len(unused)


def executable(name: str, cache_key: tuple, make: Callable[[], Callable], donate: tuple[int, ...],
               args: tuple) -> tuple[jax.stages.Compiled, float]:
  """The compiled executable of `make()` for `args`' shapes, compiling it on a miss; (exe, seconds)."""
  key = (name, cache_key, signature(args))
  _USED.add(key)
  exe = _EXECUTABLES.get(key)
  if exe is not None:
    _EXECUTABLES.move_to_end(key)
    return exe, 0.0
  start = time.perf_counter()
  exe = jax.jit(make(), donate_argnums=donate).lower(*args).compile()
  seconds = time.perf_counter() - start
  _COMPILES[name] += 1
  _EXECUTABLES[key] = exe
  if len(_EXECUTABLES) > _MAX_EXECUTABLES:
    _EXECUTABLES.popitem(last=False)
  return exe, seconds


# ----------------------------------------------------------------------------------------------------
# The traced functions.

def _take(inputs: Inputs, idx: jax.Array) -> Batch:
  """Examples `idx` of a split's inputs as a batch (`hx.compile.values.take`: a SharedGraphs split
  becomes a GraphBatch, its neighbour tables gathered from the shared layouts)."""
  return take(inputs, idx)


def _targets(objective: Objective, t: jax.Array) -> jax.Array:
  """Targets as the losses take them: int32 class indices for "ce", else float32 (splits may store small
  exact integers narrower, e.g. uint8 grid targets)."""
  return t.astype(jnp.int32 if objective.loss == "ce" else jnp.float32)


def resolve_objective(compiled: Tunable, objective: Objective) -> Objective:
  """The objective Tune trains and scores `compiled` with: `from_logits` set when the compiled program
  can return logits matching the loss (output_activation "sigmoid" for "bce", "softmax" for "ce");
  otherwise `objective` as given (probabilities, clipped before the log)."""
  wanted = {"bce": "sigmoid", "ce": "softmax"}.get(objective.loss)
  if wanted is not None and getattr(compiled, "output_activation", None) == wanted:
    return dataclasses.replace(objective, from_logits=True)
  return objective


def apply_for(compiled: Tunable, objective: Objective) -> Callable:
  """compiled.apply, returning logits when the resolved objective takes them from the program."""
  if objective.from_logits and getattr(compiled, "output_activation", None) in ("sigmoid", "softmax"):
    return functools.partial(compiled.apply, logits=True)
  return compiled.apply


def _item_mask(objective: Objective, batch_inputs: Batch) -> Array | None:
  """(B, L|N) bool mask of the scored elements for list/graph outputs, else None."""
  if not objective.per_element:
    return None
  if not isinstance(batch_inputs, ELEMENT_BATCHES):
    raise TypeError("a list or graph output needs a ListBatch, GraphBatch or EdgeGraphBatch input (its mask "
                    "scores it)")
  return batch_inputs.mask


def _output_values(y: Batch) -> Array:
  """The (B, ...) array of an output; a list or graph output's (B, L|N, ...) element values."""
  return y.values if isinstance(y, ELEMENT_BATCHES) else y


def _merge_state(state: dict, new_state: chex.ArrayTree) -> dict:
  """The non-"params" collections after a training step, in the structure `state` has."""
  if not state:
    return state
  if isinstance(new_state, dict) and set(new_state) == set(state):
    return dict(new_state)
  if set(state) == {"batch_stats"}:
    return {"batch_stats": new_state}
  raise TypeError(f"apply returned state {type(new_state)} that does not match collections {set(state)}")


def make_train_step(apply: Callable, objective: Objective, tx: optax.GradientTransformation,
                    batch_size: int, pack: int | None = None, penalty: Callable | None = None) -> Callable:
  """The training step to jit: train_step(carry, frozen, table, inputs, targets, order, step, key) ->
  carry, a `TrainState`, on batch `step` of `order` ((steps * batch_size,) int32 example indices of the
  training split), with the loss averaged over its examples (or over the scored elements of list and
  graph outputs) and `tx`'s update; `pack`: the capacity `apply` runs its maps on (None: unpacked).
  `penalty(params, state, frozen, rng) -> float32 scalar`, where given, is added to the loss (a model's
  `Tunable.penalty`: EWC's, or a replayed memory's loss, `hx.baselines.continual`); its rng is the step's
  dropout key folded with 1, apart from the model's own."""
  packing = {} if pack is None else {"pack": pack}

  def loss_fn(params, state, frozen, x, targets, mask, rng):
    y, new_state = apply({"params": params, **state}, frozen, x, train=True, rng=rng, **packing)
    losses = item_loss(objective, _output_values(y), targets)
    if mask is None:
      loss = jnp.mean(losses)
    else:
      m = mask.astype(jnp.float32)
      loss = jnp.sum(losses * m) / jnp.maximum(jnp.sum(m), 1.0)
    if penalty is not None:
      loss = loss + penalty(params, state, frozen, jax.random.fold_in(rng, 1))
    return loss, new_state

  def train_step(carry: TrainState, frozen, table, inputs, targets, order, step, key) -> TrainState:
    """Training step `step` (an int32 scalar) of the epoch whose example order is `order`: the next carry."""
    _TRACES["train_step"] += 1
    idx = jax.lax.dynamic_slice_in_dim(order, step * batch_size, batch_size)
    batch_inputs = _take(inputs, idx)
    x = batch_inputs if table is None else gather(table, batch_inputs)
    mask = _item_mask(objective, batch_inputs)
    rng = jax.random.fold_in(key, step)
    (loss, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        carry.params, carry.collections, frozen, x, _targets(objective, targets[idx]), mask, rng)
    updates, opt_state = tx.update(grads, carry.opt_state, carry.params)
    params = optax.apply_updates(carry.params, updates)
    # Remember the first non-finite loss of the epoch on the device: the host looks every
    # `nan_check_every` steps.
    first_bad = jnp.logical_and(carry.bad_step < 0, jnp.logical_not(jnp.isfinite(loss)))
    return TrainState(params, _merge_state(carry.collections, new_state), opt_state, carry.loss_sum + loss,
                      jnp.where(first_bad, step, carry.bad_step), jnp.where(first_bad, loss, carry.bad_loss))

  return train_step


def _make_eval_chunk(apply: Callable, objective: Objective, pack: int | None = None) -> Callable:
  packing = {} if pack is None else {"pack": pack}

  def eval_chunk(variables, frozen, table, inputs, targets, idx):
    """Sums over the examples idx (chunk,) int32 (-1: padding): (metric sum, metric count, loss sum,
    loss count), float32 scalars."""
    valid = idx >= 0
    idx = jnp.maximum(idx, 0)
    batch_inputs = _take(inputs, idx)
    x = batch_inputs if table is None else gather(table, batch_inputs)
    y = _output_values(apply(variables, frozen, x, train=False, rng=None, **packing))
    t = _targets(objective, targets[idx])
    weight = valid.astype(jnp.float32)
    mask = _item_mask(objective, batch_inputs)
    if mask is not None:
      weight = weight[:, None] * mask.astype(jnp.float32)
    metric_sum, metric_count = item_metric(objective, y, t)
    losses = item_loss(objective, y, t)
    return jnp.stack([jnp.sum(metric_sum * weight), jnp.sum(metric_count * weight),
                      jnp.sum(losses * weight), jnp.sum(weight)])

  return eval_chunk


def make_eval(apply: Callable, objective: Objective, fused: bool, pack: int | None = None) -> Callable:
  """The evaluation to jit: f(variables, frozen, table, inputs, targets, idx) -> (4,) float32 sums (metric
  sum, metric count, loss sum, loss count) over one chunk idx (chunk,) of example indices (-1: padding),
  or, `fused`, over all chunks idx (num_chunks, chunk) in one call (`lax.map`)."""
  eval_chunk = _make_eval_chunk(apply, objective, pack)
  if not fused:
    def evaluate_chunk(*args):
      _TRACES["eval"] += 1
      return eval_chunk(*args)
    return evaluate_chunk

  def evaluate_all(variables, frozen, table, inputs, targets, idx_chunks):
    _TRACES["eval"] += 1
    sums = jax.lax.map(lambda idx: eval_chunk(variables, frozen, table, inputs, targets, idx), idx_chunks)
    return jnp.sum(sums, axis=0)

  return evaluate_all


def make_per_image(apply: Callable, logits: bool) -> Callable:
  """The per-image part of a scoring (`hx.compile.distinct`) to jit: f(variables, frozen, table, rows) ->
  apply's output on the images `rows` (chunk,) int32 of `table`, in inference mode (`logits`: the part
  gives the program's output, and the objective takes it as logits)."""

  def per_image(variables, frozen, table, rows):
    _TRACES["per_image"] += 1
    return apply(variables, frozen, table[rows], train=False, logits=logits)

  return per_image


def gathered(variables: chex.ArrayTree, frozen: chex.ArrayTree, x: jax.Array, *, train: bool,
             rng: jax.Array | None = None, **unused: object) -> jax.Array:
  """An `apply` that returns its input: the rest of a program whose per-image part gives its whole output
  (`hx.compile.distinct`), scored on the gathered per-image outputs."""
  return x
