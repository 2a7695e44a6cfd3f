"""Running an evaluation: every method on every task of a sequence, per training fraction and instance.

    outcome = run(EvalConfig.make("cs1", preset="quick"), "runs/cs1-quick", progress=print)

For each instantiation of the sequence (`EvalConfig.seeds`), task by task, each method runs on the task
at every training fraction: HOUDINI through `hx.synth.run_sequence` (which grows its library from the
largest fraction's run, as the paper does), the baselines through `hx.baselines`. Tasks go one at a
time across methods, so a run stopped by its time budget has every method on the same tasks.

What the baselines carry from task to task is the network each trained on the largest fraction (saved
in `<method>/seed_S/networks/after_TT/`): low-level transfer starts from the earlier networks, a
progressive network adds a column beside the earlier columns. A graph task's baselines start from the
regressor learned on the sequence's first task, HOUDINI's where a HOUDINI method runs (the paper "shared
the regressors learned for the first tasks across the competing methods"): the standalone network maps it
frozen, low-level transfer fine-tunes it (`_Runner.regressor`); where the first task's network is not of
the graph's node type (a user's sequence), the graph network learns its own. On a sequence's first task
there is nothing to transfer: low-level transfer with no earlier network, and a progressive network of
one column, are the standalone network, so when the standalone baseline runs too its record is theirs
(marked "same_as").

Every seed derives from the instance, the task's position and the fraction, never from the clock, and
every record is written atomically once its training is done, so a run started again on the same
directory (with the same settings) carries on where it stopped and ends with the results an
uninterrupted run would have: HOUDINI resumes through `run_sequence`, a baseline skips the records that
exist and loads the networks later tasks need. A directory that holds the records but not the libraries
and networks (a committed reproduction on a fresh clone: those are not committed) trains no recorded
task again as a task: HOUDINI's libraries are rebuilt by training each recorded winner again
(`run_sequence`), and a baseline network a later task transfers from by training it again with its
record's seed, so that low-level transfer and progressive networks transfer from what they did.

Within a record, training is saved as it goes
(`hx.compile.checkpoint`: HOUDINI's candidates under `<method>/seed_S/checkpoints/` by `run_sequence`, a
baseline's network under the same folder of its method), so an interrupted record resumes within a few
minutes of where it stopped; the files go once the record is written.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from absl import logging

from hx import baselines
from hx.atomic import hold_directory
from hx.compile.fitting import Outcome, score_json
from hx.compile.release import release_between_tasks
from hx.data import read_data_sets
from hx.evaluation.config import ConfigError, EvalConfig
from hx.evaluation.records import (
  RESCORED_FILE,
  RecordPlace,
  baseline_record,
  network_version,
  read_rescored,
  record_path,
  write_json,
)
from hx.synth.frontier import Frontier, FrontierEntry
from hx.synth.jsonfiles import jsonable, read_record
from hx.synth.progress import Progress
from hx.synth.run_directory import SETTINGS_FILE, checkpoint_dir, open_settings, record_file, training_seed

if TYPE_CHECKING:
  import os

  from hx.baselines.continual import ContinualState
  from hx.baselines.networks import Architecture, Network
  from hx.baselines.train import BaselineResult
  from hx.compile.tuning import TuneConfig
  from hx.data import ArrayTaskSpec, Task, TaskSpec
  from hx.data import Sequence as TaskSequence
  from hx.lang.types import Type
  from hx.synth.executors import Executor, ExecutorSettings

__all__ = ["EvaluationRun", "run", "rebuild_libraries", "check_data", "check_directory", "settings_json",
           "expected_records"]


@dataclasses.dataclass(frozen=True)
class EvaluationRun:
  """What `run` did (as `hx.synth.SequenceRun` is what `run_sequence` did).

  Attributes:
    directory: the run's directory.
    already_finished: every record was there before this call (nothing ran).
    finished: every record is there now.
    stopped: why the run stopped before finishing (the time budget), else None.
    ran: how many records this call wrote (HOUDINI's included).
    report: the report's path (None if it could not be built: no record yet).
  """
  directory: Path
  already_finished: bool
  finished: bool
  stopped: str | None
  ran: int
  report: Path | None

  def summary(self) -> str:
    """Per task, each method's test score at every fraction and HOUDINI's program (a library function
    it reuses is named lib.*), from the directory's records (`hx.evaluation.summary_lines`)."""
    from hx.evaluation.records import load_records
    from hx.evaluation.report import summary_lines

    return "\n".join(summary_lines(load_records(self.directory)))


def settings_json(config: EvalConfig) -> dict:
  """The run's settings as JSON values (what `check_directory` compares); data paths by what they hold
  (`hx.data.Sources.identity`)."""
  settings = jsonable(config)
  settings["sources"] = config.sources.identity()
  # HOUDINI's strategies are in `methods` by name (houdini_<name>); their own settings (an evolutionary
  # search's population, ...) are written where they are not the defaults only, so that the runs saved
  # before strategies were objects keep their settings.
  del settings["strategies"]
  changed = {s.name: jsonable(s) for s in config.strategies if s != type(s)()}
  if changed:
    settings["strategy_settings"] = changed
  if config.stream is not None:
    # A user's tasks by what they hold, so that a directory is never resumed on other data.
    from hx.compile.checkpoint import fingerprint

    seq = config.instance(config.seeds[0])
    settings["stream"] = [{"task": t.name, "type": str(t.type), "training": jsonable(dict(t.spec.training)),
                           "data": fingerprint((t.table, t.train, t.val, t.test))}
                          for t in (seq.build(i) for i in range(len(seq)))]
  return settings


def check_data(config: EvalConfig) -> None:
  """Reads the data sets the run's tasks draw on, so that a missing or malformed data file is refused
  before anything is written (`hx.data.read_data_sets`; cached for the run).

  Raises:
    hx.data.DataError: a data set cannot be read (the message names it, the paths and the flag).
  """
  if config.stream is None:  # a user's tasks hold their data already
    read_data_sets(config.instance(config.seeds[0]).tasks[:config.tasks], config.sources)


def check_directory(config: EvalConfig, directory: Path, *, write: bool = True) -> None:
  """Refuses a directory that holds another run, or other files; writes settings.json to a new one
  (`hx.synth.run_directory.open_settings`) unless `write` is False (a check before the run, which writes
  only once it holds the directory: `hx.atomic.hold_directory`). A run that differs only in its
  instantiations (`seeds`) is the same run with more of them: accepted, and the directory's settings then
  name them all.

  Raises:
    ConfigError: the directory holds a run with other settings (the message names them), or is not
      empty and holds no run.
  """
  open_settings(directory, settings_json(config), what="hx evaluation", merge=_more_seeds, error=ConfigError,
                resume_hint="use another --output_dir, or the same flags to resume it", write=write)


def _more_seeds(saved: dict, asked: dict) -> dict | None:
  # Instantiations are independent (each has folders of its own, seeded by its number): a run may add
  # some to a directory, whose settings then name all it holds.
  def but_seeds(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k != "seeds"}

  if but_seeds(saved) != but_seeds(asked):
    return None
  return {**saved, "seeds": sorted(set(saved.get("seeds", [])) | set(asked.get("seeds", [])))}


def expected_records(config: EvalConfig) -> list[tuple[str, int, int, float]]:
  """Every (method, instance, task index from 1, fraction) a finished run has a record of
  (standalone_with_fold has none for the first task: HOUDINI's program there is all fresh already)."""
  out = []
  for instance in config.seeds:
    for t in range(config.tasks):
      for method in config.methods:
        if method == "standalone_with_fold" and t == 0:
          continue
        out.extend((method, instance, t + 1, f) for f in config.fractions)
  return out


def _score_text(metric: str, x: float | None) -> str:
  if x is None or not math.isfinite(x):
    return "-"
  return f"{x:.2f}%" if metric == "error" else f"{x:.3f}"


class _Runner:
  def __init__(self, config: EvalConfig, directory: Path, deadline: float | None,
               progress: Callable[[str], None], executor: Executor | ExecutorSettings | None = None,
               bars: bool = False):
    self.config, self.directory, self.deadline, self.say = config, directory, deadline, progress
    self.executor, self.bars = executor, bars
    self.ran = 0
    # (method, instance), ("regressor", instance) or ("continual state", method, instance) -> per task.
    self.networks: dict[tuple[str | int, ...], dict[int, Network | ContinualState]] = {}
    self.largest = max(config.fractions)

  # -- helpers --------------------------------------------------------------------------------------
  def out_of_time(self) -> bool:
    return self.deadline is not None and time.monotonic() >= self.deadline

  def method_dir(self, method: str, instance: int) -> Path:
    return self.directory / method / f"seed_{instance}"

  def network_path(self, method: str, instance: int, index: int) -> Path:
    return self.method_dir(method, instance) / "networks" / f"after_{index + 1:02d}"

  def element(self, spec: TaskSpec | ArrayTaskSpec) -> Type:
    return baselines.element_type(spec.kind)

  def architecture(self, spec: TaskSpec | ArrayTaskSpec) -> Architecture:
    return baselines.architecture(spec.type, self.config.module_config, self.element(spec))

  def network(self, method: str, instance: int, index: int, seq: TaskSequence) -> Network | None:
    """The network `method` trained on task `index` (0-based) at the largest fraction, or None."""
    cache = self.networks.setdefault((method, instance), {})
    if index not in cache:
      path = self.network_path(method, instance, index)
      if not path.exists() and record_path(self.directory, method, instance, index + 1, self.largest):
        # Recorded, but its network was not kept (a committed run on a fresh clone: networks are not
        # committed): trained again as it was, with its record's seed, so that what later tasks transfer
        # from is what the record's run transferred from, not nothing.
        self.train_baseline(method, instance, seq, index, self.largest, write=False)
        if index in cache:
          return cache[index]
      if not path.exists():
        return None
      template = None
      if method == "pnn":
        import jax

        from hx.baselines.pnn import PNN

        archs = [self.architecture(seq.tasks[j]) for j in range(index + 1)]
        template = PNN(archs, self.config.module_config).init_column(jax.random.key(0), index)
      try:
        cache[index] = baselines.load_network(path, self.config.module_config, template)
      except baselines.NetworkError as err:
        # Its record at the largest fraction is what trains it: without the record, the run trains it again.
        record = record_path(self.directory, method, instance, index + 1, self.largest)
        also = f" and {record}" if record is not None else ""
        raise baselines.NetworkError(err.path, f"{err.problem}; delete {path}{also}, then run the same "
                                     "command again to train it anew") from None
    return cache[index]

  def shares_regressor(self, seq: TaskSequence, index: int) -> bool:
    """Whether graph task `index` of `seq` maps the regressor of the sequence's first task (`regressor`):
    where the first task is an image or vector task whose network is the graph network's regressor (the
    paper's graph sequences); else (a user's sequence) the graph baselines learn their own (ours)."""
    first, graph = (self.architecture(seq.tasks[j]) for j in (0, index))
    return (index > 0 and first.kind in ("image", "vector")
            and first.specs == graph.specs[:2])

  def regressor(self, instance: int, seq: TaskSequence) -> Network:
    """The regressor a graph task's baselines start from (an `hx.baselines.Network` of the first task's
    image or vector architecture, where `shares_regressor`): the regression network HOUDINI's program
    learned on the sequence's first task, where a HOUDINI method runs and its winner there is one
    (`compose(MLP, E)` of the standalone architecture's types, E its CNN or vector MLP), so that every
    method's graph task maps the same regressor, the paper's protocol ("shared the regressors learned
    for the first tasks across the competing methods"); else the standalone network's own first task's
    network.

    Raises:
      RuntimeError: neither exists.
    """
    key = ("regressor", instance)
    if key not in self.networks:
      shared = self.houdini_regressor(self.config.houdini[0], instance, seq) if self.config.houdini else None
      if shared is None:
        shared = self.network("standalone", instance, 0, seq)
      if shared is None:
        raise RuntimeError(f"the graph baselines of {seq.name} need the regressor of the sequence's first "
                           f"task, and {self.network_path('standalone', instance, 0)} is missing")
      self.networks[key] = {0: shared}
    return self.networks[key][0]

  def houdini_regressor(self, method: str, instance: int, seq: TaskSequence) -> Network | None:
    """HOUDINI's (`method`'s) first task's winner at the largest fraction as a network of the first
    task's standalone image architecture, or None where the winner is not of that shape."""
    from hx.lang import parse
    from hx.lang import program as P
    from hx.synth.library import Library

    saved = self.method_dir(method, instance) / "libraries" / "after_01"
    if not saved.exists():
      self.houdini_sequence(method, instance, seq, 1)  # searched, or rebuilt from its record
    arch = self.architecture(seq.tasks[0])
    library = Library.load(saved)  # after the first task: its winner's functions only
    program = parse(library.entries[0].provenance.program) if library.entries else None
    if (arch.kind not in ("image", "vector") or not isinstance(program, P.Compose)
        or not all(isinstance(f, (P.Fresh, P.Lib)) for f in (program.f, program.g))):
      logging.info("%s's first program is not an MLP over an encoder: the graph baselines map the "
                   "standalone network's regressor", method)
      return None
    mlp, encoder = (library[f.name] for f in (program.f, program.g))
    if (encoder.type, mlp.type) != (arch.spec(arch.encoder).type, arch.spec(baselines.MLP).type):
      return None
    return baselines.Network(method=method, task=library.entries[0].provenance.task, architecture=arch,
                             modules={arch.encoder: encoder.variables, baselines.MLP: mlp.variables})

  def keep_network(self, method: str, instance: int, index: int, network: Network) -> None:
    baselines.save_network(network, self.network_path(method, instance, index))
    self.networks.setdefault((method, instance), {})[index] = network

  # -- HOUDINI --------------------------------------------------------------------------------------
  def houdini(self, method: str, instance: int, seq: TaskSequence, index: int) -> None:
    c = self.config
    if all(record_path(self.directory, method, instance, index + 1, f) for f in c.fractions):
      return
    start = time.perf_counter()
    self.houdini_sequence(method, instance, seq, index + 1)
    for f in c.fractions:
      path = record_path(self.directory, method, instance, index + 1, f)
      rec = read_record(path)
      self.ran += 1
      frontier = Frontier.from_json(rec)
      what = "no program trained"
      if frontier.entries and frontier.entries[0].outcome.status == "trained":
        best = frontier.entries[0]
        what = f"{best.display}  test {rec['metric']} {_score_text(rec['metric'], best.outcome.test_score)}"
      n = frontier.candidates_trained
      self.say(f"[{c.sequence} {instance}] task {index + 1} {rec['task']} @ {f:g}: {method}: {what} "
               f"({n} candidate{'' if n == 1 else 's'})")
    logging.info("%s task %d took %.1f s", method, index + 1, time.perf_counter() - start)

  def houdini_sequence(self, method: str, instance: int, seq: TaskSequence, tasks: int) -> None:
    """`run_sequence` of HOUDINI's `method` up to its first `tasks` tasks: those recorded are not searched
    again (their libraries, if missing, rebuilt from the records), the others searched."""
    from hx.synth.lifelong import run_sequence

    c = self.config
    run_sequence(seq, self.method_dir(method, instance), c.synthesis(method), fractions=c.fractions,
                 budgets=c.budgets, stop_after=tasks, executor=self.executor, progress=self.bars)

  # -- baselines ------------------------------------------------------------------------------------
  def baseline(self, method: str, instance: int, seq: TaskSequence, index: int, fraction: float) -> None:
    if record_path(self.directory, method, instance, index + 1, fraction) is None:
      self.train_baseline(method, instance, seq, index, fraction)
    if method in baselines.CONTINUAL and index == self.config.tasks - 1 and fraction == self.largest:
      self.rescore_continual(method, instance, seq)

  def train_baseline(self, method: str, instance: int, seq: TaskSequence, index: int, fraction: float,
                     write: bool = True) -> None:
    """Trains `method` on task `index` (0-based) at `fraction`, keeps its network (at the largest
    fraction) and writes its record; `write=False`: only the network, for a record that exists but whose
    network is missing (`network`)."""
    c = self.config
    full = seq.build(index)
    task = full if fraction == 1.0 else full.with_fraction(fraction)
    kind = full.spec.kind
    tune_config = c.tune_config(kind)
    seed = training_seed(instance, index, fraction)
    # Where the network is saved as it trains (resumed if the run was interrupted), removed once its
    # record is written.
    saving = checkpoint_dir(self.method_dir(method, instance), index + 1, full.name, fraction)
    if method in ("llt", "pnn") and index == 0 and "standalone" in c.methods:
      self.same_as_standalone(method, instance, seq, fraction, write)
      return
    # One network to train: a bar of one, moved by its epochs.
    with (Progress(f"{method} {full.name} @ {100 * fraction:g}%", 1, self.bars, unit="networks") as bar,
          bar.watching()):
      result, starts_from, extra = self.trained(method, instance, seq, index, fraction, task, tune_config,
                                                seed, saving)
      bar.done(result.outcome.val_score if result.outcome.status == "trained" else math.nan)
    if fraction == self.largest and result.network is not None and method != "standalone_with_fold":
      self.keep_network(method, instance, index, result.network)
    if write:
      place = RecordPlace(c.sequence, instance, index + 1, fraction, seed)
      rec = baseline_record(result, task, place, tune_config, starts_from=starts_from, extra=extra)
      self.write(method, instance, index, fraction, full, rec)
    else:
      logging.info("%s %s: network rebuilt from its record by training it again: validation %.6g", method,
                   full.name, result.outcome.val_score)
    shutil.rmtree(saving, ignore_errors=True)

  def same_as_standalone(self, method: str, instance: int, seq: TaskSequence, fraction: float,
                         write: bool) -> None:
    """Low-level transfer or a progressive network on the sequence's first task: nothing to transfer, so
    the standalone network's record (marked "same_as") and network (as a first column) are theirs."""
    self.baseline("standalone", instance, seq, 0, fraction)
    path = record_path(self.directory, "standalone", instance, 1, fraction)
    rec = read_record(path)
    rec.update(method=method, same_as="standalone")
    if fraction == self.largest:
      net = self.network("standalone", instance, 0, seq)
      if net is not None:
        modules = dict(net.modules)
        if method == "pnn":
          modules["lateral"] = {"params": {}, "batch_stats": {}}
        self.keep_network(method, instance, 0, dataclasses.replace(
            net, method=method, modules=modules, column=0 if method == "pnn" else None))
    if write:
      self.write(method, instance, 0, fraction, seq.build(0), rec)

  def trained(self, method: str, instance: int, seq: TaskSequence, index: int, fraction: float, task: Task,
              tune_config: TuneConfig, seed: int, saving: Path) -> tuple[BaselineResult, list[dict], dict]:
    """`method`'s network trained on `task` (task `index` of `seq` at `fraction`): its
    `hx.baselines.BaselineResult`, the earlier networks it started from (task, method, version) and what
    its record adds."""
    c = self.config
    full = seq.build(index)
    element = self.element(full.spec)

    def source(network: Network) -> dict:
      return {"task": network.task, "method": network.method, "version": network_version(network)}

    graph = self.architecture(full.spec).kind == "graph" and self.shares_regressor(seq, index)
    if method == "standalone":
      regressor = self.regressor(instance, seq) if graph else None
      result = baselines.standalone(task, c.module_config, tune_config, seed=seed, element=element,
                                    regressor=regressor, checkpoint_dir=saving)
      return result, [] if regressor is None else [source(regressor)], {}
    if method == "llt":
      # On a graph task the first task's network is the shared regressor (`regressor`).
      history = [n for j in range(index)
                 if (n := self.regressor(instance, seq) if graph and j == 0
                     else self.network("llt", instance, j, seq)) is not None]
      result = baselines.llt(task, history, c.module_config, tune_config, seed=seed, element=element,
                             checkpoint_dir=saving)
      used = {s for _, s in result.sources if not s.startswith("fresh")}
      return result, [source(n) for n in history if n.task in used], {}
    if method == "pnn":
      columns = [n for j in range(index) if (n := self.network("pnn", instance, j, seq)) is not None]
      result = baselines.pnn(task, columns, c.module_config, tune_config, seed=seed, element=element,
                             checkpoint_dir=saving)
      return result, [source(n) for n in columns], {}
    if method == "standalone_with_fold":
      result, extra = self.from_scratch(instance, seq, index, fraction, task, tune_config, seed, saving)
      return result, [], extra
    if method in baselines.CONTINUAL:
      return self.continual(method, instance, seq, index, task, tune_config, seed, saving)
    raise ValueError(f"unknown baseline {method!r}")

  def continual(self, method: str, instance: int, seq: TaskSequence, index: int, task: Task,
                tune_config: TuneConfig, seed: int, saving: Path) -> tuple[BaselineResult, list[dict], dict]:
    """Experience replay or EWC (`hx.baselines.continual`) on task `index`, after the earlier tasks'
    networks at the largest fraction (their trunks and heads; memories and Fishers drawn again from
    them, as deterministic as the first time; graph tasks share nothing and are passed over); a graph
    task maps the shared regressor (`regressor`), as the standalone network does. EWC's strength is
    chosen once per instance (`ewc_strength`) and each record names it."""
    c = self.config
    done = self.networks.setdefault(("continual state", method, instance), {})
    last = max((j for j in done if j < index), default=-1)
    state = done[last] if last >= 0 else baselines.ContinualState()
    for j in range(last + 1, index):
      network = self.network(method, instance, j, seq)
      if network is None:
        raise RuntimeError(f"{method} on task {index + 1} needs the network of task {j + 1}, which is "
                           "missing")
      if network.architecture.kind != "graph":
        state = baselines.continual_learn(method, seq.build(j), j, network, state,
                                          baselines.ContinualSettings(), None, c.module_config)
      done[j] = state
    extra, strength = {}, None
    if method == "ewc":
      strength, extra = self.ewc_strength(instance, seq)
    graph = self.architecture(seq.tasks[index]).kind == "graph" and self.shares_regressor(seq, index)
    regressor = self.regressor(instance, seq) if graph else None
    result, _ = baselines.continual(method, task, state, c.module_config, tune_config, seed=seed,
                                    position=index, element=self.element(seq.tasks[index]),
                                    ewc_strength=strength, regressor=regressor, checkpoint_dir=saving)
    if result.network is not None:
      extra["continual_memory"] = baselines.continual_footprint(
          method, task, index, result.network.architecture, result.network.modules,
          shared_regressor=regressor is not None)
    return result, [] if regressor is None else [{"task": regressor.task, "method": regressor.method,
                                                  "version": network_version(regressor)}], extra

  def rescore_continual(self, method: str, instance: int, seq: TaskSequence) -> None:
    """After the run's last task: every task of `method` (replay or EWC) scored again on its test split
    with the trunks the last task left and its own head (`hx.baselines.rescore_networks`, CTrL's
    forgetting), written to `<method>/seed_S/rescored.json` beside each task's recorded score (kept, not
    computed again, once written for this many tasks)."""
    c = self.config
    path = self.method_dir(method, instance) / RESCORED_FILE
    kept = read_rescored(self.directory, method, instance)
    if kept is not None and kept["after"] == c.tasks:
      return
    networks = [self.network(method, instance, j, seq) for j in range(c.tasks)]
    scores = baselines.rescore_networks(networks, seq.build, lambda t: c.tune_config(t.spec.kind),
                                        c.module_config)
    rows = []
    for j, score in enumerate(scores):
      rec = read_record(record_path(self.directory, method, instance, j + 1, self.largest))
      best = FrontierEntry.from_json(rec["ranked"][0]) if rec["ranked"] else None
      trained = best is not None and best.outcome.status == "trained"
      rows.append({"index": j + 1, "task": rec["task"], "metric": rec["metric"],
                   "network": None if best is None else str(best.program),
                   "recorded": score_json(best.outcome.test_score) if trained else None,
                   "rescored": score, "shares_trunk": networks[j] is not None
                   and networks[j].architecture.kind != "graph"})
    write_json(path, {"method": method, "instance": instance, "after": c.tasks, "fraction": self.largest,
                      "tasks": rows})
    self.say(f"[{c.sequence} {instance}] {method}: every task scored again after task {c.tasks} "
             f"({path})")

  def ewc_strength(self, instance: int, seq: TaskSequence) -> tuple[float, dict]:
    """EWC's lambda for instance `instance` (`hx.baselines.choose_ewc_strength` on the first tasks'
    validation splits), chosen once and kept in `ewc/seed_S/ewc_strength.json`; (lambda, what a record
    says of the choice)."""
    from hx.jsonread import read_json

    path = self.method_dir("ewc", instance) / "ewc_strength.json"
    if not path.exists():
      c = self.config
      settings = baselines.ContinualSettings()
      first = [seq.build(j) for j in range(min(settings.ewc_tasks, c.tasks))]
      choice = baselines.choose_ewc_strength(
          first, c.module_config, lambda t: c.tune_config(t.spec.kind), settings=settings,
          seed=training_seed(instance, 0, self.largest), elements=[self.element(t.spec) for t in first])
      write_json(path, {"strength": choice.strength, "tasks": list(choice.tasks),
                        "relative_validation_score": [list(s) for s in choice.scores],
                        "grid": list(settings.ewc_strengths)})
    chosen = read_json(path)
    return float(chosen["strength"]), {"ewc_strength": chosen}

  def from_scratch(self, instance: int, seq: TaskSequence, index: int, fraction: float, task: Task,
                   tune_config: TuneConfig, seed: int, saving: Path | None = None
                   ) -> tuple[BaselineResult, dict]:
    """standalone_with_fold: HOUDINI's best program for this task and fraction, every function fresh."""
    from hx.synth.library import Library

    c = self.config
    houdini = c.houdini[0]
    path = record_path(self.directory, houdini, instance, index + 1, fraction)
    entries = Frontier.from_json(read_record(path)).entries
    if not entries or entries[0].outcome.status != "trained":
      reason = f"{houdini} trained no program for this task and fraction: there is no structure to train"
      failed = baselines.BaselineResult(  # a training Outcome's defaults: no scores, epochs or time
          method="standalone_with_fold", task=task.name, description="-",
          outcome=Outcome(status="failed", reason=reason), network=None, parameters=0, frozen_parameters=0)
      return failed, {"structure_from": {"method": houdini, "program": None}}
    saved = self.method_dir(houdini, instance) / "libraries" / f"after_{index:02d}"
    if not saved.exists():
      self.houdini_sequence(houdini, instance, seq, index)  # rebuilt from HOUDINI's records
    library = Library.load(saved)
    best = entries[0]
    result = baselines.from_scratch(task, best.program, best.fresh_types, library.types(), c.module_config,
                                    tune_config, seed=seed, checkpoint_dir=saving)
    return result, {"structure_from": {"method": houdini, "program": str(best.display)}}

  def write(self, method: str, instance: int, index: int, fraction: float, full: Task, rec: dict) -> None:
    path = record_file(self.method_dir(method, instance), index + 1, full.name, fraction)
    write_json(path, rec)
    self.ran += 1
    best = FrontierEntry.from_json(rec["ranked"][0]).outcome
    note = f" (same as {rec['same_as']})" if rec.get("same_as") else ""
    failed = "" if best.status == "trained" else f" [{best.status}: {best.reason}]"
    self.say(f"[{rec['sequence']} {instance}] task {index + 1} {rec['task']} @ {fraction:g}: {method}: "
             f"test {rec['metric']} {_score_text(rec['metric'], best.test_score)}{failed}"
             f" ({rec['seconds']['wall']:.0f} s){note}")


def run(config: EvalConfig, directory: os.PathLike | str, *, time_budget: float | None = None,
        progress: Callable[[str], None] = lambda line: None, report: bool = True,
        executor: Executor | ExecutorSettings | None = None, bars: bool = False) -> EvaluationRun:
  """Runs (or resumes) the evaluation `config` in `directory` (see the module docstring).

  Args:
    config: the run (`EvalConfig.make`).
    directory: where everything is written (created).
    time_budget: stop starting new work after this many seconds (the work under way finishes); run
      again to continue.
    progress: called with one line per record written.
    bars: while a task trains, show its progress on stderr (`hx.synth.progress.Progress`: a bar on a
      terminal, plain lines otherwise).
    report: build the report and plots when done (or stopped).
    executor: where HOUDINI's candidates train (`hx.synthesize`'s executor): a running Executor, which
      the caller closes, or executor settings (`hx.synth.Processes(...)`), started for each HOUDINI
      method and instantiation and closed after it; None: in this process. The baselines train in this
      process.

  Raises:
    ConfigError: the directory holds another run, or other files.
    hx.atomic.DirectoryInUse: another process is running in the directory.
    hx.data.DataError: a data set cannot be read (found before anything is written).
    hx.compile.checkpoint.CheckpointError, hx.synth.library.LibraryError, hx.baselines.NetworkError: a
      file of an earlier, interrupted run is damaged (the message names it and what to do).
  """
  directory = Path(directory)
  check_data(config)
  with hold_directory(directory):  # before settings.json is written: a refused process writes nothing
    check_directory(config, directory)
    return _run_held(config, directory, time_budget, progress, report, executor, bars)


def _run_held(config: EvalConfig, directory: Path, time_budget: float | None, progress: Callable[[str], None],
              report: bool, executor: Executor | ExecutorSettings | None, bars: bool) -> EvaluationRun:
  """`run`, in a directory this process holds."""
  expected = expected_records(config)
  if all(record_path(directory, *e) for e in expected):
    return EvaluationRun(directory, True, True, None, 0, _report(directory) if report else None)
  deadline = None if time_budget is None else time.monotonic() + time_budget
  runner = _Runner(config, directory, deadline, progress, executor, bars)
  stopped = None
  for instance in config.seeds:
    seq = config.instance(instance)
    for index in range(config.tasks):
      for method in config.methods:
        if runner.out_of_time():
          stopped = f"the time budget of {time_budget:g} s ran out"
          break
        if method.startswith("houdini_"):
          runner.houdini(method, instance, seq, index)
        elif not (method == "standalone_with_fold" and index == 0):
          for f in config.fractions:
            runner.baseline(method, instance, seq, index, f)
      release_between_tasks()  # what only this task's candidates and networks used
      if stopped:
        break
    if stopped:
      break
  finished = all(record_path(directory, *e) for e in expected)
  return EvaluationRun(directory, False, finished, stopped, runner.ran,
                       _report(directory) if report else None)


def rebuild_libraries(config: EvalConfig, directory: os.PathLike | str, after: int) -> list[Path]:
  """HOUDINI's library after task `after` of each instantiation of the run in `directory`, rebuilt from the
  records where it is missing; nothing else trains and no record changes.

  A committed reproduction keeps records, not libraries (a fresh clone has none), while a study of a
  later task (`benchmarks/synthesis.py --library`: its schedules, or one program's training seeds) needs
  the library the run's search saw. Each recorded winner of tasks 1..`after` is trained once more with
  its search's seed and settings (`hx.synth.run_sequence`, as a resumed run rebuilds them), so the library
  is the run's on the machine that built it, and equal to it within the rounding of another machine's
  kernels (the reproduction's README).

  Args:
    config: the run's settings, as it was started (`check_directory` refuses others; instantiations may
      be a part of the run's).
    directory: the run's directory (its settings.json and records).
    after: the task (1-based) after which the library is wanted.

  Returns:
    The libraries' folders (`<method>/seed_S/libraries/after_TT`), one per HOUDINI method of the run and
    instantiation.

  Raises:
    ConfigError: `directory` holds no run or another one; `after` outside 1..tasks; a task up to `after`
      not recorded at every fraction (the record's place named); a later library saved where this one is
      not (`run_sequence` resumes from the latest: the message says which to move away).
    hx.atomic.DirectoryInUse: another process is running in the directory.
  """
  directory = Path(directory)
  if not (directory / SETTINGS_FILE).exists():
    raise ConfigError(f"{directory} holds no hx evaluation (no {SETTINGS_FILE}): nothing to rebuild from")
  if not 1 <= after <= config.tasks:
    raise ConfigError(f"the library after task {after}: the run has tasks 1-{config.tasks}")
  check_data(config)
  with hold_directory(directory):  # it writes libraries into the run: not while a run writes there
    check_directory(config, directory)
    return _rebuild_held(config, directory, after)


def _rebuild_held(config: EvalConfig, directory: Path, after: int) -> list[Path]:
  """`rebuild_libraries`, in a directory this process holds."""
  runner = _Runner(config, directory, None, lambda line: None)
  wanted = []
  for instance in config.seeds:
    for method in (m for m in config.methods if m.startswith("houdini_")):
      for index in range(1, after + 1):
        for f in config.fractions:
          if record_path(directory, method, instance, index, f) is None:
            raise ConfigError(f"{directory / method / f'seed_{instance}' / 'records'}: task {index} at "
                              f"fraction {f:g} is not recorded, so the library after task {after} cannot "
                              "be rebuilt from the records")
      libraries = runner.method_dir(method, instance) / "libraries"
      later = sorted(p.name for p in libraries.glob("after_*")
                     if p.name[6:].isdigit() and int(p.name[6:]) > after)
      target = libraries / f"after_{after:02d}"
      if not target.exists() and later:
        raise ConfigError(f"{libraries} holds {later[-1]} but not after_{after:02d}: a run resumes from its "
                          f"latest library, so move {', '.join(later)} away and run this again")
      wanted.append((method, instance, target))
  for method, instance, target in wanted:
    if not target.exists():
      seq = config.instance(instance)
      runner.houdini_sequence(method, instance, seq, after)
  return [target for _, _, target in wanted]


def _report(directory: Path) -> Path | None:
  from hx.evaluation.report import build_report

  try:
    return build_report(directory)
  except FileNotFoundError:
    return None
