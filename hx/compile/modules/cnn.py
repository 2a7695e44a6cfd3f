"""The `cnn` template: image `Tensor<real>[C][H][W]` (channel-first) -> tensor (see `hx.compile.modules`).

Per channel size c of its layout (`cnn_layout`): conv k x k (stride 1, no padding) -> ReLU -> max-pool
(floor), spatial dropout after the last block, features flattened in (H, W, C) order, and a linear
output layer unless the output type is exactly the features. How the blocks run in training on a CPU
(hx's kernels, XLA's, or YNNPACK's in slices) is `hx.compile.cnn_blocks`'s, beside the kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.cnn_blocks import run_blocks
from hx.compile.modules.config import ModuleConfig
from hx.compile.modules.layers import Rows, _dense, _size, activate, apply_dense, row_dropout
from hx.compile.modules.reference_layers import (
  _ref_activate,
  _ref_conv2d,
  _ref_dense,
  _ref_max_pool,
  _ref_relu,
)
from hx.compile.modules.spec import ModuleSpec
from hx.lang.types import TensorType

__all__ = ["cnn_feature_size", "cnn_features", "cnn_layout"]


def cnn_feature_size(image: TensorType, channels: tuple[int, ...], kernel: int, pool: int) -> int:
  """Length of the CNN's flattened features for a `[C][H][W]` image; 0 if the image is too small."""
  _, h, w = image.shape
  for _ in channels:
    h, w = (h - kernel + 1) // pool, (w - kernel + 1) // pool
    if h < 1 or w < 1:
      return 0
  return h * w * channels[-1]


def cnn_layout(image: TensorType, config: ModuleConfig) -> tuple[tuple[int, ...], int, int] | None:
  """(channels, kernel, feature size) of the CNN a `[C][H][W]` image gets; None if none fits.

  The configured `cnn_channels` and `cnn_kernel` where the image is large enough for them (every image
  of the paper's tasks: 28x28), else the first of these that fits: the leading blocks of `cnn_channels`
  (as many as fit, at the configured kernel), then odd kernels down to 3 with one block less each time
  none fits. An 8x8 image gets one 5x5 block of 32 channels (2x2x32 features). A user's small images
  then get a CNN rather than no program at all; the choice is ours (the paper's images are all 28x28).
  """
  c = config
  for kernel in range(c.cnn_kernel, 2, -2):
    for blocks in range(len(c.cnn_channels), 0, -1):
      channels = tuple(c.cnn_channels[:blocks])
      f = cnn_feature_size(image, channels, kernel, c.cnn_pool)
      if f:
        return channels, kernel, f
  return None


def cnn_features(image: TensorType, config: ModuleConfig) -> int:
  """The feature size of the CNN `cnn_layout` gives `image`; 0 if none fits."""
  layout = cnn_layout(image, config)
  return 0 if layout is None else layout[2]


def _init_cnn(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  c_in = spec.inputs[0].shape[0]
  k = spec["kernel"]
  convs = []
  for i, c_out in enumerate(spec["channels"]):
    w = jax.nn.initializers.lecun_normal(in_axis=(0, 1, 2), out_axis=3)(
      jax.random.fold_in(keys[0], i), (k, k, c_in, c_out), jnp.float32)
    convs.append({"w": w, "b": jnp.zeros((c_out,), jnp.float32)})
    c_in = c_out
  params = {"convs": tuple(convs)}
  if spec["output_layer"]:
    params["out"] = _dense(keys[1], spec["features"], _size(spec.output))
  return params, {}


def _apply_cnn(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, rows: Rows, *,
               activation: str) -> tuple[jax.Array, dict]:
  (x,) = inputs
  r = x.shape[0]
  h = jnp.transpose(x.astype(jnp.float32), (0, 2, 3, 1))  # channel-first types, NHWC convolutions
  h = run_blocks(params["convs"], h, spec["pool"], rows.train)
  if rows.train and rows.keys is not None and spec["dropout"] > 0:
    h = row_dropout(h, rows.keys, spec["dropout"], (h.shape[-1],), spatial=True)
  h = h.reshape(r, -1)
  out_shape = (r,) + spec.output.shape
  if spec["output_layer"]:
    return activate(apply_dense(params["out"], h).reshape(out_shape), activation), stats
  return h.reshape(out_shape), stats


def _reference_cnn(spec: ModuleSpec, p: dict, s: dict, args: Sequence[np.ndarray]) -> np.ndarray:
  h = np.transpose(np.asarray(args[0], np.float64), (1, 2, 0))
  for conv in p["convs"]:
    h = _ref_max_pool(_ref_relu(_ref_conv2d(h, conv["w"], conv["b"])), spec["pool"])
  h = h.reshape(-1)
  if spec["output_layer"]:
    return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)
  return h.reshape(spec.output.shape)
