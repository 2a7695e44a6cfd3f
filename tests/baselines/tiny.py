"""Tiny tasks of the paper's four shapes, for the baselines' tests: 1x16x16 images of three classes
(a bright 4x4 square in one of three places, on noise), and

  recognize   image -> Tensor<bool>[1]              is it class 1?
  count       List<image> -> Tensor<real>[1]        how many images of class 1 (lists of 2-4)
  regress     image -> Tensor<real>[2]              (class + 1, 0)
  path        Graph<image> -> Graph<Tensor<real>[2]>  per node of a 2x2 or 3x3 grid: (cost, the sum of the
                                                    costs of the nodes up to it in row-major order),
                                                    cost = class + 1: what an LSTM reading the nodes in
                                                    order can compute.
"""

import types

import numpy as np

from hx.compile import ModuleConfig, TuneConfig, objective_for_type
from hx.compile.values import ListBatch, SharedGraphs, Split
from hx.data.grids import grid_layouts
from hx.lang.types import function_parts, parse_type

TINY = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), cnn_kernel=3, lstm_hidden=16, mlp_dropout=0.0,
                    cnn_dropout=0.0)
TUNE = TuneConfig(epochs=12, batch_size=32, learning_rate=1e-2)

TYPES = {
    "recognize": parse_type("Tensor<real>[1][16][16] -> Tensor<bool>[1]"),
    "count": parse_type("List<Tensor<real>[1][16][16]> -> Tensor<real>[1]"),
    "regress": parse_type("Tensor<real>[1][16][16] -> Tensor<real>[2]"),
    "path": parse_type("Graph<Tensor<real>[1][16][16]> -> Graph<Tensor<real>[2]>"),
}
_PLACES = ((2, 2), (2, 10), (10, 6))


def _table(rng, n=300):
  labels = rng.integers(0, 3, n)
  images = rng.normal(0.0, 0.3, (n, 1, 16, 16)).astype(np.float32)
  for i, c in enumerate(labels):
    r, col = _PLACES[c]
    images[i, 0, r:r + 4, col:col + 4] += 2.0
  return images, labels


def _pick(rng, labels, shape, cls=None, exclude=None):
  pool = np.arange(len(labels))
  if cls is not None:
    pool = pool[labels == cls]
  if exclude is not None:
    pool = pool[labels != exclude]
  return pool[rng.integers(len(pool), size=shape)].astype(np.int32)


def _split(kind, rng, labels, n):
  if kind == "recognize":
    idx = _pick(rng, labels, n)
    return Split(idx, (labels[idx] == 1).astype(np.float32)[:, None])
  if kind == "regress":
    idx = _pick(rng, labels, n)
    return Split(idx, np.stack([labels[idx] + 1.0, np.zeros(n)], -1).astype(np.float32))
  if kind == "count":
    idx = _pick(rng, labels, (n, 4))
    lengths = rng.integers(2, 5, n)
    mask = np.arange(4)[None, :] < lengths[:, None]
    y = ((labels[idx] == 1) & mask).sum(1).astype(np.float32)[:, None]
    return Split(ListBatch(idx, mask), y)
  sides = (2, 3)
  layouts = grid_layouts(sides, 9)
  layout = rng.integers(0, 2, n).astype(np.uint8)
  idx = _pick(rng, labels, (n, 9))
  real = np.asarray(layouts.mask)[layout]
  cost = np.where(real, labels[idx] + 1.0, 0.0)
  y = np.stack([cost, np.cumsum(cost, 1)], -1).astype(np.float32)
  return Split(SharedGraphs(idx, layout, layouts), y)


def task(kind, seed=0, n=(240, 80, 80)):
  """A tiny task of `kind` ("recognize", "count", "regress", "path") on one shared image table."""
  rng = np.random.default_rng(seed)
  table, labels = _table(np.random.default_rng(1000))
  t = TYPES[kind]
  _, out = function_parts(t)
  objective = objective_for_type(out, metric_component=1 if kind == "path" else None)
  train, val, test = (_split(kind, rng, labels, k) for k in n)
  return types.SimpleNamespace(name=f"tiny_{kind}", type=t, objective=objective, train=train, val=val,
                               test=test, table=table)


def trivial(task):
  """The trivial predictor's test score: the majority class's error (%), or the RMSE of the mean
  (for paths, of the distance component, over real nodes)."""
  y = np.asarray(task.test.targets, np.float64)
  if task.objective.metric == "error":
    p = y.mean()
    return 100.0 * min(p, 1.0 - p)
  if y.ndim == 3:
    inputs = task.test.inputs
    real = np.asarray(inputs.layouts.mask)[inputs.layout].astype(bool)
    d = y[..., 1][real]
    return float(np.sqrt(np.mean((d - d.mean()) ** 2)))
  return float(np.sqrt(np.mean((y - y.mean(0)) ** 2)))
