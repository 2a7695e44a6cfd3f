"""Times the paper's CNN forward + backward on one training step's images, with XLA's own convolution
gradient and with hx's (`hx.compile.modules._conv_valid`, whose weight gradient is a matmul of shifted
windows), in one run so the ratio is fair.

    python benchmarks/cnn_gradient.py [--images 750] [--repeats 10]

750 images is one step of the count_digit candidate (150 lists padded to 5). Random images and weights.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
from jax import lax

from hx.compile.modules import _conv_valid, _max_pool


def _xla_conv(x, w):
  return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _net(conv):
  def loss(ws, x):
    h = x
    for w in ws:
      h = _max_pool(jax.nn.relu(conv(h, w)), 2)
    return jnp.sum(h ** 2)
  return jax.jit(jax.value_and_grad(loss))


def _time(f, args, repeats):
  jax.block_until_ready(f(*args))
  wall, cpu = time.perf_counter(), time.process_time()
  for _ in range(repeats):
    jax.block_until_ready(f(*args))
  return (time.perf_counter() - wall) / repeats, (time.process_time() - cpu) / repeats


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--images", type=int, default=750)
  parser.add_argument("--repeats", type=int, default=10)
  args = parser.parse_args()
  keys = jax.random.split(jax.random.PRNGKey(0), 3)
  x = jax.random.normal(keys[0], (args.images, 28, 28, 1))
  ws = (jax.random.normal(keys[1], (5, 5, 1, 32)) * 0.2, jax.random.normal(keys[2], (5, 5, 32, 64)) * 0.05)
  results = {}
  for name, conv in [("xla", _xla_conv), ("hx", _conv_valid)]:
    results[name] = _time(_net(conv), (ws, x), args.repeats)
    wall, cpu = results[name]
    print(f"{name:4s} forward+backward: {wall * 1e3:7.1f} ms wall, {cpu * 1e3:7.1f} ms CPU")
  print(f"speed-up (wall): {results['xla'][0] / results['hx'][0]:.2f}x")
  print(f"device: {jax.devices()[0].platform}, jax {jax.__version__}")


if __name__ == "__main__":
  main()
