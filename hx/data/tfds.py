"""Reading a data set through tensorflow-datasets (the optional `tfds` extra), never downloading unless
asked."""

from __future__ import annotations

import os

import numpy as np

from hx.data.errors import DataNotFoundError

__all__ = ["load_tfds"]


def load_tfds(name: str, dataset: str, flag: str, data_dir: str | None, download: bool,
              image_key: str = "image", label_key: str = "label"):
  """((train_images, train_labels), (test_images, test_labels)) as NumPy arrays (images (n, H, W, C)).

  Raises:
    DataNotFoundError: tensorflow-datasets is not installed, or the data is not prepared in `data_dir`
      and `download` is False.
  """
  try:
    import tensorflow_datasets as tfds  # noqa: PLC0415 - optional dependency
  except ImportError as e:
    raise DataNotFoundError(dataset, "tensorflow-datasets is not installed (pip install 'hx[tfds]')",
                            [], flag) from e
  builder = tfds.builder(name, data_dir=data_dir)
  if not download and not os.path.isdir(builder.data_dir):
    raise DataNotFoundError(dataset, f"tfds data set {name!r} is not prepared and downloading is off "
                            "(pass download=True / --download to fetch it)", [builder.data_dir], flag)
  if download:
    builder.download_and_prepare()
  out = []
  for split in ("train", "test"):
    arrays = tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1))
    out.append((np.asarray(arrays[image_key]), np.asarray(arrays[label_key])))
  return tuple(out)
