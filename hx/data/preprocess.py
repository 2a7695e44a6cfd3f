"""Image preprocessing in pure NumPy: area resizing, channel expansion, normalization.

Images are channel-first float32 arrays (n, C, H, W). The paper normalizes every data set to zero mean and
unit standard deviation; here the statistics are per channel and come from the training pool only, so no
validation or test pixel leaks into them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["resize_area", "to_channels", "normalize", "channel_stats"]


def _area_weights(n_in: int, n_out: int) -> np.ndarray:
  """(n_out, n_in) float64 weights: output cell i averages the input cells it overlaps, by overlap length."""
  edges = np.arange(n_out + 1) * (n_in / n_out)
  lo, hi = edges[:-1, None], edges[1:, None]
  cells = np.arange(n_in)[None, :]
  overlap = np.clip(np.minimum(hi, cells + 1) - np.maximum(lo, cells), 0.0, None)
  return overlap / overlap.sum(axis=1, keepdims=True)


def resize_area(images: np.ndarray, height: int, width: int, chunk: int = 4096) -> np.ndarray:
  """Resizes by area averaging (a box filter: exact for integer factors, like OpenCV's INTER_AREA).

  Args:
    images: (n, C, H, W) or (C, H, W) numeric array.
    height, width: the output size.
    chunk: images resized per step, to bound temporary memory.

  Returns:
    float32 (n, C, height, width) (or (C, height, width)).
  """
  single = images.ndim == 3
  x = images[None] if single else images
  wy = _area_weights(x.shape[-2], height).astype(np.float32)
  wx = _area_weights(x.shape[-1], width).astype(np.float32)
  out = np.empty(x.shape[:-2] + (height, width), np.float32)
  for s in range(0, len(x), chunk):
    part = x[s:s + chunk].astype(np.float32, copy=False)
    out[s:s + chunk] = np.einsum("hH,ncHW,wW->nchw", wy, part, wx, optimize=True)
  return out[0] if single else out


def to_channels(images: np.ndarray, channels: int) -> np.ndarray:
  """(n, 1, H, W) grey images as (n, channels, H, W), the grey value repeated (a read-only broadcast view,
  no copy); images that already have `channels` channels are returned as they are."""
  if images.shape[1] == channels:
    return images
  if images.shape[1] != 1:
    raise ValueError(f"cannot turn {images.shape[1]}-channel images into {channels} channels")
  return np.broadcast_to(images, (images.shape[0], channels) + images.shape[2:])


def channel_stats(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Per-channel mean and standard deviation of (n, C, H, W) images, each float32 (C,)."""
  x = images.astype(np.float64, copy=False)
  mean = x.mean(axis=(0, 2, 3))
  std = x.std(axis=(0, 2, 3))
  return mean.astype(np.float32), np.maximum(std, 1e-6).astype(np.float32)


def normalize(images: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
  """float32 (n, C, H, W): (images - mean) / std with per-channel (C,) statistics."""
  m = np.asarray(mean, np.float32)[None, :, None, None]
  s = np.asarray(std, np.float32)[None, :, None, None]
  return ((images.astype(np.float32, copy=False) - m) / s).astype(np.float32, copy=False)
