"""Times the paper's CNN forward + backward on one training step's images, three ways, in one run (so the
ratios are fair on a shared machine):

  plain      the CNN written directly: conv -> bias -> ReLU -> reduce_window max-pool per block, one call on
             all images, JAX's own gradients (XLA's backward convolutions, select-and-scatter pooling).
  hx-before  hx until this benchmark's second section (commit deb6ad4): the same, with the weight gradient
             as one matmul of the k*k shifted input windows with the output gradient.
  hx         hx.compile.modules in training mode: the images in slices of CNN_TRAIN_ROWS, each block as
             ReLU(max-pool(conv) + bias), a compare-and-select pooling gradient, XLA's convolution gradients.

    python benchmarks/studies/cnn_gradient.py [--images 750] [--repeats 10] [--rounds 2]

750 images is one step of the count_digit candidate (150 lists padded to 5). Random images and weights;
the loss is a random projection of the 1024 features. Wall and CPU milliseconds are the median over the
repeats; minor page faults are per call.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from hx.compile import modules  # noqa: E402


def _conv(x, w):
  return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _pool(x):
  return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


@jax.custom_vjp
def _conv_windows_dw(x, w):
  """hx before: XLA's convolution, its input gradient, and the weight gradient as a matmul of windows."""
  return _conv(x, w)


def _conv_windows_dw_fwd(x, w):
  return _conv(x, w), (x, w)


def _conv_windows_dw_bwd(res, g):
  x, w = res
  k, _, c, o = w.shape
  oh, ow = g.shape[1], g.shape[2]
  windows = jnp.concatenate([x[:, i:i + oh, j:j + ow, :] for i in range(k) for j in range(k)], axis=-1)
  dw = jnp.einsum("rhwp,rhwo->po", windows, g).reshape(k, k, c, o)
  _, input_vjp = jax.vjp(lambda x_: _conv(x_, w), x)
  return input_vjp(g)[0], dw


_conv_windows_dw.defvjp(_conv_windows_dw_fwd, _conv_windows_dw_bwd)


def _plain_features(convs, x, conv=_conv):
  h = x
  for p in convs:
    h = _pool(jax.nn.relu(conv(h, p["w"]) + p["b"]))
  return h


def _hx_features(convs, x):
  parts = [modules._cnn_blocks(convs, x[i:j], 2) for i, j in modules._cnn_slices(x.shape[0])]
  return jnp.concatenate(parts, 0) if len(parts) > 1 else parts[0]


VARIANTS = {
  "plain": _plain_features,
  "hx-before": lambda convs, x: _plain_features(convs, x, _conv_windows_dw),
  "hx": _hx_features,
}


def _loss(features):
  def loss(convs, x, proj):
    return jnp.sum(features(convs, x) * proj)
  return jax.jit(jax.value_and_grad(loss))


def _time(f, args, repeats):
  jax.block_until_ready(f(*args))
  walls, cpus = [], []
  faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  for _ in range(repeats):
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(f(*args))
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
  faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / repeats
  return statistics.median(walls), statistics.median(cpus), faults


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--images", type=int, default=750)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--rounds", type=int, default=2, help="the variants are timed in turn this often")
  args = parser.parse_args()
  keys = jax.random.split(jax.random.PRNGKey(0), 6)
  x = jax.random.uniform(keys[0], (args.images, 28, 28, 1))
  convs = tuple({"w": jax.random.normal(keys[1 + 2 * i], shape) * scale,
                  "b": jax.random.normal(keys[2 + 2 * i], shape[-1:]) * 0.1}
                 for i, (shape, scale) in enumerate([((5, 5, 1, 32), 0.2), ((5, 5, 32, 64), 0.05)]))
  proj = jax.random.normal(keys[5], (args.images, 4, 4, 64))
  print(f"load average at start: {os.getloadavg()[0]:.2f}")
  fns, results = {}, {name: [] for name in VARIANTS}
  for name, features in VARIANTS.items():
    start = time.perf_counter()
    fns[name] = _loss(features).lower(convs, x, proj).compile()
    print(f"{name:10s} compiled in {time.perf_counter() - start:.2f} s")
  _, want = fns["plain"](convs, x, proj)
  for name, f in fns.items():
    _, got = f(convs, x, proj)
    err = max(float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
              for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
    print(f"{name:10s} gradients vs plain: max relative difference {err:.1e}")
  for _ in range(args.rounds):
    for name, f in fns.items():
      results[name].append(_time(f, (convs, x, proj), args.repeats))
      wall, cpu, faults = results[name][-1]
      print(f"{name:10s} forward+backward: {wall * 1e3:7.1f} ms wall, {cpu * 1e3:7.1f} ms CPU, "
            f"{faults:8.0f} page faults per call")
  best = {name: min(r[0] for r in rs) for name, rs in results.items()}
  print("speed-up of hx (best wall): " + ", ".join(
      f"{best[name] / best['hx']:.2f}x over {name}" for name in VARIANTS if name != "hx"))
  print(f"load average at end: {os.getloadavg()[0]:.2f}; device: {jax.devices()[0].platform}, "
        f"jax {jax.__version__}")


if __name__ == "__main__":
  main()
