"""A CNN block's training gradient through hx's CPU kernels against XLA's path, block by block.

    python benchmarks/studies/conv_pool_parts.py [--rows 150,564] [--repeats 21]

`hx.compile.conv_pool` runs a CNN block (conv 5x5, then 2x2 max-pooling) as two custom calls.
This times, for each block shape below and each `--rows`, the gradient of
sum(sin(block(x, w, b))) with respect to (x, w, b) and to (w, b) alone (the first block's input
is the image, which needs no gradient), jitted, through hx's kernels (`conv_pool`) and through XLA's path
(`relu(_max_pool(_conv_valid(x, w)) + b)`, what the CNN runs with HX_CPU_KERNELS=0): the median of `--repeats`
calls after two warm-up calls, in milliseconds, one JSON line per case. Random inputs (x uniform, w
normal), so the ReLU zeroes some of the windows, as in training.

Blocks: the paper's first (28x28x1 -> 32 channels) and second (12x12x32 -> 64), and the quick preset's
second (12x12x8 -> 16), whose input gradient hx leaves to XLA (`conv_pool.usable`). Run on an idle
machine; `taskset -c 0,1` pins it to the cores the training figures use.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

BLOCKS = {"paper_conv1": ((28, 28, 1), (5, 5, 1, 32)), "paper_conv2": ((12, 12, 32), (5, 5, 32, 64)),
          "quick_conv2": ((12, 12, 8), (5, 5, 8, 16))}


def _counts(text: str) -> list[int]:
  """Positive integers, comma-separated (an argparse type: a bad one is a usage error)."""
  try:
    values = [int(v) for v in text.split(",")]
  except ValueError:
    raise argparse.ArgumentTypeError(f"not comma-separated integers: {text!r}") from None
  if not values or min(values) < 1:
    raise argparse.ArgumentTypeError(f"counts must be positive: {text!r}")
  return values


def median_ms(call, args, repeats: int) -> float:
  import jax

  jax.block_until_ready(call(*args))
  jax.block_until_ready(call(*args))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(call(*args))
    times.append(time.perf_counter() - start)
  return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--rows", type=_counts, default="150,564", help="images per call, comma-separated")
  parser.add_argument("--repeats", type=_counts, default="21", help="timed calls per case")
  args = parser.parse_args(argv)
  if len(args.repeats) != 1:
    parser.error("--repeats: one count")

  import jax
  import jax.numpy as jnp

  import hx  # noqa: F401  (XLA's own convolutions, as hx trains)
  from hx.compile import conv_pool
  from hx.compile.conv_pool import conv_valid as _conv_valid
  from hx.compile.conv_pool import max_pool as _max_pool

  if not conv_pool.load_kernels():
    raise SystemExit("hx's CPU kernels cannot be built here (see the warning)")
  def xla_block(x, w, b):
    return jax.nn.relu(_max_pool(_conv_valid(x, w), 2) + b)

  rng = np.random.default_rng(0)
  lines = []
  repeats = args.repeats[0]
  for rows in args.rows:
    for name, (image, kernel) in BLOCKS.items():
      x = jnp.asarray(rng.random((rows, *image), np.float32))
      w = jnp.asarray(rng.normal(0, 0.2, kernel).astype(np.float32))
      b = jnp.full(kernel[-1:], 0.05, jnp.float32)
      for argnums in ((0, 1, 2), (1, 2)):
        def loss(block, *a):
          return jnp.sum(jnp.sin(block(*a)))

        ours = jax.jit(jax.grad(lambda *a: loss(conv_pool.conv_pool, *a), argnums))
        xla = jax.jit(jax.grad(lambda *a: loss(xla_block, *a), argnums))
        line = {"block": name, "rows": rows, "input_gradient": 0 in argnums,
                "xla_ms": round(median_ms(xla, (x, w, b), repeats), 2),
                "hx_kernels_ms": round(median_ms(ours, (x, w, b), repeats), 2)}
        line["xla / hx"] = round(line["xla_ms"] / line["hx_kernels_ms"], 2)
        print(json.dumps(line), flush=True)
        lines.append(line)
  return lines


if __name__ == "__main__":
  main()
