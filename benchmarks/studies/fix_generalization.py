"""Does a graph kernel trained under fix(conv_g(k)) generalise to larger grids better than one trained
under the paper's conv_g^10(k)?

    python benchmarks/studies/fix_generalization.py [--seeds 0 1 2] [--epochs 15] [--json out.json]

Bellman-Ford in miniature, as in tests/compile/test_learning.py: node states (cost, distance so far),
costs 1..9 (the start's 1) scaled by 1/10, every node's initial distance the bound `--unknown` (scaled;
above every least cost of a 12x12 grid) but the start's, its cost; targets (cost, least cost) in
hx.data.grids' convention. The same fresh graph kernel `nn_k : List<Tensor<real>[2]> -> Tensor<real>[2]`
(graph_hidden 32, message 16, min/max/mean) is trained by Tune (MSE, Adam, batches of 32) on 3x3 and 4x4
grids under each program, validated on 4x4 grids, and scored on 4x4, 8x8 and 12x12 grids under both
programs: RMSE of the distance in cost units (unscaled) over real nodes, and the share of nodes whose
distance is right to within 0.5. "predict the mean" is the RMSE of the test distances' own mean.

Training under fix uses FixConfig's training horizon (`--train_horizon`, `--no_train_horizon`; by default
each step's loop is capped at a count drawn from 16 up to the cap). `--train_cost_scale S` multiplies each
training and validation grid's costs by its own factor from [1, S], so that 3x3 and 4x4 grids also hold
least costs as large as a 12x12 grid's (test grids keep costs 1..9): it separates the question fix
answers (how many relaxations a grid needs) from a kernel's extrapolation to distances it never saw.

Prints a Markdown table and, with --json, writes every figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time

import jax
import numpy as np

from hx.compile.fixpoint import FixConfig
from hx.compile.losses import Objective
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig
from hx.compile.tuning import TuneConfig, TuneData, tune
from hx.compile.values import GraphBatch, Split
from hx.data.grids import least_costs, neighbour_table
from hx.lang.parser import parse
from hx.lang.types import FunctionType, ListType, TensorType

SCALE = 10.0
STATE = TensorType("real", (2,))
PROGRAMS = {"conv_g^10": "repeat(10, conv_g(nn_k))", "fix": "fix(conv_g(nn_k))"}


def grids(rng: np.random.Generator, count: int, side: int, nodes: int, unknown: float,
          cost_scale: float = 1.0) -> Split:
  """count side x side grids padded to `nodes` nodes: states (cost, bound) -> (cost, least cost), scaled.

  With cost_scale > 1 each grid's costs 1..9 are multiplied by its own factor drawn uniformly from
  [1, cost_scale] (the start's cost stays its grid's smallest), so that small grids also hold the
  larger least costs of large ones."""
  costs = rng.integers(1, 10, size=(count, side, side)).astype(np.float32)
  costs[:, 0, 0] = 1.0
  if cost_scale != 1.0:
    costs *= rng.uniform(1.0, cost_scale, size=(count, 1, 1)).astype(np.float32)
  n = side * side
  values = np.zeros((count, nodes, 2), np.float32)
  targets = np.zeros((count, nodes, 2), np.float32)
  values[:, :n, 0] = targets[:, :n, 0] = costs.reshape(count, n) / SCALE
  values[:, :n, 1] = unknown
  values[:, 0, 1] = costs[:, 0, 0] / SCALE
  targets[:, :n, 1] = least_costs(costs).reshape(count, n) / SCALE
  nb, nm, m = neighbour_table(side, nodes)
  tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (count,) + a.shape))
  return Split(GraphBatch(values, tile(nb), tile(nm), tile(m)), targets)


def concat(*splits: Split) -> Split:
  return jax.tree.map(lambda *a: np.concatenate(a), *splits)


def score(compiled, variables, split: Split) -> dict:
  """RMSE (unscaled cost units) and share within 0.5 of the distance over real nodes; one jitted call."""
  y = jax.jit(lambda v, x: compiled.apply(v, (), x, train=False))(variables, split.inputs)
  mask = np.asarray(split.inputs.mask)
  got = np.asarray(y.values)[..., 1][mask] * SCALE
  want = split.targets[..., 1][mask] * SCALE
  err = got - want
  return {"rmse": float(np.sqrt(np.mean(err ** 2))), "exact": float(np.mean(np.abs(err) < 0.5)),
          "mean_baseline": float(np.std(want)), "finite": bool(np.all(np.isfinite(got)))}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
  parser.add_argument("--pretrain_epochs", type=int, default=10, help="under conv_g^10, for every kernel")
  parser.add_argument("--epochs", type=int, default=10, help="then under conv_g^10, or under fix")
  parser.add_argument("--scratch", action="store_true", help="also train under fix from the start")
  parser.add_argument("--no_finetune", action="store_true", help="skip conv_g^10, then fix")
  parser.add_argument("--train_grids", type=int, default=1500, help="per size (3x3 and 4x4)")
  parser.add_argument("--test_grids", type=int, default=300, help="per test size")
  parser.add_argument("--unknown", type=float, default=15.0, help="initial distance bound (scaled)")
  parser.add_argument("--train_cost_scale", type=float, default=1.0,
                      help="training and validation grids' costs times a per-grid factor from [1, this]")
  parser.add_argument("--max_iterations", type=int, default=100, help="fix's cap when scoring")
  parser.add_argument("--train_max_iterations", type=int, default=None,
                      help="fix's cap in training (default: --max_iterations)")
  parser.add_argument("--tolerance", type=float, default=FixConfig().tolerance,
                      help="fix's tolerance (on the scaled values)")
  parser.add_argument("--train_horizon", type=int, nargs=2, default=None, metavar=("LO", "HI"),
                      help="fix's training horizon (FixConfig.train_horizon: each step's cap from LO..HI); "
                           "default: FixConfig's")
  parser.add_argument("--no_train_horizon", action="store_true",
                      help="train fix to its cap every step (FixConfig.train_horizon=None)")
  parser.add_argument("--gradient", choices=("implicit", "unrolled"), default=FixConfig().gradient)
  parser.add_argument("--window", type=int, default=FixConfig().window,
                      help="fix's backpropagation window (unrolled)")
  parser.add_argument("--update", choices=("replace", "residual"), default="replace",
                      help="the graph kernel's node update (ModuleConfig.graph_update)")
  parser.add_argument("--aggregations", nargs="+", default=list(ModuleConfig().graph_aggregations),
                      help="the graph kernel's aggregations (ModuleConfig.graph_aggregations)")
  parser.add_argument("--json", type=str, default=None)
  args = parser.parse_args()

  fix = FixConfig(tolerance=args.tolerance, max_iterations=args.max_iterations, gradient=args.gradient,
                  window=args.window)
  config = ModuleConfig(graph_hidden=32, graph_message=16, graph_update=args.update,
                        graph_aggregations=tuple(args.aggregations), fix=fix)
  types = {"nn_k": FunctionType(ListType(STATE), STATE)}
  compiled = {name: compile_program(parse(text), types, config) for name, text in PROGRAMS.items()}
  horizon = FixConfig().train_horizon if args.train_horizon is None else tuple(args.train_horizon)
  horizon = None if args.no_train_horizon else horizon
  train_fix = dataclasses.replace(fix, max_iterations=args.train_max_iterations or args.max_iterations,
                                  train_horizon=horizon)
  training = {"conv_g^10": compiled["conv_g^10"],
              "fix": compile_program(parse(PROGRAMS["fix"]), types,
                                     dataclasses.replace(config, fix=train_fix))}
  objective = Objective("mse", "rmse", metric_component=1, per_element=True)
  results = []
  tune_config = lambda epochs, seed: TuneConfig(epochs=epochs, batch_size=32, learning_rate=1e-3, seed=seed)
  for seed in args.seeds:
    rng = np.random.default_rng(1000 + seed)
    scale = args.train_cost_scale
    train = concat(grids(rng, args.train_grids, 3, 16, args.unknown, scale),
                   grids(rng, args.train_grids, 4, 16, args.unknown, scale))
    val = grids(rng, 200, 4, 16, args.unknown, scale)
    tests = {side: grids(rng, args.test_grids, side, side * side, args.unknown) for side in (4, 8, 12)}
    data = TuneData(train, val)
    runs = []
    start = time.perf_counter()
    pre = tune(training["conv_g^10"], (), data, objective, tune_config(args.pretrain_epochs, seed))
    pre_seconds = time.perf_counter() - start
    runs.append(("conv_g^10", "conv_g^10", pre.variables, pre_seconds))
    if not args.no_finetune:
      runs.append(("conv_g^10, then fix", "fix", pre.variables, pre_seconds))
    if args.scratch:
      runs.append(("fix from scratch", "fix", None, 0.0))
    for name, program, init, seconds in runs:
      start = time.perf_counter()
      epochs = args.epochs if init is not None else args.pretrain_epochs + args.epochs
      result = tune(training[program], (), data, objective, tune_config(epochs, seed), variables=init)
      seconds += time.perf_counter() - start
      row = {"seed": seed, "trained_under": name, "train_seconds": round(seconds, 1), "failed": result.failed,
             "val_rmse": result.val_score * SCALE, "scores": {}}
      if result.variables is not None:
        for evaluated_under, other in compiled.items():
          for side, split in tests.items():
            row["scores"][f"{evaluated_under}@{side}x{side}"] = score(other, result.variables, split)
      results.append(row)
      print(json.dumps(row), flush=True)

  print()
  print("| trained under | evaluated under | 4x4 RMSE | 8x8 RMSE | 12x12 RMSE | 4x4 exact | 8x8 exact | "
        "12x12 exact |")
  print("|---|---|---|---|---|---|---|---|")
  for trained_under in dict.fromkeys(r["trained_under"] for r in results):
    rows = [r for r in results if r["trained_under"] == trained_under and r["scores"]]
    for evaluated_under in compiled:
      cells = []
      for what in ("rmse", "exact"):
        for side in (4, 8, 12):
          vals = [r["scores"][f"{evaluated_under}@{side}x{side}"][what] for r in rows]
          fmt = "{:.2f}" if what == "rmse" else "{:.0%}"
          cells.append(" / ".join(fmt.format(v) for v in vals))
      print(f"| {trained_under} | {evaluated_under} | " + " | ".join(cells) + " |")
  baselines = {side: results[0]["scores"].get(f"fix@{side}x{side}", {}).get("mean_baseline")
               for side in (4, 8, 12)}
  print(f"\npredict the mean (RMSE): {baselines}")
  print(f"seeds {args.seeds}; train seconds: "
        + ", ".join(f"{r['trained_under']}[{r['seed']}] {r['train_seconds']}" for r in results))
  print(f"jax {jax.__version__}, {platform.python_version()}, device {jax.devices()[0].platform}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"args": vars(args), "results": results, "baselines": baselines}, f, indent=1)


if __name__ == "__main__":
  main()
