"""Reading a data set through tensorflow-datasets (the optional `tfds` extra), never downloading unless
asked.

- `tfds_split`: one split of a prepared data set as the arrays hx takes (images channel first in [0, 1],
  int64 labels), e.g. for `hx.Task.from_arrays`.
- `load_tfds`: the train and test splits as tfds stores them, for the MNIST and smallNORB loaders.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from hx.data.errors import DataFormatError, DataNotFoundError

if TYPE_CHECKING:
  import types

  from tensorflow_datasets.core import DatasetBuilder

__all__ = ["load_tfds", "tfds_split"]


def _import_tfds(dataset: str, flag: str, reading: str = "") -> types.ModuleType:
  try:
    import tensorflow_datasets as tfds  # noqa: PLC0415 - optional dependency
  except ImportError as e:
    raise DataNotFoundError(dataset, f"tensorflow-datasets is not installed{reading} (pip install "
                            "'hx[tfds]')", [], flag) from e
  return tfds


def _where(data_dir: str | None) -> str:
  """The data directory tfds reads, for messages."""
  if data_dir is not None:
    return data_dir
  from tensorflow_datasets.core import constants  # noqa: PLC0415 - optional dependency
  return f"{os.path.expanduser(constants.DATA_DIR)} (tfds's default)"


def _first_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def _builder(tfds: types.ModuleType, name: str, dataset: str, flag: str, data_dir: str | None,
             download: bool) -> DatasetBuilder:
  """The tfds builder of `name` in `data_dir`, prepared (by `download_and_prepare` only if `download`).

  Raises:
    DataNotFoundError: `name` (with its config and version) is neither prepared in `data_dir` nor a data set
      tfds knows, or it is not prepared and `download` is False.
  """
  where = _where(data_dir)
  try:
    builder = tfds.builder(name, data_dir=data_dir)
  except tfds.core.registered.DatasetNotFoundError:  # its message lists every data set tfds knows
    raise DataNotFoundError(dataset, f"tfds data set {name!r} is not prepared in data_dir {where}, nor one "
                            "tfds knows by that name", [], flag) from None
  except Exception as e:  # e.g. a config or version that the data set does not have
    raise DataNotFoundError(dataset, f"tfds data set {name!r} in data_dir {where} cannot be opened "
                            f"({_first_line(e)})", [], flag) from e
  if download:
    builder.download_and_prepare()
  elif not builder.is_prepared():
    raise DataNotFoundError(dataset, f"tfds data set {name!r} is not prepared in data_dir {where} "
                            f"(looked for {builder.data_dir}; nothing is downloaded unless asked"
                            f"{', pass download=True / --download to fetch it' if flag else ''})",
                            [], flag)
  return builder


def _read(tfds: types.ModuleType, builder: DatasetBuilder, name: str, dataset: str, flag: str,
          data_dir: str | None, split: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
  """The features `keys` of every example of `split`, as tfds stores them: {key: array (n, ...)}.

  Raises:
    DataNotFoundError: no split `split`.
    DataFormatError: a key that is not a feature, or a split that cannot be read as one array per key.
  """
  where = _where(data_dir)
  try:
    builder.info.splits[split]
  except (KeyError, ValueError) as e:
    known = ", ".join(repr(s) for s in builder.info.splits)
    raise DataNotFoundError(dataset, f"tfds data set {name!r} in data_dir {where} has no split {split!r} "
                            f"(it has {known}; {_first_line(e)})", [], flag) from None
  features = builder.info.features
  for key in keys:
    if key not in features:
      known = ", ".join(repr(k) for k in features)
      raise DataFormatError(dataset, f"tfds data set {name!r} in data_dir {where} has no feature {key!r} "
                            f"(split {split!r}; its features are {known})", [], flag)
  try:
    arrays = tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1))
  except Exception as e:  # TensorFlow's errors (e.g. examples of different shapes)
    raise DataFormatError(dataset, f"tfds data set {name!r} in data_dir {where}: split {split!r} cannot be "
                          f"read as one array per feature ({_first_line(e)})", [], flag) from e
  out = {}
  for key in keys:
    value = arrays[key]
    if isinstance(value, dict):
      raise DataFormatError(dataset, f"tfds data set {name!r} in data_dir {where}: feature {key!r} of split "
                            f"{split!r} is a dict of features ({', '.join(value)}), not one array", [], flag)
    out[key] = np.asarray(value)
  return out


def tfds_split(name: str, split: str = "train", *, data_dir: str | None = None, image_key: str = "image",
               label_key: str = "label") -> tuple[np.ndarray, np.ndarray]:
  """One split of a tensorflow-datasets data set prepared in `data_dir`, as the arrays hx takes (e.g. a
  split of `hx.Task.from_arrays`). Nothing is downloaded: prepare the data set first (`tfds build`, or
  `tfds.builder(name, data_dir=...).download_and_prepare()`).

      x, y = hx.data.tfds_split("mnist", "train[:1000]", data_dir="~/tensorflow_datasets")
      # x float32 (1000, 1, 28, 28) in [0, 1], y int64 (1000,)

  Args:
    name: the tfds name, optionally with config and version ("mnist", "smallnorb:2.0.0"); a data set
      prepared from one's own builder is read from its files in `data_dir`, without its code.
    split: a tfds split, slices and unions included ("train", "test[:10%]", "train+test").
    data_dir: where the data set is prepared; None for tfds's default (`TFDS_DATA_DIR` or
      ~/tensorflow_datasets).
    image_key: the feature holding the inputs.
    label_key: the feature holding the labels (integers, e.g. a `ClassLabel`).

  Returns:
    (inputs, labels), n examples each. inputs: float32; an image feature (n, H, W, C) becomes
    (n, C, H, W), channel first as hx's `Tensor<real>[C][H][W]`, scaled to [0, 1] (uint8 / 255, uint16
    / 65535; float images unchanged); any other feature keeps its shape (n, ...). labels: int64 (n,).

  Raises:
    DataNotFoundError: tensorflow-datasets is not installed, the data set is not prepared in `data_dir`,
      or it has no split `split`.
    DataFormatError: `image_key` or `label_key` is not a feature, or the features are not arrays of the
      kinds above (images of different sizes, text, labels that are not one integer per example).
    Each message is one line naming the data set, the split or feature and the data_dir.
  """
  if data_dir is not None:
    data_dir = os.path.expanduser(os.fspath(data_dir))
  tfds = _import_tfds(name, "", f" to read split {split!r} from data_dir "
                      f"{data_dir if data_dir is not None else 'TFDS_DATA_DIR or ~/tensorflow_datasets'}")
  builder = _builder(tfds, name, name, "", data_dir, download=False)
  keys = (image_key,) if image_key == label_key else (image_key, label_key)
  arrays = _read(tfds, builder, name, name, "", data_dir, split, keys)
  where = _where(data_dir)

  def bad(key: str, problem: str) -> DataFormatError:
    return DataFormatError(name, f"feature {key!r} of split {split!r} (data_dir {where}) {problem}")

  x, y = arrays[image_key], arrays[label_key]
  if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
    raise bad(image_key, f"holds {x.dtype} values, not numbers")
  if isinstance(builder.info.features[image_key], tfds.features.Image):
    if x.ndim != 4:
      raise bad(image_key, f"is an image array of shape {x.shape}, not (n, H, W, C)")
    if x.dtype == np.uint8:
      x = x.astype(np.float32) / np.float32(255)
    elif x.dtype == np.uint16:
      x = x.astype(np.float32) / np.float32(65535)
    x = np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)), dtype=np.float32)
  else:
    x = np.asarray(x, dtype=np.float32)
  if y.ndim != 1 or not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
    raise bad(label_key, f"is {y.dtype} of shape {y.shape}, not one integer label per example (n,)")
  if len(x) != len(y):
    raise bad(label_key, f"has {len(y)} labels for {len(x)} inputs")
  return x, y.astype(np.int64)


def load_tfds(name: str, dataset: str, flag: str, data_dir: str | None, download: bool,
              image_key: str = "image", label_key: str = "label"):
  """((train_images, train_labels), (test_images, test_labels)) as tfds stores them: NumPy arrays, images
  (n, H, W, C) (uint8 for MNIST and smallNORB), labels (n,) (int64 for a `ClassLabel`).

  Raises:
    DataNotFoundError: tensorflow-datasets is not installed, or the data is not prepared in `data_dir`
      and `download` is False.
  """
  tfds = _import_tfds(dataset, flag)
  builder = _builder(tfds, name, dataset, flag, data_dir, download)
  out = []
  for split in ("train", "test"):
    arrays = _read(tfds, builder, name, dataset, flag, data_dir, split, (image_key, label_key))
    out.append((arrays[image_key], arrays[label_key]))
  return tuple(out)
