"""A rendered stand-in for GTSRB: speed-limit signs 30/50/70/80/100 and the maze's start and goal signs.

No copy of GTSRB can be had offline, so the default sign data set is rendered here with NumPy: each sign is
drawn analytically in its own coordinates (a red ring with black digits from a 5x7 bitmap font for speed
limits; a blue disc with a white arrow for the start; a red octagon with a white bar for the goal), then
placed with a random scale, rotation, shear and shift over a random background (colour gradient plus
low-frequency blotches), lit by a random brightness gradient, blurred, and given pixel noise. Rendered at
2x and area-averaged to 32x32 colour.

Classes (in this order): speed_30, speed_50, speed_70, speed_80, speed_100, start, goal -- the names the
maze tasks look up. The set is named "gtsrb-synthetic" and flagged `synthetic`.
"""

from __future__ import annotations

import numpy as np

from hx.data.imageset import TEST, TRAIN, VAL, ImageSet
from hx.data.preprocess import resize_area

__all__ = ["render_signs", "sign_imageset", "SIGN_CLASSES", "NAME"]

NAME = "gtsrb-synthetic"
SIGN_CLASSES = ("speed_30", "speed_50", "speed_70", "speed_80", "speed_100", "start", "goal")
_TEXT = {0: "30", 1: "50", 2: "70", 3: "80", 4: "100"}
_FONT = {  # 5x7 bitmaps, rows top to bottom
    "0": ("01110", "10001", "10011", "10101", "11001", "10001", "01110"),
    "1": ("00100", "01100", "00100", "00100", "00100", "00100", "01110"),
    "3": ("11110", "00001", "00001", "01110", "00001", "00001", "11110"),
    "5": ("11111", "10000", "11110", "00001", "00001", "10001", "01110"),
    "7": ("11111", "00001", "00010", "00100", "01000", "01000", "01000"),
    "8": ("01110", "10001", "10001", "01110", "10001", "10001", "01110"),
}
_GLYPHS = {k: np.array([[c == "1" for c in row] for row in v]) for k, v in _FONT.items()}


def _text_mask(u, v, text):
  """Bool mask of `text` drawn in the box |u| < 0.58, |v| < 0.36 (v up), character cells 6 wide (1 gap)."""
  n = len(text)
  width = 0.58 if n == 3 else 0.5
  col = (u + width) / (2 * width) * (6 * n - 1)
  row = (0.36 - v) / 0.72 * 7
  inside = (col >= 0) & (col < 6 * n - 1) & (row >= 0) & (row < 7)
  ci = np.clip(col.astype(int), 0, 6 * n - 2)
  ri = np.clip(row.astype(int), 0, 6)
  char, cx = ci // 6, ci % 6
  mask = np.zeros(u.shape, bool)
  for k, ch in enumerate(text):
    g = _GLYPHS[ch]
    sel = inside & (char == k) & (cx < 5)
    mask[sel] = g[ri[sel], cx[sel]]
  return mask


def _sign(cls, u, v):
  """(rgb (..., 3), alpha (...)) of sign class `cls` at sign coordinates (u, v), the sign within r <= 1."""
  r = np.sqrt(u * u + v * v)
  rgb = np.ones(u.shape + (3,), np.float32)
  red, blue, white, black = (0.8, 0.08, 0.1), (0.1, 0.25, 0.75), (0.95, 0.95, 0.95), (0.05, 0.05, 0.05)
  if cls < 5:
    alpha = r <= 1
    rgb[:] = white
    rgb[(r > 0.72) & alpha] = red
    rgb[_text_mask(u, v, _TEXT[cls]) & (r <= 0.72)] = black
  elif cls == 5:  # start: blue disc with a white up arrow
    alpha = r <= 1
    rgb[:] = blue
    shaft = (np.abs(u) < 0.14) & (v > -0.65) & (v < 0.1)
    arrow = shaft | ((v >= 0.05) & (v < 0.6) & (np.abs(u) < 0.9 * (0.6 - v)))
    rgb[arrow] = white
    rgb[(r > 0.92) & alpha] = white
  else:  # goal: red octagon with a white border and bar
    oct_ = np.maximum(np.maximum(np.abs(u), np.abs(v)), (np.abs(u) + np.abs(v)) / 1.3)
    alpha = oct_ <= 1
    rgb[:] = red
    rgb[(oct_ > 0.9) | ((np.abs(v) < 0.17) & (np.abs(u) < 0.62))] = white
  return rgb, alpha


def _blur(img, sigma):
  """Separable Gaussian blur of (3, H, W) with edge padding."""
  if sigma < 0.3:
    return img
  k = np.arange(-int(3 * sigma) - 1, int(3 * sigma) + 2)
  w = np.exp(-0.5 * (k / sigma) ** 2)
  w /= w.sum()
  pad = len(k) // 2
  x = np.pad(img, ((0, 0), (pad, pad), (0, 0)), mode="edge")
  img = sum(wi * x[:, i:i + img.shape[1]] for i, wi in enumerate(w))
  x = np.pad(img, ((0, 0), (0, 0), (pad, pad)), mode="edge")
  return sum(wi * x[:, :, i:i + img.shape[2]] for i, wi in enumerate(w))


def _render_one(cls: int, rng: np.random.Generator, res: int) -> np.ndarray:
  coords = (np.arange(res, dtype=np.float32) + 0.5) / res * 2 - 1
  x, y = np.meshgrid(coords, -coords)
  # background: a random colour, a gradient and low-frequency blotches
  base = rng.uniform(0.1, 0.8, 3).astype(np.float32)
  grad = rng.normal(0, 0.15, (3, 2)).astype(np.float32)
  bg = base[:, None, None] + grad[:, :1, None] * x + grad[:, 1:, None] * y
  blotch = rng.normal(0, 0.12, (3, 4, 4)).astype(np.float32)
  bg += resize_area(blotch.repeat(res // 4, 1).repeat(res // 4, 2), res, res)
  # sign placement: scale, rotation, shear, shift (inverse map from image to sign coordinates)
  scale = rng.uniform(0.55, 0.9)
  angle = rng.normal(0, 0.2)
  shear = rng.normal(0, 0.08)
  aspect = np.exp(rng.normal(0, 0.08))
  cx, cy = rng.uniform(-0.12, 0.12, 2)
  c, s = np.cos(angle), np.sin(angle)
  px, py = (x - cx) / scale, (y - cy) / scale
  u = (c * px + s * py) * aspect + shear * py
  v = (-s * px + c * py) / aspect
  rgb, alpha = _sign(cls, u, v)
  img = np.where(alpha[None], np.moveaxis(rgb, -1, 0), bg)
  # lighting: overall brightness and a gradient, then blur and noise
  light = rng.uniform(0.35, 1.25) * (1 + rng.normal(0, 0.2) * x + rng.normal(0, 0.2) * y)
  img = img * light[None]
  img = _blur(img, rng.uniform(0, 2.0))
  img = img + rng.normal(0, rng.uniform(0.0, 0.06), img.shape)
  return np.clip(img, 0, 1).astype(np.float32)


def render_signs(labels: np.ndarray, seed: int = 0, size: int = 32, supersample: int = 2) -> np.ndarray:
  """Renders one sign per label: float32 (n, 3, size, size) in [0, 1], deterministic for `seed`.

  Args:
    labels: int (n,) class indices into SIGN_CLASSES.
    seed: the random seed; image i depends only on (seed, i, labels[i]).
  """
  res = size * supersample
  out = np.empty((len(labels), 3, res, res), np.float32)
  for i, c in enumerate(labels):
    out[i] = _render_one(int(c), np.random.default_rng([seed, i, int(c), 7]), res)
  return resize_area(out, size, size) if supersample > 1 else out


def sign_imageset(seed: int = 0, per_class: tuple[int, int, int] = (600, 200, 200),
                  size: int = 32) -> ImageSet:
  """The rendered GTSRB stand-in: per class `per_class` = (train, val, test) images, (3, size, size).

  Returns an ImageSet named "gtsrb-synthetic" with `synthetic=True`; classes are SIGN_CLASSES.
  """
  labels, pools = [], []
  for pool, k in zip((TRAIN, VAL, TEST), per_class):
    labels.append(np.repeat(np.arange(len(SIGN_CLASSES)), k))
    pools.append(np.full(len(SIGN_CLASSES) * k, pool, np.int8))
  labels, pools = np.concatenate(labels).astype(np.int32), np.concatenate(pools)
  return ImageSet(NAME, True, render_signs(labels, seed, size), labels, pools, SIGN_CLASSES,
                  f"rendered stand-in (seed {seed}, {per_class} per class)")
