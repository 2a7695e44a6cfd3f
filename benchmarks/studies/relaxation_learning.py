"""How fast GS2 task 2's learned relaxation learns, on a regressor's cell states or on exact ones.

    python benchmarks/studies/relaxation_learning.py --checkpoint FILE.npz [--program 'compose(nn_1, nn_2)']
        [--mnist PATH/mnist.pkl.gz] [--every 0.1] [--epochs 1] [--json out.json]
    python benchmarks/studies/relaxation_learning.py --library PATH [--function nn_gs2_1,nn_gs2_2] ...
    python benchmarks/studies/relaxation_learning.py --exact ...
    python benchmarks/studies/relaxation_learning.py --checkpoint FILE.npz --true distances ...

The paper's program for GS2 task 2 is `compose(repeat(10, conv_g(nn_1)), map_g(compose(lib.nn_gs2_1,
lib.nn_gs2_2)))`: the library regressor gives every cell its initial Bellman-Ford state (cost, initial
distance), which synthesis computes once per image of the task's table (the frozen prefix,
`hx.compile.memo`), and the fresh graph kernel `nn_1`, applied 10 times, must relax it to the least
distances. This script trains that kernel as a synthesis would (`hx.synth.executors.train_program`, the
task's paper settings: batch 150, Adam 1e-3, the synthesis seed of the program at `--seed`), pausing every
`--every` of an epoch to score the validation grids, and scores the test grids with the best variables at
the end. The cell states come from:

- `--checkpoint` (a Tune checkpoint of the regressor still training, its best epoch so far) or `--library`
  (a saved library): the regressor's predictions, as synthesis would use them;
- `--exact` (a diagnosis, not a program the search could find): every image's true state, from the grid
  targets (a cell's cost is its target's first component; an image placed at a grid's start, the top-left
  cell, has initial distance `START_DISTANCE`, every other `DISTANCE_BOUND`): how fast the kernel learns
  when its inputs are right, so how much of the error is the regressor's and how much the relaxation's;
- `--true costs` or `--true distances` with either of the first two: the regressor's states with one
  component (the cost, or the initial distance) replaced by the true one (a diagnosis): which of the
  regressor's errors the relaxation pays for.
- `--exact --cost_errors F [--misread_to adjacent] [--errors_in unseen]` (a diagnosis): the true states
  with a share F of the images' costs misread as another cell cost (any other, or an adjacent one),
  on every image or only on images no training grid uses (`unseen`: as a regressor that fit its training
  images would err, on the validation and test grids only). It also prints the exact relaxation's RMSE on
  the same misread costs (`regressor_floor.split_floor`): how much more than that floor a learned
  relaxation pays for wrong costs, and whether training on them changes that. `--cost_jitter S` adds
  Gaussian noise of standard deviation S to the same images' costs, after `--cost_scale A` multiplied
  them by A (a regressor reading high costs low: A < 1).

`--update`, `--aggregations`, `--kernel`, `--slot_hidden`, `--slot_layers` and `--keep` change the fresh
kernel's `ModuleConfig` (`graph_update`, `graph_aggregations`, `graph_kernel`: "pairs" or the authors'
"slots", `graph_slot_hidden`, `graph_slot_layers`, and `graph_keep`: 1 passes the cost through, as the
authors' kernel does). After training, the test error of the best variables is broken down twice on the
validation and test grids: between the grids whose start image the states give an initial distance
nearer the bound than the start's (`split_by_start`: a regressor that missed the start) and the rest,
and between the grids whose costs all round to the true ones and the rest, beside the exact relaxation
on the same costs (`split_by_costs`).

`--fix_horizon LO,HI` and `--fix_tolerance T` change `FixConfig.train_horizon` and `tolerance` for a
`--program` with `fix`; `--stop_after E` ends the curve after E epochs (no test score): a step cost along
training (the printed seconds; `taskset -c 0` for one thread).

`--val_every S` sets `TuneConfig.val_every`: validation is also scored every share S of the run's steps
within each call, and the best point kept (without `--every` pauses, one call: `--every` >= `--epochs`).

`benchmarks/studies/regressor_floor.py` gives the other bound: exact Bellman-Ford on the regressor's costs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.studies.grid_states import CELL_COST_VALUES, exact_states, round_costs, split_rows  # noqa: E402

PAPER_PROGRAM = "compose(repeat(10, conv_g(nn_1)), map_g(compose(lib.nn_gs2_1, lib.nn_gs2_2)))"


def misread_costs(states: np.ndarray, fraction: float, rows: np.ndarray, seed: int = 0,
                  to: str = "any") -> np.ndarray:
  """states (table rows, 2) with the cost of a share `fraction` of `rows` (indices into the table) replaced
  by another cell cost of `CELL_COST_VALUES` (1, 3, 5, 7, 9): with `to="any"` drawn uniformly among the
  other four, with `to="adjacent"` among the one or two next to it (a 5 read as 3 or 7). The initial
  distances are kept. The rows misread are drawn without replacement with `seed`."""
  if to not in ("any", "adjacent"):
    raise ValueError(f"misread costs to 'any' or 'adjacent' values, not {to!r}")
  values = np.asarray(CELL_COST_VALUES, np.float32)
  rng = np.random.default_rng(seed)
  rows = np.asarray(rows, np.int64)
  chosen = rng.choice(rows, size=int(round(fraction * len(rows))), replace=False)
  out = np.array(states, np.float32, copy=True)
  for r in chosen:
    i = int(np.flatnonzero(values == out[r, 0])[0])
    near = [j for j in (i - 1, i + 1) if 0 <= j < len(values)]
    others = np.delete(values, i) if to == "any" else values[near]
    out[r, 0] = rng.choice(others)
  return out


def jitter_costs(states: np.ndarray, sigma: float, rows: np.ndarray, seed: int = 0) -> np.ndarray:
  """states (table rows, 2) with Gaussian noise of standard deviation `sigma` added to the costs of `rows`
  (as a regressor's continuous outputs scatter around the true cost); the initial distances are kept."""
  out = np.array(states, np.float32, copy=True)
  rows = np.asarray(rows, np.int64)
  out[rows, 0] += np.random.default_rng(seed).normal(0.0, sigma, len(rows)).astype(np.float32)
  return out


def scale_costs(states: np.ndarray, scale: float, rows: np.ndarray) -> np.ndarray:
  """states (table rows, 2) with the costs of `rows` multiplied by `scale` (a regressor that reads high
  costs low, as GS2's does: 9 as 8.65, 7 as 6.77); the initial distances are kept."""
  out = np.array(states, np.float32, copy=True)
  out[np.asarray(rows, np.int64), 0] *= np.float32(scale)
  return out


class _FixedTable:
  """A stand-in for `hx.compile.memo.PrefixTables` whose prefix table is given."""

  def __init__(self, table):
    self._table = table

  def table(self, library, names, table):
    return self._table


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  source = parser.add_mutually_exclusive_group(required=True)
  source.add_argument("--checkpoint", default=None, help="a Tune checkpoint of --regressor on task 1")
  source.add_argument("--library", default=None, help="a saved hx.Library holding the regressor")
  source.add_argument("--exact", action="store_true", help="the true cell states (a diagnosis)")
  parser.add_argument("--true", choices=("costs", "distances"), default=None,
                      help="with --checkpoint or --library: replace this component of the regressor's "
                      "states by the true one (a diagnosis)")
  parser.add_argument("--cost_errors", type=float, default=0.0,
                      help="with --exact: the share of images whose cost is misread (a diagnosis)")
  parser.add_argument("--cost_jitter", type=float, default=0.0,
                      help="with --exact: Gaussian noise of this deviation on the same images' costs")
  parser.add_argument("--cost_scale", type=float, default=1.0,
                      help="with --exact: multiply the same images' costs by this (biased low: < 1)")
  parser.add_argument("--misread_to", choices=("any", "adjacent"), default="any",
                      help="with --cost_errors: a misread cost is any other cell cost, or an adjacent one")
  parser.add_argument("--errors_in", choices=("all", "unseen"), default="all",
                      help="change any image's cost, or only those of images no training grid uses")
  parser.add_argument("--regressor", default="compose(nn_1, nn_2)",
                      help="with --checkpoint: the program it trains (the paper's regressor: MLP . CNN)")
  parser.add_argument("--function", default="nn_gs2_1,nn_gs2_2",
                      help="with --library: the regressor's functions in compose order (regressor_floor.py)")
  parser.add_argument("--program", default=None,
                      help="the program trained (default: the paper's, over the regressor's functions)")
  parser.add_argument("--every", type=float, default=0.1,
                      help="pause and score validation this often (epochs)")
  parser.add_argument("--val_every", type=float, default=None,
                      help="TuneConfig.val_every: also score validation every this share of the run's steps "
                           "within each call (no pause: the best point is kept, its curve not printed)")
  parser.add_argument("--epochs", type=int, default=1)
  parser.add_argument("--update", choices=("replace", "residual"), default=None,
                      help="the graph kernel's node update (ModuleConfig.graph_update; default: "
                           "ModuleConfig's)")
  parser.add_argument("--kernel", choices=("pairs", "slots"), default=None,
                      help="the graph kernel's template (ModuleConfig.graph_kernel; default: ModuleConfig's)")
  parser.add_argument("--slot_hidden", type=int, default=None,
                      help="the slot kernel's width (ModuleConfig.graph_slot_hidden; default: the "
                           "authors' 100)")
  parser.add_argument("--slot_layers", type=int, default=None,
                      help="the slot kernel's hidden layers (ModuleConfig.graph_slot_layers; default: the "
                           "authors' 5)")
  parser.add_argument("--keep", type=int, default=None,
                      help="components of the node state the kernel passes through (ModuleConfig.graph_keep; "
                           "the authors' grid kernel: 1, the cost; default: ModuleConfig's 0)")
  parser.add_argument("--aggregations", nargs="+", default=None,
                      help="the graph kernel's aggregations (ModuleConfig.graph_aggregations; default: "
                           "ModuleConfig's)")
  parser.add_argument("--fix_horizon", default=None,
                      help="LO,HI: FixConfig.train_horizon (default FixConfig's, 16 to max_iterations)")
  parser.add_argument("--fix_tolerance", type=float, default=None,
                      help="FixConfig.tolerance (default FixConfig's, 0.01)")
  parser.add_argument("--stop_after", type=float, default=None,
                      help="stop the curve after this many epochs, without a test score")
  parser.add_argument("--seed", type=int, default=0, help="the sequence's seed (its data)")
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  if args.exact and args.true is not None:
    parser.error("--true replaces part of a regressor's states: give --checkpoint or --library with it")
  if (args.cost_errors or args.cost_jitter or args.cost_scale != 1.0) and not args.exact:
    parser.error("--cost_errors, --cost_jitter and --cost_scale change the true states: give --exact")
  if not 0.0 <= args.cost_errors <= 1.0:
    parser.error(f"--cost_errors {args.cost_errors} is outside [0, 1]")
  from benchmarks.synthesis import fix_config, module_config
  from hx.presets import task_sizes

  fix = fix_config(args.fix_horizon, args.fix_tolerance)

  import jax.numpy as jnp

  from benchmarks.studies.regressor_floor import regressor_from_checkpoint
  from hx.compile.memo import apply_prefix, frozen_prefix
  from hx.data import Sources, sequence
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.presets import training_settings
  from hx.synth import Library, task_context
  from hx.synth.executors import job_seed, train_program
  from hx.synth.space import Candidate, equivalence_key

  sizes = task_sizes("paper")
  seq = sequence("gs2", seed=args.seed, sizes=sizes, sources=Sources(mnist=args.mnist))
  if args.checkpoint is not None:
    ns = argparse.Namespace(checkpoint=args.checkpoint, program=args.regressor)
    library, function, where = regressor_from_checkpoint(ns, seq)
  elif args.library is not None:
    library, function, where = Library.load(args.library), args.function, args.library
  else:
    # The exact states stand in for a regressor: the program still names two library functions of the
    # regressor's types, so a library of that shape is needed for typing; any will do, as its outputs are
    # replaced (an untrained MLP . CNN).
    library, function, where = untrained_regressor(seq), "nn_gs2_1,nn_gs2_2", "exact cell states"
  names = tuple(n.strip() for n in function.split(","))
  program_text = args.program or (
      "compose(repeat(10, conv_g(nn_1)), map_g(" + _compose(names) + "))")
  task = seq.build(1)
  program = parse(program_text)
  prefix_names, _ = frozen_prefix(program)
  if prefix_names != names:
    raise SystemExit(f"{program_text}: its frozen prefix is {prefix_names}, not the regressor {names}")
  typing = infer(program, library.types(), task.spec.type)
  fresh = default_type_variables(typing.fresh)
  config = training_settings(task.spec.kind, "paper").tune_config(
      epochs=args.epochs, val_every=args.val_every)
  modules = module_config(graph_update=args.update, graph_aggregations=args.aggregations,
                          graph_kernel=args.kernel, graph_slot_hidden=args.slot_hidden,
                          graph_slot_layers=args.slot_layers, graph_keep=args.keep, fix=fix)
  context = task_context(task, library, tune_config=config, module_config=modules)
  floors = {}
  if args.exact:
    states = exact_states(task)
    if args.cost_errors or args.cost_jitter or args.cost_scale != 1.0:
      from benchmarks.studies.regressor_floor import split_floor

      held_out, train_rows = np.union1d(split_rows(task.val), split_rows(task.test)), split_rows(task.train)
      if args.errors_in == "all":
        rows = np.union1d(held_out, train_rows)
      else:
        rows = np.setdiff1d(held_out, train_rows)
      states = misread_costs(states, args.cost_errors, rows, seed=args.seed, to=args.misread_to)
      states = scale_costs(states, args.cost_scale, rows)
      states = jitter_costs(states, args.cost_jitter, rows, seed=args.seed + 1)
      where += (f", {args.cost_errors:.1%} of the costs of {args.errors_in} images misread as "
                f"{args.misread_to} other value, scaled by {args.cost_scale}, jitter {args.cost_jitter}")
      for name, split in (("val", task.val), ("test", task.test)):
        side = int(round(np.sqrt(np.asarray(split.inputs.layouts.mask).sum(-1).max())))
        f = split_floor(states, split, side)
        floors[name] = {"cost_rounded_wrong": f["cost_rounded_wrong"],
                        "exact_relaxation_rmse": f["distance_rmse_exact_relaxation_raw"]}
        print(f"# {name}: {f['cost_rounded_wrong']:.2%} of cells' costs wrong when rounded; exact relaxation "
              f"on these costs: RMSE {f['distance_rmse_exact_relaxation_raw']:.3f}")
    table = jnp.asarray(states)
  else:
    table = apply_prefix(names, library.specs(), library.variables(), task.table)
    if args.true is not None:
      # One component of the regressor's states replaced by the truth (a diagnosis): which of its errors
      # the relaxation pays for.
      column = {"costs": 0, "distances": 1}[args.true]
      table = table.at[:, column].set(jnp.asarray(exact_states(task))[:, column])
      where += f", with the true {args.true}"
  prefixes = _FixedTable(table)
  # The seed a synthesis seeded with --seed trains this program with.
  seed = job_seed(args.seed, Candidate(program, tuple(fresh.items()), 0.0, equivalence_key(program, fresh)))
  out = {"states": where, "program": program_text, "seed": seed, "argv": sys.argv, "every": args.every,
         "batch_size": config.batch_size, "learning_rate": config.learning_rate, "curve": [],
         "exact_relaxation_floors": floors, "graph_update": modules.graph_update,
         "graph_aggregations": list(modules.graph_aggregations),
         "graph_kernel": modules.graph_kernel, "graph_slot_hidden": modules.graph_slot_hidden,
         "graph_slot_layers": modules.graph_slot_layers, "graph_keep": modules.graph_keep}
  print(f"# {where}; {program_text}; seed {seed}; batch {config.batch_size}; validation every {args.every}; "
        f"kernel {modules.graph_kernel}, {modules.graph_update}, "
        + (f"width {modules.graph_slot_hidden}, {modules.graph_slot_layers} layers"
           if modules.graph_kernel == "slots" else "/".join(modules.graph_aggregations))
        + f", keep {modules.graph_keep}")
  start = time.perf_counter()
  resume = None
  steps = 0
  while True:
    steps += 1
    until = round(min(args.epochs, steps * args.every), 6)
    final = until >= args.epochs
    compiled, r = train_program(program, fresh, context, seed=seed, prefixes=prefixes,
                                until=None if final else until, resume=resume)
    if r.failed:
      raise SystemExit(f"training failed: {r.failed}")
    wall = time.perf_counter() - start
    score = r.history[-1].val_score if final else r.state.score
    out["curve"].append({"epochs": until, "val_rmse": float(score), "seconds": wall})
    print(f"epoch {until:5.2f}  val RMSE {score:.3f}  ({wall:.0f} s)", flush=True)
    if final:
      break
    if args.stop_after is not None and until >= args.stop_after - 1e-9:
      out["seconds"] = time.perf_counter() - start
      return _written(out, args.json)
    resume = r.state
  out.update(test_rmse=float(r.test_score), best_val=float(r.val_score), best_epoch=r.best_epoch,
             seconds=time.perf_counter() - start)
  print(f"best validation {r.val_score:.3f}; test RMSE {r.test_score:.3f}; {out['seconds']:.0f} s")
  from hx.compile import make_frozen

  frozen = make_frozen(compiled, library.variables())
  truth = exact_states(task)
  out["by_start"] = {}
  for name, split in (("val", task.val), ("test", task.test)):
    errors = grid_errors(compiled, r.variables, frozen, table, split)
    out["by_start"][name] = b = split_by_start(errors, np.asarray(table), split)
    c = split_by_costs(errors, np.asarray(table), truth, split)
    out["by_costs"] = {**out.get("by_costs", {}), name: c}
    print(f"{name}: {c['clean_share']:.1%} of grids have every cost right when rounded: learned RMSE "
          f"{c['rmse_clean']:.3f} there (exact relaxation on the same costs {c['exact_clean']:.3f}), "
          f"{c['rmse_rest']:.3f} on the others (exact {c['exact_rest']:.3f})")
    print(f"{name}: RMSE {b['rmse']:.3f}; the {b['start_misread']} grids ({b['start_misread_share']:.2%}) "
          f"whose start the states read nearer the bound than START_DISTANCE give "
          f"{b['misread_mse_share']:.1%} of the squared error (RMSE {b['rmse_misread']:.3f}); the rest RMSE "
          f"{b['rmse_rest']:.3f}")
  return _written(out, args.json)


def _written(out: dict, path: str | None) -> dict:
  """`out`, after writing it to `path` as JSON if a path is given."""
  if path:
    with open(path, "w") as f:
      json.dump(out, f, indent=1)
  return out


def grid_errors(compiled, variables, frozen, table, split, chunk: int = 500) -> np.ndarray:
  """(grids, nodes) float32: the squared error of the program's distance (output component 1) at every
  real node of every grid of `split` (0 at padding), inference mode, the cell states gathered from
  `table` (rows, 2) as Tune does."""
  import jax

  from hx.compile.values import gather, take

  run = jax.jit(lambda v, f, t, x: compiled.apply(v, f, gather(t, x), train=False))
  n = int(np.asarray(split.targets).shape[0])
  out = []
  for lo in range(0, n, chunk):
    idx = np.arange(lo, min(n, lo + chunk))
    x = take(split.inputs, idx)
    y = run(variables, frozen, table, x)
    y = np.asarray(y.values if hasattr(y, "values") else y)[..., 1]
    t = np.asarray(split.targets, np.float32)[idx][..., 1]
    out.append(np.where(np.asarray(x.mask, bool), (y - t) ** 2, 0.0).astype(np.float32))
  return np.concatenate(out)


def split_by_start(errors: np.ndarray, states: np.ndarray, split) -> dict:
  """The distance RMSE of `errors` (grids, nodes) from `grid_errors`, split between the grids whose start
  (node 0) the cell `states` (table rows, 2) give an initial distance nearer `DISTANCE_BOUND` than
  `START_DISTANCE` (a regressor that missed the start: no source in its grid) and the others."""
  from hx.data.tasks import DISTANCE_BOUND, START_DISTANCE

  mask = np.asarray(split.inputs.layouts.mask, bool)[np.asarray(split.inputs.layout)]
  start = np.asarray(split.inputs.values).astype(np.int64)[:, 0]
  missed = states[start, 1] > (START_DISTANCE + DISTANCE_BOUND) / 2
  rmse = lambda rows: float(np.sqrt(errors[rows].sum() / max(mask[rows].sum(), 1)))
  return {"rmse": rmse(slice(None)), "start_misread": int(missed.sum()),
          "start_misread_share": float(missed.mean()),
          "misread_mse_share": float(errors[missed].sum() / max(errors.sum(), 1e-30)),
          "rmse_misread": rmse(missed) if missed.any() else float("nan"), "rmse_rest": rmse(~missed)}


def split_by_costs(errors: np.ndarray, states: np.ndarray, truth: np.ndarray, split) -> dict:
  """The distance RMSE of `errors` (grids, nodes) from `grid_errors` on the grids of `split` whose every
  real cell's cost in `states` (table rows, 2) rounds to its true one in `truth` (rows, 2) (`clean`), and
  on the others, beside the exact relaxation's on the same costs from the true start (the floor,
  `regressor_floor.split_floor`'s raw figure) on each part. The split's grids must all be n x n."""
  from hx.data.grids import least_costs

  mask = np.asarray(split.inputs.layouts.mask, bool)[np.asarray(split.inputs.layout)]
  real = int(mask.sum(-1).max())
  side = int(round(np.sqrt(real)))
  if side * side != real or not mask[:, :real].all():
    sizes = sorted(set(mask.sum(-1).tolist()))
    raise ValueError(f"split_by_costs needs grids of one size n x n; this split has {sizes} real nodes")
  idx = np.asarray(split.inputs.values).astype(np.int64)[:, :real]
  cost = states[idx][..., 0]
  clean = np.all(round_costs(cost) == truth[idx][..., 0], axis=-1)
  target = np.asarray(split.targets, np.float32)[:, :real, 1]
  exact = (least_costs(np.clip(cost, 1e-3, None).reshape(-1, side, side)).reshape(len(idx), -1) - target) ** 2
  rmse = lambda e, rows: float(np.sqrt(e[rows].mean())) if rows.any() else float("nan")
  learned = errors[:, :real]
  return {"clean_share": float(clean.mean()), "rmse_clean": rmse(learned, clean),
          "rmse_rest": rmse(learned, ~clean), "exact_clean": rmse(exact, clean),
          "exact_rest": rmse(exact, ~clean)}


def _compose(names: tuple[str, ...]) -> str:
  """`compose(lib.a, compose(lib.b, lib.c))` for names a, b, c (compose order)."""
  text = f"lib.{names[-1]}"
  for n in reversed(names[:-1]):
    text = f"compose(lib.{n}, {text})"
  return text


def untrained_regressor(seq):
  """A library of an untrained MLP . CNN regressor under GS2's names (typing only; see main)."""
  import jax

  from hx.compile import compile_program
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.synth import Library, Trained

  spec = seq.tasks[0]
  program = parse("compose(nn_1, nn_2)")
  compiled = compile_program(program, default_type_variables(infer(program, {}, spec.type).fresh))
  return Library().add(Trained(compiled, compiled.init(jax.random.PRNGKey(0))), sequence=seq.name,
                       task=spec.name).library


if __name__ == "__main__":
  main()
