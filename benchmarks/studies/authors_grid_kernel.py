"""The authors' grid kernel, reimplemented outside hx's compiler, on GS2 task 2 (a comparison, not hx).

    python benchmarks/studies/authors_grid_kernel.py --checkpoint FILE.npz --mnist PATH/mnist.pkl.gz
        [--channels 100] [--update authors|residual|replace] [--epochs 1] [--true costs|distances]
    python benchmarks/studies/authors_grid_kernel.py --exact ...

The authors' code trains GS2 task 2's relaxation with `NetGRAPHNew` (their `NeuralModules.py`): on the
grid of (cost, distance) cell states, a 3x3 convolution with its four corner weights held at zero (a
cell, its up, down, left and right neighbours, zero padding at the borders) to C channels, four 1x1
convolutions of C channels, ReLU after each, and a 1x1 convolution to one channel, the new distance; the
cost channel is passed through unchanged. This script builds exactly that in plain JAX (`--update
authors`), applies it 10 times (`conv_g^10`) to the cell states of GS2 task 2's grids, and trains it
as `benchmarks/studies/relaxation_learning.py` trains hx's program: batch 150 (a batch holds grids of one
size), Adam 1e-3, the MSE of both output channels (the cost channel's is constant under `--update
authors`), validation every 1% of the run's steps and the best point kept, the test grids scored once
with it. Its weights start as torch's defaults (uniform in +-1/sqrt(fan in)). `--update residual` and
`--update replace` predict both channels instead (hx's `graph_update` forms).

The cell states are the regressor's of a Tune checkpoint (`--checkpoint`, its best epoch, as
`relaxation_learning.py` reads them) or the true ones (`--exact`); `--true costs|distances` replaces one
component by the truth. hx's own form of this kernel is `ModuleConfig(graph_kernel="slots")`; this script
is the reference it is compared with (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  source = parser.add_mutually_exclusive_group(required=True)
  source.add_argument("--checkpoint", default=None, help="a Tune checkpoint of the GS2 regressor")
  source.add_argument("--exact", action="store_true", help="the true cell states (a diagnosis)")
  parser.add_argument("--true", choices=("costs", "distances"), default=None)
  parser.add_argument("--channels", type=int, default=100)
  parser.add_argument("--update", choices=("authors", "residual", "replace"), default="authors")
  parser.add_argument("--epochs", type=float, default=1.0)
  parser.add_argument("--seed", type=int, default=0, help="initialisation and batch order")
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)

  import jax
  import jax.numpy as jnp
  import optax

  from benchmarks.studies.grid_states import exact_states
  from benchmarks.studies.regressor_floor import regressor_from_checkpoint
  from hx.compile.memo import apply_prefix
  from hx.data import Sources, sequence
  from hx.presets import task_sizes

  seq = sequence("gs2", seed=0, sizes=task_sizes("paper"), sources=Sources(mnist=args.mnist))
  task = seq.build(1)
  truth = exact_states(task)
  if args.exact:
    states = truth
  else:
    library, function, _ = regressor_from_checkpoint(
        argparse.Namespace(checkpoint=args.checkpoint, program="compose(nn_1, nn_2)"), seq)
    names = tuple(function.split(","))
    states = np.asarray(apply_prefix(names, library.specs(), library.variables(), task.table))
  if args.true is not None:
    column = {"costs": 0, "distances": 1}[args.true]
    states = np.array(states, copy=True)
    states[:, column] = truth[:, column]
  table = jnp.asarray(states, jnp.float32)
  splits = {name: by_side(split) for name, split in (("train", task.train), ("val", task.val),
                                                     ("test", task.test))}
  c = args.channels
  cross = jnp.asarray([[0, 1, 0], [1, 1, 1], [0, 1, 0]], jnp.float32)[:, :, None, None]

  def init(key):
    keys = jax.random.split(key, 6)

    def dense(k, fan_in, shape):
      bound = 1 / np.sqrt(fan_in)
      k1, k2 = jax.random.split(k)
      return {"w": jax.random.uniform(k1, shape, minval=-bound, maxval=bound),
              "b": jax.random.uniform(k2, shape[-1:], minval=-bound, maxval=bound)}

    params = {"conv": dense(keys[0], 2 * 9, (3, 3, 2, c))}
    for i in range(4):
      params[f"l{i}"] = dense(keys[1 + i], c, (c, c))
    params["out"] = dense(keys[5], c, (c, 1 if args.update == "authors" else 2))
    if args.update == "residual":
      params["out"] = jax.tree.map(jnp.zeros_like, params["out"])
    return params

  def kernel(params, x):  # x (B, s, s, 2) -> (B, s, s, 2)
    h = jax.lax.conv_general_dilated(x, params["conv"]["w"] * cross, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(h + params["conv"]["b"])
    for i in range(4):
      h = jax.nn.relu(h @ params[f"l{i}"]["w"] + params[f"l{i}"]["b"])
    y = h @ params["out"]["w"] + params["out"]["b"]
    if args.update == "authors":
      return jnp.stack([x[..., 0], y[..., 0]], -1)
    return x + y if args.update == "residual" else y

  def predict(params, idx):  # idx (B, s*s) -> (B, s*s, 2)
    s = int(round(np.sqrt(idx.shape[1])))
    x = table[idx].reshape(idx.shape[0], s, s, 2)
    return jax.lax.fori_loop(0, 10, lambda _, v: kernel(params, v), x).reshape(idx.shape[0], s * s, 2)

  tx = optax.adam(1e-3)

  @jax.jit
  def step(params, opt, idx, t):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((predict(p, idx) - t) ** 2))(params)
    updates, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, updates), opt, loss

  @jax.jit
  def squared(params, idx, t):
    return jnp.sum((predict(params, idx)[..., 1] - t[..., 1]) ** 2)

  def rmse(params, split):
    total, n = 0.0, 0
    for idx, t in split.values():
      for lo in range(0, len(idx), 1000):
        total += float(squared(params, jnp.asarray(idx[lo:lo + 1000]), jnp.asarray(t[lo:lo + 1000])))
        n += len(idx[lo:lo + 1000]) * idx.shape[1]
    return float(np.sqrt(total / n))

  rng = np.random.default_rng(args.seed)
  params = init(jax.random.PRNGKey(args.seed))
  opt = tx.init(params)
  batches = []
  for s, (idx, _) in splits["train"].items():
    perm = rng.permutation(len(idx))
    batches += [(s, perm[i:i + 150]) for i in range(0, len(idx), 150)]
  order = rng.permutation(len(batches))
  total = int(round(len(batches) * args.epochs))
  every = max(1, total // 100)
  best_val, best, best_step, curve = np.inf, params, 0, []
  start = time.perf_counter()
  for k in range(total):
    s, b = batches[order[k % len(batches)]]
    idx, t = splits["train"][s]
    params, opt, _ = step(params, opt, jnp.asarray(idx[b]), jnp.asarray(t[b]))
    if (k + 1) % every == 0 or k + 1 == total:
      v = rmse(params, splits["val"])
      curve.append((k + 1, v))
      if v < best_val:
        best_val, best, best_step = v, params, k + 1
      if (k + 1) % (10 * every) == 0:
        print(f"step {k + 1}/{total}: val {v:.3f}, best {best_val:.3f} ({time.perf_counter() - start:.0f} s)",
              flush=True)
  test = rmse(best, splits["test"])
  seconds = time.perf_counter() - start
  print(f"best validation {best_val:.3f} at step {best_step} of {total}; test RMSE {test:.3f}; "
        f"{seconds:.0f} s")
  out = {"argv": sys.argv, "best_val": best_val, "best_step": best_step, "steps": total, "test_rmse": test,
         "seconds": seconds, "curve": curve}
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


def by_side(split) -> dict:
  """{side: (image indices int32 (grids, side*side), targets float32 (grids, side*side, 2))} of a grid
  split, its grids grouped by size (the padding dropped)."""
  idx = np.asarray(split.inputs.values).astype(np.int32)
  mask = np.asarray(split.inputs.layouts.mask, bool)[np.asarray(split.inputs.layout)]
  nodes = mask.sum(-1)
  out = {}
  for n in sorted(set(nodes.tolist())):
    side = int(round(np.sqrt(n)))
    if side * side != n:
      raise ValueError(f"a grid of {n} nodes is not square")
    rows = nodes == n
    out[side] = (idx[rows, :n], np.asarray(split.targets, np.float32)[rows, :n, :])
  return out


if __name__ == "__main__":
  main()
