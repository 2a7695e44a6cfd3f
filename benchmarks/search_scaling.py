"""How the top-down search's time grows with the library (the search alone: nothing is trained).

    python benchmarks/search_scaling.py                       # 10, 20, 50, 100, 200 functions
    python benchmarks/search_scaling.py --sizes 10 20 --limits 4 --budget 60
    python benchmarks/search_scaling.py --profile count:100   # cProfile of one case, top 25 by own time

On a lifelong stream the library gains about one function per task. `library(n)` is a made-up library
of n functions of the types such a stream's tasks leave (`hx.data.streams`: CNN features from MNIST and
street-sign images, recognizers, classifiers and regressors on those features, list counters and
summers, graph-convolution kernels, fold steps), cycled in a fixed order, so a larger library is a
smaller one plus later functions. It is a mapping of names to types: the search builds each function's
module spec from its type (`hx.synth.space.Completer`), so no weights are needed.

Each case times `enumerate_programs(task, library, space=SearchSpace(order="cost"), limit=L)` for a
count, an image and a graph task and prints one row: functions, seconds, and the search's counters
(`hx.synth.topdown.EnumerationStats`). A case still running after `--budget` seconds is stopped and
printed as `>budget`.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import signal
import sys
import time

from hx.lang.types import Type, parse_type
from hx.synth.space import SearchSpace
from hx.synth.topdown import EnumerationStats, enumerate_programs

MNIST = "Tensor<real>[1][28][28]"
STREET = "Tensor<real>[3][28][28]"

# The types a stream's tasks leave in the library, in the order the cycle adds them (the CNNs and
# recognizers most often: nearly every task trains one).
LIBRARY_CYCLE = (
  f"{MNIST} -> Tensor<real>[1024]",
  "Tensor<real>[1024] -> Tensor<bool>[1]",
  "List<Tensor<bool>[1]> -> Tensor<real>[1]",
  f"{STREET} -> Tensor<real>[1024]",
  "Tensor<real>[1024] -> Tensor<real>[2]",
  "Tensor<real>[1024] -> Tensor<bool>[5]",
  "List<Tensor<real>[2]> -> Tensor<real>[2]",
  f"{MNIST} -> Tensor<real>[1024]",
  "Tensor<real>[1024] -> Tensor<bool>[1]",
  "Tensor<real>[1] -> Tensor<bool>[1] -> Tensor<real>[1]",
  "Tensor<real>[1024] -> Tensor<real>[1]",
  "List<Tensor<real>[1]> -> Tensor<real>[1]",
)

TASKS = {
  "count": f"List<{MNIST}> -> Tensor<real>[1]",
  "image": f"{MNIST} -> Tensor<bool>[1]",
  "graph": f"Graph<{STREET}> -> Graph<Tensor<real>[2]>",
}

SIZES = (10, 20, 50, 100, 200)
LIMITS = (4, 20)


def library(n: int) -> dict[str, Type]:
  """A library of `n` functions (name -> type), the first n of `LIBRARY_CYCLE` repeated; names
  `nn_t{i}_1` as a stream's task i would name its first new function."""
  if n < 0:
    raise ValueError(f"a library has a non-negative number of functions, got {n}")
  return {f"nn_t{i + 1}_1": parse_type(LIBRARY_CYCLE[i % len(LIBRARY_CYCLE)]) for i in range(n)}


class _OverBudget(Exception):
  pass


def _alarm(signum, frame):
  raise _OverBudget


def run_case(task: str, n: int, limit: int, budget: float | None = None) -> dict:
  """One enumeration: {task, functions, limit, seconds (None if over `budget`), candidates, and the
  search's counters}."""
  stats = EnumerationStats()
  space = SearchSpace(order="cost")
  out = {"task": task, "functions": n, "limit": limit}
  lib = library(n)
  if budget is not None:
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
  start = time.perf_counter()
  try:
    out["candidates"] = [str(c) for c in enumerate_programs(parse_type(TASKS[task]), lib, space=space,
                                                            limit=limit, stats=stats)]
    out["seconds"] = time.perf_counter() - start
  except _OverBudget:
    out["candidates"], out["seconds"] = None, None
  finally:
    if budget is not None:
      signal.setitimer(signal.ITIMER_REAL, 0)
  out.update(expanded=stats.expanded, proposed=stats.proposed, ill_typed=stats.ill_typed)
  return out


def _row(r: dict, budget: float | None) -> str:
  secs = f">{budget:g}" if r["seconds"] is None else f"{r['seconds']:.2f}"
  return (f"{r['task']:6} {r['limit']:5} {r['functions']:9} {secs:>9} {r['expanded']:9} {r['proposed']:10} "
          f"{r['ill_typed']:10}")


def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
  ap.add_argument("--limits", type=int, nargs="+", default=list(LIMITS))
  ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
  ap.add_argument("--budget", type=float, default=600.0, help="seconds per case before it is stopped")
  ap.add_argument("--profile", metavar="TASK:N", help="profile one case (limit 4) instead of the table")
  args = ap.parse_args(argv)
  if args.profile:
    task, n = args.profile.split(":")
    profiler = cProfile.Profile()
    profiler.enable()
    r = run_case(task, int(n), 4)
    profiler.disable()
    print(_row(r, None))
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0
  print(f"{'task':6} {'limit':>5} {'functions':>9} {'seconds':>9} {'expanded':>9} {'proposed':>10} "
        f"{'ill_typed':>10}")
  for task in args.tasks:
    for limit in args.limits:
      over = False
      for n in args.sizes:
        if over:  # a larger library is never faster: skip, do not wait out another budget
          print(f"{task:6} {limit:5} {n:9} {'skipped':>9}")
          continue
        r = run_case(task, n, limit, args.budget)
        over = r["seconds"] is None
        print(_row(r, args.budget), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
