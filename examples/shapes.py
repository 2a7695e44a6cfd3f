r"""HOUDINI on a task sequence of your own: shapes drawn by this script (data the paper does not use).

    python examples/shapes.py                       # a few minutes on 2 CPU cores
    python examples/shapes.py --quick               # a shortened run (under a minute), as the tests run it

The sequence has three tasks on 12x12 grey images of four shapes (circle, square, triangle, cross), drawn
at random places with noise:

  1. is_circle      Tensor<real>[1][12][12] -> Tensor<bool>[1]          is the image a circle?
  2. is_cross       Tensor<real>[1][12][12] -> Tensor<bool>[1]          is it a cross?
  3. count_circles  List<Tensor<real>[1][12][12]> -> Tensor<real>[1]    how many circles in a list?

Task 3 trains on few lists; the circle recognizer task 1 learnt is in HOUDINI's library by then, and a
program that maps it over the list and adds up reuses it. The script runs HOUDINI and the standalone
network (a CNN, an MLP and an LSTM trained on task 3 alone) through the public API, then prints each
task's winning program with both test scores.
"""

from __future__ import annotations

import argparse

import numpy as np

import hx

SIDE = 12
SHAPES = ("circle", "square", "triangle", "cross")
IMAGE = f"Tensor<real>[1][{SIDE}][{SIDE}]"


def draw(shape: int, rng: np.random.Generator) -> np.ndarray:
  """One (1, 12, 12) float32 image of shape `shape` (an index into SHAPES), its size and place random."""
  r = rng.uniform(2.5, 4.0)
  cy, cx = rng.uniform(r + 0.5, SIDE - r - 1.5, size=2)
  y, x = np.mgrid[:SIDE, :SIDE].astype(np.float32)
  dy, dx = y - cy, x - cx
  if SHAPES[shape] == "circle":
    ink = np.abs(np.hypot(dy, dx) - r) < 0.8
  elif SHAPES[shape] == "square":
    ink = (np.maximum(np.abs(dy), np.abs(dx)) < r + 0.5) & (np.maximum(np.abs(dy), np.abs(dx)) > r - 0.8)
  elif SHAPES[shape] == "triangle":
    ink = (dy < r) & (dy > r - 1.2) & (np.abs(dx) < r) | (np.abs(np.abs(dx) - (dy + r) / 2) < 0.7) & (
        np.abs(dy) < r)
  else:
    ink = ((np.abs(dy) < 0.8) | (np.abs(dx) < 0.8)) & (np.maximum(np.abs(dy), np.abs(dx)) < r)
  image = ink.astype(np.float32) + rng.normal(0, 0.3, size=(SIDE, SIDE)).astype(np.float32)
  return image[None]


def recognize(shape: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
  """n images, half of `shape` and half of the others; labels 1 for `shape`."""
  labels = (np.arange(n) < n // 2).astype(np.int64)
  others = [s for s in range(len(SHAPES)) if s != shape]
  kinds = np.where(labels == 1, shape, rng.choice(others, size=n))
  order = rng.permutation(n)
  return np.stack([draw(int(k), rng) for k in kinds[order]]), labels[order]


def count(shape: int, n: int, lengths: tuple[int, int], rng: np.random.Generator):
  """n lists of lengths in `lengths` (inclusive); targets the number of `shape` in each."""
  others = [s for s in range(len(SHAPES)) if s != shape]
  lists, targets = [], []
  for _ in range(n):
    length = int(rng.integers(lengths[0], lengths[1] + 1))
    k = int(rng.integers(0, length + 1))
    kinds = rng.permutation([shape] * k + list(rng.choice(others, size=length - k)))
    lists.append(np.stack([draw(int(s), rng) for s in kinds]))
    targets.append(float(k))
  return lists, np.asarray(targets, np.float32)


def tasks(seed: int, quick: bool) -> list[hx.Task]:
  """The sequence's three tasks for instantiation `seed` (it draws the images)."""
  rng = np.random.default_rng(seed)
  n_images, n_lists = (300, 60) if quick else (2000, 200)
  training = {"epochs": 3 if quick else 15, "batch_size": 32}
  circle, cross = SHAPES.index("circle"), SHAPES.index("cross")
  is_circle = hx.Task.from_arrays(
      "is_circle", f"{IMAGE} -> Tensor<bool>[1]", recognize(circle, n_images, rng),
      recognize(circle, n_images // 4, rng), recognize(circle, n_images // 4, rng), training=training)
  is_cross = hx.Task.from_arrays(
      "is_cross", f"{IMAGE} -> Tensor<bool>[1]", recognize(cross, n_images, rng),
      recognize(cross, n_images // 4, rng), recognize(cross, n_images // 4, rng), training=training)
  count_circles = hx.Task.from_arrays(
      "count_circles", f"List<{IMAGE}> -> Tensor<real>[1]", count(circle, n_lists, (2, 5), rng),
      count(circle, n_lists // 2, (6, 8), rng), count(circle, n_lists // 2, (6, 8), rng),
      training={**training, "epochs": 6 if quick else 30})
  return [is_circle, is_cross, count_circles]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="a shortened run (fewer images and candidates)")
  parser.add_argument("--output_dir", default="runs/shapes", help="where the records and report go")
  args = parser.parse_args()
  stream = hx.TaskStream("shapes", lambda seed: tasks(seed, args.quick))
  config = hx.EvalConfig.make(stream, methods=["houdini", "standalone"], fractions=[1.0], seeds=[0],
                              budget={"candidates": 6 if args.quick else 16})
  outcome = hx.evaluate(config, args.output_dir, progress=print)
  print()
  print(outcome.summary())
  print(f"\nReport: {outcome.report}")

if __name__ == "__main__":
  main()
