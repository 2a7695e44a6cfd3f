"""A rendered stand-in for GTSRB: 7 traffic signs under random pose, blur, lighting and clutter, 32x32 RGB.

SYNTHETIC DATA. No copy of GTSRB can be had offline, so the signs the maze tasks use are drawn here with
NumPy. The set is named "gtsrb-synthetic" and flagged `synthetic`: it stands in for GTSRB, it is not it, and
numbers measured on it say nothing about the real data set.

Classes (`SIGN_CLASSES`, the roles of `hx.data.gtsrb.ROLES`):

  0-4 "speed_30" .. "speed_100"  a white disc in a red ring with the black number (a built-in stroke font)
  5   "start"                     the traffic-signals sign (German sign 131, GTSRB class 26): a white
                                  triangle, point up, in a red border, with a black traffic-light housing
                                  showing red, amber and green lights from top to bottom
  6   "goal"                      the stop sign: a red octagon with a white border and the white word STOP

Each sign face is drawn once per class into an RGBA texture from signed distance fields (anti-aliased edges,
drawn at 256x256 and kept at 128x128). An image then samples that texture (bilinear) through a random
similarity transform -- sign radius 0.5-0.9 of the half-width, rotation +-15 degrees, a slight horizontal
squeeze (a sign seen from the side), a shift that keeps it in view -- over a random cluttered background (a
colour gradient, soft colour blobs and hard-edged bars such as posts and building edges). The sign is drawn
at `size * supersample` and area-averaged down, the smooth background at `size`; then come a Gaussian blur
(sigma 0-1 pixel), lighting (a shading gradient across the sign, brightness, contrast, gamma and a colour
cast: GTSRB has many dark, washed-out images) and Gaussian pixel noise.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from hx.data.imageset import ImageSet, class_labels, rendered_imageset
from hx.data.preprocess import resize_area

__all__ = ["render_signs", "sign_imageset", "SIGN_CLASSES", "NAME"]

NAME = "gtsrb-synthetic"
SIGN_CLASSES = ("speed_30", "speed_50", "speed_70", "speed_80", "speed_100", "start", "goal")

_RED = (0.78, 0.08, 0.10)
_WHITE = (0.94, 0.94, 0.91)
_BLACK = (0.06, 0.06, 0.07)
_AMBER = (0.98, 0.62, 0.05)
_GREEN = (0.05, 0.62, 0.32)
_TEX = 256  # texture resolution when drawn (then halved)
_TEX_EXTENT = 1.1  # the texture spans [-1.1, 1.1]^2 in sign units (the sign fits the unit disc)
_CHUNK = 256  # images rendered per vectorised step, to bound temporary memory


# ----- the stroke font: a glyph is polylines in units, centre lines inside [0, width] x [0, 7] (y up) -----

def _arc(cx, cy, rx, ry, a0, a1, n=16):
  """Points along an elliptic arc from angle a0 to a1 (degrees, counter-clockwise positive)."""
  a = np.deg2rad(np.linspace(a0, a1, n))
  return list(zip(cx + rx * np.cos(a), cy + ry * np.sin(a)))


def _glyph(ch: str, w: float) -> list[list[tuple[float, float]]]:
  """The polylines of character `ch` drawn `w` units wide (7 high)."""
  h = w / 2
  if ch in "0O":
    return [_arc(h, 3.5, h, 3.5, 0, 360, 32)]
  if ch == "1":  # fixed width 2: a flag and a stem
    return [[(0.0, 5.4), (2.0, 7.0), (2.0, 0.0)]]
  if ch == "3":
    return [_arc(h, 5.25, h, 1.75, 160, -90) + _arc(h, 1.75, h, 1.75, 90, -160)]
  if ch == "5":
    return [[(w, 7.0), (0.25, 7.0), (0.1, 3.9)] + _arc(h, 2.3, h, 2.3, 125, -145, 20)]
  if ch == "7":
    return [[(0.0, 7.0), (w, 7.0), (w * 0.3, 0.0)]]
  if ch == "8":
    return [_arc(h, 5.3, h * 0.85, 1.7, -90, 270, 24), _arc(h, 1.8, h, 1.8, 90, 450, 24)]
  if ch == "S":
    return [_arc(h, 5.25, h, 1.75, 15, 270) + _arc(h, 1.75, h, 1.75, 90, -165)]
  if ch == "T":
    return [[(0.0, 7.0), (w, 7.0)], [(h, 7.0), (h, 0.0)]]
  if ch == "P":
    return [[(0.0, 0.0), (0.0, 7.0), (w - 1.8, 7.0)] + _arc(w - 1.8, 5.2, 1.8, 1.8, 90, -90)
            + [(0.0, 3.4)]]
  raise KeyError(ch)


class _Lettering(NamedTuple):
  """The stroke font's proportions, in its units (a glyph is 7 units tall).

  Attributes:
    glyph_w: float, a glyph's width ("1" is always 2 wide).
    stroke: float, a stroke's thickness.
    gap: float, the space between two glyphs' strokes.
  """
  glyph_w: float = 4.0
  stroke: float = 1.3
  gap: float = 0.8


_LETTERING = _Lettering()  # the two-digit speed limits' proportions


def _text_sdf(u: np.ndarray, v: np.ndarray, text: str, width: float, height: float, y0: float = 0.0,
              lettering: _Lettering = _LETTERING) -> np.ndarray:
  """Signed distance (sign units) to `text` centred at (0, y0), `height` tall overall, at most `width` wide,
  in the proportions `lettering`.

  Text wider than `width` is squeezed horizontally (the strokes with it, as narrow road-sign lettering).
  """
  glyph_w, stroke, gap = lettering
  widths = [2.0 if c == "1" else glyph_w for c in text]
  advance = stroke + gap
  total = sum(widths) + advance * (len(text) - 1) + stroke  # outer extent, units
  unit = height / (7 + stroke)
  sx = min(1.0, width / (total * unit))
  # Sign coordinates -> text units (x squeezed by sx); the distance is measured in units then rescaled.
  x = u / (unit * sx) + total / 2 - stroke / 2
  y = (v - y0) / unit + 3.5
  d = np.full(u.shape, np.inf, np.float64)
  left = 0.0
  for c, w in zip(text, widths):
    for line in _glyph(c, w):
      pts = np.asarray(line, np.float64)
      for (ax, ay), (bx, by) in zip(pts[:-1] + (left, 0), pts[1:] + (left, 0)):
        px, py, ex, ey = x - ax, y - ay, bx - ax, by - ay
        t = np.clip((px * ex + py * ey) / max(ex * ex + ey * ey, 1e-12), 0, 1)
        d = np.minimum(d, np.hypot(px - t * ex, py - t * ey))
    left += w + advance
  return (d - stroke / 2) * unit * sx


# ----- the sign faces -----

def _triangle_sdf(u: np.ndarray, v: np.ndarray, half: float) -> np.ndarray:
  """Signed distance to an equilateral triangle, point up, centroid at the origin, sides 2 * `half` long."""
  k = np.sqrt(3.0)
  x, y = np.abs(u) - half, v + half / k
  fold = x + k * y > 0  # beyond the bisector of the right-hand corner: reflect onto the base's side
  x, y = np.where(fold, (x - k * y) / 2, x), np.where(fold, (-k * x - y) / 2, y)
  x = x - np.clip(x, -2 * half, 0)
  return -np.hypot(x, y) * np.sign(y)


def _box_sdf(u: np.ndarray, v: np.ndarray, hw: float, hh: float, r: float) -> np.ndarray:
  """Signed distance to a rectangle centred at the origin, half-sizes `hw` x `hh`, corners rounded by `r`."""
  qx, qy = np.abs(u) - (hw - r), np.abs(v) - (hh - r)
  return np.hypot(np.maximum(qx, 0), np.maximum(qy, 0)) + np.minimum(np.maximum(qx, qy), 0) - r


def _face(c: int, u: np.ndarray, v: np.ndarray, px: float) -> np.ndarray:
  """float32 (..., 4) premultiplied RGBA of class `c`'s face at sign coordinates (u, v); px: texel size."""
  rgba = np.zeros(u.shape + (4,), np.float64)

  def paint(sdf, colour):  # painter's algorithm; coverage from the signed distance, one texel of ramp
    a = np.clip(0.5 - sdf / px, 0, 1)[..., None]
    rgba[:] = rgba * (1 - a) + np.array([*colour, 1.0]) * a

  r = np.hypot(u, v)
  if c < 5:  # speed limit: red ring, white disc, black number
    paint(r - 1.0, _RED)
    paint(r - 0.76, _WHITE)
    number = SIGN_CLASSES[c].split("_")[1]
    if len(number) == 2:
      paint(_text_sdf(u, v, number, 1.16, 0.84), _BLACK)
    else:  # three digits: smaller and narrower, as on real 100 signs
      paint(_text_sdf(u, v, number, 1.24, 0.76, lettering=_Lettering(glyph_w=3.4)), _BLACK)
  elif c == 5:  # traffic signals: red-bordered white triangle, black housing, red / amber / green lights
    # Rounded corners (radius 0.08) whose tips touch the unit circle: 2 * half / sqrt(3) + 0.08 = 1.
    corner = 0.08
    half = (1 - corner) * np.sqrt(3) / 2
    triangle = _triangle_sdf(u, v, half) - corner
    paint(triangle, _RED)
    paint(triangle + 0.17, _WHITE)  # the red border is 0.17 wide; the white triangle's inradius is 0.37
    paint(_box_sdf(u, v - 0.04, 0.12, 0.31, 0.05), _BLACK)  # the housing, y -0.27 .. 0.35
    for y, colour in ((0.23, _RED), (0.04, _AMBER), (-0.15, _GREEN)):
      paint(np.hypot(u, v - y) - 0.075, colour)
  else:  # stop: white border, red octagon, STOP
    octagon = np.maximum(np.maximum(np.abs(u), np.abs(v)), (np.abs(u) + np.abs(v)) / np.sqrt(2))
    apothem = np.cos(np.pi / 8)
    paint(octagon - apothem, _WHITE)
    paint(octagon - 0.9 * apothem, _RED)
    paint(_text_sdf(u, v, "STOP", 1.45, 0.46, lettering=_Lettering(glyph_w=3.6, stroke=1.4, gap=1.0)), _WHITE)
  return rgba.astype(np.float32)


@functools.lru_cache(maxsize=1)
def _textures() -> np.ndarray:
  """float32 (4, 7, _TEX / 2, _TEX / 2) premultiplied RGBA faces, row 0 at the top (v = +extent). Read-only.

  Channel-major, so each channel of all faces is one flat array to gather texels from.
  """
  coords = (np.arange(_TEX) + 0.5) / _TEX * 2 * _TEX_EXTENT - _TEX_EXTENT
  u, v = np.meshgrid(coords, -coords)
  tex = np.stack([_face(c, u, v, 2 * _TEX_EXTENT / _TEX) for c in range(len(SIGN_CLASSES))])  # (7, T, T, 4)
  # Halved: sampled at 1-3 texels per supersampled pixel, it aliases less than a finer texture would.
  tex = resize_area(tex.transpose(0, 3, 1, 2), _TEX // 2, _TEX // 2)
  tex = np.ascontiguousarray(tex.transpose(1, 0, 2, 3))
  tex.flags.writeable = False
  return tex


def _sample(tex: np.ndarray, cls: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
  """Bilinear lookup: float32 (4, m) RGBA of faces `cls` (m,) at sign coordinates u, v (m,)."""
  t = tex.shape[-1]
  # Clamp into the texture; its outer texels are transparent, so anything outside the sign is background.
  fx = np.clip((u + _TEX_EXTENT) * (t / (2 * _TEX_EXTENT)) - 0.5, 0, t - 1.001)
  fy = np.clip((_TEX_EXTENT - v) * (t / (2 * _TEX_EXTENT)) - 0.5, 0, t - 1.001)
  x0, y0 = fx.astype(np.int32), fy.astype(np.int32)
  wx, wy = fx - x0, fy - y0
  i00 = (cls.astype(np.int32) * t + y0) * t + x0  # texel index in the flattened (class, row, column) faces
  flat = tex.reshape(4, -1)
  # (4, m) gathers with long contiguous rows: far faster than (m, 4) arrays, whose inner loops are 4 long.
  top = flat.take(i00, axis=1) * (1 - wx) + flat.take(i00 + 1, axis=1) * wx
  bottom = flat.take(i00 + t, axis=1) * (1 - wx) + flat.take(i00 + t + 1, axis=1) * wx
  return top * (1 - wy) + bottom * wy


# ----- per-image random parameters -----

_N_BLOBS, _N_BARS = 5, 2
# Each image's random choices are one row of uniforms (drawn from its own rng) mapped to parameters below.
_LAYOUT = {"pose": 6, "grad": 11, "blob": 9 * _N_BLOBS, "bar": 9 * _N_BARS, "look": 14}
_N_UNIFORM = sum(_LAYOUT.values())


def _span(u: np.ndarray, lo: float, hi: float) -> np.ndarray:
  return (lo + (hi - lo) * u).astype(np.float32)


def _colours(u: np.ndarray) -> np.ndarray:
  """Muted colours (k, m, 3) from uniforms (k, m, 5): a random RGB pulled part-way towards a random grey."""
  grey = _span(u[..., :1], 0.05, 0.9)
  return grey + (u[..., 1:4] - grey) * _span(u[..., 4:5], 0.2, 0.8)


def _params(uniform: np.ndarray) -> dict[str, np.ndarray]:
  """Maps (k, _N_UNIFORM) uniforms in [0, 1) to the float32 parameters of k images (a leading k axis)."""
  uniform = uniform.astype(np.float32)
  parts, at = {}, 0
  for name, n in _LAYOUT.items():
    parts[name], at = uniform[:, at:at + n], at + n
  pose, grad, look = parts["pose"], parts["grad"], parts["look"]
  blob = parts["blob"].reshape(-1, _N_BLOBS, 9)
  bar = parts["bar"].reshape(-1, _N_BARS, 9)
  radius = _span(pose[:, 0], 0.5, 0.9)
  return {
    # Pose: sign radius (half-widths), horizontal squeeze, rotation, and a shift that keeps it in view.
    "radius": radius, "squeeze": _span(pose[:, 1], 0.82, 1.0),
    "angle": np.deg2rad(_span(pose[:, 2], -15, 15)),
    "shift": _span(pose[:, 3:5], -1, 1) * np.maximum(0.0, 0.97 - radius)[:, None],
    # Background: a gradient, soft blobs, and (each with probability 1/2) hard-edged bars.
    "grad_dir": _span(grad[:, 0], 0, 2 * np.pi), "grad_c0": _colours(grad[:, 1:6]),
    "grad_c1": _colours(grad[:, 6:11]),
    "blob_xy": _span(blob[..., :2], -1.2, 1.2), "blob_r": _span(blob[..., 2], 0.15, 0.7),
    "blob_a": _span(blob[..., 3], 0, 0.9), "blob_c": _colours(blob[..., 4:9]),
    "bar_dir": _span(bar[..., 0], 0, np.pi), "bar_off": _span(bar[..., 1], -1, 1),
    "bar_w": _span(bar[..., 2], 0.03, 0.25), "bar_a": np.where(bar[..., 3] < 0.5, 2 * bar[..., 3], 0),
    "bar_c": _colours(bar[..., 4:9]),
    # Look: the sign's paint (tint), a shading gradient across it, blur, lighting and noise strength.
    "tint": _span(look[:, 0:3], 0.8, 1.05), "shade": _span(look[:, 3:5], -0.35, 0.35),
    "blur": _span(look[:, 5], 0, 1.0), "bright": np.exp(_span(look[:, 6], -0.85, 0.45)),
    "contrast": _span(look[:, 7], 0.55, 1.15), "gamma": np.exp(_span(look[:, 8], -0.35, 0.35)),
    "cast": np.exp(_span(look[:, 9:12], -0.12, 0.12)), "noise_sd": _span(look[:, 12], 0.005, 0.04),
  }


def _blur(x: np.ndarray, sigma: np.ndarray) -> np.ndarray:
  """Separable Gaussian blur of x (k, C, n, n) with per-image sigma (k,) pixels; edges replicated.

  As two batched matrix products with each image's (n, n) blur matrix: BLAS beats 2 x 7 shifted adds.
  """
  n, rad = x.shape[-1], 3
  taps = np.arange(-rad, rad + 1)
  kern = np.exp(-0.5 * (taps[None] / np.maximum(sigma, 1e-3)[:, None]) ** 2)
  kern = (kern / kern.sum(axis=1, keepdims=True)).astype(np.float32)  # (k, taps)
  # shift[j] (n, n): row a picks pixel clip(a + taps[j]), the edge pixel repeated past the border.
  shift = np.zeros((len(taps), n, n), np.float32)
  rows = np.arange(n)
  for j, d in enumerate(taps):
    shift[j, rows, np.clip(rows + d, 0, n - 1)] = 1
  blur = np.einsum("kj,jab->kab", kern, shift)[:, None]  # (k, 1, n, n)
  return blur @ x @ blur.transpose(0, 1, 3, 2)


def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
  """Pixel centres of an n x n image in [-1, 1]^2, y up: x, y float32 (1, n * n)."""
  coords = (np.arange(n, dtype=np.float32) + 0.5) / n * 2 - 1
  xs, ys = np.meshgrid(coords, -coords)
  return xs.reshape(1, -1), ys.reshape(1, -1)


def _background(p: dict[str, np.ndarray], n: int) -> np.ndarray:
  """float32 (k, 3, n * n) cluttered backgrounds."""
  x, y = _grid(n)
  d = p["grad_dir"][:, None]
  t = np.clip((x * np.cos(d) + y * np.sin(d)) * 0.5 + 0.5, 0, 1)[:, None]  # (k, 1, n * n)
  img = p["grad_c0"][..., None] * (1 - t) + p["grad_c1"][..., None] * t
  for b in range(_N_BLOBS):
    r2 = (x - p["blob_xy"][:, b, :1]) ** 2 + (y - p["blob_xy"][:, b, 1:]) ** 2
    a = (p["blob_a"][:, b, None] * np.exp(r2 * (-0.5 / p["blob_r"][:, b, None] ** 2)))[:, None]
    img += (p["blob_c"][:, b, :, None] - img) * a
  for b in range(_N_BARS):
    ang = p["bar_dir"][:, b, None]
    dist = np.abs(x * np.cos(ang) + y * np.sin(ang) - p["bar_off"][:, b, None])
    a = p["bar_a"][:, b, None] * np.clip(0.5 - (dist - p["bar_w"][:, b, None]) * (n / 2), 0, 1)
    img += (p["bar_c"][:, b, :, None] - img) * a[:, None]
  return img


def _render_chunk(labels: np.ndarray, uniform: np.ndarray, noise: np.ndarray, size: int,
                  ss: int) -> np.ndarray:
  """float32 (k, 3, size, size) images of `labels` (k,) from their uniforms (k, _N_UNIFORM) and standard
  normal pixel noise (k, 3, size, size); the sign is drawn `ss` times supersampled."""
  k = len(labels)
  p = _params(uniform)

  # The sign at res x res: each pixel mapped back into sign coordinates, then a texture lookup, only where
  # it can land on the sign (the rest stays transparent); then area-averaged down to the output size.
  res = size * ss
  x, y = _grid(res)
  cos, sin = np.cos(p["angle"])[:, None], np.sin(p["angle"])[:, None]
  rad, sq = p["radius"][:, None], p["squeeze"][:, None]
  px, py = x - p["shift"][:, :1], y - p["shift"][:, 1:]
  u, v = (px * cos + py * sin) / (rad * sq), (py * cos - px * sin) / rad
  on = np.flatnonzero((np.abs(u) < 1.02) & (np.abs(v) < 1.02))
  face = np.zeros((4, k * res * res), np.float32)
  face[:, on] = _sample(_textures(), labels[on // (res * res)], u.ravel()[on], v.ravel()[on])
  blocks = face.reshape(4, k, size, ss, size, ss)  # area averaging as ss^2 strided adds: 6x faster than sum()
  face = sum(blocks[:, :, :, i, :, j] for i in range(ss) for j in range(ss)) * np.float32(1 / ss ** 2)
  face = face.transpose(1, 0, 2, 3)  # (k, 4, size, size)

  # Paint colour and a shading gradient across the sign (in sign coordinates, at the output size).
  x, y = _grid(size)
  px, py = x - p["shift"][:, :1], y - p["shift"][:, 1:]
  u, v = (px * cos + py * sin) / (rad * sq), (py * cos - px * sin) / rad
  shade = np.clip(1 + p["shade"][:, :1] * u + p["shade"][:, 1:] * v, 0.5, 1.5).reshape(k, 1, size, size)
  paint = face[:, :3] * (p["tint"][:, :, None, None] * shade)

  # Composite over a background drawn at the output size: it is smooth, so drawing it supersampled would
  # change little, and the sign's premultiplied colour and coverage survive area averaging exactly.
  bg = _background(p, size).reshape(k, 3, size, size)
  img = bg * (1 - face[:, 3:]) + paint
  img = _blur(img, p["blur"] * size / 32)  # sigma in 32x32 pixels, so other sizes look alike

  # Lighting: contrast about mid-grey, gamma, brightness, a colour cast; then sensor noise.
  col = lambda a: a.reshape(k, -1, 1, 1)  # noqa: E731
  img = np.clip((img - 0.5) * col(p["contrast"]) + 0.5, 0, 1) ** col(p["gamma"])
  img = img * col(p["bright"]) * col(p["cast"]) + noise * col(p["noise_sd"])
  return np.clip(img, 0, 1).astype(np.float32)


def render_signs(labels: np.ndarray, seed: int = 0, size: int = 32, supersample: int = 2) -> np.ndarray:
  """Renders one synthetic traffic sign per label: float32 (n, 3, size, size) in [0, 1], deterministic.

  Args:
    labels: int (n,) class indices 0..6 into SIGN_CLASSES.
    seed: the random seed; image i depends only on (seed, i, labels[i]).
    size: output height and width.
    supersample: render at size * supersample and area-average down (anti-aliasing).
  """
  labels = class_labels(labels, SIGN_CLASSES, "sign")
  out = np.empty((len(labels), 3, size, size), np.float32)
  for s in range(0, len(labels), _CHUNK):
    part = labels[s:s + _CHUNK]
    uniform = np.empty((len(part), _N_UNIFORM), np.float64)
    noise = np.empty((len(part), 3, size, size), np.float32)
    for j, c in enumerate(part):  # each image's own stream: it depends on (seed, i, label) alone
      rng = np.random.default_rng([seed, s + j, int(c)])
      uniform[j] = rng.random(_N_UNIFORM)
      noise[j] = rng.standard_normal((3, size, size), np.float32)
    out[s:s + len(part)] = _render_chunk(part, uniform, noise, size, supersample)
  return out


def sign_imageset(seed: int = 0, per_class: tuple[int, int, int] = (600, 200, 200),
                  size: int = 32) -> ImageSet:
  """The rendered GTSRB stand-in: per class `per_class` = (train, val, test) images, 32x32 colour.

  Returns an ImageSet named "gtsrb-synthetic" with `synthetic=True`; classes are SIGN_CLASSES.
  """
  return rendered_imageset(NAME, SIGN_CLASSES, render_signs, seed, per_class, size)
