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

from hx.data.imageset import ImageSet, class_labels, rendered_imageset
from hx.data.smallnorb import TOY_CLASSES  # the classes of the data set these images stand in for

__all__ = ["render_toys", "toy_imageset", "TOY_CLASSES", "NAME"]

NAME = "smallnorb-synthetic"


_STEPS = 48  # sphere-tracing steps at most; a ray not converged by then shows the background
_EPS = 2e-3  # a ray hits where the distance to the surface is below this (object units)
_CHUNK = 256  # images traced together: ~0.6M rays at 56x56, some tens of MB of temporaries
# Radius of a sphere about the object origin that holds each category's solid, with some margin (the parts'
# farthest points are at 0.91, 0.84, 0.87, 0.90, 0.78): rays start where they enter it and end where they
# leave it, so no step is spent outside it.
_BOUND = (0.95, 0.88, 0.91, 0.94, 0.82)


# ----- signed distance primitives on coordinate arrays x, y, z (each (N,) float32, object units) -----

def _box(x, y, z, c, b):
  """Distance to the box centred at c with half-sizes b."""
  d = [np.abs(u - cu if cu else u) - bu for u, cu, bu in zip((x, y, z), c, b)]
  out = np.sqrt(sum(np.maximum(du, 0) ** 2 for du in d))
  return out + np.minimum(np.maximum(np.maximum(d[0], d[1]), d[2]), 0)


def _sphere(x, y, z, c, r):
  return np.sqrt(sum((u - cu if cu else u) ** 2 for u, cu in zip((x, y, z), c))) - r


def _capsule(x, y, z, a, b, r):
  """Distance to the segment a-b thickened by r (terms of zero offset or direction are skipped: most
  segments lie along an axis)."""
  ba = [bu - au for au, bu in zip(a, b)]
  inv = 1 / sum(v * v for v in ba)
  p = [u - au if au else u for u, au in zip((x, y, z), a)]
  h = np.clip(sum(pu * (v * inv) for pu, v in zip(p, ba) if v), 0, 1)
  return np.sqrt(sum((pu - h * v if v else pu) ** 2 for pu, v in zip(p, ba))) - r


def _wheel(x, y, z, c, r, h):
  """A cylinder of radius r along z, half-length h, centred at c."""
  dr = np.sqrt((x - c[0]) ** 2 + (y - c[1]) ** 2) - r
  dz = np.abs(z - c[2]) - h
  return np.minimum(np.maximum(dr, dz), 0) + np.sqrt(np.maximum(dr, 0) ** 2 + np.maximum(dz, 0) ** 2)


def _sdf(category: int, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
  """Signed distance (N,) to the category's solid at points (x, y, z), each (N,) in object coordinates (y up).

  Mirror pairs of parts are one part at the folded coordinate (|x| or |z|): the nearer of two mirror images
  is the one on the point's side, so this is exact. Rows of like parts (legs, wheels) are one part at the
  distance to the nearest centre of the row, exact too, as their distance grows with that offset.
  """
  if category == 0:  # animal
    az = np.abs(z)
    leg_x = np.minimum(np.abs(x + 0.35), np.abs(x - 0.3))  # legs at x = -0.35, 0.3, z = +-0.12
    parts = [_capsule(x, y, z, (-0.4, 0.1, 0), (0.35, 0.1, 0), 0.2), _sphere(x, y, z, (0.55, 0.35, 0), 0.17),
             _capsule(x, y, z, (0.35, 0.1, 0), (0.55, 0.35, 0), 0.09),
             _capsule(leg_x, y, az, (0, 0.0, 0.12), (0, -0.5, 0.12), 0.07),
             _capsule(x, y, z, (-0.55, 0.15, 0), (-0.8, 0.35, 0), 0.04)]
  elif category == 1:  # human
    ax = np.abs(x)
    parts = [_capsule(x, y, z, (0, -0.05, 0), (0, 0.35, 0), 0.17), _sphere(x, y, z, (0, 0.66, 0), 0.15),
             _capsule(ax, y, z, (0.1, -0.1, 0), (0.14, -0.75, 0), 0.08),
             _capsule(ax, y, z, (0.22, 0.4, 0), (0.45, -0.05, 0.1), 0.06)]
  elif category == 2:  # airplane
    az = np.abs(z)  # every part is symmetric in z: fold once, for the boxes' |z - 0|
    parts = [_capsule(x, y, z, (-0.75, 0, 0), (0.75, 0, 0), 0.12),
             _box(x, y, az, (0.05, 0, 0), (0.16, 0.025, 0.8)),
             _box(x, y, az, (-0.65, 0.17, 0), (0.1, 0.17, 0.025)),
             _box(x, y, az, (-0.65, 0.02, 0), (0.09, 0.02, 0.28))]
  elif category == 3:  # truck
    wheel_x = np.minimum(np.minimum(np.abs(x + 0.45), np.abs(x + 0.15)), np.abs(x - 0.5))
    parts = [_box(x, y, z, (0.5, 0.0, 0), (0.18, 0.22, 0.26)),
             _box(x, y, z, (-0.17, 0.07, 0), (0.45, 0.3, 0.28)),
             _box(x, y, z, (0.1, -0.27, 0), (0.7, 0.06, 0.24)),
             _wheel(wheel_x, y, np.abs(z), (0, -0.33, 0.25), 0.13, 0.06)]
  else:  # car
    parts = [_box(x, y, z, (0, -0.08, 0), (0.68, 0.14, 0.3)),
             _box(x, y, z, (-0.08, 0.15, 0), (0.36, 0.12, 0.27)),
             _wheel(np.abs(x), y, np.abs(z), (0.42, -0.24, 0.3), 0.14, 0.06)]
  return np.minimum.reduce(parts)


def _rotations(az, el, roll):
  """float32 (m, 3, 3) rotations Rz(roll) Rx(el) Ry(az) from (m,) angles (radians)."""
  ca, sa, ce, se, cr, sr = np.cos(az), np.sin(az), np.cos(el), np.sin(el), np.cos(roll), np.sin(roll)
  zero, one = np.zeros_like(az), np.ones_like(az)
  ry = np.stack([ca, zero, sa, zero, one, zero, -sa, zero, ca], -1).reshape(-1, 3, 3)
  rx = np.stack([one, zero, zero, zero, ce, -se, zero, se, ce], -1).reshape(-1, 3, 3)
  rz = np.stack([cr, -sr, zero, sr, cr, zero, zero, zero, one], -1).reshape(-1, 3, 3)
  return (rz @ rx @ ry).astype(np.float32)


def _draw(rng: np.random.Generator, res: int) -> tuple[np.ndarray, np.ndarray]:
  """One image's random parameters, in a fixed order: float64 (12,) = azimuth, elevation, roll, scale,
  shift x, y, light direction (3, unit), ambient, albedo, background; and float32 (res, res) pixel noise."""
  az, el, roll = rng.uniform(0, 2 * np.pi), np.deg2rad(rng.uniform(30, 70)), rng.normal(0, 0.1)
  scale = rng.uniform(0.8, 1.05)
  shift = rng.uniform(-0.1, 0.1, 2)
  light = rng.normal(size=3)
  light[2] = abs(light[2]) + 0.5  # from the camera's side
  light /= np.linalg.norm(light)
  ambient, albedo = rng.uniform(0.1, 0.35), rng.uniform(0.6, 1.0)
  background = rng.uniform(0.15, 0.45)
  noise = rng.normal(0, 0.02, (res, res)).astype(np.float32)
  return np.array([az, el, roll, scale, *shift, *light, ambient, albedo, background]), noise


def _trace(category: int, q: list[np.ndarray], u: list[np.ndarray], span: np.ndarray):
  """Sphere-traces rays q + t u, 0 <= t <= span, all at once, dropping each ray once it hits or leaves.

  Args:
    q: ray starts, 3 arrays (N,) of x, y, z (object units); overwritten (the rays advance in place).
    u: unit directions, 3 arrays (N,).
    span: (N,) ray lengths.

  Returns:
    int (H,) indices of the rays that hit, and their hit points, 3 arrays (H,).
  """
  ids, rem = np.arange(len(span)), span.astype(np.float32)
  hit_ids, hit_q = [], []
  for _ in range(_STEPS):
    if not len(ids):
      break
    d = _sdf(category, *q)
    hit = d < _EPS
    if hit.any():
      hit_ids.append(ids[hit])
      hit_q.append([c[hit] for c in q])
    rem -= d
    keep = np.flatnonzero(~hit & (rem > 0))
    if len(keep) < len(ids):  # compact: later steps only touch rays still in flight
      ids, rem, d = ids[keep], rem[keep], d[keep]
      q, u = [c[keep] for c in q], [c[keep] for c in u]
    for c, v in zip(q, u):
      c += d * v
  if not hit_ids:
    return np.zeros(0, np.int64), [np.zeros(0, np.float32)] * 3
  return np.concatenate(hit_ids), [np.concatenate(c) for c in zip(*hit_q)]


def _render_chunk(category: int, params: np.ndarray, noise: np.ndarray) -> np.ndarray:
  """float32 (m, res, res) images of `category` for m images' parameters (m, 12) and noise (m, res, res)."""
  m, res = len(params), noise.shape[-1]
  rot = _rotations(params[:, 0], params[:, 1], params[:, 2])
  scale, shift = params[:, 3].astype(np.float32), params[:, 4:6].astype(np.float32)
  light, ambient, albedo, background = params[:, 6:9], params[:, 9], params[:, 10], params[:, 11]
  coords = (np.arange(res, dtype=np.float32) + 0.5) / res * 2.4 - 1.2
  # An orthographic camera looking down -z from z = 2; a world point p is q = R^T (p - shift) / scale in
  # object coordinates. Ray (image k, pixel (row, col)) in object units: offset (ox, oy) from the object's
  # origin across the view, which it passes at distance sqrt(ox^2 + oy^2); it crosses the bounding sphere
  # over a chord of half-length half.
  ox = (coords[None, :] - shift[:, :1]) / scale[:, None]  # (m, res) by column
  oy = (-coords[None, :] - shift[:, 1:]) / scale[:, None]  # (m, res) by row
  half2 = _BOUND[category] ** 2 - oy[:, :, None] ** 2 - ox[:, None, :] ** 2  # (m, res, res)
  img, row, col = np.nonzero(half2 > 0)  # rays that can hit; the rest show the background
  ox, oy, half = ox[img, col], oy[img, row], np.sqrt(half2[img, row, col])
  # Start where the ray enters the sphere: ox R[0] + oy R[1] + half R[2] (rows of R: the camera's axes in
  # object coordinates), heading -R[2].
  r = [[rot[:, i, j][img] for j in range(3)] for i in range(3)]  # (N,) each: 9 gathers of one entry
  q = [ox * r[0][j] + oy * r[1][j] + half * r[2][j] for j in range(3)]
  u = [np.negative(r[2][j], out=r[2][j]) for j in range(3)]
  ids, (x, y, z) = _trace(category, q, u, 2 * half)
  # Lambert shading from the surface normal, the gradient of the distance: finite differences at the corners
  # of a tetrahedron (4 evaluations, not 6). Normals are in object coordinates, so the light is too (R^T l).
  e = np.float32(_EPS)
  grad = np.zeros((3, len(ids)), np.float32)
  for v in np.array([[1, -1, -1], [-1, -1, 1], [-1, 1, -1], [1, 1, 1]], np.float32):
    grad += v[:, None] * _sdf(category, x + e * v[0], y + e * v[1], z + e * v[2])
  grad /= np.sqrt((grad ** 2).sum(axis=0)) + 1e-9
  k = img[ids]
  lit = (grad * np.einsum("mij,mi->jm", rot, light).astype(np.float32)[:, k]).sum(axis=0)
  out = np.repeat(background.astype(np.float32), res * res).reshape(m, res, res)
  out[k, row[ids], col[ids]] = albedo[k] * (ambient[k] + (1 - ambient[k]) * np.clip(lit, 0, 1))
  return np.clip(out + noise, 0, 1)


def render_toys(labels: np.ndarray, seed: int = 0, size: int = 28, supersample: int = 2) -> np.ndarray:
  """Renders one image per label: float32 (n, 1, size, size) in [0, 1], deterministic for `seed`.

  Images are traced in chunks of one category at a time; each image's parameters come from its own random
  stream, so image i depends only on (seed, i, labels[i]), not on the batch it is rendered in.

  Args:
    labels: int (n,) categories 0..4.
    seed: the random seed; image i depends only on (seed, i, labels[i]).
    size: output height and width.
    supersample: render at size * supersample and area-average down (anti-aliasing).
  """
  labels = class_labels(labels, TOY_CLASSES, "toy")
  res = size * supersample
  out = np.empty((len(labels), 1, size, size), np.float32)
  for c in np.unique(labels):
    where = np.flatnonzero(labels == c)
    for s in range(0, len(where), _CHUNK):
      part = where[s:s + _CHUNK]
      drawn = [_draw(np.random.default_rng([seed, int(i), int(c)]), res) for i in part]
      params, noise = np.stack([p for p, _ in drawn]), np.stack([n for _, n in drawn])
      images = _render_chunk(int(c), params, noise).reshape(len(part), size, supersample, size, supersample)
      # Area averaging as supersample^2 strided adds (~15x faster than .sum over the two axes).
      total = sum(images[:, :, i, :, j] for i in range(supersample) for j in range(supersample))
      out[part, 0] = total * np.float32(1 / supersample ** 2)
  return out


def toy_imageset(seed: int = 0, per_class: tuple[int, int, int] = (600, 200, 200),
                 size: int = 28) -> ImageSet:
  """The rendered smallNORB stand-in: per class `per_class` = (train, val, test) images, 28x28 grey.

  Returns an ImageSet named "smallnorb-synthetic" with `synthetic=True`; classes are TOY_CLASSES.
  """
  return rendered_imageset(NAME, TOY_CLASSES, render_toys, seed, per_class, size)
