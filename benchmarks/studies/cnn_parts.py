"""Each part of the paper's CNN step, forward and backward, under XLA (hx's kernels) or PyTorch.

    python benchmarks/studies/cnn_parts.py --framework jax|torch [--rows 564] [--repeats 15]
        [--threads 2]

hx's training epoch is compared with the authors' PyTorch code (`--authors`); `benchmarks/train_throughput.py`
times whole epochs. This times the parts of the count_digit candidate's CNN (the paper's: conv 5x5 1 -> 32,
2x2 max-pooling, conv 5x5 32 -> 64, 2x2 max-pooling) and its MLP's 1024 x 1024 layer on `--rows` images
(564: one training step's packed rows at the paper's sizes), each part alone, forward and the gradients
training needs:

- conv1: the output and the weight gradient (the input is the image: no input gradient);
- pool1, pool2: the output and the input gradient (hx's `_max_pool`, torch's `max_pool2d`);
- conv2: the output, the input gradient and the weight gradient;
- dense: a (rows, 1024) by (1024, 1024) product, the output and both gradients.

Each runs its forward and pulls a fixed random output gradient back through it (a vector-Jacobian
product: no loss function, so no elementwise work beyond the part's own), its inputs random, and is
timed as the median of `--repeats` calls after two warm-up calls; the line printed is JSON,
milliseconds per part and their sum. JAX uses the convolutions `import hx` requests
(`hx.cpu_convolutions`); torch (the optional `bench` extra, a benchmark peer only) runs its CPU kernels
(oneDNN) on NCHW tensors with `--threads` threads. Run the two frameworks in separate processes,
alternated, on an idle machine; `taskset -c 0,1` pins both to the same cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable

import numpy as np

PARTS = ("conv1", "pool1", "conv2", "pool2", "dense")


def median_ms(call: Callable[[], object], repeats: int) -> float:
  """The median wall time of `call()` in milliseconds over `repeats` calls, after two warm-up calls."""
  call()
  call()
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
  return statistics.median(times) * 1000


def inputs(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
  """Random float32 inputs of each part, NHWC images and activations, HWIO kernels."""
  rng = np.random.default_rng(seed)
  return {"x": rng.random((rows, 28, 28, 1), np.float32),
          "w1": rng.normal(0, 0.2, (5, 5, 1, 32)).astype(np.float32),
          "z1": rng.random((rows, 24, 24, 32), np.float32),
          "h1": rng.random((rows, 12, 12, 32), np.float32),
          "w2": rng.normal(0, 0.05, (5, 5, 32, 64)).astype(np.float32),
          "z2": rng.random((rows, 8, 8, 64), np.float32),
          # output gradients of conv1, pool1, conv2, pool2 and dense
          "g_conv1": rng.normal(size=(rows, 24, 24, 32)).astype(np.float32),
          "g_pool1": rng.normal(size=(rows, 12, 12, 32)).astype(np.float32),
          "g_conv2": rng.normal(size=(rows, 8, 8, 64)).astype(np.float32),
          "g_pool2": rng.normal(size=(rows, 4, 4, 64)).astype(np.float32),
          "g_dense": rng.normal(size=(rows, 1024)).astype(np.float32),
          "f": rng.random((rows, 1024), np.float32),
          "d": rng.normal(0, 0.03, (1024, 1024)).astype(np.float32)}


def jax_parts(a: dict[str, np.ndarray]) -> dict[str, Callable[[], object]]:
  """One call per part under JAX, jitted, with hx's convolution and pooling."""
  import jax
  import jax.numpy as jnp

  import hx  # noqa: F401  (requests XLA's own convolutions before the backend starts)
  from hx.compile.conv_pool import conv_valid as _conv_valid
  from hx.compile.conv_pool import max_pool as _max_pool

  v = {k: jnp.asarray(x) for k, x in a.items()}

  def pull(f, *args):
    """f's output and its inputs' gradients for a given output gradient (the last argument)."""
    *xs, g = args
    y, back = jax.vjp(f, *xs)
    return y, back(g)

  conv1 = jax.jit(lambda w, x, g: pull(lambda w: _conv_valid(x, w), w, g))
  pool = jax.jit(lambda z, g: pull(lambda z: _max_pool(z, 2), z, g))
  conv2 = jax.jit(lambda h, w, g: pull(_conv_valid, h, w, g))
  dense = jax.jit(lambda f, d, g: pull(jnp.matmul, f, d, g))
  done = jax.block_until_ready
  return {"conv1": lambda: done(conv1(v["w1"], v["x"], v["g_conv1"])),
          "pool1": lambda: done(pool(v["z1"], v["g_pool1"])),
          "conv2": lambda: done(conv2(v["h1"], v["w2"], v["g_conv2"])),
          "pool2": lambda: done(pool(v["z2"], v["g_pool2"])),
          "dense": lambda: done(dense(v["f"], v["d"], v["g_dense"]))}


def torch_parts(a: dict[str, np.ndarray], threads: int) -> dict[str, Callable[[], object]]:
  """One call per part under PyTorch's CPU kernels, NCHW as the authors' code holds images."""
  import torch
  import torch.nn.functional as F

  torch.set_num_threads(threads)

  def t(x, perm=None, grad=False):
    x = np.ascontiguousarray(x if perm is None else x.transpose(perm))
    return torch.from_numpy(x).requires_grad_(grad)

  nchw = (0, 3, 1, 2)
  x, w1 = t(a["x"], nchw), t(a["w1"], (3, 2, 0, 1), True)
  z1, z2 = t(a["z1"], nchw, True), t(a["z2"], nchw, True)
  h1, w2 = t(a["h1"], nchw, True), t(a["w2"], (3, 2, 0, 1), True)
  f, d = t(a["f"], grad=True), t(a["d"], grad=True)
  g = {k: t(a[k], None if k == "g_dense" else nchw) for k in a if k.startswith("g_")}

  def pull(y, xs, g):
    return y, torch.autograd.grad(y, xs, g)

  return {"conv1": lambda: pull(F.conv2d(x, w1), (w1,), g["g_conv1"]),
          "pool1": lambda: pull(F.max_pool2d(z1, 2), (z1,), g["g_pool1"]),
          "conv2": lambda: pull(F.conv2d(h1, w2), (h1, w2), g["g_conv2"]),
          "pool2": lambda: pull(F.max_pool2d(z2, 2), (z2,), g["g_pool2"]),
          "dense": lambda: pull(f @ d, (f, d), g["g_dense"])}


def main(argv: list[str] | None = None) -> dict[str, float]:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--framework", choices=("jax", "torch"), required=True)
  p.add_argument("--rows", type=int, default=564, help="images a call (564: one step's packed rows)")
  p.add_argument("--repeats", type=int, default=15)
  p.add_argument("--threads", type=int, default=2, help="torch's threads")
  args = p.parse_args(argv)
  if args.rows < 1 or args.repeats < 1 or args.threads < 1:
    p.error("--rows, --repeats and --threads must be at least 1")
  a = inputs(args.rows)
  calls = jax_parts(a) if args.framework == "jax" else torch_parts(a, args.threads)
  # To the microsecond: a part of a few rows can take less than 0.05 ms, which rounding to 0.1 made 0.
  out = {name: round(median_ms(calls[name], args.repeats), 3) for name in PARTS}
  out["sum"] = round(sum(out[name] for name in PARTS), 3)
  print(json.dumps({"framework": args.framework, "rows": args.rows, "ms": out}))
  return out


if __name__ == "__main__":
  main()
