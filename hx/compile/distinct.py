"""Scoring over distinct images: the per-image part of a program run once per distinct image of a split.

When a split is scored, every module runs in inference mode (library functions always do; fresh ones
use their running batch-norm statistics and no dropout), so a function applied to each input image on
its own gives an image the same output wherever and however often it occurs. A split draws its images
with replacement from a pool (`hx.data.tasks`), so it holds fewer distinct images than occurrences: on
full MNIST, count_digit's validation split has 14,700 list elements over 5,994 distinct images. Scoring
can then run that function once per distinct image and the rest of the program on its outputs, indexed
as the images were:

    program                                      per image                   rest
    compose(nn_a, map_l(compose(nn_b, nn_c)))    compose(nn_b, nn_c)         nn_a
    compose(conv_g^10(nn_k), map_g(nn_r))        nn_r                        conv_g^10(nn_k)
    map_l(nn_b)                                  nn_b                        none: the output is per element
    compose(nn_a, nn_b) on an image input        the whole program           none: the output is per image
    fold_l(nn_s, zeros(8)) on a list of images   none (no per-image part): scored as it is

The same fresh functions and parameters (`hx.compile.lower.compile_part` keeps their module specs; slots
are matched by name) and the same scores, up to rounding. Padded list elements and graph nodes point at
some image like the real ones (their outputs are masked out downstream, as before). Training cannot do
this: a training batch's statistics and dropout masks are per occurrence.

`Tune` and `hx.compile.evaluate` score this way wherever it runs at least a tenth fewer rows through the
per-image function than scoring every occurrence would (`worth_it`); ours, not the authors' (whose code
runs every list element through the network).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import numpy as np

from hx.lang import program as P
from hx.lang.values import ELEMENT_BATCHES, SharedGraphs

if TYPE_CHECKING:
  import chex

  from hx.lang.values import Inputs

__all__ = ["element_split", "DistinctImages", "distinct_images", "image_indices", "row_quantum", "worth_it",
           "select_slots"]


def row_quantum(rows: int) -> int:
  """What `rows` distinct rows per call are rounded up to a multiple of: a sixteenth of the largest power
  of two not above `rows` (at least 8), so that splits with about as many distinct images (a task's
  validation and test splits: 5,994 and 6,086 on count_digit, both 6,144) share one compiled executable,
  at the cost of at most a sixteenth more rows."""
  return max(8, 1 << max(0, rows.bit_length() - 5))


def _takes_elements(inputs: Inputs) -> bool:
  return isinstance(inputs, (*ELEMENT_BATCHES, SharedGraphs))


def element_split(program: P.Program, elements: bool) -> tuple[P.Program, P.Program | None] | None:
  """The part of `program` applied to each input image on its own, and the rest.

  Args:
    program: a complete program whose input holds images (indices into a table).
    elements: whether the input is a list or graph of images (else one image per example).

  Returns:
    (per_image, rest): `per_image` the function the input-end map applies to each element (for a list or
    graph input), or the whole program (for an image input); `rest` the program applied to a list or
    graph of `per_image`'s outputs, or None when the program's output is `per_image`'s (the program is
    that map alone, or an image input). None when the program has no per-image part (its input end is
    not a map: a fold or conv over the images).
  """
  if not elements:
    return program, None
  chain = P.chain(program)
  first = chain[-1]
  if not isinstance(first, P.Map):
    return None
  return first.fn, (P.compose_chain(chain[:-1]) if len(chain) > 1 else None)


class DistinctImages(NamedTuple):
  """A split's inputs indexed by their distinct images.

  Attributes:
    rows: (chunks, chunk) int32 indices into the image table: every distinct image the inputs point at,
      once, in ascending order, padded at the end by repeating the last one.
    inputs: the split's inputs with each image index i replaced by the position of i in `rows` (flat), in
      the same container and dtype.
    count: the number of distinct images (rows past it are padding).
  """
  rows: np.ndarray
  inputs: Inputs
  count: int

  def with_chunk(self, chunk: int) -> DistinctImages:
    """The same images in chunks of `chunk` rows, the last padded (e.g. another split's chunk, so that
    both share one executable: `hx.compile.batching.shared_eval_plans`)."""
    if chunk < 1:
      raise ValueError(f"with_chunk needs chunk >= 1, got {chunk}")
    unique = self.rows.reshape(-1)[:self.count]
    rows = np.full(-(-self.count // chunk) * chunk, unique[-1], np.int32)
    rows[:self.count] = unique
    return self._replace(rows=rows.reshape(-1, chunk))


def _index_array(inputs: Inputs) -> np.ndarray:
  return np.asarray(jax.device_get(inputs.values if _takes_elements(inputs) else inputs))


def image_indices(inputs: Inputs) -> np.ndarray | None:
  """The image indices a split's inputs hold (on the host), or None when they hold values (floats)."""
  idx = _index_array(inputs)
  return idx if np.issubdtype(idx.dtype, np.integer) else None


def distinct_images(inputs: Inputs, max_rows: int) -> DistinctImages:
  """The distinct images of a split's inputs (an array (n,) of image indices, or a ListBatch, GraphBatch,
  EdgeGraphBatch or SharedGraphs whose values are image indices; NumPy or device arrays, read on the
  host), cut into equal chunks of at most about `max_rows` rows, rounded up to a multiple of
  `row_quantum` of the chunk's rows."""
  if max_rows < 1:
    raise ValueError(f"distinct_images needs max_rows >= 1, got {max_rows}")
  idx = _index_array(inputs)
  if not np.issubdtype(idx.dtype, np.integer):
    raise TypeError(f"distinct_images needs integer image indices, got {idx.dtype}")
  if idx.size == 0:
    raise ValueError("distinct_images needs a split with at least one image")
  unique, positions = np.unique(idx, return_inverse=True)
  count = int(unique.size)
  chunk = -(-count // -(-count // max_rows))
  quantum = row_quantum(chunk)
  positions = positions.reshape(idx.shape).astype(idx.dtype)
  remapped = inputs._replace(values=positions) if _takes_elements(inputs) else positions
  rows = np.asarray(unique, np.int32).reshape(1, -1)
  return DistinctImages(rows, remapped, count).with_chunk(-(-chunk // quantum) * quantum)


def worth_it(distinct_rows: int, plain_rows: int) -> bool:
  """Whether running `distinct_rows` rows through the per-image function (padding included) saves at
  least a tenth of the `plain_rows` that scoring every occurrence runs: below that, the extra call and
  the outputs' round trip through memory would eat the saving."""
  return distinct_rows <= 0.9 * plain_rows


def select_slots(values: chex.ArrayTree, names: tuple[str, ...], wanted: tuple[str, ...]) -> chex.ArrayTree:
  """The entries of `values` (a tuple, one entry per slot named by `names`, or a dict of such tuples:
  variables' collections) for the slots named `wanted`, in that order."""
  where = [names.index(n) for n in wanted]
  if isinstance(values, dict):
    return {k: tuple(v[i] for i in where) for k, v in values.items()}
  return tuple(values[i] for i in where)
