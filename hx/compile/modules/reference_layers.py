"""The float64 NumPy layers of the reference interpreter (`hx.compile.reference`: one example at a time,
inference mode), from which each template builds its reference. They share no code with the JAX layers
(`hx.compile.modules.layers`), so that the tests comparing the two check the JAX side against the
definitions. Arrays are float64: a vector (n,), an image (H, W, C), a dense layer's {"w": (n_in, n_out),
"b": (n_out,)}."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
  import jax


def _ref_dense(p: dict, x: np.ndarray) -> np.ndarray:
  return x @ p["w"] + p["b"]


def _ref_relu(x: np.ndarray) -> np.ndarray:
  return np.maximum(x, 0.0)


def _ref_sigmoid(x: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-x))


def _ref_activate(y: np.ndarray, activation: str) -> np.ndarray:
  if activation == "sigmoid":
    return _ref_sigmoid(y)
  if activation == "softmax":
    e = np.exp(y - y.max())
    return e / e.sum()
  return y


def _ref_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Valid convolution of one HWC image with an HWIO kernel, by loops over output positions."""
  k = w.shape[0]
  h_out, w_out = x.shape[0] - k + 1, x.shape[1] - k + 1
  out = np.empty((h_out, w_out, w.shape[3]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = np.tensordot(x[i:i + k, j:j + k], w, axes=3) + b
  return out


def _ref_max_pool(x: np.ndarray, k: int) -> np.ndarray:
  h_out, w_out = x.shape[0] // k, x.shape[1] // k
  out = np.empty((h_out, w_out, x.shape[2]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = x[i * k:(i + 1) * k, j * k:(j + 1) * k].max(axis=(0, 1))
  return out


def _ref_vector(a: jax.typing.ArrayLike) -> np.ndarray:
  return np.asarray(a, np.float64).reshape(-1)
