"""Reproduces the paper's evaluation: every task sequence under the paper preset, as far as time allows.

    python benchmarks/reproduce.py --mnist PATH/mnist.pkl.gz [--sequences cs1,ss,...]
        [--seeds 0,1,2,3,4] [--fractions 0.02,...] [--time_budget SECONDS]
        [--output_dir benchmarks/reproduction]
        [--results results.md] [--module fold_step_norm=False --output_dir DIR]
    python benchmarks/reproduce.py --results_only [--output_dir DIR]
    python benchmarks/reproduce.py --mnist PATH/mnist.pkl.gz --sequences ls --seeds 0 --fractions 0.02
        --library_after 5

Each sequence runs through `hx.evaluation.run` with `preset="paper"` (the paper's sizes, modules,
training settings, fractions, five instantiations and candidate budgets; `hx.evaluation.config`) into
OUTPUT_DIR/<sequence>, with the default methods of the sequence (HOUDINI top-down and the baselines the
paper compares there). --seeds and --fractions run a part of it (the directory's settings then say so).
The run is resumable: the same command carries on where a previous one stopped, and --time_budget
(seconds, over all sequences) stops starting new work when it runs out. By default it writes into
`benchmarks/reproduction/<sequence>/`, whose records, settings and reports are committed: a clone
resumes from them (its settings name the data by content, so the same data at another path will do).
The trained networks, libraries and checkpoints stay out of git (`benchmarks/reproduction/.gitignore`,
which names the one exception, GS2 at 10%'s libraries and networks): a finished sequence needs none of
them, and one stopped midway continues on the machine that has them.
On a fresh clone a sequence stopped midway trains no recorded task again as a task: the libraries and
networks its later tasks need are rebuilt from the records (each recorded HOUDINI winner, and each
baseline network a later task transfers from, trained once again with its recorded seed).

Without --smallnorb and --gtsrb the toy and traffic-sign tasks run on rendered stand-ins; every result on
them is labelled synthetic. At the end (or when the time runs out) it writes, for every task recorded in
OUTPUT_DIR (by this command or an earlier one), the paper's top program and test score beside HOUDINI's
and the baselines' scores, the data each used and the time each took, to --results (markdown; default
OUTPUT_DIR/results.md); --results_only writes that file alone from the records, training nothing
(with no flag but --output_dir and --results).

--library_after K trains nothing but HOUDINI's library after task K of each sequence and instantiation
named, from the records (`hx.evaluation.rebuild_libraries`: each recorded winner of tasks 1..K trained
once more with its search's seed), into OUTPUT_DIR/<sequence>/<method>/seed_S/libraries/after_KK, which
`benchmarks/synthesis.py --library` takes for a study of task K+1; the other flags must name the run as it
was started (its fractions and methods), and it writes no record and no results file.

--methods and --strategies choose what runs (e.g. `--methods houdini --strategies evolutionary`, the
paper's evolutionary search); other methods than a directory's are another run, for a directory of its
own (`benchmarks/reproduction/evolutionary/<sequence>/`). --module changes module settings
(`hx.compile.ModuleConfig` fields, as `hx.bin.run --module`): a variant of the paper preset, refused
unless --output_dir names a directory of its own (`benchmarks/reproduction/variants/<name>/`), so that
nothing in the paper preset's folders comes from it.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hx.atomic import DirectoryInUse
from hx.baselines import NetworkError
from hx.bin.checks import module_overrides
from hx.bin.spellings import strategies_from_names
from hx.compile.checkpoint import CheckpointError
from hx.data import SEQUENCES, DataError, Sources
from hx.evaluation import (
  ConfigError,
  EvalConfig,
  default_methods,
  load_records,
  method_label,
  rebuild_libraries,
  run,
)
from hx.evaluation.paper import PAPER_GRAPH_ROWS, PAPER_GRAPH_TABLE, paper_top
from hx.evaluation.records import work_seconds
from hx.evaluation.report import score_text
from hx.evaluation.runner import check_directory
from hx.synth.library import LibraryError

if TYPE_CHECKING:
  from hx.synth.strategies import Strategy

_DEFAULT_OUTPUT = Path(__file__).resolve().parent / "reproduction"


def _floats(text: str | None) -> list[float] | None:
  return None if text is None else [float(x) for x in text.split(",") if x]


def _ints(text: str | None) -> list[int] | None:
  return None if text is None else [int(x) for x in text.split(",") if x]


def _cell(group: list[dict], method: str, metric: str) -> str:
  """The mean test score of `method` among the records `group`, over instances."""
  got = [r for r in group if r["method"] == method]
  scores = [r["ranked"][0]["test"] for r in got if r["ranked"] and r["ranked"][0]["status"] == "trained"]
  if not got:
    return "not run"
  if not scores:
    return "failed"
  text = score_text(metric, statistics.fmean(scores))
  return text + (f" (n={len(scores)})" if len(got) > 1 else "")


def _results(sequence: str, directory: Path) -> list[str]:
  """The markdown rows comparing the paper with this run, per task and training fraction."""
  records = load_records(directory) if directory.exists() else []
  if not records:
    return []
  methods = sorted({r["method"] for r in records}, key=lambda m: (not m.startswith("houdini"), m))
  baselines = [m for m in methods if not m.startswith("houdini")]
  lines = [f"### {sequence.upper()}", "",
           "| Task | fraction | data (train examples) | the paper (100% of its data) | HOUDINI's top "
           "program (instance 0) | HOUDINI | " + " | ".join(method_label(m) for m in baselines)
           + " | work seconds: HOUDINI / baselines |", "|---" * (6 + len(baselines) + 1) + "|"]
  keys = sorted({(r["task_index"], r["fraction"]) for r in records})
  for index, fraction in keys:
    group = [r for r in records if r["task_index"] == index and r["fraction"] == fraction]
    first = min(group, key=lambda r: (r["instance"], r["method"]))
    metric = first["metric"]
    tops = paper_top(sequence, index)
    paper = "; ".join(f"`{t.program}` {t.score}" for t in tops) or "no solution printed"
    graph = PAPER_GRAPH_TABLE.get(sequence)
    if graph:
      paper += " (table: " + ", ".join(f"{row} {vals[index - 1]:g}" for row, vals in graph.items()
                                       if row in PAPER_GRAPH_ROWS.values()) + ")"

    houdini = [r for r in group if r["method"].startswith("houdini")]
    program = "-"
    if houdini and houdini[0]["ranked"]:
      best = min(houdini, key=lambda r: r["instance"])["ranked"][0]
      program = f"`{best['named'] or best['program']}`"
    data = f"{', '.join(first['data']['datasets'])} ({first['data']['train']})"
    if first["data"]["synthetic"]:
      data = "**synthetic** " + data
    # Work seconds, not the recording call's wall: a task resumed across calls holds its earlier calls'
    # seconds in its candidates' (hx.evaluation.records.work_seconds).
    seconds_h = sum(map(work_seconds, houdini))
    seconds_b = sum(work_seconds(r) for r in group if r["method"] in baselines and not r.get("same_as"))
    lines.append(f"| {index}: {first['task']} | {100 * fraction:g}% | {data} | {paper} | {program} | "
                 f"{_cell(group, houdini[0]['method'], metric) if houdini else 'not run'} | "
                 + " | ".join(_cell(group, m, metric) for m in baselines)
                 + f" | {seconds_h:.0f} / {seconds_b:.0f} |")
  return lines + [""]


def _recorded_rows(directory: Path) -> list[str]:
  """`_results`' rows for every sequence folder in `directory` that holds records, in `hx.data.SEQUENCES`
  order ([] where none does). Every sequence recorded there, not only those the last command ran: several
  commands (and machines) fill one directory, and each rewrites the results file."""
  return [line for sequence in SEQUENCES for line in _results(sequence, directory / sequence)]


def _command_text(argv: list[str]) -> str:
  """The command line with data paths as what they hold (`hx.data.content_identity`): a committed file
  names no path outside the repository."""
  from hx.data.sources import content_identity

  out, data_flag = [], None
  for arg in argv:
    name, eq, value = arg.partition("=")
    if name in ("--mnist", "--smallnorb", "--gtsrb", "--output_dir"):
      if eq:
        arg = f"{name}={'DIR' if name == '--output_dir' else repr(content_identity(value))}"
      else:
        data_flag = name
    elif data_flag is not None:
      arg = "DIR" if data_flag == "--output_dir" else repr(content_identity(arg))
      data_flag = None
    out.append(arg)
  return " ".join(out)


def _methods(sequence: str, args: argparse.Namespace) -> list[str | Strategy]:
  """--methods (default: those the paper compares on `sequence`) with HOUDINI once per strategy of
  --strategies, as `EvalConfig.make`'s methods."""
  strategies = strategies_from_names(args.strategies.split(","))
  names = args.methods.split(",") if args.methods else default_methods(sequence.lower())
  return [x for m in names for x in (strategies if m == "houdini" else (m,))]


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--sequences", default=",".join(SEQUENCES))
  parser.add_argument("--seeds", default=None, help="instantiations (default: the paper preset's 0-4)")
  parser.add_argument("--fractions", default=None, help="training fractions (default: the paper's)")
  parser.add_argument("--tasks", type=int, default=None, help="only the first N tasks of each sequence")
  parser.add_argument("--time_budget", type=float, default=None, help="seconds, over all sequences")
  parser.add_argument("--output_dir", default=str(_DEFAULT_OUTPUT),
                      help="default: benchmarks/reproduction, whose records are committed")
  parser.add_argument("--results", default=None, help="markdown output (default OUTPUT_DIR/results.md)")
  parser.add_argument("--results_only", action="store_true",
                      help="only write the results file from the records in --output_dir; train nothing")
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--smallnorb", default=None)
  parser.add_argument("--gtsrb", default=None)
  parser.add_argument("--methods", default=None,
                      help="methods, of houdini, standalone, llt, pnn, standalone_with_fold (default: those "
                           "the paper compares on each sequence)")
  parser.add_argument("--strategies", default="topdown", help="HOUDINI's: topdown, evolutionary")
  parser.add_argument("--library_after", type=int, default=None,
                      help="only rebuild HOUDINI's library after this task from the records (see above)")
  parser.add_argument("--module", default=None,
                      help="ModuleConfig fields to change, as hx.bin.run's --module (e.g. "
                           "fold_step_norm=False): a variant, not the paper preset, so only with an "
                           "--output_dir of its own")
  args = parser.parse_args()
  if args.results_only:
    problem = _results_only_problem(args, parser)
    if problem:
      print(f"error: --results_only: {problem}", file=sys.stderr)
      return 1
    return _write_results(args, require_records=True)
  sources = Sources(mnist=args.mnist, smallnorb=args.smallnorb, gtsrb=args.gtsrb)
  out = Path(args.output_dir)
  sequences = [s for s in args.sequences.split(",") if s]
  try:
    modules = module_overrides(args.module.split(",") if args.module else None)
    if modules and out.resolve() == _DEFAULT_OUTPUT.resolve():
      raise ValueError(f"--module {args.module} is not the paper preset; give it an --output_dir of its own "
                       "(e.g. benchmarks/reproduction/variants/NAME)")
    configs = [EvalConfig.make(s, preset="paper", seeds=_ints(args.seeds), fractions=_floats(args.fractions),
                               tasks=args.tasks, sources=sources, module_overrides=modules,
                               methods=_methods(s, args))
               for s in sequences]
    for config in configs:
      # Every directory checked before anything trains: a mismatch is not found hours later. (Not for
      # --library_after, which must not start a run where there is none: it checks for itself.)
      if args.library_after is None:
        check_directory(config, out / config.sequence, write=False)
  except (ConfigError, ValueError) as err:
    print(f"error: {err}", file=sys.stderr)
    return 1
  if args.library_after is not None:
    return _rebuild_libraries(configs, out, args.library_after)
  start = time.monotonic()
  for config in configs:
    left = None if args.time_budget is None else args.time_budget - (time.monotonic() - start)
    if left is not None and left <= 0:
      print(f"{config.sequence}: not started, the time budget ran out")
      continue
    print(f"{config.sequence}: running into {out / config.sequence}", flush=True)
    try:
      outcome = run(config, out / config.sequence, time_budget=left, progress=lambda s: print(s, flush=True))
    except (ConfigError, DataError, CheckpointError, LibraryError, NetworkError, DirectoryInUse) as err:
      # A data file that cannot be read, a damaged file of an interrupted run (the message says which), or
      # another process running in the directory.
      print(f"error: {err}", file=sys.stderr)
      return 1
    print(f"{config.sequence}: {'finished' if outcome.finished else 'stopped: ' + str(outcome.stopped)}; "
          f"report {outcome.report}", flush=True)
  out.mkdir(parents=True, exist_ok=True)  # a run stopped before its first sequence still writes the file
  return _write_results(args)


def _rebuild_libraries(configs: list[EvalConfig], out: Path, after: int) -> int:
  """--library_after: each sequence's libraries after task `after`, rebuilt from its records; 1 (one line)
  where a sequence cannot be."""
  for config in configs:
    try:
      paths = rebuild_libraries(config, out / config.sequence, after)
    except (ConfigError, DataError, CheckpointError, LibraryError, DirectoryInUse) as err:
      print(f"error: {err}", file=sys.stderr)
      return 1
    for path in paths:
      print(f"{config.sequence}: library after task {after}: {path}", flush=True)
  return 0


# What --results_only reads: the others choose what trains, and it trains nothing.
_RESULTS_ONLY_FLAGS = ("output_dir", "results", "results_only")


def _results_only_problem(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
  """Why --results_only cannot run with these flags (a training flag given, or an --output_dir that is not
  a directory), or None."""
  given = [f"--{k}" for k, v in vars(args).items()
           if k not in _RESULTS_ONLY_FLAGS and v != parser.get_default(k)]
  if given:
    return f"it trains nothing and reads every recorded sequence: {', '.join(given)} cannot go with it"
  if not Path(args.output_dir).is_dir():
    return f"--output_dir {args.output_dir} is not a directory"
  return None


def _write_results(args: argparse.Namespace, require_records: bool = False) -> int:
  """Writes --results (default OUTPUT_DIR/results.md) from the records in --output_dir; 1 (one line) for
  an unreadable record, or, with `require_records`, a directory that holds no recorded sequence."""
  out = Path(args.output_dir)
  try:
    rows = _recorded_rows(out)
  except ValueError as err:  # a record that is not readable JSON, its path named
    print(f"error: {err}", file=sys.stderr)
    return 1
  if require_records and not rows:
    print(f"error: --results_only: --output_dir {out} holds no recorded sequence "
          "(<sequence>/<method>/seed_*/records/)", file=sys.stderr)
    return 1
  header = (f"Generated {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} by "
            f"`python benchmarks/reproduce.py {_command_text(sys.argv[1:])}` on {platform.machine()}, "
            f"Python {platform.python_version()}, from the records of every sequence in its output "
            "directory.")
  path = Path(args.results) if args.results else out / "results.md"
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text("\n".join([header, "", *rows]), "utf-8")
  print(f"results: {path}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
