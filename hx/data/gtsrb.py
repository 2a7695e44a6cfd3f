"""GTSRB (Stallkamp et al. 2012), German traffic signs, from a directory in the official layout.

Layout: `Final_Training/Images/000NN/*.ppm` with `GT-000NN.csv` beside them (semicolon-separated:
Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId), optionally the test set
`Final_Test/Images/*.ppm` with `GT-final_test.csv` (in `Final_Test/Images/` or the root). Images are
resized to 32x32x3 by area averaging (as the paper; the whole image, not the ROI, unless `crop_roi`).

Pools: the official test set when present, else 20% of the training *tracks* (the 30 images of one physical
sign, files TTTTT_IIIII.ppm); validation is 10% of the remaining tracks, by `seed`, so near-duplicate
images never straddle two pools.

The maze tasks need speed signs and a start and a goal sign. Their GTSRB classes are fixed in `ROLES`:
speed limits 30, 50, 70, 80, 100 are classes 1, 2, 4, 5, 7; the start is class 26 (traffic signals) and the
goal class 14 (stop). These are the authors' classes, not our choice: the paper does not say which images
mark the start and goal, but HOUDINI's `EvaluatorUtils.py` does -- `get_io_examples_regress_speed_street_sign`
maps classes 1, 2, 4, 5, 7, 26, 14 to costs 9, 7, 5, 3, 1, 1, 1 ("26 for start, 14 for end"), and
`get_io_examples_shortest_path_street_sign_maze` passes `img_class_start=26, img_class_goal=14`.
"""

from __future__ import annotations

import csv
import glob
import os

import numpy as np

from hx.data.errors import DataFormatError, DataNotFoundError
from hx.data.imageset import TEST, TRAIN, ImageSet, holdout
from hx.data.preprocess import resize_area

__all__ = ["load_gtsrb", "read_ppm", "write_ppm", "ROLES", "NUM_CLASSES", "FLAG"]

FLAG = "--gtsrb (a directory in the official layout; argument `gtsrb` of hx.data.Sources)"
NUM_CLASSES = 43
ROLES = {"speed_30": 1, "speed_50": 2, "speed_70": 4, "speed_80": 5, "speed_100": 7, "start": 26, "goal": 14}
_NAMES = {v: k for k, v in ROLES.items()}
CLASS_NAMES = tuple(_NAMES.get(c, f"class_{c:02d}") for c in range(NUM_CLASSES))


def read_ppm(path: str) -> np.ndarray:
  """uint8 (H, W, 3) pixels of a binary PPM (P6, maxval <= 255) file.

  Raises:
    DataFormatError: not a P6 file, or fewer pixel bytes than the header says.
  """
  try:
    with open(path, "rb") as f:
      raw = f.read()
  except OSError as e:
    raise DataFormatError("GTSRB", f"cannot read image ({e})", [path], FLAG) from e
  fields, pos = [], 0
  while len(fields) < 4:
    while pos < len(raw) and raw[pos:pos + 1].isspace():
      pos += 1
    if raw[pos:pos + 1] == b"#":
      while pos < len(raw) and raw[pos:pos + 1] != b"\n":
        pos += 1
      continue
    start = pos
    while pos < len(raw) and not raw[pos:pos + 1].isspace():
      pos += 1
    if start == pos:
      break
    fields.append(raw[start:pos])
  if len(fields) < 4 or fields[0] != b"P6" or not all(f.isdigit() for f in fields[1:]):
    raise DataFormatError("GTSRB", "not a binary PPM (P6) image", [path], FLAG)
  w, h, maxval = (int(f) for f in fields[1:])
  if not 0 < maxval < 256:
    raise DataFormatError("GTSRB", f"PPM maxval {maxval} not supported", [path], FLAG)
  body = raw[pos + 1:]
  if len(body) < w * h * 3:
    raise DataFormatError("GTSRB", f"PPM truncated: {w}x{h} needs {w * h * 3} bytes, has {len(body)}",
                          [path], FLAG)
  return np.frombuffer(body[:w * h * 3], np.uint8).reshape(h, w, 3).copy()


def write_ppm(path: str, pixels: np.ndarray) -> None:
  """Writes uint8 (H, W, 3) pixels as a binary PPM (P6) file."""
  p = np.asarray(pixels, np.uint8)
  with open(path, "wb") as f:
    f.write(f"P6\n{p.shape[1]} {p.shape[0]}\n255\n".encode() + p.tobytes())


def _read_csv(path: str) -> list[dict]:
  try:
    with open(path, newline="") as f:
      rows = list(csv.DictReader(f, delimiter=";"))
  except (OSError, UnicodeDecodeError, csv.Error) as e:
    raise DataFormatError("GTSRB", f"cannot read annotation file ({e})", [path], FLAG) from e
  need = {"Filename", "Roi.X1", "Roi.Y1", "Roi.X2", "Roi.Y2", "ClassId"}
  if rows and not need <= set(rows[0]):
    raise DataFormatError("GTSRB", f"annotation file lacks columns {sorted(need - set(rows[0]))}", [path],
                          FLAG)
  return rows


def _load_rows(folder: str, rows: list[dict], csv_path: str, size: int, crop_roi: bool):
  images, labels, tracks = [], [], []
  for row in rows:
    p = os.path.join(folder, row["Filename"])
    if not os.path.exists(p):
      raise DataNotFoundError("GTSRB", f"image listed in {os.path.basename(csv_path)} is missing", [p], FLAG)
    try:
      label = int(row["ClassId"])
      roi = [int(row[k]) for k in ("Roi.X1", "Roi.Y1", "Roi.X2", "Roi.Y2")]
    except (TypeError, ValueError) as e:
      raise DataFormatError("GTSRB", f"bad annotation row {row}", [csv_path], FLAG) from e
    if not 0 <= label < NUM_CLASSES:
      raise DataFormatError("GTSRB", f"class {label} outside 0..{NUM_CLASSES - 1}", [csv_path], FLAG)
    px = read_ppm(p)
    if crop_roi:
      px = px[roi[1]:roi[3] + 1, roi[0]:roi[2] + 1]
    images.append(resize_area(px.transpose(2, 0, 1), size, size) / np.float32(255.0))
    labels.append(label)
    stem = os.path.basename(row["Filename"]).split("_")[0]
    tracks.append(label * 100_000 + (int(stem) if stem.isdigit() else 0))
  return images, labels, tracks


def load_gtsrb(directory: str, seed: int = 0, size: int = 32, crop_roi: bool = False) -> ImageSet:
  """GTSRB from `directory` (the folder holding `Final_Training`): float32 (n, 3, size, size) in [0, 1]."""
  train_root = os.path.join(directory, "Final_Training", "Images")
  if not os.path.isdir(train_root):
    raise DataNotFoundError("GTSRB", "no Final_Training/Images folder", [train_root], FLAG)
  class_dirs = sorted(glob.glob(os.path.join(train_root, "[0-9]" * 5)))
  if not class_dirs:
    raise DataNotFoundError("GTSRB", "no class folders 000NN", [os.path.join(train_root, "000NN")], FLAG)
  images, labels, tracks = [], [], []
  for d in class_dirs:
    csv_path = os.path.join(d, f"GT-{os.path.basename(d)}.csv")
    if not os.path.exists(csv_path):
      raise DataNotFoundError("GTSRB", "missing annotation file", [csv_path], FLAG)
    x, y, t = _load_rows(d, _read_csv(csv_path), csv_path, size, crop_roi)
    images += x
    labels += y
    tracks += t
  n_train = len(labels)
  test_csvs = [os.path.join(directory, "Final_Test", "Images", "GT-final_test.csv"),
               os.path.join(directory, "GT-final_test.csv")]
  test_csv = next((p for p in test_csvs if os.path.exists(p)), None)
  if test_csv is not None:
    x, y, _ = _load_rows(os.path.join(directory, "Final_Test", "Images"), _read_csv(test_csv), test_csv,
                         size, crop_roi)
    images += x
    labels += y
    tracks += [-1] * len(y)
  labels = np.asarray(labels, np.int32)
  tracks = np.asarray(tracks, np.int64)
  pools = np.full(len(labels), TRAIN, np.int8)
  pools[n_train:] = TEST
  if test_csv is None:
    pools = holdout(pools, labels, 0.2, seed + 1, groups=tracks)
    pools[pools != TRAIN] = TEST
  pools = holdout(pools, labels, 0.1, seed, groups=tracks)
  stacked = np.stack(images).astype(np.float32) if images else np.zeros((0, 3, size, size), np.float32)
  return ImageSet("gtsrb", False, stacked, labels, pools, CLASS_NAMES, directory)
