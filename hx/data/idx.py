"""Reading and writing the IDX format of the MNIST files (big-endian header, then raw values)."""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

from hx.data.errors import DataFormatError

__all__ = ["read_idx", "write_idx"]

_DTYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
           0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(np.int16): 0x0B,
          np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D, np.dtype(np.float64): 0x0E}


def _open(path: str):
  return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_idx(path: str, dataset: str = "MNIST", flag: str = "") -> np.ndarray:
  """The array stored in an IDX file (optionally gzip'd), in native byte order.

  Raises:
    DataFormatError: bad magic number, unknown type code, or a size that does not match the header
      (a truncated file or one with trailing bytes).
  """
  try:
    with _open(path) as f:
      raw = f.read()
  except (OSError, EOFError) as e:
    raise DataFormatError(dataset, f"cannot read IDX file ({e})", [path], flag) from e
  if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _DTYPES:
    raise DataFormatError(dataset, "not an IDX file (bad magic number)", [path], flag)
  dtype, ndim = _DTYPES[raw[2]], raw[3]
  if ndim < 1 or len(raw) < 4 + 4 * ndim:
    raise DataFormatError(dataset, "IDX header truncated", [path], flag)
  dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
  expected = 4 + 4 * ndim + int(np.prod(dims)) * dtype.itemsize
  if len(raw) != expected:
    what = "truncated" if len(raw) < expected else "longer than its header says"
    raise DataFormatError(dataset, f"IDX file {what}: header {dims} needs {expected} bytes, file has "
                          f"{len(raw)}", [path], flag)
  data = np.frombuffer(raw, dtype, offset=4 + 4 * ndim).reshape(dims)
  return data.astype(dtype.newbyteorder("="))


def write_idx(path: str, array: np.ndarray) -> None:
  """Writes `array` (uint8, int8, int16, int32, float32 or float64) as an IDX file; gzip'd if `path`
  ends in .gz."""
  a = np.asarray(array)
  code = _CODES[a.dtype]
  header = bytes([0, 0, code, a.ndim]) + struct.pack(">" + "I" * a.ndim, *a.shape)
  body = a.astype(a.dtype.newbyteorder(">")).tobytes()
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with (gzip.open(path, "wb") if path.endswith(".gz") else open(path, "wb")) as f:
    f.write(header + body)
