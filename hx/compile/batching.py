"""How Tune cuts a run into fixed shapes: the example order of an epoch's batches, the chunks a split is
evaluated in, and the pack capacities (the most real list elements or graph nodes a training batch or
an evaluation chunk holds) that the packed executables are compiled for.

All of it is computed on the host before anything runs; see `hx.compile.tuning` (the module docstring:
last partial batch, evaluation chunks, packing) for why each is as it is.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hx.lang.values import Split, images_per_example, real_elements

if TYPE_CHECKING:
  from collections.abc import Iterable

  import chex

  from hx.compile.distinct import DistinctImages
  from hx.lang.values import Inputs

__all__ = ["epoch_order", "pack_capacity", "eval_pack_capacity", "num_examples", "eval_chunk_size",
           "eval_chunks", "EvalPlan", "eval_plan", "shared_eval_plans", "signature"]


def signature(args: chex.ArrayTree) -> tuple:
  """The structure, shapes and dtypes of a pytree of arrays: what an executable compiled for it fixes."""
  leaves, treedef = jax.tree.flatten(args)
  return treedef, tuple((tuple(x.shape), str(x.dtype), bool(getattr(x, "weak_type", False))) for x in leaves)


@functools.partial(jax.jit, static_argnums=(2, 3))
def epoch_order(key: jax.Array, epoch: jax.typing.ArrayLike, n: int, total: int) -> jax.Array:
  """(total,) int32: a permutation of range(n) for this epoch, repeated from its start up to `total`."""
  perm = jax.random.permutation(jax.random.fold_in(key, epoch), n).astype(jnp.int32)
  return jnp.resize(perm, (total,))


def _round_capacity(most: int, full: int) -> int | None:
  """`most` real elements rounded up to a multiple of ceil(full / 16) (so that batches whose fill differs
  a little share one executable); None when that is no less than `full` (nothing to save)."""
  quantum = -(-full // 16)
  capacity = max(quantum, -(-most // quantum) * quantum)
  return None if capacity >= full else capacity


def pack_capacity(lengths: np.ndarray, orders: Iterable[jax.typing.ArrayLike], batch_size: int,
                  padded_length: int, steps: int | None = None) -> int | None:
  """The `pack` of a training run: the most real elements a batch of the run holds, rounded up to a
  multiple of ceil(batch_size * padded_length / 16) (so that runs whose batches differ a little share
  one executable); None when that is no less than the padded batch (nothing to save).

  Args:
    lengths: (n,) real elements (list elements, graph nodes) of each training example
      (`hx.compile.values.real_elements`).
    orders: the epochs' example orders, each (steps * batch_size,) (batch s is order[s*B:(s+1)*B]); an
      iterable, drawn from only as far as needed.
    batch_size, padded_length: B and L (or N) of a batch's (B, L) list (or (B, N) graph).
    steps: the batches of an epoch, if known: then None is returned without drawing any order when even
      an epoch's average batch leaves nothing to save (the same answer, as the fullest batch holds at
      least the average).
  """
  full = batch_size * padded_length
  lengths = np.asarray(lengths)
  if steps is not None and lengths.size:
    # An epoch's batches hold every example once and the first steps * B - n again (`epoch_order`), so
    # its fullest batch holds at least this many elements.
    extra = steps * batch_size - lengths.size
    least = -(-(int(lengths.sum()) + extra * int(lengths.min())) // steps)
    if _round_capacity(least, full) is None:
      # E.g. GS2's million 4x4 grids among 70,000 3x3 ones: drawing an epoch's order costs ~1 s, paid by
      # every call to tune (each halving rung, each resumed chunk).
      return None
  most = 0
  for order in orders:
    per_batch = lengths[np.asarray(order)].reshape(-1, batch_size).sum(1)
    most = max(most, int(per_batch.max()))
    if _round_capacity(most, full) is None:
      # Nothing to save: the later epochs' orders (a permutation of the training set each, 17 s for 20
      # epochs of the paper's million grids on 2 cores) need not be drawn.
      return None
  return _round_capacity(most, full)


def eval_pack_capacity(lengths: np.ndarray, chunks: np.ndarray, padded_length: int) -> int | None:
  """The `pack` of a split's evaluation: the most real elements an evaluation chunk holds, rounded as in
  `pack_capacity` (to a sixteenth of the padded chunk); None when nothing would be saved.

  Args:
    lengths: (n,) real elements (list elements, graph nodes) of each example of the split.
    chunks: (num_chunks, chunk) example indices, -1 for a chunk's padding slots (`eval_chunks`). The
      evaluation fills such a slot with example 0 (scored with weight 0, but run through the network
      all the same), so it counts example 0's elements there.
    padded_length: L (or N) of the split's (n, L) lists (or (n, N) graphs).
  """
  chunks = np.asarray(chunks)
  if chunks.ndim != 2 or chunks.size == 0:
    raise ValueError(f"chunks must be a non-empty (num_chunks, chunk) array, got shape {chunks.shape}")
  lengths = np.asarray(lengths)
  if lengths.size == 0:
    return None  # an empty split: nothing runs to save
  most = int(lengths[np.maximum(chunks, 0)].sum(axis=1).max())
  return _round_capacity(most, chunks.shape[1] * padded_length)


def num_examples(split: Split) -> int:
  """The examples of a split (its targets' leading axis)."""
  return int(jax.tree.leaves(split.targets)[0].shape[0])


def eval_chunk_size(inputs: Inputs, eval_images: int) -> int:
  """Examples per evaluation chunk: as many as push at most `eval_images` images (at least one)."""
  return max(1, eval_images // images_per_example(inputs))


def eval_chunks(n: int, max_chunk: int) -> np.ndarray:
  """(num_chunks, chunk) int32 indices covering range(n) in equal chunks, padded with -1."""
  num = max(1, math.ceil(n / max_chunk))
  chunk = max(1, math.ceil(n / num))
  idx = np.full(num * chunk, -1, np.int32)
  idx[:n] = np.arange(n, dtype=np.int32)
  return idx.reshape(num, chunk)


class EvalPlan(NamedTuple):
  """How a split is evaluated.

  Attributes:
    chunks: (num_chunks, chunk) int32 example indices (-1: padding), from `eval_chunks`.
    pack: the pack capacity of its fullest chunk (`eval_pack_capacity`), or None: not packed.
    distinct: for a split whose inputs are image indices, its distinct images
      (`hx.compile.distinct.distinct_images`), for scoring a program's per-image part once per image;
      None for a split of values.
  """
  chunks: np.ndarray
  pack: int | None
  distinct: DistinctImages | None = None


def _distinct(split: Split, eval_images: int) -> DistinctImages | None:
  """`EvalPlan.distinct` of a split."""
  from hx.compile.distinct import distinct_images, image_indices

  indices = image_indices(split.inputs)
  if indices is None or indices.size == 0:
    return None
  return distinct_images(split.inputs, eval_images)


def eval_plan(split: Split, eval_images: int, packs: bool) -> EvalPlan:
  """The split's chunks (of at most `eval_images` images each) and, when `packs` (packing on,
  `TuneConfig.pack_lists`, for a program that packs) and the split has list or graph inputs, the capacity
  of its fullest chunk: the chunks stay the size they were (their memory is bounded by the padded rows),
  only the per-element work shrinks; and its distinct images."""
  chunks = eval_chunks(num_examples(split), eval_chunk_size(split.inputs, eval_images))
  distinct = _distinct(split, eval_images)
  lengths = real_elements(split.inputs) if packs else None
  if lengths is None:
    return EvalPlan(chunks, None, distinct)
  return EvalPlan(chunks, eval_pack_capacity(lengths, chunks, images_per_example(split.inputs)), distinct)


def shared_eval_plans(splits: list[Split], eval_images: int, packs: bool) -> list[EvalPlan]:
  """The plans of the splits one run evaluates (validation, test); splits of the same shapes get the
  largest of their capacities (None, no packing, if any has none), so that they share one executable as
  they did unpacked, instead of compiling one each whenever their fullest chunks fall in different
  buckets; likewise the largest chunk of their distinct images."""
  plans = [eval_plan(s, eval_images, packs) for s in splits]
  shapes = [(signature((s.inputs, s.targets)), p.chunks.shape) for s, p in zip(splits, plans)]
  shared = []
  for shape, plan in zip(shapes, plans):
    alike = [p for other, p in zip(shapes, plans) if other == shape]
    packs_alike = [p.pack for p in alike]
    chunk = max((p.distinct.rows.shape[1] for p in alike if p.distinct is not None), default=None)
    shared.append(plan._replace(pack=None if None in packs_alike else max(packs_alike),
                                distinct=None if plan.distinct is None else plan.distinct.with_chunk(chunk)))
  return shared
