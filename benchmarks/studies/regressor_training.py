"""How fast the graph sequences' first task (a regression) learns, under one training variant per run.

    python benchmarks/studies/regressor_training.py [--sequence gs2] [--mnist PATH] [--program nn_1]
        [--epochs 3] [--batch_size 10] [--learning_rate 1e-3] [--cnn_dropout 0.5] [--mlp_dropout 0.5]
        [--bias_from_targets 1] [--cost_only] [--json out.json]

GS1 and GS2 start with regress_speed / regress_mnist: a cell image to its initial Bellman-Ford state
(cost 1-9, initial distance 1 for the start, 65 for every other cell; `hx.data.tasks`). The paper trains it
for 1,000 epochs, and the shortest-path task after it can be no better than its costs
(`benchmarks/studies/regressor_floor.py`). This script trains `--program` (default `nn_1`: one CNN with a
linear output layer, the search's first candidate) on the task at the paper's sizes with Tune (MSE, Adam, the
preset's batch of 10 unless overridden), prints the training loss (with dropout) and validation RMSE per
epoch, the test RMSE of the best epoch, and, for a single-module program, the cost and distance RMSE and
the predictions' mean and standard deviation per target on the training and test splits: whether the
model underfits (the training split as bad as the test split), and which output carries the error.

Variants (ours, for diagnosis; none is the paper's unless it says so): the dropout rates of the module
templates (`ModuleConfig`; 0.5 is torch's default, the authors' `nn.Dropout2d()` and `F.dropout`), the
learning rate and batch size, and `--bias_from_targets` (`TuneConfig.bias_from_targets`, on by default
since this script measured it): 1, the output layer's bias starts at the training targets' mean (about
(3.8, 56)); 0, at 0, as in the authors' code, so Adam, which moves each parameter about one learning rate
per step, spends thousands of steps walking the bias to the distance's scale. `--cost_only` (a
diagnosis, not the paper's task): the targets are the cell costs alone (the program's output
`Tensor<real>[1]`), to see how much of the cost's error comes from sharing one MSE with the distance.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def per_target(outputs: np.ndarray, split) -> dict:
  """Cost and distance RMSE, and the predictions' mean and std per distinct target, of one split."""
  idx = np.asarray(split.inputs).astype(np.int64)
  target = np.asarray(split.targets).astype(np.float32)
  pred = outputs[idx]
  out = {"cost_rmse": float(np.sqrt(np.mean((pred[:, 0] - target[:, 0]) ** 2))), "targets": []}
  if target.shape[1] > 1:
    out["distance_rmse"] = float(np.sqrt(np.mean((pred[:, 1] - target[:, 1]) ** 2)))
  for key in sorted(set(map(tuple, target.tolist()))):
    m = (target == key).all(1)
    out["targets"].append({"target": list(key), "images": int(m.sum()), "mean": pred[m].mean(0).tolist(),
                           "std": pred[m].std(0).tolist()})
  return out


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--sequence", default="gs2", choices=("gs1", "gs2"))
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--gtsrb", default=None)
  parser.add_argument("--program", default="nn_1")
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--batch_size", type=int, default=None)
  parser.add_argument("--learning_rate", type=float, default=None)
  parser.add_argument("--cnn_dropout", type=float, default=0.5)
  parser.add_argument("--mlp_dropout", type=float, default=0.5)
  parser.add_argument("--bias_from_targets", type=int, choices=(0, 1), default=1)
  parser.add_argument("--cost_only", action="store_true")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)

  from hx.compile import TuneData, compile_program, tune
  from hx.compile.memo import apply_prefix
  from hx.compile.modules import ModuleConfig
  from hx.data import Sources, sequence
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.presets import task_sizes, training_settings

  seq = sequence(args.sequence, seed=args.seed, sizes=task_sizes("paper"),
                 sources=Sources(mnist=args.mnist, gtsrb=args.gtsrb))
  task = seq.build(0)
  program = parse(args.program)
  task_type = task.spec.type
  if args.cost_only:
    from hx.lang.types import FunctionType, TensorType
    task_type = FunctionType(task.spec.type.arg, TensorType("real", (1,)))
    def cost(split):
      return split._replace(targets=np.asarray(split.targets, np.float32)[:, :1])
    task = dataclasses.replace(task, train=cost(task.train), val=cost(task.val), test=cost(task.test))
  typing = infer(program, {}, task_type)
  compiled = compile_program(program, default_type_variables(typing.fresh),
                             ModuleConfig(cnn_dropout=args.cnn_dropout, mlp_dropout=args.mlp_dropout))
  overrides = {k: v for k, v in (("batch_size", args.batch_size), ("learning_rate", args.learning_rate))
               if v is not None}
  overrides["bias_from_targets"] = bool(args.bias_from_targets)
  config = training_settings(task.spec.kind, "paper").tune_config(seed=args.seed, epochs=args.epochs,
                                                                  **overrides)
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  start = time.perf_counter()
  result = tune(compiled, (), data, task.objective, config)
  out = {"task": task.name, "program": args.program, "argv": sys.argv, "epochs": [],
         "config": {"batch_size": config.batch_size, "learning_rate": config.learning_rate,
                    "cnn_dropout": args.cnn_dropout, "mlp_dropout": args.mlp_dropout,
                    "bias_from_targets": config.bias_from_targets, "cost_only": args.cost_only},
         "test_rmse": result.test_score, "best_epoch": result.best_epoch,
         "wall_seconds": time.perf_counter() - start}
  print(f"{task.name}: {args.program}, {json.dumps(out['config'])}")
  for e in result.history:
    out["epochs"].append({"epoch": e.epoch, "train_loss": e.train_loss, "val_rmse": e.val_score})
    print(f"epoch {e.epoch:3d}  train loss {e.train_loss:8.3f}  val RMSE {e.val_score:.3f}  "
          f"({e.train_seconds:.0f} s)")
  print(f"best epoch {result.best_epoch}: test RMSE {result.test_score:.3f}")
  if len(compiled.fresh_slots) == 1:
    (name,) = compiled.fresh_slots
    variables = {name: {"params": result.variables["params"][0],
                        "batch_stats": result.variables["batch_stats"][0]}}
    outputs = np.asarray(apply_prefix((name,), compiled.specs, variables, task.table))
    for split_name, split in (("train", task.train), ("test", task.test)):
      out[split_name] = r = per_target(outputs, split)
      print(f"{split_name}: cost RMSE {r['cost_rmse']:.3f}" + (
          f", distance RMSE {r['distance_rmse']:.3f}" if "distance_rmse" in r else ""))
      for t in r["targets"]:
        print(f"  target {t['target']} ({t['images']} images): predicted {np.round(t['mean'], 2)} "
              f"± {np.round(t['std'], 2)}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


if __name__ == "__main__":
  main()
