"""Loaders read small fixtures written in each official format, exactly; bad files give clear errors."""

import gzip
import os
import pickle

import numpy as np
import pytest

from hx.data import errors
from hx.data.gtsrb import load_gtsrb, read_ppm, write_ppm
from hx.data.idx import read_idx, write_idx
from hx.data.imageset import TEST, TRAIN, VAL
from hx.data.mnist import load_mnist, load_mnist_5k, load_mnist_idx, load_mnist_pickle, load_mnist_tfds
from hx.data.smallnorb import load_smallnorb_dir, read_norb_mat, write_norb_mat


def _mnist_fixture(tmp_path, n_train=12, n_test=5, gz=False):
  rng = np.random.default_rng(1)
  xtr = rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8)
  ytr = (np.arange(n_train) % 10).astype(np.uint8)
  xte = rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8)
  yte = (np.arange(n_test) * 3 % 10).astype(np.uint8)
  ext = ".gz" if gz else ""
  write_idx(str(tmp_path / f"train-images-idx3-ubyte{ext}"), xtr)
  write_idx(str(tmp_path / f"train-labels-idx1-ubyte{ext}"), ytr)
  write_idx(str(tmp_path / f"t10k-images-idx3-ubyte{ext}"), xte)
  write_idx(str(tmp_path / f"t10k-labels-idx1-ubyte{ext}"), yte)
  return xtr, ytr, xte, yte


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx_exact(tmp_path, gz):
  xtr, ytr, xte, yte = _mnist_fixture(tmp_path, gz=gz)
  s = load_mnist(str(tmp_path))
  assert s.images.shape == (17, 1, 28, 28) and s.images.dtype == np.float32
  np.testing.assert_array_equal(s.images[:12, 0], xtr / np.float32(255))
  np.testing.assert_array_equal(s.images[12:, 0], xte / np.float32(255))
  np.testing.assert_array_equal(s.labels, np.concatenate([ytr, yte]))
  # 12 training images: the last 12 // 6 = 2 are the validation pool.
  np.testing.assert_array_equal(s.pools, [TRAIN] * 10 + [VAL] * 2 + [TEST] * 5)
  assert not s.synthetic


def test_idx_roundtrip_dtypes(tmp_path):
  for a in (np.arange(6, dtype=np.int32).reshape(2, 3), np.linspace(0, 1, 4, dtype=np.float32)):
    write_idx(str(tmp_path / "a"), a)
    b = read_idx(str(tmp_path / "a"))
    assert b.dtype == a.dtype
    np.testing.assert_array_equal(a, b)


def test_mnist_idx_truncated_and_bad_magic(tmp_path):
  _mnist_fixture(tmp_path)
  p = tmp_path / "train-images-idx3-ubyte"
  raw = p.read_bytes()
  p.write_bytes(raw[:-7])
  with pytest.raises(errors.DataFormatError, match="truncated") as e:
    load_mnist_idx(str(tmp_path))
  assert "MNIST" in str(e.value) and str(p) in str(e.value) and "--mnist" in str(e.value)
  p.write_bytes(b"\x01\x02" + raw[2:])
  with pytest.raises(errors.DataFormatError, match="magic"):
    load_mnist_idx(str(tmp_path))
  p.write_bytes(raw + b"xx")
  with pytest.raises(errors.DataFormatError, match="longer"):
    load_mnist_idx(str(tmp_path))


def test_mnist_label_count_mismatch(tmp_path):
  _mnist_fixture(tmp_path)
  write_idx(str(tmp_path / "t10k-labels-idx1-ubyte"), np.zeros(4, np.uint8))
  with pytest.raises(errors.DataFormatError, match="4 labels for 5 images"):
    load_mnist_idx(str(tmp_path))


def test_mnist_missing_names_paths_and_flag(tmp_path):
  with pytest.raises(errors.DataNotFoundError) as e:
    load_mnist(str(tmp_path))
  msg = str(e.value)
  assert "MNIST" in msg and "train-images-idx3-ubyte" in msg and "--mnist" in msg
  assert isinstance(e.value, FileNotFoundError)
  with pytest.raises(errors.DataNotFoundError, match="no such file"):
    load_mnist(str(tmp_path / "nope"))


def test_mnist_pickle_exact(tmp_path):
  rng = np.random.default_rng(0)
  parts = [(rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n)) for n in (7, 3, 4)]
  p = tmp_path / "mnist.pkl.gz"
  with gzip.open(p, "wb") as f:
    pickle.dump(tuple(parts), f)
  for s in (load_mnist_pickle(str(p)), load_mnist(str(tmp_path)), load_mnist(str(p))):
    assert s.images.shape == (14, 1, 28, 28)
    np.testing.assert_array_equal(s.images[7:10].reshape(3, 784), parts[1][0])
    np.testing.assert_array_equal(s.labels, np.concatenate([y for _, y in parts]))
    np.testing.assert_array_equal(s.pools, [TRAIN] * 7 + [VAL] * 3 + [TEST] * 4)


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_mnist_pickle_reads_the_array_pickles_of_every_protocol(tmp_path, protocol):
  # Protocol 2 pickles carry array bytes through _codecs.encode, protocol 5 through _frombuffer.
  parts = tuple((np.full((n, 784), 0.5, np.float32), np.arange(n) % 10) for n in (2, 1, 1))
  p = tmp_path / "m.pkl"
  p.write_bytes(pickle.dumps(parts, protocol=protocol))
  assert load_mnist_pickle(str(p)).images.shape == (4, 1, 28, 28)


class _CreatesAFile:
  def __init__(self, path):
    self.path = path

  def __reduce__(self):  # unpickling calls open(path, "w"): a stand-in for os.system
    return (open, (str(self.path), "w"))


def test_a_crafted_pickle_runs_nothing_and_is_refused_with_what_it_names(tmp_path):
  made = tmp_path / "made_by_the_pickle"
  for content in (_CreatesAFile(made), ((np.zeros((1, 784), np.float32), _CreatesAFile(made)),) * 3):
    p = tmp_path / "mnist.pkl.gz"
    with gzip.open(p, "wb") as f:
      pickle.dump(content, f)
    with pytest.raises(errors.DataFormatError, match=r"it names (builtins|io)\.open, which is not part of a "
                       "NumPy array") as e:
      load_mnist(str(p))
    assert str(p) in str(e.value)
    assert not made.exists()


def test_a_pickle_of_other_plain_values_is_refused(tmp_path):
  p = tmp_path / "m.pkl"
  p.write_bytes(pickle.dumps(({"x": 1}, [], [])))
  with pytest.raises(errors.DataFormatError, match=r"it holds a dict at \[0\], where only tuples"):
    load_mnist_pickle(str(p))


def test_mnist_pickle_corrupt(tmp_path):
  p = tmp_path / "mnist.pkl.gz"
  p.write_bytes(b"not a gzip file")
  with pytest.raises(errors.DataFormatError, match="mnist.pkl.gz") as e:
    load_mnist_pickle(str(p))
  assert str(p) in str(e.value)


def test_mnist_5k_default_split():
  s = load_mnist_5k(seed=0)
  assert s.images.shape == (5000, 1, 28, 28) and s.name == "mnist-5k" and not s.synthetic
  assert 0.0 <= s.images.min() and s.images.max() <= 1.0
  for c in range(10):
    counts = np.bincount(s.pools[s.labels == c], minlength=3)
    np.testing.assert_array_equal(counts, [300, 100, 100])
  t = load_mnist_5k(seed=1)
  np.testing.assert_array_equal(s.labels, t.labels)
  assert (s.pools != t.pools).any()
  np.testing.assert_array_equal(s.pools, load_mnist_5k(seed=0).pools)


def test_mnist_5k_missing_file(tmp_path):
  with pytest.raises(errors.DataNotFoundError, match="5k"):
    load_mnist_5k(str(tmp_path / "mnist_5k.csv.gz"))


def test_tfds_missing_is_clear():
  try:
    import tensorflow_datasets  # noqa: F401
  except ImportError:
    with pytest.raises(errors.DataNotFoundError, match="tensorflow-datasets"):
      load_mnist_tfds()
  else:
    pytest.skip("tensorflow-datasets installed")


def _norb_fixture(tmp_path, n=(6, 4), gz=False):
  rng = np.random.default_rng(2)
  out = {}
  for split, tag, k in (("training", "46789", n[0]), ("testing", "01235", n[1])):
    dat = rng.integers(0, 256, (k, 2, 96, 96), dtype=np.uint8)
    cat = (np.arange(k) % 5).astype(np.int32)
    info = rng.integers(0, 10, (k, 4)).astype(np.int32)
    ext = ".gz" if gz else ""
    for kind, a in (("dat", dat), ("cat", cat), ("info", info)):
      write_norb_mat(str(tmp_path / f"smallnorb-5x{tag}x9x18x6x2x96x96-{split}-{kind}.mat{ext}"), a)
    out[split] = (dat, cat)
  return out


def test_norb_header_layout(tmp_path):
  p = str(tmp_path / "x.mat")
  write_norb_mat(p, np.arange(5, dtype=np.int32))
  raw = open(p, "rb").read()
  # magic, rank 1, then three dimensions (5, 1, 1), then the values.
  np.testing.assert_array_equal(np.frombuffer(raw[:20], "<i4"), [0x1E3D4C54, 1, 5, 1, 1])
  np.testing.assert_array_equal(read_norb_mat(p), np.arange(5))


@pytest.mark.parametrize("gz", [False, True])
def test_smallnorb_exact(tmp_path, gz):
  fx = _norb_fixture(tmp_path, gz=gz)
  s = load_smallnorb_dir(str(tmp_path), seed=0)
  assert s.images.shape == (10, 1, 28, 28) and s.images.dtype == np.float32
  np.testing.assert_array_equal(s.labels, np.concatenate([fx["training"][1], fx["testing"][1]]))
  # left camera, 96 -> 28 area average: check one pixel against a direct computation.
  left = fx["training"][0][3, 0].astype(np.float64) / 255
  w = np.zeros((28, 96))
  for i in range(28):
    lo, hi = i * 96 / 28, (i + 1) * 96 / 28
    for j in range(96):
      w[i, j] = max(0.0, min(hi, j + 1) - max(lo, j))
  w /= w.sum(1, keepdims=True)
  np.testing.assert_allclose(s.images[3, 0], w @ left @ w.T, atol=1e-5)
  assert (s.pools[6:] == TEST).all() and set(s.pools[:6]) <= {TRAIN, VAL}


def test_smallnorb_truncated_and_missing(tmp_path):
  _norb_fixture(tmp_path)
  p = tmp_path / "smallnorb-5x46789x9x18x6x2x96x96-training-dat.mat"
  p.write_bytes(p.read_bytes()[:1000])
  with pytest.raises(errors.DataFormatError, match="truncated") as e:
    load_smallnorb_dir(str(tmp_path))
  assert "smallNORB" in str(e.value) and str(p) in str(e.value) and "--smallnorb" in str(e.value)
  p.write_bytes(b"\0" * 40)
  with pytest.raises(errors.DataFormatError, match="magic"):
    load_smallnorb_dir(str(tmp_path))
  p.unlink()
  with pytest.raises(errors.DataNotFoundError, match="training dat"):
    load_smallnorb_dir(str(tmp_path))


def test_smallnorb_mismatched_cat(tmp_path):
  _norb_fixture(tmp_path)
  write_norb_mat(str(tmp_path / "smallnorb-5x01235x9x18x6x2x96x96-testing-cat.mat"), np.zeros(3, np.int32))
  with pytest.raises(errors.DataFormatError, match="cat has shape"):
    load_smallnorb_dir(str(tmp_path))


def _gtsrb_fixture(root, classes=(1, 14), tracks=3, per_track=2, test=0):
  rng = np.random.default_rng(3)
  pixels = {}
  for c in classes:
    d = root / "Final_Training" / "Images" / f"{c:05d}"
    d.mkdir(parents=True)
    lines = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for t in range(tracks):
      for i in range(per_track):
        h, w = rng.integers(30, 50, 2)
        px = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        name = f"{t:05d}_{i:05d}.ppm"
        write_ppm(str(d / name), px)
        pixels[(c, t, i)] = px
        lines.append(f"{name};{w};{h};5;5;{w - 6};{h - 6};{c}")
    (d / f"GT-{c:05d}.csv").write_text("\n".join(lines) + "\n")
  if test:
    d = root / "Final_Test" / "Images"
    d.mkdir(parents=True)
    lines = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for i in range(test):
      write_ppm(str(d / f"{i:05d}.ppm"), rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
      lines.append(f"{i:05d}.ppm;32;32;5;5;26;26;{classes[i % len(classes)]}")
    (d / "GT-final_test.csv").write_text("\n".join(lines) + "\n")
  return pixels


def test_ppm_roundtrip_with_comment(tmp_path):
  px = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
  p = tmp_path / "a.ppm"
  p.write_bytes(b"P6\n# a comment\n3 2\n255\n" + px.tobytes())
  np.testing.assert_array_equal(read_ppm(str(p)), px)


def test_gtsrb_exact(tmp_path):
  pixels = _gtsrb_fixture(tmp_path, test=4)
  s = load_gtsrb(str(tmp_path), size=32)
  assert s.images.shape == (16, 3, 32, 32)
  np.testing.assert_array_equal(s.labels, [1] * 6 + [14] * 6 + [1, 14, 1, 14])
  assert s.class_names[1] == "speed_30" and s.class_names[14] == "goal" and s.class_names[26] == "start"
  px = pixels[(14, 0, 1)]
  h, w = px.shape[:2]
  i = 7  # class 14, track 0, image 1
  from hx.data.preprocess import resize_area
  np.testing.assert_allclose(s.images[i], resize_area(px.transpose(2, 0, 1), 32, 32) / 255, atol=1e-6)
  assert (s.pools[12:] == TEST).all()


def test_gtsrb_holds_out_whole_tracks(tmp_path):
  _gtsrb_fixture(tmp_path, tracks=10, per_track=3)
  s = load_gtsrb(str(tmp_path), seed=0)
  track = np.repeat(np.arange(20), 3)
  for t in range(20):
    assert len(set(s.pools[track == t])) == 1  # a track lies in one pool
  assert {TRAIN, VAL, TEST} <= set(s.pools.tolist())


def test_gtsrb_errors(tmp_path):
  with pytest.raises(errors.DataNotFoundError, match="Final_Training") as e:
    load_gtsrb(str(tmp_path))
  assert "--gtsrb" in str(e.value)
  _gtsrb_fixture(tmp_path)
  p = tmp_path / "Final_Training" / "Images" / "00001" / "00000_00001.ppm"
  p.write_bytes(p.read_bytes()[:40])
  with pytest.raises(errors.DataFormatError, match="PPM truncated") as e:
    load_gtsrb(str(tmp_path))
  assert str(p) in str(e.value)
  p.write_bytes(b"P3\n1 1\n255\n1 2 3")
  with pytest.raises(errors.DataFormatError, match="P6"):
    load_gtsrb(str(tmp_path))
  os.remove(p)
  with pytest.raises(errors.DataNotFoundError, match="missing"):
    load_gtsrb(str(tmp_path))


def test_holdout_gives_each_pool_at_least_one_group():
  from hx.data.imageset import holdout
  pools = np.zeros(10, np.int8)
  labels = np.array([0] * 5 + [1] * 5)
  groups = np.array([0, 0, 1, 1, 2, 3, 3, 4, 4, 5])  # class 0: 3 groups, class 1: 3 groups
  out = holdout(pools, labels, 0.1, seed=0, groups=groups)
  for c in (0, 1):
    assert set(out[labels == c].tolist()) == {TRAIN, VAL}
  for g in np.unique(groups):
    assert len(set(out[groups == g].tolist())) == 1
  single = holdout(np.zeros(1, np.int8), np.zeros(1), 0.5, seed=0)
  np.testing.assert_array_equal(single, [TRAIN])  # a lone image stays in training
  big = holdout(np.zeros(100, np.int8), np.zeros(100), 0.1, seed=0)
  assert (big == VAL).sum() == 10
