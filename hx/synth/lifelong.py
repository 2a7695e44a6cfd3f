"""Lifelong learning over a task sequence: synthesize each task, grow the library, record, resume.

    run = hx.synth.run_sequence(hx.data.sequence("cs1", seed=0), "runs/cs1", hx.synth.SynthesisConfig(),
                                fractions=(0.1, 1.0))

For each task of the sequence, in order, and each training fraction, `hx.synthesize` runs with the
library as it stood before the task; then, as the paper does, the library is extended with the best
program's functions from the run on the full training set (from the largest fraction if 1.0 is not
among them). Every run's record (`record`) is written as JSON and the library (`hx.Library.save`) is
saved after each task, into the layout of `hx.synth.run_directory`, which also checks DIR/settings.json
on resume and seeds every synthesis (`training_seed`).

Started again on the same directory, `run_sequence` loads the library saved after the last finished
task and carries on from the next one. Tasks whose records are there but whose libraries are not (the
records of a reproduction are committed, its libraries are not: a fresh clone) are not searched again:
each one's library is rebuilt by training its recorded winner again, with the synthesis's seed and
settings (`hx.synth.synthesize.retrain_winner`): one candidate's training instead of the task's search,
and on the machine that ran the search the very library it saved.

A task interrupted midway is searched again from its start, but its candidates are saved as they train
(`hx.synthesize`'s `checkpoint_dir`): one file per candidate under DIR/checkpoints/TT_TASK/fraction_F/
and one small JSON file per finished candidate (`hx.synth.kept`) under DIR/candidates/, both removed
once task TT is saved, so the candidates it had finished give their results without training, and the
one it was training continues from its last file (saved about every two minutes of training), to the
results an uninterrupted run gives: an interruption costs minutes, not a task (the paper's regressions
train for 1,000 epochs, hours here). The checkpoints hold variables (megabytes) and stay on the machine; the
candidates' small files can travel (a committed reproduction keeps them): where the checkpoints are
gone, a finished candidate's kept outcome stands in for it, and only the winner is trained again, for
the library, so a task longer than one sitting still finishes over several. Every seed derives
from the run's seed, the task's position and the fraction, never from the clock or the sequence's name
(a candidate that calls the library is seeded with its functions named after the sequence's
`library_seed`, `hx.synth.space.with_library_seed`), and the library's
provenance time is the run's start time recorded in settings.json, so a resumed run ends with the same
programs, scores and library as an uninterrupted one. A directory holding a run with other settings is
refused with a message naming what differs.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from absl import logging

from hx.atomic import hold_directory
from hx.process_memory import process_memory
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.evolution import EvolutionConfig
from hx.synth.executors import check_executor, start_executor
from hx.synth.frontier import Frontier
from hx.synth.jsonfiles import jsonable, read_record, write_json
from hx.synth.run_directory import (
  RECORD_VERSION,
  SettingsMismatch,
  candidates_dir,
  checkpoint_dir,
  library_dir,
  open_settings,
  record_file,
  training_seed,
)
from hx.synth.strategies import Evolutionary, Strategy, check_strategy
from hx.synth.synthesize import synthesize

if TYPE_CHECKING:
  from hx.data.sequences import Sequence as TaskSequence
  from hx.data.task import Task
  from hx.jsonread import JsonValue
  from hx.synth.executors import Executor, ExecutorSettings
  from hx.synth.library import Library

__all__ = ["SequenceRun", "SettingsMismatch", "run_sequence", "record", "RECORD_VERSION"]

@dataclasses.dataclass(frozen=True, eq=False)
class SequenceRun:
  """What `run_sequence` returns.

  Attributes:
    directory: the result directory.
    records: one record (a JSON-ready dict, see `record`) per task and fraction, in order.
    library: the library after the last task.
    resumed_after: how many tasks were already finished in the directory when this call started.
  """
  directory: Path
  records: tuple[dict, ...]
  library: Library
  resumed_after: int

  def __repr__(self) -> str:
    # A summary: the records hold every candidate's learning curve.
    return (f"SequenceRun({self.directory}: {len(self.records)} records, {self.library!r}, resumed after "
            f"{self.resumed_after} tasks)")


def record(frontier: Frontier, task: Task, *, sequence: str, index: int, fraction: float, seed: int,
           library_before: Library) -> dict[str, JsonValue]:
  """The JSON record of one synthesis run: where it stands (sequence, task, fraction, seed, the data and
  whether it is a synthetic stand-in, the library before it) and the synthesis (`Frontier.to_json`:
  every candidate with its scores, times, epochs and learning curve, the search's counters, the library
  after it), read back by `Frontier.from_json`."""
  synthesis = frontier.to_json()
  return {
      "record_version": RECORD_VERSION,
      "sequence": sequence, "task_index": index, "task": task.name, "task_kind": task.spec.kind,
      "type": str(task.type), "metric": task.metric, "fraction": fraction, "seed": seed,
      "data": {"datasets": list(task.datasets), "synthetic": bool(task.synthetic),
               "train": int(len(task.train.targets)), "val": int(len(task.val.targets)),
               "test": int(len(task.test.targets))},
      "library_before": library_before.version, "library_functions_before": list(library_before.names),
      # This process's memory once the task is done: a long sequence's memory must stay bounded.
      "process_memory": process_memory(),
      **synthesis,
  }


def _settings(sequence: TaskSequence, config: SynthesisConfig, fractions: Sequence[float],
              budget: Budget | tuple[Budget, ...], tune_configs: dict) -> dict:
  """The run's settings.json: the sequence and what `config` decides with, `budget` (one, or one per
  task) and `tune_configs` (every kind's) resolved, in the fields runs have always written."""
  # A library seed other than the sequence's name (a user's sequence's) seeds other trainings: written
  # then only, so that the paper's runs, whose names were their library seeds, keep their settings.
  library_seed = _library_seed(sequence)
  return jsonable({
      "sequence": sequence.name, "seed": sequence.seed,
      **({} if library_seed is None or str(library_seed) == sequence.name
         else {"library_seed": library_seed}),
      "classes": dict(sequence.classes),
      "tasks": [t.name for t in sequence.tasks], "sources": sequence.sources.identity(),
      "sizes": sequence.sizes,
      "strategy": config.strategy.name, "fractions": list(fractions), "budget": budget,
      "space": config.space, "module_config": config.module_config, "tune_configs": tune_configs,
      "evolution": _evolution(config.strategy), "keep": config.keep})


def _evolution(strategy: Strategy) -> EvolutionConfig:
  """settings.json's "evolution": the evolutionary strategy's settings, and for another strategy the
  defaults (every run wrote them before strategies were objects, and its settings must still match)."""
  return strategy.config if isinstance(strategy, Evolutionary) else EvolutionConfig()


def _library_seed(sequence: TaskSequence) -> int | str | None:
  """The sequence's `library_seed` (`hx.data.Sequence`: what its library functions stand for in the seeds
  of the candidates that call them, in place of its name), or None for a sequence without one."""
  return getattr(sequence, "library_seed", None)


def _rebuilt_library(plan: _Plan, index: int, full: Task, library: Library, rec: dict) -> Library:
  """The library after `full`, the task `index` (0-based) of `plan`'s sequence, whose record at the
  largest fraction is `rec`: `library` with its winner trained again
  (`hx.synth.synthesize.retrain_winner`, with the synthesis's seed and `plan.config`), or `library`
  itself when nothing won."""
  from hx.synth.synthesize import retrain_winner

  entries = Frontier.from_json(rec).entries
  if not entries or entries[0].outcome.status != "trained":
    return library
  best = entries[0]
  seq, config, fraction = plan.sequence, plan.config, plan.fractions[-1]
  task = full if fraction == 1.0 else full.with_fraction(fraction)
  # As `synthesize` names them: the trained ones among the `keep` best after the winner.
  runners_up = [e.program for e in entries[1:config.keep] if e.outcome.status == "trained"]
  rebuilt, result = retrain_winner(task, library, best.program, best.fresh_types, config,
                                   seed=training_seed(seq.seed, index, fraction), sequence=seq.name,
                                   library_seed=_library_seed(seq), runners_up=runners_up, when=plan.started)
  logging.info("%s: library rebuilt from its record by training %s again: validation %.6g (recorded %.6g)",
               task.name, best.program, result.outcome.val_score, best.outcome.val_score)
  return rebuilt


def run_sequence(sequence: TaskSequence, directory: os.PathLike | str,
                 config: SynthesisConfig = SynthesisConfig(), *, fractions: Sequence[float] = (1.0,),
                 budgets: Sequence[Budget] | None = None, executor: Executor | ExecutorSettings | None = None,
                 progress: bool = False, stop_after: int | None = None,
                 checkpoints: bool = True) -> SequenceRun:
  """Runs HOUDINI over `sequence` (an `hx.data.Sequence`), writing into `directory` (see the module doc).

  Args:
    sequence: the task sequence, instantiated (its seed also seeds every synthesis).
    directory: the result directory (created; resumed if it holds this run).
    config: what every task's synthesis decides with (`hx.synth.SynthesisConfig`), taken as given: its
      `tune_configs` must hold every kind of the sequence's tasks, or be empty (each task's own,
      `SynthesisConfig.tune_config`); an evaluation makes it once (`hx.evaluation.EvalConfig.synthesis`).
    fractions: training fractions to run each task on, in (0, 1].
    budgets: one `Budget` per task of the sequence, in place of `config.budget` (the authors' budgets
      differ by task); None: `config.budget` for every task.
    executor: as for `hx.synthesize`; executor settings (`hx.synth.Processes(...)`, say) are started once
      for every task and closed at the end.
    progress: show progress bars.
    stop_after: stop after this many tasks are finished in all (for tests of resuming); None: all.
    checkpoints: save candidates as they train under DIR/checkpoints (module docstring); False: a task
      interrupted midway trains all its candidates again.

  Raises:
    SettingsMismatch: `directory` holds another run, or is not empty and holds no run.
    TypeError: `executor` is not an object of its kind (`hx.synthesize`).
    ValueError: a fraction outside (0, 1], `config.tune_configs` missing a kind of the sequence's tasks,
      or a budget the strategy does not take (`hx.synth.strategies.Strategy.check`).
  """
  fractions = tuple(sorted({float(f) for f in fractions}))
  if not fractions or any(not 0 < f <= 1 for f in fractions):
    raise ValueError(f"fractions must be in (0, 1], got {fractions}")
  budgets = tuple(budgets) if budgets is not None else (config.budget,) * len(sequence)
  if len(budgets) != len(sequence):
    raise ValueError(f"{len(budgets)} budgets for the {len(sequence)} tasks of {sequence.name}")
  for b in budgets:  # refused before settings.json is written
    check_strategy(config.strategy, b, config.space)
  check_executor(executor)
  budget = budgets[0] if all(b == budgets[0] for b in budgets) else budgets  # one: settings.json as before
  # Every kind's training settings, resolved once: settings.json names them, every synthesis takes them.
  config = dataclasses.replace(config, tune_configs=_tune_configs(sequence, config))
  directory = Path(directory)
  settings = _settings(sequence, config, fractions, budget, dict(config.tune_configs))
  with hold_directory(directory):  # one process writes a run directory; a refused one writes nothing
    started = open_settings(directory, settings)
    plan = _Plan(sequence, directory, started, config, fractions, budgets, progress, checkpoints)
    library, done = _saved_library(directory, len(sequence))
    records = [read_record(record_file(directory, i + 1, sequence.build(i).name, f))
               for i in range(done) for f in fractions]
    library, done = _rebuilt_from_records(plan, library, done, stop_after, records)
    if done:
      logging.info("%s: resuming after task %d of %d", directory, done, len(sequence))
    # One executor for every task: worker processes or a Ray connection start once, and end with the run
    # (a running executor given is its caller's to close; None: each synthesis's own, in this process).
    owned = None
    if executor is not None:
      executor, started = start_executor(executor)
      owned = executor if started else None
    try:
      last = len(sequence) if stop_after is None else min(stop_after, len(sequence))
      for i in range(done, last):
        library = _search_task(plan, i, library, executor, records)
    finally:
      if owned is not None:
        owned.close()
    return SequenceRun(directory, tuple(records), library, done)


@dataclasses.dataclass(frozen=True)
class _Plan:
  """A run's settings, resolved once by `run_sequence` (see its arguments); `started` is the run's start
  time from its settings file."""
  sequence: TaskSequence
  directory: Path
  started: str
  config: SynthesisConfig
  fractions: tuple[float, ...]
  budgets: tuple[Budget, ...]
  progress: bool
  checkpoints: bool


def _tune_configs(sequence: TaskSequence, config: SynthesisConfig) -> dict:
  """Task kind -> TuneConfig for every kind of `sequence`'s tasks, sorted by kind: `config`'s
  (`SynthesisConfig.spec_tune_config`: its table, or each task's own where it has none)."""
  specs = {t.kind: t for t in sequence.tasks}
  missing = sorted(set(specs) - set(dict(config.tune_configs))) if config.tune_configs else []
  if missing:
    raise ValueError(f"SynthesisConfig.tune_configs has no training settings for the task kind(s) "
                     f"{', '.join(missing)} of {sequence.name}")
  return {k: config.spec_tune_config(specs[k]) for k in sorted(specs)}


def _saved_library(directory: Path, tasks: int) -> tuple[Library, int]:
  """The library saved after the last task that has one, and that task's number (an empty library and 0
  if none)."""
  from hx.synth.library import Library, LibraryError

  for i in range(tasks, 0, -1):
    saved = library_dir(directory, i)
    if saved.exists():
      try:
        return Library.load(saved), i
      except LibraryError as err:  # damaged: the library before it and the task's records can redo it
        raise LibraryError(err.path, f"{err.problem}; delete {saved}, then run the same command again to "
                                     f"search task {i} anew") from None
  return Library(), 0


def _rebuilt_from_records(plan: _Plan, library: Library, done: int, stop_after: int | None,
                          records: list[dict]) -> tuple[Library, int]:
  """Tasks recorded after the last saved library (a run whose records were kept and its libraries not, as
  a committed reproduction on a fresh clone): their libraries rebuilt from the records, each by training
  its winner again instead of searching the task again; their records appended to `records`. Returns
  the library and the number of tasks finished."""
  seq = plan.sequence
  while done < len(seq) and (stop_after is None or done < stop_after):
    full = seq.build(done)
    paths = [record_file(plan.directory, done + 1, full.name, f) for f in plan.fractions]
    if not all(p.exists() for p in paths):
      break
    recorded = [read_record(p) for p in paths]
    library = _rebuilt_library(plan, done, full, library, recorded[-1])
    library.save(library_dir(plan.directory, done + 1))
    records.extend(recorded)
    done += 1
  return library, done


def _search_task(plan: _Plan, i: int, library: Library, executor: Executor | None, records: list[dict]
                 ) -> Library:
  """Synthesizes task `i` (0-based) at every fraction with `library`, writes and appends (to `records`)
  each record, saves the library extended from the largest fraction's run, and returns it."""
  seq, directory = plan.sequence, plan.directory
  full = seq.build(i)
  extend_from = None
  for f in plan.fractions:
    task = full if f == 1.0 else full.with_fraction(f)
    seed = training_seed(seq.seed, i, f)
    logging.info("%s task %d/%d %s, fraction %g", seq.name, i + 1, len(seq), task.name, f)
    saving = checkpoint_dir(directory, i + 1, full.name, f) if plan.checkpoints else None
    scores = candidates_dir(directory, i + 1, full.name, f) if plan.checkpoints else None
    result = synthesize(task, library, dataclasses.replace(plan.config, budget=plan.budgets[i]), seed=seed,
                        executor=executor, sequence=seq.name, library_seed=_library_seed(seq),
                        progress=plan.progress, when=plan.started, checkpoint_dir=saving,
                        scores_dir=scores)
    rec = record(result, task, sequence=seq.name, index=i + 1, fraction=f, seed=seed, library_before=library)
    write_json(record_file(directory, i + 1, full.name, f), rec)
    records.append(rec)
    extend_from = result  # fractions ascend: the last is the largest (1.0 when present)
  library = extend_from.library
  library.save(library_dir(directory, i + 1))
  # The task's records and library are saved: its candidates' files are no longer needed.
  shutil.rmtree(checkpoint_dir(directory, i + 1, full.name), ignore_errors=True)
  shutil.rmtree(candidates_dir(directory, i + 1, full.name), ignore_errors=True)
  return library
