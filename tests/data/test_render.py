"""The rendered stand-ins (smallNORB: toys, GTSRB: signs): shapes, determinism, labelling, and that their
classes really look different, their images really vary, and the signs really have colour."""

import importlib

import numpy as np
import pytest

from hx.data.imageset import TEST, TRAIN, VAL

# The modules, not same-named functions that hx.data may re-export.
signs_mod = importlib.import_module("hx.data.render_signs")
toys_mod = importlib.import_module("hx.data.render_toys")

# name, renderer, imageset builder, class names, channels, a small test size (renders are slow at full size)
STANDINS = {
  "toys": (toys_mod.render_toys, toys_mod.toy_imageset, toys_mod.TOY_CLASSES, 1, 12, "smallnorb-synthetic"),
  "signs": (signs_mod.render_signs, signs_mod.sign_imageset, signs_mod.SIGN_CLASSES, 3, 16,
            "gtsrb-synthetic"),
}
KINDS = sorted(STANDINS)


def _render(kind, labels, seed=0, size=None):
  fn, _, _, _, small, _ = STANDINS[kind]
  return fn(np.asarray(labels), seed=seed, size=size or small)


def _features(x):
  """(n, D) float64 pixels, each image standardised (so overall brightness and contrast do not count)."""
  f = x.reshape(len(x), -1).astype(np.float64)
  f -= f.mean(axis=1, keepdims=True)
  return f / (f.std(axis=1, keepdims=True) + 1e-6)


def _ridge_accuracy(xtr, ytr, xte, yte, k, lam=100.0):
  """Test accuracy of a one-vs-all ridge regression classifier on standardised pixels."""
  ftr, fte = _features(xtr), _features(xte)
  w = np.linalg.solve(ftr.T @ ftr + lam * np.eye(ftr.shape[1]), ftr.T @ np.eye(k)[ytr])
  return float(((fte @ w).argmax(axis=1) == yte).mean())


@pytest.mark.parametrize("kind", KINDS)
def test_shape_dtype_range(kind):
  _, _, names, channels, small, _ = STANDINS[kind]
  labels = np.tile(np.arange(len(names)), 2)
  for size in (small, 20):
    x = _render(kind, labels, size=size)
    assert x.shape == (len(labels), channels, size, size) and x.dtype == np.float32
    assert np.isfinite(x).all() and x.min() >= 0 and x.max() <= 1
    assert x.std() > 0.05  # not a blank canvas
  # The default size is the real data set's: 28x28 grey smallNORB (as the paper resizes it), 32x32 GTSRB.
  full = STANDINS[kind][0](np.arange(2))
  assert full.shape == (2, channels) + ((28, 28) if kind == "toys" else (32, 32))


@pytest.mark.parametrize("kind", KINDS)
def test_deterministic_per_seed(kind):
  labels = np.arange(len(STANDINS[kind][2]))
  a, b, c = _render(kind, labels, seed=7), _render(kind, labels, seed=7), _render(kind, labels, seed=8)
  np.testing.assert_array_equal(a, b)
  # Another seed: every image is a different one, not merely a few pixels off.
  assert (np.abs(a - c).mean(axis=(1, 2, 3)) > 0.02).all()


@pytest.mark.parametrize("kind", KINDS)
def test_image_depends_only_on_seed_index_label(kind):
  k = len(STANDINS[kind][2])
  labels = np.arange(8) % k
  base = _render(kind, labels, seed=3)
  # A shorter batch, and a batch whose other labels differ: image i is the same wherever it is rendered.
  np.testing.assert_allclose(_render(kind, labels[:5], seed=3), base[:5], atol=1e-5)
  other = (labels + 1) % k
  other[4] = labels[4]
  mixed = _render(kind, other, seed=3)
  np.testing.assert_allclose(mixed[4], base[4], atol=1e-5)
  # ... while its neighbours, with other labels, changed.
  assert (np.abs(mixed - base).mean(axis=(1, 2, 3))[[0, 1, 2, 3, 5, 6, 7]] > 0.02).all()


@pytest.mark.parametrize("kind", KINDS)
def test_imageset_fields(kind):
  _, build, names, channels, small, name = STANDINS[kind]
  s = build(seed=4, per_class=(3, 2, 1), size=small)
  assert s.name == name and s.name.endswith("-synthetic") and s.synthetic
  assert s.class_names == names
  assert s.images.shape == (6 * len(names), channels, small, small) and s.images.dtype == np.float32
  assert s.labels.dtype == np.int32 and s.pools.dtype == np.int8
  for pool, per in ((TRAIN, 3), (VAL, 2), (TEST, 1)):
    assert np.bincount(s.labels[s.pools == pool], minlength=len(names)).tolist() == [per] * len(names)
  assert "seed 4" in s.source and "rendered" in s.source
  assert name in s.summary()
  # The images are the renderer's, for the set's own labels and seed.
  np.testing.assert_allclose(s.images, STANDINS[kind][0](s.labels, seed=4, size=small), atol=1e-5)


@pytest.mark.parametrize("kind,per_class,threshold", [("toys", 40, 0.35), ("signs", 60, 0.30)])
def test_classes_are_learnable(kind, per_class, threshold):
  """A linear classifier on pixels, trained on one seed and tested on another, beats chance by far; with
  every image rendered as class 0 it is at chance (so the margin is the classes' doing)."""
  k = len(STANDINS[kind][2])
  ytr, yte = np.repeat(np.arange(k), per_class), np.repeat(np.arange(k), 20)
  acc = _ridge_accuracy(_render(kind, ytr, seed=1), ytr, _render(kind, yte, seed=101), yte, k)
  assert acc > threshold > 1.5 / k, acc
  same = _ridge_accuracy(_render(kind, 0 * ytr, seed=1), ytr, _render(kind, 0 * yte, seed=101), yte, k)
  assert same < 1.5 / k, same


def test_sign_numbers_are_legible():
  """Rendered in the same pose and light but with fresh pixel noise, each sign is nearest to its own class:
  the numbers 30/50/70/80/100 survive scale, blur and noise, they are not washed out."""
  rng = np.random.default_rng(0)
  m, k = 50, len(signs_mod.SIGN_CLASSES)
  uniform = rng.random((m, signs_mod._N_UNIFORM))
  noise = lambda: rng.standard_normal((m, 3, 32, 32), np.float32)  # noqa: E731
  y = np.arange(m) % k
  x = signs_mod._render_chunk(y, uniform, noise(), 32, 2)
  fresh = noise()
  templates = np.stack([signs_mod._render_chunk(np.full(m, c), uniform, fresh, 32, 2) for c in range(k)], 1)
  dist = ((x[:, None] - templates) ** 2).sum(axis=(2, 3, 4))  # (m, k)
  assert (dist.argmin(axis=1) == y).mean() >= 0.95
  # Same pose, two numbers: the difference is far above 8-bit quantisation, for every pair of classes.
  rms = np.sqrt(((templates[:, :, None] - templates[:, None]) ** 2).mean(axis=(3, 4, 5)))  # (m, k, k)
  off = ~np.eye(k, dtype=bool)
  assert (np.median(rms, axis=0)[off] > 0.015).all()


def test_signs_are_coloured():
  x = signs_mod.render_signs(np.repeat(np.arange(7), 10), seed=2, size=16)
  r, g, b = x[:, 0], x[:, 1], x[:, 2]
  # Real colour, not grey repeated: the channels differ pixel by pixel.
  assert np.abs(r - g).mean() > 0.03 and np.abs(r - b).mean() > 0.03
  # Red rings, red octagons, red-bordered triangles: red exceeds blue at the sign (the centre) in nearly
  # every image, whatever its class; the backgrounds are random colours, with no such bias.
  centre = (r - b)[:, 4:12, 4:12].mean(axis=(1, 2))
  assert np.median(centre) > 0.04 and (centre > 0).mean() > 0.8
  for c in range(7):
    assert centre[10 * c:10 * c + 10].mean() > 0.02, signs_mod.SIGN_CLASSES[c]


def _face_at(c, u, v):
  """RGBA of class c's face at the sign points (u, v), drawn at the texture's resolution."""
  return signs_mod._face(c, np.asarray(u, np.float64), np.asarray(v, np.float64), 2.2 / 256)


def test_sign_faces_fit_the_unit_disc():
  coords = (np.arange(256) + 0.5) / 256 * 2.2 - 1.1
  u, v = np.meshgrid(coords, coords)
  outside = np.hypot(u, v) > 1 + 2.2 / 256
  for c in range(7):
    alpha = signs_mod._face(c, u, v, 2.2 / 256)[..., 3]
    assert alpha[outside].max() == 0, signs_mod.SIGN_CLASSES[c]
    assert alpha[~outside].mean() > 0.3, signs_mod.SIGN_CLASSES[c]  # and it is not a speck


def test_start_is_the_traffic_signals_sign():
  """GTSRB class 26 (German sign 131), the authors' start: a white triangle, point up, in a red border, with
  a black housing of red, amber and green lights from top to bottom."""
  start = signs_mod.SIGN_CLASSES.index("start")
  red, amber, green, white, black = (np.array(c) for c in (signs_mod._RED, signs_mod._AMBER, signs_mod._GREEN,
                                                            signs_mod._WHITE, signs_mod._BLACK))

  def near(rgba, colour):
    return (rgba[..., 3] > 0.99) & (np.abs(rgba[..., :3] - colour).max(axis=-1) < 0.05)

  # The lights, top to bottom, in the housing; white beside it; red along the border and at the corners.
  pts = {"red light": ((0, 0.23), red), "amber light": ((0, 0.04), amber), "green light": ((0, -0.15), green),
         "housing": ((0, 0.33), black), "housing side": ((0.1, -0.05), black),
         "white left": ((-0.2, -0.15), white), "white right": ((0.2, -0.15), white),
         "white below": ((0, -0.32), white), "white apex": ((0, 0.6), white),
         "base left": ((-0.72, -0.45), red), "base right": ((0.72, -0.45), red), "apex": ((0, 0.9), red),
         "base edge": ((0, -0.48), red), "left edge": ((-0.4, 0.2), red)}
  for name, ((u, v), colour) in pts.items():
    assert near(_face_at(start, u, v), colour), name
  # Transparent outside the triangle: beside the apex, below the base, outside the side edges.
  for u, v in ((0.5, 0.6), (-0.5, 0.6), (0, -0.65), (0.8, -0.2), (-0.9, -0.5)):
    assert _face_at(start, u, v)[3] == 0, (u, v)
  # The centre region holds all three light colours; the triangle is symmetric about the vertical axis.
  coords = np.linspace(-0.3, 0.3, 121)
  u, v = np.meshgrid(coords * 0.5, coords)
  centre = _face_at(start, u, v)
  for colour in (red, amber, green, black, white):
    assert near(centre, colour).sum() > 50, colour
  coords = np.linspace(-1, 1, 101)
  u, v = np.meshgrid(coords, coords)
  np.testing.assert_allclose(_face_at(start, u, v), _face_at(start, -u, v), atol=1e-6)
  # Its outline is its own: at (0.85, 0.3) every disc and the octagon are still sign, the triangle is not.
  for c in range(7):
    if c != start:
      assert _face_at(c, 0.85, 0.3)[3] > 0.99 and _face_at(start, 0.85, 0.3)[3] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_images_vary_within_a_class(kind):
  k = len(STANDINS[kind][2])
  x = _render(kind, np.full(12, k - 1), seed=5).reshape(12, -1)
  rms = np.sqrt(((x[:, None] - x[None]) ** 2).mean(axis=-1))
  assert rms[~np.eye(12, dtype=bool)].min() > 0.03  # no two alike: pose, lighting, background, noise
  assert x.std(axis=0).mean() > 0.05  # and not just noise: pixels vary a lot across the images


def test_sign_labels_checked():
  with pytest.raises(ValueError, match="0..6"):
    signs_mod.render_signs(np.array([0, 7]))
  assert signs_mod.render_signs(np.zeros(0, np.int64)).shape == (0, 3, 32, 32)


def test_toy_labels_checked_and_chunking_invisible(monkeypatch):
  with pytest.raises(ValueError, match="0..4"):
    toys_mod.render_toys(np.array([0, 5]))
  assert toys_mod.render_toys(np.zeros(0, np.int64)).shape == (0, 1, 28, 28)
  # Images are traced in chunks of one category: chunk boundaries do not change any image.
  labels = np.array([3, 0, 3, 3, 1, 3, 0, 3])
  base = toys_mod.render_toys(labels, seed=2, size=12)
  monkeypatch.setattr(toys_mod, "_CHUNK", 2)
  np.testing.assert_allclose(toys_mod.render_toys(labels, seed=2, size=12), base, atol=1e-5)


def test_toy_solids_lie_inside_their_bounding_spheres():
  """Rays start where they enter a sphere of radius _BOUND[c] (and stop where they leave it): every solid
  must lie well inside it, or parts of it would be cut off."""
  p = np.random.default_rng(0).normal(size=(3, 20000))
  for c in range(len(toys_mod.TOY_CLASSES)):
    x, y, z = (p / np.linalg.norm(p, axis=0) * toys_mod._BOUND[c]).astype(np.float32)
    assert toys_mod._sdf(c, x, y, z).min() > 0.03, toys_mod.TOY_CLASSES[c]
