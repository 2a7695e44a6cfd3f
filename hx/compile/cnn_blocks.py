"""How the CNN template's blocks (conv -> ReLU -> max-pool, `hx.compile.modules.cnn`) run: in training on a
CPU as hx's own kernels where they apply (`hx.compile.conv_pool`, chosen by `hx.compile.conv_pool_choice`),
else through XLA; and under YNNPACK's convolutions in slices of rows, a CPU workaround.

On XLA:CPU the CNN's cost is decided less by arithmetic than by how the convolutions are run
(benchmarks/RESULTS.md, "Training throughput"): XLA hands each convolution to YNNPACK, which runs one over
a few dozen images fast but one over a whole training step's images (150 lists x 5) several times
slower, single-threaded, through an unfused im2col copy into a fresh buffer (~40,000 page faults per
call). In training, the CNN therefore runs on slices of CNN_TRAIN_ROWS images, unrolled (never a rolled
loop: DESIGN.md), whose forward and backward passes XLA schedules independently. In inference nothing
is sliced: without residuals to keep, YNNPACK fuses convolution and pooling and stays fast. Under XLA's
own convolution kernels, which `import hx` requests (`hx.cpu_convolutions`), nothing is sliced: they take
a whole step's images at once, and slices would only add compile time. Nor are hx's own kernels
(`hx.compile.conv_pool`), which run each block in training on a CPU where they apply.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from hx.compile import conv_pool, conv_pool_choice
from hx.compile.conv_pool import conv_valid
from hx.cpu_convolutions import ynnpack_convolutions

__all__ = ["CNN_MAX_SLICES", "CNN_SLICE_WINDOW_FLOATS", "CNN_TRAIN_ROWS", "run_blocks"]


CNN_TRAIN_ROWS = 25  # images per slice in training mode, for the paper's CNN on 28x28 images
CNN_MAX_SLICES = 32  # at most this many slices (bounds compilation time); larger slices beyond
# What a slice bounds is the largest convolution's window buffer: the paper's CNN (second convolution:
# 8x8 outputs, 5x5x32 windows) on CNN_TRAIN_ROWS images. A smaller CNN gets more images per slice for the
# same buffer, so fewer slices to compile (the small CNNs of tests and quick runs).
CNN_SLICE_WINDOW_FLOATS = CNN_TRAIN_ROWS * 8 * 8 * 5 * 5 * 32


def _cnn_slice_rows(shape: tuple[int, ...], convs: tuple, pool: int) -> int:
  """Images per training slice for NHWC images of `shape` through `convs` (at least CNN_TRAIN_ROWS)."""
  _, height, width, _ = shape
  per_image = 1
  for p in convs:
    k, _, channels, _ = p["w"].shape
    height, width = height - k + 1, width - k + 1
    per_image = max(per_image, height * width * k * k * channels)
    height, width = height // pool, width // pool
  return max(CNN_TRAIN_ROWS, CNN_SLICE_WINDOW_FLOATS // per_image)


def _cnn_slices(r: int, rows: int = CNN_TRAIN_ROWS) -> list[tuple[int, int]]:
  """[start, stop) row ranges of the training-mode slices of a CNN call on r rows, about `rows` each
  (near-equal sizes, at most CNN_MAX_SLICES of them)."""
  n = max(1, min(CNN_MAX_SLICES, math.ceil(r / rows)))
  size = math.ceil(r / n)
  return [(i, min(i + size, r)) for i in range(0, r, size)]


def _cnn_blocks(convs: tuple, x: jax.Array, pool: int, train: bool = True) -> jax.Array:
  """The CNN's blocks on NHWC images x (R, H, W, C): per block conv -> ReLU -> max-pool.

  In training computed as relu(max_pool(conv(x)) + b), which equals max_pool(relu(conv(x) + b)) exactly
  (adding a bias and ReLU are monotone, also in floating point, so they commute with the max) and does
  the bias and ReLU on a quarter of the values; gradients agree too, except where rounding makes two
  values of a window tie after the bias but not before. In training on a CPU, where
  `conv_pool_choice.chosen` says so (the kernels can run the block and were timed faster on this CPU),
  the whole block runs as hx's own kernels (`hx.compile.conv_pool`: the same values and window positions
  to float32 rounding); elsewhere through XLA (`conv_pool.xla_block`). In inference the blocks are
  written the plain way, which XLA fuses into one pass (6% less time than the other order there).
  """
  h = x
  for i, p in enumerate(convs):
    if train and conv_pool_choice.chosen(h.shape, p["w"].shape, pool, h.dtype, input_gradient=i > 0):
      h = conv_pool.conv_pool(h, p["w"], p["b"])
    elif train:
      h = conv_pool.xla_block(h, p["w"], p["b"], pool)
    else:
      h = conv_pool.reduce_window_max(jax.nn.relu(conv_valid(h, p["w"]) + p["b"]), pool)
  return h


def _cnn_kernels(convs: tuple, shape: tuple[int, ...], pool: int) -> bool:
  """Whether every block of a training-mode CNN on NHWC images of `shape` runs hx's CPU kernels
  (`hx.compile.conv_pool`, where `conv_pool_choice.chosen`), which take a whole step's images at once."""
  for i, p in enumerate(convs):
    k, _, _, c_out = p["w"].shape
    if not conv_pool_choice.chosen(shape, p["w"].shape, pool, jnp.float32, input_gradient=i > 0):
      return False
    shape = (shape[0], (shape[1] - k + 1) // pool, (shape[2] - k + 1) // pool, c_out)
  return True


def run_blocks(convs: tuple, x: jax.Array, pool: int, train: bool) -> jax.Array:
  """The CNN template's blocks on NHWC images x (R, H, W, C) float32 -> (R, H', W', C') (`_cnn_blocks`),
  `convs` its conv layers ({"w": (k, k, C_in, C_out), "b": (C_out,)} each). In training under YNNPACK's
  convolutions, where not every block runs hx's kernels, the rows go in unrolled slices
  (`_cnn_slices`); otherwise in one call."""
  r = x.shape[0]
  # XLA's own convolutions and hx's kernels take a whole step at once; YNNPACK's want slices.
  sliced = train and ynnpack_convolutions() and not _cnn_kernels(convs, x.shape, pool)
  slices = _cnn_slices(r, _cnn_slice_rows(x.shape, convs, pool)) if sliced else [(0, r)]
  parts = [_cnn_blocks(convs, x[i:j], pool, train) for i, j in slices]
  return parts[0] if len(parts) == 1 else jnp.concatenate(parts, 0)
