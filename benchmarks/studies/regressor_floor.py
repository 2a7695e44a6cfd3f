"""How far a shortest-path program can get on top of a library regressor: exact Bellman-Ford on its costs.

    python benchmarks/studies/regressor_floor.py --library PATH [--function nn_gs2_1[,nn_gs2_2]]
        [--sequence gs2] [--task 2] [--mnist PATH/mnist.pkl.gz] [--preset paper] [--json out.json]
    python benchmarks/studies/regressor_floor.py --checkpoint FILE.npz [--program 'compose(nn_1, nn_2)'] ...

GS1 and GS2 learn a regressor first (regress_speed, regress_mnist: a cell image to its initial
Bellman-Ford state (cost, initial distance)), and the shortest-path task after it reuses it as
`map_g(lib.f)` under a learned relaxation (`repeat(10, conv_g(nn_k))`). Whatever that relaxation learns,
the costs it relaxes are the regressor's. This script applies the library function `--function` (inference
mode) to every image of the shortest-path task's table, reads the predicted cost of every cell of the
validation and test grids, and runs the exact relaxation (`hx.data.grids.least_costs`, start top left) on
those costs, raw and rounded to the nearest cell cost (1, 3, 5, 7, 9). Its distance RMSE is what an
exact relaxation would score on top of this regressor: a learned kernel can do better only by correcting
the regressor's costs from the cost alone. Prints, per split, the cost RMSE, the share of cells whose cost
is off by more than 1, the predicted costs per true cost, and the two distance RMSEs; and the cost RMSE
and share wrong when rounded on the images the training grids use against the images only validation and
test grids use (a regressor more accurate on the first trains a brittle relaxation).

That floor relaxes the regressor's costs from the true start; the program relaxes its whole states,
whose initial distances are predicted too (1 for the start, 65 for every other cell). So the script also
prints how the start's initial distance is read, and the distance RMSE of the exact kernel applied 10
times (the paper's `repeat(10, conv_g(...))`) and to convergence from the regressor's whole states, and
from the true states (the program's own limit). On GS2's regressors so far the start's distance, not the
costs, is what hurts the exact kernel; a learned kernel pays for the costs instead, so the costs-only
figure is the one to watch (benchmarks/RESULTS.md, "The floor revisited").

`--checkpoint` takes the regressor from a Tune checkpoint instead (`hx.compile.checkpoint`, e.g. the file
of a 1,000-epoch task-1 training that `benchmarks/synthesis.py --prefix_program` is still running): the
variables of its best epoch so far, for `--program` on the sequence's first task: how far a regressor
has come while it trains. With `--save_library PATH` that regressor is also saved as an `hx.Library`
(under the sequence's names, e.g. nn_gs2_1, nn_gs2_2), for `benchmarks/synthesis.py --library PATH`.

The library is one that `hx.Library.save` wrote (e.g. `benchmarks/synthesis.py --library_dir`'s
`gs2_seed0_paper_upto1_...`); the task is built as `benchmarks/synthesis.py` builds it (same sequence, seed,
preset and MNIST source), so the grids are those its synthesis scores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.studies.grid_states import CELL_COST_VALUES, exact_states, round_costs, split_rows  # noqa: E402

ROUNDS = 10  # the paper's program: repeat(10, conv_g(nn))


def split_floor(outputs: np.ndarray, split, side: int) -> dict:
  """The figures of one split of side x side grids (see the module docstring)."""
  from hx.data.grids import least_costs
  from hx.data.tasks import DISTANCE_BOUND, START_DISTANCE

  real = side * side
  idx = np.asarray(split.inputs.values).astype(np.int64)[:, :real]
  target = np.asarray(split.targets).astype(np.float32)[:, :real]
  cost = outputs[idx][..., 0]
  err = cost - target[..., 0]
  rounded = round_costs(cost)
  out = {"grids": len(idx), "cost_rmse": float(np.sqrt(np.mean(err ** 2))),
         "cost_off_by_more_than_1": float(np.mean(np.abs(err) > 1)),
         "cost_rounded_wrong": float(np.mean(rounded != target[..., 0])), "per_cost": {}}
  for c in CELL_COST_VALUES:
    p = cost[target[..., 0] == c]
    if p.size:
      out["per_cost"][c] = {"cells": int(p.size), "mean": float(p.mean()), "std": float(p.std())}
  # The predicted initial distance of the start (top-left, true START_DISTANCE) and of the other cells
  # (true DISTANCE_BOUND), with the share of other cells read below the bound by more than 10.
  distance = outputs[idx][..., 1]
  midway = (START_DISTANCE + DISTANCE_BOUND) / 2
  out["start_distance"] = {"mean": float(distance[:, 0].mean()), "std": float(distance[:, 0].std()),
                           "rmse": float(np.sqrt(np.mean((distance[:, 0] - START_DISTANCE) ** 2))),
                           "above_midway": float(np.mean(distance[:, 0] > midway)),
                           "off_by_more_than_2": float(np.mean(np.abs(distance[:, 0] - START_DISTANCE) > 2))}
  rest = distance[:, 1:]
  out["other_distance"] = {"mean": float(rest.mean()), "std": float(rest.std()),
                           "below_bound_by_more_than_10": float(np.mean(rest < DISTANCE_BOUND - 10))}
  for label, costs in (("raw", np.clip(cost, 1e-3, None)), ("rounded", rounded)):
    d = least_costs(costs.reshape(-1, side, side)).reshape(-1, real)
    out[f"distance_rmse_exact_relaxation_{label}"] = float(np.sqrt(np.mean((d - target[..., 1]) ** 2)))
  # The program's own structure: the exact kernel applied ROUNDS times from initial states, the true ones
  # (what the program can reach with an exact regressor) and the regressor's, its predicted initial
  # distance included (what the costs-only floor above leaves out: a start read as 3 instead of 1 shifts
  # its whole grid by 2; a cell read far below 65 is a second source).
  true_start = np.where(np.arange(real) == 0, START_DISTANCE, DISTANCE_BOUND).astype(np.float32)
  states = {"true_states": (target[..., 0], np.broadcast_to(true_start, target[..., 0].shape)),
            "regressor_states": (cost, outputs[idx][..., 1])}
  for label, (c, d0) in states.items():
    for rounds, name in ((ROUNDS, f"{ROUNDS}_rounds"), (None, "converged")):
      d = relax(c.reshape(-1, side, side), d0.reshape(-1, side, side), rounds).reshape(-1, real)
      out[f"distance_rmse_kernel_{name}_{label}"] = float(np.sqrt(np.mean((d - target[..., 1]) ** 2)))
  return out


def cost_accuracy(outputs: np.ndarray, truth: np.ndarray, rows: np.ndarray) -> dict:
  """How well the predicted costs outputs[rows, 0] match the true ones truth[rows, 0] (table rows, 2):
  their RMSE and the share wrong when rounded to the nearest cell cost."""
  rows = np.asarray(rows, np.int64)
  cost, true = np.asarray(outputs)[rows, 0], np.asarray(truth)[rows, 0]
  rounded = round_costs(cost)
  return {"images": int(len(rows)), "cost_rmse": float(np.sqrt(np.mean((cost - true) ** 2))),
          "cost_rounded_wrong": float(np.mean(rounded != true))}


def relax(costs: np.ndarray, distances: np.ndarray, rounds: int | None) -> np.ndarray:
  """The exact relaxation kernel (`hx.data.grids`' convention) applied to (g, n, n) grid states:
  d(u) <- min(d(u), c(u) + min over u's 4 neighbours v of d(v)), `rounds` times, or None: until nothing
  changes (at most 4 n^2 times). Returns float32 (g, n, n)."""
  c = np.asarray(costs, np.float64)
  d = np.asarray(distances, np.float64).copy()
  for _ in range(rounds if rounds is not None else 4 * c.shape[1] * c.shape[2]):
    near = np.full(d.shape, np.inf)
    near[:, 1:, :] = np.minimum(near[:, 1:, :], d[:, :-1, :])
    near[:, :-1, :] = np.minimum(near[:, :-1, :], d[:, 1:, :])
    near[:, :, 1:] = np.minimum(near[:, :, 1:], d[:, :, :-1])
    near[:, :, :-1] = np.minimum(near[:, :, :-1], d[:, :, 1:])
    new = np.minimum(d, c + near)
    if rounds is None and np.array_equal(new, d):
      break
    d = new
  return d.astype(np.float32)


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--library", default=None, help="a saved hx.Library")
  parser.add_argument("--checkpoint", default=None,
                      help="instead of --library: a Tune checkpoint of --program trained on the sequence's "
                           "first task (its best epoch so far)")
  parser.add_argument("--program", default="compose(nn_1, nn_2)",
                      help="with --checkpoint: the program it trains (the paper's regressor: MLP . CNN)")
  parser.add_argument("--function", default="nn_gs2_1",
                      help="the regressor's name in the library, or a composition of library functions as "
                      "NAME,NAME (compose order: the last is applied first, e.g. nn_gs2_1,nn_gs2_2 for "
                      "nn_gs2_1 . nn_gs2_2)")
  parser.add_argument("--sequence", default="gs2")
  parser.add_argument("--task", type=int, default=2,
                      help="the shortest-path task's index in the sequence (from 1)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--preset", default="paper")
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--json", default=None)
  parser.add_argument("--save_library", default=None,
                      help="with --checkpoint: also save its regressor as an hx.Library here (for "
                           "`benchmarks/synthesis.py --library`)")
  args = parser.parse_args(argv)

  from hx.compile.memo import apply_prefix
  from hx.data import Sources, sequence
  from hx.data.tasks import DISTANCE_BOUND
  from hx.presets import task_sizes
  from hx.synth import Library

  if (args.library is None) == (args.checkpoint is None):
    raise SystemExit("give --library or --checkpoint")
  sizes = task_sizes(args.preset)
  seq = sequence(args.sequence, seed=args.seed, sizes=sizes, sources=Sources(mnist=args.mnist))
  if args.save_library is not None and args.checkpoint is None:
    raise SystemExit("--save_library saves a checkpoint's regressor: give --checkpoint")
  if args.checkpoint is not None:
    library, args.function, where = regressor_from_checkpoint(args, seq)
    if args.save_library is not None:
      library.save(args.save_library)
      print(f"# saved as {args.save_library}: {', '.join(library.names)}")
  else:
    library, where = Library.load(args.library), args.library
  names = tuple(n.strip() for n in args.function.split(","))
  missing = [n for n in names if n not in library.names]
  if missing:
    raise SystemExit(f"{where} has no function {missing[0]!r}; it has {', '.join(library.names)}")
  task = seq.build(args.task - 1)
  if task.spec.kind not in ("shortest_path_mnist", "shortest_path_street"):
    raise SystemExit(f"task {args.task} of {args.sequence} is {task.name}, not a grid shortest-path task")
  # The regressor as synthesis applies a frozen prefix: inference mode, over the whole table.
  outputs = np.asarray(apply_prefix(names, library.specs(), library.variables(), task.table))
  out = {"library": where, "function": args.function, "task": task.name, "argv": sys.argv}
  for name, split, grids in (("val", task.val, sizes.grids_val), ("test", task.test, sizes.grids_test)):
    (side, _), = grids
    out[name] = r = split_floor(outputs, split, side)
    print(f"{name}: {r['grids']} {side}x{side} grids; cost RMSE {r['cost_rmse']:.3f}, off by more than "
          f"1: {100 * r['cost_off_by_more_than_1']:.1f}%, wrong when rounded: "
          f"{100 * r['cost_rounded_wrong']:.1f}%; exact relaxation's distance RMSE: raw costs "
          f"{r['distance_rmse_exact_relaxation_raw']:.3f}, rounded "
          f"{r['distance_rmse_exact_relaxation_rounded']:.3f}")
    print("  predicted cost per true cost: " + ", ".join(
        f"{c}: {v['mean']:.2f} ± {v['std']:.2f}" for c, v in r["per_cost"].items()))
    print(f"  predicted initial distance: start {r['start_distance']['mean']:.2f} ± "
          f"{r['start_distance']['std']:.2f} (RMSE {r['start_distance']['rmse']:.2f}; "
          f"{100 * r['start_distance']['off_by_more_than_2']:.2f}% off by more than 2, "
          f"{100 * r['start_distance']['above_midway']:.2f}% read nearer the bound), other cells "
          f"{r['other_distance']['mean']:.2f} ± {r['other_distance']['std']:.2f} "
          f"({100 * r['other_distance']['below_bound_by_more_than_10']:.2f}% below {DISTANCE_BOUND - 10:g})")
    print(f"  the exact kernel from the true states: {ROUNDS} rounds "
          f"{r[f'distance_rmse_kernel_{ROUNDS}_rounds_true_states']:.3f}, converged "
          f"{r['distance_rmse_kernel_converged_true_states']:.3f}; from the regressor's (cost and initial "
          f"distance): {ROUNDS} rounds {r[f'distance_rmse_kernel_{ROUNDS}_rounds_regressor_states']:.3f}, "
          f"converged {r['distance_rmse_kernel_converged_regressor_states']:.3f}")
  # The regressor on the images the training grids use against those only validation and test grids
  # use: a kernel that trains on more accurate costs than it is scored on is brittle (RESULTS.md).
  truth = exact_states(task)
  train_rows = split_rows(task.train)
  held_out = np.setdiff1d(np.union1d(split_rows(task.val), split_rows(task.test)), train_rows)
  out["images"] = {"training_grids": cost_accuracy(outputs, truth, train_rows),
                   "held_out_only": cost_accuracy(outputs, truth, held_out)}
  for name, r in out["images"].items():
    print(f"costs of the {name.replace('_', ' ')} images ({r['images']}): RMSE {r['cost_rmse']:.3f}, wrong "
          f"when rounded {100 * r['cost_rounded_wrong']:.2f}%")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


def regressor_from_checkpoint(args, seq):
  """(library, function, description) of the best variables so far in `args.checkpoint`."""
  from hx.compile import compile_program
  from hx.compile.checkpoint import describe_checkpoint, load_checkpoint
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.presets import training_settings
  from hx.synth import Library, Trained

  info = describe_checkpoint(args.checkpoint)
  spec = seq.tasks[0]
  program = parse(args.program)
  compiled = compile_program(program, default_type_variables(infer(program, {}, spec.type).fresh))
  config = training_settings(spec.kind, "paper").tune_config()
  run = load_checkpoint(args.checkpoint, info["key"], compiled, config)
  variables = getattr(run, "best_variables", None) if info["kind"] == "paused" else run.variables
  if variables is None:
    raise SystemExit(f"{args.checkpoint} holds no finished epoch yet")
  added = Library().add(Trained(compiled, variables), sequence=seq.name, task=spec.name)
  # The frozen program in compose order (the last applied first), as --function takes it.
  frozen = str(added.frozen)
  names = re.findall(r"lib\.(\w+)", frozen)
  if re.sub(r"lib\.\w+|compose|[(), ]", "", frozen):
    raise SystemExit(f"--program {args.program}: only compositions of fresh functions can be read back")
  names = ",".join(names)
  print(f"# {args.checkpoint}: {args.program}, {info['kind']} after {info['epochs']} epochs, best validation "
        f"{info['best_val']:.4g} at epoch {info['best_epoch']}")
  return added.library, names, f"{args.checkpoint} (best of {info['epochs']} epochs)"


if __name__ == "__main__":
  main()
