"""The random data of the training-throughput benchmarks: images and lists of indices into them.

`train_throughput.py` trains hx's count_digit candidate on it and `torch_reference.py`, its PyTorch peer,
the same architecture on the same arrays (the same seed gives the same data), so both read it from here
rather than from each other. The targets are random counts: the figures are throughput, not accuracy.
"""

from __future__ import annotations

import numpy as np


def _lists(rng: np.random.Generator, n: int, lengths: tuple[int, ...], pad: int, num_images: int):
  """A Split of `n` lists, each of a length drawn from `lengths`, padded to `pad`: indices (n, pad) int32
  into a table of `num_images` images (0 at padding), a mask (n, pad) and a random count (n, 1) float32."""
  from hx.compile.values import ListBatch, Split
  length = rng.choice(lengths, size=n)
  mask = np.arange(pad)[None, :] < length[:, None]
  idx = np.where(mask, rng.integers(0, num_images, size=(n, pad)), 0).astype(np.int32)
  targets = rng.integers(0, length + 1)[:, None].astype(np.float32)  # random counts: throughput only
  return Split(ListBatch(idx, mask), targets)


def random_data(train_lists: int, val_lists: int, num_images: int, seed: int = 0):
  """(table, train, val): random 1x28x28 images and Splits of lists of indices into them (NumPy)."""
  rng = np.random.default_rng(seed)
  table = rng.uniform(0.0, 1.0, size=(num_images, 1, 28, 28)).astype(np.float32)
  train = _lists(rng, train_lists, (2, 3, 4, 5), 5, num_images)
  val = _lists(rng, val_lists, (6, 7, 8), 8, num_images)
  return table, train, val
