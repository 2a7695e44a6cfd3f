"""The top-down search's cost along the long stream, on the libraries a run of it saved: the whole library
(the paper's search) against the part `hx.synth.prior` offers (`SearchSpace.library_tasks`).

    python benchmarks/stream_search.py                      # benchmarks/stream/length_100_seed_0
    python benchmarks/stream_search.py --run /tmp/s30 --length 30 --library_tasks 8
    python benchmarks/stream_search.py --probed_tasks 16    # probing only 16 (hx.synth.prior.probed_sources)

For each task i the run recorded (after the first), it loads HOUDINI's library saved after task i - 1
(`houdini_topdown/seed_<s>/libraries/after_<i-1>`), builds task i (`hx.data.long_stream`, the run's seed
and length), and times the search the run's configuration makes (its space and `--candidates`, the
quick preset's module sizes; `hx.synth.topdown.enumerate_programs`) twice: on the whole library, and on
`offered_library(library, task, K)` with the time of that choice (the probes' forward passes and fits)
included. Nothing is trained. Before each task JAX's caches are cleared (`hx.compile.release`), and the
persistent compilation cache is on, as in the run. One row per task: the library's functions, the offered
functions, both times and the expanded partial programs. A search still running after `--budget` seconds
is printed as `>budget`. At the end, the medians of both searches' seconds and expansions over tasks 10-20
against the last 10 tasks, over every task and per task kind (`summary_lines`): the whole library's
search grows where a hole takes many library functions (a count's mapped recognizer), not on every kind.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

import hx
from hx.compile.cache import ensure_compilation_cache
from hx.compile.release import release_between_tasks
from hx.data import Sources, stream_plan
from hx.presets import STREAM_PRESETS
from hx.synth.library import Library
from hx.synth.prior import offered_library
from hx.synth.topdown import EnumerationStats, enumerate_programs

_ROOT = Path(__file__).resolve().parent / "stream"


class _OverBudget(Exception):
  pass


def _alarm(signum, frame):
  raise _OverBudget()


def _search(task, library, config, candidates: int, budget: float) -> tuple[float | None, int]:
  """(seconds or None over `budget`, partial programs expanded) of one search."""
  stats = EnumerationStats()
  signal.signal(signal.SIGALRM, _alarm)
  signal.setitimer(signal.ITIMER_REAL, budget)
  start = time.perf_counter()
  try:
    for _ in enumerate_programs(task.type, library, space=config.space, config=config.module_config,
                                limit=candidates, stats=stats):
      pass
    return time.perf_counter() - start, stats.expanded
  except _OverBudget:
    return None, stats.expanded
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)


class _Row(NamedTuple):
  """One task's searches: its index and kind, the whole library's seconds (None: over the budget) and
  expanded partial programs, the bounded search's (the prior's choice included)."""
  index: int
  kind: str
  whole: float | None
  whole_expanded: int
  bounded: float | None
  bounded_expanded: int


def summary_lines(rows: list[_Row], budget: float, early: tuple[int, int] = (10, 20),
                  late: int = 10) -> list[str]:
  """Medians over tasks `early` (inclusive) against the last `late` tasks searched, of both searches'
  seconds and expanded partial programs: over every task, then per task kind (the whole library's
  search grows on some kinds only; a kind with no task in either window is left out). A median over a
  search past the budget is printed `>budget`."""
  last = rows[-1].index if rows else 0

  def median(values: list[float | None], digits: int) -> str:
    if not values:
      return "-"
    return f">{budget:g}" if None in values else f"{statistics.median(values):.{digits}f}"

  def line(what: str, chosen: list[_Row]) -> str:
    a = [r for r in chosen if early[0] <= r.index <= early[1]]
    b = [r for r in chosen if r.index > last - late]
    cols = []
    for name, get, digits in (("whole library s", lambda r: r.whole, 2),
                              ("expanded", lambda r: r.whole_expanded, 0),
                              ("bounded s", lambda r: r.bounded, 2),
                              ("expanded", lambda r: r.bounded_expanded, 0)):
      cols.append(f"{name} {median([get(r) for r in a], digits)} -> {median([get(r) for r in b], digits)}")
    return f"{what} ({len(a)} / {len(b)} tasks): " + "; ".join(cols)
  lines = [f"medians over tasks {early[0]}-{early[1]} -> tasks {max(last - late + 1, 1)}-{last}:",
           line("every task", rows)]
  for kind in sorted({r.kind for r in rows}):
    mine = [r for r in rows if r.kind == kind]
    if any(early[0] <= r.index <= early[1] or r.index > last - late for r in mine):
      lines.append(line(kind, mine))
  return lines


def _seconds(s: float | None, budget: float) -> str:
  return f">{budget:g}" if s is None else f"{s:.2f}"


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--run", default=None, help="the stream run's directory (default "
                      "benchmarks/stream/length_LENGTH_seed_SEED)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--length", type=int, default=100)
  parser.add_argument("--library_tasks", type=int, default=8, help="K of the bounded search")
  parser.add_argument("--probed_tasks", type=int, default=None, help="earlier tasks probed to choose the K "
                      "(hx.synth.prior.probed_sources; default: every one)")
  parser.add_argument("--candidates", type=int, default=4, help="candidates the search yields")
  parser.add_argument("--budget", type=float, default=300.0, help="seconds per search at most")
  args = parser.parse_args()
  if args.probed_tasks is not None and args.probed_tasks < args.library_tasks:
    print(f"error: --probed_tasks {args.probed_tasks}: the prior must probe at least the --library_tasks "
          f"{args.library_tasks} earlier tasks it offers", file=sys.stderr)
    return 1
  run = Path(args.run) if args.run else _ROOT / f"length_{args.length}_seed_{args.seed}"
  libraries = run / "houdini_topdown" / f"seed_{args.seed}" / "libraries"
  if not libraries.is_dir():
    print(f"error: {run} holds no HOUDINI libraries ({libraries} is missing)", file=sys.stderr)
    return 1
  ensure_compilation_cache()  # as training does: traces made again load their executables from disk
  small = STREAM_PRESETS["small"]
  stream = small.stream(args.seed, args.length, Sources())
  config = hx.EvalConfig.make(stream, methods=["houdini"], fractions=[1.0], seeds=[args.seed])
  tasks = stream.instance(args.seed)
  plan = stream_plan(args.seed, args.length, small.settings)
  print("task  functions  offered  whole_s  expanded  bounded_s  expanded")
  rows = []
  for i in range(2, len(tasks) + 1):
    saved = libraries / f"after_{i - 1:02d}"
    if not saved.exists():
      break
    library, task = Library.load(saved), tasks.build(i - 1)
    release_between_tasks()  # as the run does after each task: the probes' traces are made again
    whole, whole_expanded = _search(task, library, config, args.candidates, args.budget)
    start = time.perf_counter()
    offered = offered_library(library, task, args.library_tasks, probed=args.probed_tasks)
    choice = time.perf_counter() - start
    bounded, bounded_expanded = _search(task, offered, config, args.candidates, args.budget)
    bounded = None if bounded is None else bounded + choice
    rows.append(_Row(i, plan[i - 1].kind, whole, whole_expanded, bounded, bounded_expanded))
    print(f"{i:4d}  {len(library):9d}  {len(offered):7d}  {_seconds(whole, args.budget):>7}  "
          f"{whole_expanded:8d}  {_seconds(bounded, args.budget):>9}  {bounded_expanded:8d}", flush=True)
  for line in summary_lines(rows, args.budget):
    print(line)
  return 0


if __name__ == "__main__":
  sys.exit(main())
