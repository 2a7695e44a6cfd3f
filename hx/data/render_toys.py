"""A rendered stand-in for smallNORB: 5 categories of 3D shapes under varying pose and lighting, 28x28 grey.

No copy of smallNORB can be had offline, so the default toy data set is rendered here by sphere tracing
signed distance functions with NumPy (orthographic camera, Lambert shading). Like smallNORB's categories
(animal, human, airplane, truck, car), each category is a simple articulated solid:

  0 "animal"   a four-legged body with a head     1 "human"  torso, head, arms and legs
  2 "airplane" fuselage, wings and tail            3 "truck"  cab and cargo box on wheels
  4 "car"      body and cabin on four wheels

Each image has a random azimuth (0-360 degrees), elevation (30-70 degrees, as smallNORB's cameras), a
small roll, scale and shift, a random light direction, ambient level and albedo, and a noisy background.
The set is named "smallnorb-synthetic" and flagged `synthetic`: it stands in for smallNORB, it is not it.
"""

from __future__ import annotations

import numpy as np

from hx.data.imageset import TEST, TRAIN, VAL, ImageSet
from hx.data.preprocess import resize_area

__all__ = ["render_toys", "toy_imageset", "TOY_CLASSES", "NAME"]

NAME = "smallnorb-synthetic"
TOY_CLASSES = ("animal", "human", "airplane", "truck", "car")


def _box(q, c, b):
  d = np.abs(q - np.asarray(c, np.float32)) - np.asarray(b, np.float32)
  return np.linalg.norm(np.maximum(d, 0), axis=-1) + np.minimum(d.max(axis=-1), 0)


def _sphere(q, c, r):
  return np.linalg.norm(q - np.asarray(c, np.float32), axis=-1) - r


def _capsule(q, a, b, r):
  a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
  pa, ba = q - a, b - a
  h = np.clip((pa @ ba) / (ba @ ba), 0, 1)
  return np.linalg.norm(pa - h[..., None] * ba, axis=-1) - r


def _wheel(q, c, r, h):
  """A cylinder of radius r along z, half-length h, centred at c."""
  p = q - np.asarray(c, np.float32)
  dx = np.sqrt(p[..., 0] ** 2 + p[..., 1] ** 2) - r
  dz = np.abs(p[..., 2]) - h
  return np.minimum(np.maximum(dx, dz), 0) + np.sqrt(np.maximum(dx, 0) ** 2 + np.maximum(dz, 0) ** 2)


def _sdf(category: int, q: np.ndarray) -> np.ndarray:
  """Signed distance to the category's solid, q (..., 3) in object coordinates (y up)."""
  if category == 0:  # animal
    parts = [_capsule(q, (-0.4, 0.1, 0), (0.35, 0.1, 0), 0.2), _sphere(q, (0.55, 0.35, 0), 0.17),
             _capsule(q, (0.35, 0.1, 0), (0.55, 0.35, 0), 0.09)]
    parts += [_capsule(q, (x, 0.0, z), (x, -0.5, z), 0.07) for x in (-0.35, 0.3) for z in (-0.12, 0.12)]
    parts.append(_capsule(q, (-0.55, 0.15, 0), (-0.8, 0.35, 0), 0.04))
  elif category == 1:  # human
    parts = [_capsule(q, (0, -0.05, 0), (0, 0.35, 0), 0.17), _sphere(q, (0, 0.66, 0), 0.15)]
    parts += [_capsule(q, (s * 0.1, -0.1, 0), (s * 0.14, -0.75, 0), 0.08) for s in (-1, 1)]
    parts += [_capsule(q, (s * 0.22, 0.4, 0), (s * 0.45, -0.05, 0.1), 0.06) for s in (-1, 1)]
  elif category == 2:  # airplane
    parts = [_capsule(q, (-0.75, 0, 0), (0.75, 0, 0), 0.12), _box(q, (0.05, 0, 0), (0.16, 0.025, 0.8)),
             _box(q, (-0.65, 0.17, 0), (0.1, 0.17, 0.025)), _box(q, (-0.65, 0.02, 0), (0.09, 0.02, 0.28))]
  elif category == 3:  # truck
    parts = [_box(q, (0.5, 0.0, 0), (0.18, 0.22, 0.26)), _box(q, (-0.17, 0.07, 0), (0.45, 0.3, 0.28)),
             _box(q, (0.1, -0.27, 0), (0.7, 0.06, 0.24))]
    parts += [_wheel(q, (x, -0.33, z), 0.13, 0.06) for x in (-0.45, -0.15, 0.5) for z in (-0.25, 0.25)]
  else:  # car
    parts = [_box(q, (0, -0.08, 0), (0.68, 0.14, 0.3)), _box(q, (-0.08, 0.15, 0), (0.36, 0.12, 0.27))]
    parts += [_wheel(q, (x, -0.24, z), 0.14, 0.06) for x in (-0.42, 0.42) for z in (-0.3, 0.3)]
  return np.minimum.reduce(parts)


def _rotation(az, el, roll):
  ca, sa, ce, se, cr, sr = np.cos(az), np.sin(az), np.cos(el), np.sin(el), np.cos(roll), np.sin(roll)
  ry = np.array([[ca, 0, sa], [0, 1, 0], [-sa, 0, ca]])
  rx = np.array([[1, 0, 0], [0, ce, -se], [0, se, ce]])
  rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
  return (rz @ rx @ ry).astype(np.float32)


def _render_one(category: int, rng: np.random.Generator, res: int) -> np.ndarray:
  """float32 (res, res) grey image of one random pose of `category`."""
  rot = _rotation(rng.uniform(0, 2 * np.pi), np.deg2rad(rng.uniform(30, 70)), rng.normal(0, 0.1))
  scale = rng.uniform(0.8, 1.05)
  shift = np.array([*rng.uniform(-0.1, 0.1, 2), 0], np.float32)
  coords = (np.arange(res, dtype=np.float32) + 0.5) / res * 2.4 - 1.2
  xs, ys = np.meshgrid(coords, -coords)
  origin = np.stack([xs.ravel(), ys.ravel(), np.full(xs.size, 2.0, np.float32)], -1)

  def sdf(p):  # world -> object coordinates: q = R^T (p - shift) / scale
    return _sdf(category, ((p - shift) @ rot) / scale) * scale

  t = np.full(len(origin), 0.8, np.float32)
  active = np.flatnonzero(np.hypot(origin[:, 0] - shift[0], origin[:, 1] - shift[1]) < 1.15)
  hit = np.zeros(len(origin), bool)
  for _ in range(48):
    if not len(active):
      break
    p = origin[active].copy()
    p[:, 2] -= t[active]
    d = sdf(p)
    t[active] += d
    done = d < 2e-3
    hit[active[done]] = True
    active = active[~done & (t[active] < 3.2)]
  img = np.empty(len(origin), np.float32)
  light = rng.normal(size=3)
  light[2] = abs(light[2]) + 0.5
  light /= np.linalg.norm(light)
  ambient, albedo = rng.uniform(0.1, 0.35), rng.uniform(0.6, 1.0)
  idx = np.flatnonzero(hit)
  if len(idx):
    p = origin[idx].copy()
    p[:, 2] -= t[idx]
    e = 2e-3
    normal = np.stack([sdf(p + o) - sdf(p - o) for o in np.eye(3, dtype=np.float32) * e], -1)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True) + 1e-9
    img[idx] = albedo * (ambient + (1 - ambient) * np.clip(normal @ light, 0, 1))
  miss = ~hit
  img[miss] = rng.uniform(0.15, 0.45)
  img = img.reshape(res, res)
  img += rng.normal(0, 0.02, img.shape).astype(np.float32)
  return np.clip(img, 0, 1)


def render_toys(labels: np.ndarray, seed: int = 0, size: int = 28, supersample: int = 2) -> np.ndarray:
  """Renders one image per label: float32 (n, 1, size, size) in [0, 1], deterministic for `seed`.

  Args:
    labels: int (n,) categories 0..4.
    seed: the random seed; image i depends only on (seed, i, labels[i]).
    size: output height and width.
    supersample: render at size * supersample and area-average down (anti-aliasing).
  """
  res = size * supersample
  out = np.empty((len(labels), 1, res, res), np.float32)
  for i, c in enumerate(labels):
    out[i, 0] = _render_one(int(c), np.random.default_rng([seed, i, int(c)]), res)
  return resize_area(out, size, size) if supersample > 1 else out


def toy_imageset(seed: int = 0, per_class: tuple[int, int, int] = (600, 200, 200),
                 size: int = 28) -> ImageSet:
  """The rendered smallNORB stand-in: per class `per_class` = (train, val, test) images, 28x28 grey.

  Returns an ImageSet named "smallnorb-synthetic" with `synthetic=True`; classes are TOY_CLASSES.
  """
  labels, pools = [], []
  for pool, k in zip((TRAIN, VAL, TEST), per_class):
    labels.append(np.repeat(np.arange(5), k))
    pools.append(np.full(5 * k, pool, np.int8))
  labels, pools = np.concatenate(labels).astype(np.int32), np.concatenate(pools)
  images = render_toys(labels, seed, size)
  return ImageSet(NAME, True, images, labels, pools, TOY_CLASSES,
                  f"rendered stand-in (seed {seed}, {per_class} per class)")
