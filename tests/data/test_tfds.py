"""hx.data.tfds_split on a data set that tfds itself prepares from PNG files on disk (no download): the
arrays hx takes, and one-line errors for what is not there."""

import os
import sys

import numpy as np
import pytest

tfds = pytest.importorskip("tensorflow_datasets")

from PIL import Image  # noqa: E402 - after the skip

import hx  # noqa: E402
from hx.data import DataFormatError, DataNotFoundError, tfds_split  # noqa: E402
from hx.data.tfds import load_tfds  # noqa: E402

NAME = "hx_test_shapes"
CLASSES = ("circle", "square")
H, W = 8, 10   # not square, so a swapped axis shows


def _write_pngs(src):
  """6 RGB PNGs (H, W) per class folder, each of distinct random pixels; {path: class index}."""
  rng = np.random.default_rng(0)
  files = {}
  for c, cls in enumerate(CLASSES):
    os.makedirs(src / cls)
    for i in range(6):
      path = str(src / cls / f"{i}.png")
      Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8)).save(path)
      files[path] = c
  return files


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
  """A data set prepared by tfds into a fresh data_dir from the class folders: train (files 0-3 of each
  class, 8 examples) and test (files 4-5, 4 examples); (data_dir, {path: class index})."""
  root = tmp_path_factory.mktemp("tfds")
  files = _write_pngs(root / "src")

  class HxTestShapes(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
      return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict({
          "image": tfds.features.Image(shape=(H, W, 3)),
          "label": tfds.features.ClassLabel(names=list(CLASSES)),
          "size": tfds.features.Tensor(shape=(2,), dtype=np.float32),
          "file": tfds.features.Text(),
      }))

    def _split_generators(self, dl_manager):
      return {"train": self._generate_examples(range(4)), "test": self._generate_examples(range(4, 6))}

    def _generate_examples(self, indices):
      for path, c in files.items():
        i = int(os.path.basename(path)[0])
        if i in indices:
          yield path, {"image": path, "label": CLASSES[c], "size": np.array([i, c + 0.5], np.float32),
                       "file": path}

  data_dir = str(root / "data")
  builder = HxTestShapes(data_dir=data_dir)
  assert builder.name == NAME
  builder.download_and_prepare()
  return data_dir, files


def _png(path):
  return np.asarray(Image.open(path))


def test_images_channel_first_in_unit_range_with_folder_labels(prepared):
  data_dir, files = prepared
  x, y = tfds_split(NAME, "train", data_dir=data_dir)
  assert x.shape == (8, 3, H, W) and x.dtype == np.float32
  assert y.shape == (8,) and y.dtype == np.int64
  assert x.min() >= 0 and x.max() <= 1 and x.max() > 0.9
  # every example is one of the training PNGs, channel first and / 255, with its folder's label
  train = {p: c for p, c in files.items() if int(os.path.basename(p)[0]) < 4}
  found = set()
  for image, label in zip(x, y):
    hwc = np.round(np.transpose(image, (1, 2, 0)) * 255).astype(np.uint8)
    (path,) = [p for p in train if np.array_equal(_png(p), hwc)]
    np.testing.assert_allclose(image, np.transpose(_png(path), (2, 0, 1)) / 255, rtol=0, atol=1e-7)
    assert label == train[path]
    found.add(path)
  assert found == set(train)
  assert sorted(y.tolist()) == [0] * 4 + [1] * 4


def test_other_splits_and_slices(prepared):
  data_dir, _ = prepared
  x, y = tfds_split(NAME, "test", data_dir=data_dir)
  assert x.shape == (4, 3, H, W) and sorted(y.tolist()) == [0, 0, 1, 1]
  assert tfds_split(NAME, "train+test", data_dir=data_dir)[0].shape == (12, 3, H, W)
  assert tfds_split(NAME, "train[:50%]", data_dir=data_dir)[1].shape == (4,)


def test_a_feature_that_is_not_an_image_keeps_its_shape(prepared):
  data_dir, _ = prepared
  x, y = tfds_split(NAME, "test", data_dir=data_dir, image_key="size")
  assert x.shape == (4, 2) and x.dtype == np.float32
  np.testing.assert_array_equal(x[:, 1] - 0.5, y)       # size = (file index, class + 0.5)
  assert set(x[:, 0].tolist()) == {4.0, 5.0}


def _one_line(e, *parts):
  message = str(e.value)
  assert "\n" not in message, message
  for part in parts:
    assert part in message, (part, message)


def test_without_tensorflow_datasets_the_extra_is_named(monkeypatch, tmp_path):
  monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)     # import fails as if not installed
  with pytest.raises(DataNotFoundError) as e:
    tfds_split("mnist", "test", data_dir=str(tmp_path))
  _one_line(e, "mnist", "tensorflow-datasets is not installed", "'test'", str(tmp_path), "hx[tfds]")


def test_a_data_set_not_prepared_is_refused_without_downloading(prepared, tmp_path):
  data_dir, _ = prepared
  with pytest.raises(DataNotFoundError) as e:
    tfds_split("hx_no_such_set", data_dir=data_dir)
  _one_line(e, "hx_no_such_set", "not prepared", data_dir)
  # a data set tfds knows, but not prepared in this (empty) data_dir: nothing is fetched
  empty = str(tmp_path / "empty")
  with pytest.raises(DataNotFoundError) as e:
    tfds_split("mnist", "test", data_dir=empty)
  _one_line(e, "mnist", "not prepared", empty)
  assert not os.path.exists(os.path.join(empty, "downloads"))


def test_a_bad_split_or_key_is_named(prepared):
  data_dir, _ = prepared
  with pytest.raises(DataNotFoundError) as e:
    tfds_split(NAME, "validation", data_dir=data_dir)
  _one_line(e, NAME, "'validation'", data_dir, "'train'", "'test'")
  with pytest.raises(DataNotFoundError) as e:
    tfds_split(NAME, "train[:200%]", data_dir=data_dir)
  _one_line(e, NAME, "'train[:200%]'", data_dir)
  with pytest.raises(DataFormatError) as e:
    tfds_split(NAME, "test", data_dir=data_dir, image_key="pixels")
  _one_line(e, NAME, "'pixels'", "'test'", data_dir, "'image'")
  with pytest.raises(DataFormatError) as e:
    tfds_split(NAME, "test", data_dir=data_dir, label_key="class")
  _one_line(e, NAME, "'class'", "'test'", data_dir)
  with pytest.raises(DataFormatError) as e:
    tfds_split(NAME, "test", data_dir=data_dir, image_key="file")     # text, not numbers
  _one_line(e, NAME, "'file'", "'test'", data_dir)
  with pytest.raises(DataFormatError) as e:
    tfds_split(NAME, "test", data_dir=data_dir, label_key="size")     # (n, 2) floats
  _one_line(e, NAME, "'size'", "'test'", data_dir)


def test_load_tfds_reads_the_same_data_as_stored(prepared, tmp_path):
  data_dir, _ = prepared
  (xtr, ytr), (xte, yte) = load_tfds(NAME, "Shapes", "--shapes", data_dir, download=False)
  assert xtr.shape == (8, H, W, 3) and xtr.dtype == np.uint8 and ytr.shape == (8,)
  assert xte.shape == (4, H, W, 3) and yte.shape == (4,)
  x, _ = tfds_split(NAME, "train", data_dir=data_dir)
  np.testing.assert_array_equal(np.transpose(xtr, (0, 3, 1, 2)) / np.float32(255), x)
  with pytest.raises(DataNotFoundError, match="--shapes"):
    load_tfds(NAME, "Shapes", "--shapes", str(tmp_path / "empty"), download=False)


def test_the_arrays_make_an_hx_task(prepared):
  data_dir, _ = prepared
  train = tfds_split(NAME, "train", data_dir=data_dir)
  val = tfds_split(NAME, "test[:50%]", data_dir=data_dir)
  test = tfds_split(NAME, "test[50%:]", data_dir=data_dir)
  task = hx.Task.from_arrays("is_square", f"Tensor<real>[3][{H}][{W}] -> Tensor<bool>[1]", train, val, test)
  assert task.table.shape == (12, 3, H, W)
  assert [len(s.targets) for s in (task.train, task.val, task.test)] == [8, 2, 2]
  # one class of len(CLASSES) per example: the int64 labels are the class-index targets of Tensor<bool>[k]
  k = len(CLASSES)
  task = hx.Task.from_arrays("shape", f"Tensor<real>[3][{H}][{W}] -> Tensor<bool>[{k}]", train, val, test)
  assert task.table.shape == (12, 3, H, W)
  np.testing.assert_array_equal(np.asarray(task.train.targets).reshape(-1), train[1])
