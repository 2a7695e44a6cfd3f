"""smallNORB (LeCun et al. 2004): 5 toy categories, from the official binary `.mat` files or
tensorflow-datasets.

The official files (`smallnorb-5x46789x9x18x6x2x96x96-training-{dat,cat,info}.mat` and
`smallnorb-5x01235x9x18x6x2x96x96-testing-...`, plain or .gz) store one matrix each: a little-endian
int32 magic number (0x1E3D4C55 uint8, 0x1E3D4C54 int32), an int32 rank, max(rank, 3) int32 dimensions, then
the values. `dat` is uint8 (n, 2, 96, 96) (two cameras), `cat` int32 (n,), `info` int32 (n, 4).

As the paper: the left camera image (index 0), resized to 28x28 by area averaging. The validation pool is a
stratified 10% of the training images, by `seed`.
"""

from __future__ import annotations

import glob
import gzip
import os

import numpy as np

from hx.data.errors import DataFormatError, DataNotFoundError
from hx.data.imageset import TEST, TRAIN, ImageSet, holdout
from hx.data.preprocess import resize_area

__all__ = ["load_smallnorb", "load_smallnorb_dir", "load_smallnorb_tfds", "read_norb_mat", "write_norb_mat",
           "TOY_CLASSES", "FLAG"]

FLAG = ("--smallnorb (a directory of the official .mat files, or 'tfds'; "
        "argument `smallnorb` of hx.data.Sources)")
TOY_CLASSES = ("animal", "human", "airplane", "truck", "car")
_MAGIC = {0x1E3D4C55: np.dtype("<u1"), 0x1E3D4C54: np.dtype("<i4"), 0x1E3D4C51: np.dtype("<f4"),
          0x1E3D4C53: np.dtype("<f8"), 0x1E3D4C56: np.dtype("<i2")}
_CODES = {np.dtype(np.uint8): 0x1E3D4C55, np.dtype(np.int32): 0x1E3D4C54, np.dtype(np.float32): 0x1E3D4C51,
          np.dtype(np.float64): 0x1E3D4C53, np.dtype(np.int16): 0x1E3D4C56}
_VAL_FRACTION = 0.1


def read_norb_mat(path: str) -> np.ndarray:
  """The matrix in one smallNORB binary file (optionally gzip'd).

  Raises:
    DataFormatError: unknown magic number, bad rank, or a size that does not match the header.
  """
  try:
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
      raw = f.read()
  except (OSError, EOFError) as e:
    raise DataFormatError("smallNORB", f"cannot read the file ({e})", [path], FLAG) from e
  if len(raw) < 8:
    raise DataFormatError("smallNORB", "file too short for a header", [path], FLAG)
  magic, ndim = np.frombuffer(raw[:8], "<i4")
  if int(magic) not in _MAGIC or not 1 <= int(ndim) <= 16:
    raise DataFormatError("smallNORB", f"not a smallNORB binary matrix (magic {int(magic):#x}, rank "
                          f"{int(ndim)})", [path], FLAG)
  dtype, ndim = _MAGIC[int(magic)], int(ndim)
  n_dims = max(ndim, 3)
  header = 8 + 4 * n_dims
  if len(raw) < header:
    raise DataFormatError("smallNORB", "header truncated", [path], FLAG)
  dims = tuple(int(d) for d in np.frombuffer(raw[8:header], "<i4")[:ndim])
  expected = header + int(np.prod(dims)) * dtype.itemsize
  if len(raw) != expected or any(d < 0 for d in dims):
    what = "truncated" if len(raw) < expected else "longer than its header says"
    raise DataFormatError("smallNORB", f"file {what}: header {dims} needs {expected} bytes, file has "
                          f"{len(raw)}", [path], FLAG)
  return np.frombuffer(raw, dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))


def write_norb_mat(path: str, array: np.ndarray) -> None:
  """Writes `array` (uint8, int16, int32, float32, float64) in the smallNORB binary format (.gz if the
  path ends so)."""
  a = np.asarray(array)
  dims = list(a.shape) + [1] * max(0, 3 - a.ndim)
  header = np.array([_CODES[a.dtype], a.ndim] + dims, "<i4").tobytes()
  with (gzip.open(path, "wb") if path.endswith(".gz") else open(path, "wb")) as f:
    f.write(header + a.astype(a.dtype.newbyteorder("<")).tobytes())


def _find(directory: str, split: str, kind: str) -> str:
  pattern = os.path.join(directory, f"smallnorb-*-{split}-{kind}.mat")
  found = sorted(glob.glob(pattern) + glob.glob(pattern + ".gz"))
  if not found:
    raise DataNotFoundError("smallNORB", f"missing the {split} {kind} file", [pattern, pattern + ".gz"], FLAG)
  return found[0]


def _check(dat, cat, info, paths):
  if dat.ndim != 4 or dat.shape[1] != 2:
    raise DataFormatError("smallNORB", f"dat has shape {dat.shape}, expected (n, 2, H, W)", paths, FLAG)
  if cat.shape != (len(dat),):
    raise DataFormatError("smallNORB", f"cat has shape {cat.shape} for {len(dat)} images", paths, FLAG)
  if info is not None and (info.ndim != 2 or len(info) != len(dat)):
    raise DataFormatError("smallNORB", f"info has shape {info.shape} for {len(dat)} images", paths, FLAG)
  if len(cat) and (cat.min() < 0 or cat.max() > 4):
    raise DataFormatError("smallNORB", "categories outside 0..4", paths, FLAG)


def _assemble(parts, seed, source, size):
  images = np.concatenate([resize_area(d[:, :1], size, size) / np.float32(255.0) for d, _ in parts])
  labels = np.concatenate([c for _, c in parts]).astype(np.int32)
  pools = np.concatenate([np.full(len(parts[0][1]), TRAIN, np.int8),
                          np.full(len(parts[1][1]), TEST, np.int8)])
  pools = holdout(pools, labels, _VAL_FRACTION, seed)
  return ImageSet("smallnorb", False, images.astype(np.float32), labels, pools, TOY_CLASSES, source)


def load_smallnorb_dir(directory: str, seed: int = 0, size: int = 28) -> ImageSet:
  """smallNORB from the six official files in `directory`: float32 (n, 1, size, size) left-camera images."""
  if not os.path.isdir(directory):
    raise DataNotFoundError("smallNORB", "the directory does not exist", [directory], FLAG)
  parts = []
  for split in ("training", "testing"):
    paths = [_find(directory, split, k) for k in ("dat", "cat", "info")]
    dat, cat, info = (read_norb_mat(p) for p in paths)
    _check(dat, cat, info, paths)
    parts.append((dat, cat))
  return _assemble(parts, seed, directory, size)


def load_smallnorb_tfds(data_dir: str | None = None, download: bool = False, seed: int = 0,
                        size: int = 28) -> ImageSet:
  """smallNORB through tensorflow-datasets ("smallnorb"; `image` is the left camera)."""
  from hx.data.tfds import load_tfds
  (xtr, ytr), (xte, yte) = load_tfds("smallnorb", "smallNORB", FLAG, data_dir, download,
                                     label_key="label_category")
  parts = [(x.transpose(0, 3, 1, 2), y) for x, y in ((xtr, ytr), (xte, yte))]
  return _assemble(parts, seed, f"tfds:smallnorb ({data_dir or 'default dir'})", size)


def load_smallnorb(source: str | None, seed: int = 0, download: bool = False) -> ImageSet:
  """smallNORB from a directory, or "tfds"/"tfds:DATA_DIR". (For the rendered stand-in use
  `hx.data.render_toys.toy_imageset`.)"""
  if source is None:
    raise DataNotFoundError("smallNORB", "no source given", [], FLAG)
  if source == "tfds" or source.startswith("tfds:"):
    return load_smallnorb_tfds(source[5:] or None, download, seed)
  return load_smallnorb_dir(source, seed)
