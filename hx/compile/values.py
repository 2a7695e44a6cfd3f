"""The batched values programs run on, and the split format the training loop consumes.

Shapes below use B for the batch axis, L for the padded list length, N for the padded node count and
K for the padded neighbour count. Padding is marked by masks and never changes a result.

A tensor value of type `Tensor<a>[m1]...[mk]` is a plain array of shape (B, m1, ..., mk).

Data sets keep their images on the device in one table of shape (num_images, *image_shape); an example
then stores indices into that table in the same containers (`values` holding int32 indices instead of
images), and `gather` swaps the indices for the images inside the jitted step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["ListBatch", "GraphBatch", "Split", "gather"]


class ListBatch(NamedTuple):
  """A batch of lists of tensors.

  Attributes:
    values: (B, L, *elem) element values (or (B, L) int32 indices into an image table).
    mask: (B, L) bool, True for real elements; the real elements of each row are a prefix.
  """
  values: Any
  mask: Any


class GraphBatch(NamedTuple):
  """A batch of graphs whose nodes hold tensors.

  Attributes:
    values: (B, N, *elem) node values (or (B, N) int32 indices into an image table).
    neighbours: (B, N, K) int32; neighbours[b, u, 0] == u (a node comes first in its own list), then
      u's neighbours; padded entries point at u itself and are masked out.
    neighbour_mask: (B, N, K) bool, True for real entries of each neighbour list (a prefix).
    mask: (B, N) bool, True for real nodes; the real nodes of each graph are a prefix.
  """
  values: Any
  neighbours: Any
  neighbour_mask: Any
  mask: Any


class Split(NamedTuple):
  """One split of a task: n examples.

  Attributes:
    inputs: the program's input for all n examples, with a leading axis n: an array (n, *shape), a
      ListBatch or a GraphBatch; image inputs hold int32 indices into the task's image table.
    targets: the expected outputs: float32 (n, *shape) for real outputs and for Tensor<bool>[1]
      (0 or 1); int32 class indices (n,) for Tensor<bool>[k] with k > 1; for list or graph outputs,
      float32 (n, L or N, *shape), scored only where the input's mask is True.
  """
  inputs: Any
  targets: Any


def gather(table: Any, inputs: Any) -> Any:
  """`inputs` with each array of int32 image indices replaced by the images it points at.

  Args:
    table: (num_images, *image_shape) images.
    inputs: (B,) int32 indices, or a ListBatch / GraphBatch whose `values` are int32 indices.

  Returns:
    (B, *image_shape) images, or the same container with `values` of shape (B, L or N, *image_shape).
  """
  if isinstance(inputs, (ListBatch, GraphBatch)):
    return inputs._replace(values=table[inputs.values])
  return table[inputs]
