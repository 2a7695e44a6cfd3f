"""Small generated data for the tests of a user's own tasks and sequences (`hx.Task.from_arrays`):
6x6 images labelled 1 where a bright square is drawn, and lists of them counted."""

from __future__ import annotations

import numpy as np


def bright_images(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
  """(images float32 (n, 1, 6, 6), labels int (n,)): noise, plus a bright 4x4 square where the label is 1."""
  x = rng.normal(0, 0.3, size=(n, 1, 6, 6)).astype(np.float32)
  y = rng.integers(0, 2, n)
  x[y == 1, 0, 1:5, 1:5] += 1.5
  return x, y


def bright_lists(rng: np.random.Generator, n: int) -> tuple[list[np.ndarray], np.ndarray]:
  """(n lists of 1-3 images (L_i, 1, 6, 6), float32 (n,) counts of the bright ones)."""
  items = [bright_images(rng, int(rng.integers(1, 4))) for _ in range(n)]
  return [x for x, _ in items], np.array([y.sum() for _, y in items], np.float32)
