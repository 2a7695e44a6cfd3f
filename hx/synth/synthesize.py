"""`hx.synthesize`: find, train and rank programs for a task, and extend the library with the winner.

    frontier = hx.synthesize(task, library, SynthesisConfig(budget=Budget(candidates=20)), seed=0)
    print(frontier.best.display, frontier.best.outcome.val_score, frontier.best.outcome.test_score)
    library = frontier.library        # the winner's fresh functions frozen in, named nn_<sequence>_<k>

This is HOUDINI's learning algorithm for one task (paper section 3), in four steps: the symbolic module,
a strategy (`hx.synth.strategies`: top-down enumeration, `TopDown()`, `hx.synth.topdown`, or
evolution, `Evolutionary(...)`, `hx.synth.evolution`), proposes typed programs over the library; the
neural module (Tune, through an executor, `hx.synth.executors`) trains them under the budget's schedule
(`hx.synth.schedules`: every one to the end by default); the candidates are ranked; the library is
extended with the winner. The program with the best validation score wins; its test score was computed
once, for the parameters of its best validation epoch. A candidate that failed (its loss became NaN,
say) ranks below every candidate that trained, whatever its scores. The result is a
`hx.synth.frontier.Frontier`: the ranked candidates (`FrontierEntry`, each with its training's
`hx.compile.fitting.Outcome`) and the library extended.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

from absl import logging

from hx.compile.batching import num_examples
from hx.compile.fitting import OUT_OF_MEMORY, Outcome
from hx.compile.losses import standard_error
from hx.lang import program as P
from hx.lang.types import Type
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import Executor, ExecutorSettings, LocalExecutor, check_executor, start_executor
from hx.synth.frontier import Frontier, FrontierEntry
from hx.synth.jobs import Job, JobResult, TaskContext, job_seed, run_job
from hx.synth.progress import Progress
from hx.synth.schedules import Scored
from hx.synth.space import Candidate, Completer, SearchSpace, with_library_seed
from hx.synth.strategies import Search, SearchSetup
from hx.synth.topdown import EnumerationStats

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig
  from hx.compile.tuning import TuneConfig
  from hx.synth.library import Added, Library

__all__ = ["synthesize", "task_context", "retrain_winner"]


def _count(n: int, noun: str) -> str:
  """"1 candidate", "2 candidates"."""
  return f"{n} {noun}{'' if n == 1 else 's'}"


def _sort_key(r: JobResult, estimates: dict[int, Scored]) -> tuple:
  """Trained candidates by validation score, then those estimated only by their estimate, then failed."""
  if r.outcome.ok:
    return (0, r.outcome.val_score, r.job.index)
  if r.outcome.status == "estimated":
    return (1, estimates[r.job.index].value, r.job.index)
  return (2, math.inf, r.job.index)


def _winner_first(ranked: list[JobResult], space: SearchSpace, metric: str, examples: int,
                  offered: Sequence[str] | None) -> list[JobResult]:
  """`ranked` (`_sort_key`'s order) with the winner first (`SearchSpace.reuse_tolerance` and
  `reuse_standard_errors`): among the trained candidates whose validation score is at most the best one's
  plus the margin, the one with the fewest fresh functions; among those, where `offered` (the prior's
  library, best first) is given, the one whose worst-ranked library function comes earliest in it
  (a program of no library function after every one that has some), then the better score; the others
  in their order. `metric` and `examples`: the validation score's and how many examples it rests on."""
  tolerance, errors = space.reuse_tolerance, space.reuse_standard_errors
  if not (tolerance or errors) or not ranked or not ranked[0].outcome.ok:
    return ranked
  best = ranked[0].outcome.val_score
  margin = max(tolerance * abs(best), errors * standard_error(metric, best, examples) if errors else 0.0)
  near = [r for r in ranked if r.outcome.ok and r.outcome.val_score <= best + margin]
  position = {name: i for i, name in enumerate(offered or ())}

  def prior_rank(r: JobResult) -> int:
    called = [position.get(t.name, len(position)) for _, t in P.subterms(r.candidate.program)
              if isinstance(t, P.Lib)]
    return max(called) if called else len(position) + 1

  # min is stable: among equal keys the first in `ranked`, the better score.
  pick = min(near, key=lambda r: (len(r.candidate.types), prior_rank(r) if offered is not None else 0))
  return [pick] + [r for r in ranked if r is not pick]


def task_context(task: Any, library: Library | None = None, module_config: ModuleConfig | None = None,
                 tune_config: TuneConfig | None = None, *,
                 checkpoint_dir: os.PathLike | str | None = None,
                 checkpoint_seconds: float = 120.0,
                 scores_dir: os.PathLike | str | None = None) -> TaskContext:
  """What every candidate of `task` shares (`hx.synth.executors.TaskContext`): its data put on the device
  once, its objective, the library (default: empty), module sizes (default: the paper's) and training
  settings; with `checkpoint_dir`, where its candidates are saved as they train (`Checkpoints`, keyed by
  the task's name and a fingerprint of its data), and with `scores_dir` where they leave their outcomes
  without variables (`hx.synth.kept`). `synthesize` builds one per call; build one yourself
  to train a single candidate as a synthesis would (`run_job`, `Job`, `job_seed`)."""
  from hx.compile import ModuleConfig
  from hx.compile.fitting import prepare
  from hx.synth.jobs import Checkpoints, task_key
  from hx.synth.library import Library

  if tune_config is None:
    raise ValueError(f"task_context needs the training settings of task {task.name} (tune_config)")
  ready = prepare(task, tune_config)
  checkpoints = None
  if scores_dir is not None and checkpoint_dir is None:
    raise ValueError(f"scores_dir {os.fspath(scores_dir)} needs a checkpoint_dir: a candidate's kept "
                     "outcome stands in for its checkpoint file when that is gone")
  if checkpoint_dir is not None:
    checkpoints = Checkpoints(os.fspath(checkpoint_dir), task_key(task.name, ready.data), checkpoint_seconds,
                              None if scores_dir is None else os.fspath(scores_dir))
  return TaskContext(ready, library=library if library is not None else Library(),
                     module_config=module_config or ModuleConfig(), checkpoints=checkpoints)


def synthesize(task: Any, library: Library | None = None, config: SynthesisConfig = SynthesisConfig(), *,
               seed: int = 0,
               executor: ExecutorSettings | Executor | None = None, sequence: str | None = None,
               library_seed: int | str | None = None, progress: bool = False, when: str | None = None,
               checkpoint_dir: os.PathLike | str | None = None,
               scores_dir: os.PathLike | str | None = None) -> Frontier:
  """Searches programs for `task`, trains them, ranks them and extends the library with the winner.

  Args:
    task: an `hx.Task` (from `hx.data.build_task` or a sequence), or any value with its attributes
      `name`, `type`, `objective`, `train`, `val`, `test` and `table` (then give its training settings in
      `config.tune_configs`).
    library: the `hx.Library` of trained functions (default: empty).
    config: what the synthesis decides with (`hx.synth.SynthesisConfig`: the strategy, the budget and
      its schedule, the search space, the module sizes, the training settings of each task kind, how
      many candidates keep their variables), taken as given; the default is the paper's top-down search
      of 20 candidates with the paper's module sizes and each task's own training settings.
    seed: seeds the evolutionary search and every candidate's training (`job_seed`).
    executor: where candidates train: executor settings (`hx.synth.executors`: `Local()`, the default:
      in this process; `Processes(workers=..., threads=...)`; `Ray(address=...)`), started for this call
      and closed after it, or a running `Executor` (which its caller closes). A parallel executor is
      handed `parallelism` candidates or more at a time (all of the candidate budget at once when there
      is no time budget).
    sequence: names the new library functions nn_<sequence>_<k> (default: the task's kind, else "task").
    library_seed: with `sequence`, what the library functions nn_<sequence>_<k> a candidate calls stand
      for in its training seed, nn_<library_seed>_<k> (`hx.synth.space.with_library_seed`), so that the
      sequence's name seeds nothing (`hx.data.Sequence.library_seed`); None: their names.
    progress: show the progress (`hx.synth.progress.Progress`: a bar on a terminal, plain lines
      otherwise: candidates done, the current one's epoch, the best validation score, the time left);
      logging goes through absl either way.
    when: the time recorded in the new library entries' provenance (ISO text; default: now).
    checkpoint_dir: save every candidate trained to the end here as it trains (`hx.compile.checkpoint`;
      one file per candidate, keyed by the task's data, the program, its seed and settings, and the
      library): called again after an interruption, finished candidates give their results without
      training and the unfinished continue from their files, to the results of an uninterrupted run.
      Under successive halving a candidate is saved in its last rung only (the earlier rungs pause and
      resume in memory), keyed by the schedule too; under an `Estimate` schedule, the candidates trained
      to the end are saved (their short runs are not). None: no files.
    scores_dir: with `checkpoint_dir`, where every candidate trained to the end also leaves its outcome
      without variables, a small JSON file (`hx.synth.kept`). Called again where the checkpoint files
      are gone (another machine, a fresh clone of a run whose small files were kept), a candidate with
      such a file is not trained: its scores are the file's. The winner, whose variables the library
      needs, is trained again with its job seed; ranks 2 to `keep` restored this way have no variables.

  Returns:
    A `hx.synth.frontier.Frontier`: the candidates ranked (`entries`, the winner first, `best`) and the
    library extended.

  Raises:
    TypeError: `executor` is not an object of its kind (a name such as "processes" is the binaries'
      spelling of one), or `config` is no `SynthesisConfig`.
    ValueError: the task's training settings are not in `config` (`SynthesisConfig.tune_config`).
  """
  from hx.synth.library import Library
  from hx.synth.prior import offer, one_fresh, reused_programs

  if not isinstance(config, SynthesisConfig):
    raise TypeError(f"hx.synthesize takes its settings as one hx.synth.SynthesisConfig(strategy=..., "
                    f"budget=..., space=..., module_config=..., tune_configs=..., keep=...), got "
                    f"{type(config).__name__}")
  check_executor(executor)
  budget, space = config.budget, config.space
  wall = time.perf_counter()
  library = library if library is not None else Library()
  prior = offer(library, task, space.library_tasks, probed=space.probed_tasks)
  offered = prior.library
  prior_seconds = time.perf_counter() - wall
  tune_config = config.tune_config(task)  # decided here, in full, before anything below uses it
  context = task_context(task, offered, config.module_config, tune_config, checkpoint_dir=checkpoint_dir,
                         scores_dir=scores_dir)
  first, then = (), None
  if space.reused_programs:
    start = time.perf_counter()
    completer = Completer(offered, space, context.module_config)
    first = reused_programs(prior, task.type, space.reused_programs, completer)
    prior_seconds += time.perf_counter() - start

    def then(best: Candidate) -> list[Candidate]:  # the best-scoring earlier program, one function new
      return one_fresh(best.program, task.type, completer)
  executor, owned = start_executor(executor)
  total = None if budget.candidates is None else budget.candidates + len(first)
  show = Progress(f"{task.name} @ {100 * getattr(task, 'fraction', 1.0):g}%", total, progress)
  try:
    with show.watching():  # the epochs of candidates that train in this process move the bar
      setup = SearchSetup(task.type, context.library, space=space, module_config=context.module_config,
                          first=first, then=then, seed=seed)
      searched = _search_and_train(setup, context, executor, show, config, wall=wall,
                                   seeded=_seeded(sequence, library_seed))
  finally:
    show.close()
    if owned:
      executor.close()
  result = _ranked_and_added(task, context, library, config, searched, sequence=sequence, when=when,
                             wall=wall)
  shortfall = _shortfall(task, budget, searched.search, len(searched.results) - len(first), wall)
  if shortfall is not None:
    logging.warning("%s", shortfall)
  cannot_fit = _cannot_fit(task, result.entries)
  if cannot_fit is not None:
    logging.warning("%s", cannot_fit)
  result = dataclasses.replace(result, metric=context.ready.objective.metric, shortfall=shortfall)
  if offered is library:
    return result
  return dataclasses.replace(result, offered=offered.names,
                             search_seconds=result.search_seconds + prior_seconds)


def _cannot_fit(task: Any, ranked: Sequence[FrontierEntry]) -> str | None:
  """One line where every candidate of `task` ran out of memory (`hx.compile.fitting.out_of_memory`): how
  many, the first's reason and what fits a task in less memory; None otherwise (one that trained, or
  another reason)."""
  if not ranked or any(e.outcome.status != "failed" or not (e.outcome.reason or "").startswith(OUT_OF_MEMORY)
                       for e in ranked):
    return None
  return (f"{task.name}: every candidate ({len(ranked)}) ran {ranked[0].outcome.reason}; the task cannot fit "
          "in this device's memory: none trained, so the library stays as it was (smaller modules, "
          "--module, or smaller batches fit it in less)")


def _shortfall(task: Any, budget: Budget, search: Search, trained: int, wall: float) -> str | None:
  """Why a synthesis trained fewer than `budget.candidates` candidates (`trained` of them, earlier
  programs proposed on top of the budget not counted), with the size of the space where the search ran
  out of programs; None where it trained as many as asked (or no number was asked)."""
  asked = budget.candidates
  if asked is None or trained >= asked:
    return None
  head = f"{task.name}: Budget(candidates={asked}) asked for {_count(asked, 'candidate')}, {trained} trained"
  if budget.seconds is not None and time.perf_counter() - wall >= budget.seconds:
    return f"{head}: its time budget of {budget.seconds:g} s ran out"
  stats = search.enumeration
  if budget.enumerated is not None and stats is not None and stats.expanded >= budget.enumerated:
    return f"{head}: the search expanded as many partial programs as Budget.enumerated={budget.enumerated}"
  return f"{head}: {search.exhausted(trained)}"


class _Searched(NamedTuple):
  """What a task's search and training gave (`_search_and_train`).

  Attributes:
    search: the strategy's running search, stopped (its time, counters and equivalent programs).
    results: every candidate's `JobResult`, in the order of their jobs.
    estimates: the estimates of the candidates the schedule stopped before the end, by job index.
  """
  search: Search
  results: list[JobResult]
  estimates: dict[int, Scored]


def _search_and_train(setup: SearchSetup, context: TaskContext, executor: Executor, show: Progress,
                      config: SynthesisConfig, *, wall: float,
                      seeded: Callable[[Candidate], Candidate] = lambda c: c) -> _Searched:
  """The strategy's search proposes, the schedule trains, until the search stops or the budget runs out.
  `setup`: the search's task type, library, space, module sizes, seed and the top-down search's `first`
  and `then` (`hx.synth.strategies.TopDownSearch`; `first` on top of the budget's candidates), the
  budget's bounds filled in here; `seeded`: each proposed candidate as its training is seeded
  (`_seeded`)."""
  budget, first, seed = config.budget, setup.first, setup.seed
  deadline = None if budget.seconds is None else wall + budget.seconds
  results: list[JobResult] = []
  estimates: dict[int, Scored] = {}

  def out_of_time() -> bool:
    return deadline is not None and time.perf_counter() >= deadline

  def out_of_budget() -> bool:
    return (budget.candidates is not None and len(results) >= budget.candidates + len(first)) or out_of_time()

  parallelism = max(1, int(getattr(executor, "parallelism", 1)))
  # In the search's order, candidates go to the executor in batches it can run at once; without a time
  # budget all of them in one (a parallel executor then keeps every worker busy to the end).
  batch = budget.candidates if budget.seconds is None and budget.candidates else parallelism
  search = config.strategy.start(dataclasses.replace(setup, limit=budget.candidates,
                                                     max_expanded=budget.enumerated, batch=batch,
                                                     stop=out_of_budget))
  schedule = budget.training_schedule
  scores: dict[tuple, float] = {}
  while (proposed := search.propose(scores)) is not None:
    got = schedule.run((seeded(c) for c in proposed), context, seed,
                       lambda ctx, jobs: _run(executor, ctx, jobs, show, search.enumeration), out_of_time,
                       first_index=len(results), batch=search.batch)
    results.extend(got.results)
    estimates.update(got.estimates)
    scores = {r.candidate.key: r.outcome.val_score if r.outcome.ok else math.inf for r in got.results}
  return _Searched(search, results, estimates)


def _ranked_and_added(task: Any, context: TaskContext, library: Library, config: SynthesisConfig,
                      searched: _Searched, *, sequence: str | None, when: str | None,
                      wall: float) -> Frontier:
  """The candidates ranked (the winner trained again where its outcome was kept without variables), the
  `library` (the whole one: the search may have been offered a part, `context.library`) extended with
  the winner, as `synthesize` returns them."""
  space, keep = config.space, config.keep
  search, results, estimates = searched
  ranked = _winner_first(sorted(results, key=lambda r: _sort_key(r, estimates)), space,
                         context.ready.objective.metric, num_examples(context.ready.data.val),
                         context.library.names if space.library_tasks is not None else None)
  if ranked and ranked[0].outcome.ok and ranked[0].restored:
    ranked[0] = _trained_again(ranked[0], context)
  added = None
  if ranked and ranked[0].outcome.ok:
    kind = getattr(getattr(task, "spec", None), "kind", None)
    added = _extend(library, ranked[:keep], context, sequence or kind or "task", task.name, when)
  out = _ranking(ranked, estimates, added, keep, search.equivalent)
  return Frontier(
      task=task.name, strategy=config.strategy.name, entries=tuple(out),
      library=added.library if added is not None else library, added=added,
      search_seconds=search.seconds, compile_seconds=sum(r.outcome.compile_seconds for r in results),
      train_seconds=sum(r.outcome.train_seconds for r in results),
      eval_seconds=sum(r.outcome.eval_seconds for r in results),
      wall_seconds=time.perf_counter() - wall, candidates_trained=len(results),
      enumeration=search.enumeration, estimate_seconds=sum(e.seconds for e in estimates.values()),
      no_program=None if results else _why_no_program(task.type, context.module_config),
      module_config=context.module_config)


def _why_no_program(task_type: Type, module_config: ModuleConfig) -> str | None:
  """Why one fresh function of `task_type` has no module (the usual reason a search finds nothing)."""
  from hx.compile.modules.choice import module_spec
  from hx.compile.modules.spec import NoTemplateError

  try:
    module_spec(task_type, module_config, name="a fresh function")
  except NoTemplateError as err:
    return str(err)
  return None


def _ranking(ranked: Sequence[JobResult], estimates: dict[int, Scored], added: Added | None, keep: int,
             equivalent: Sequence[tuple[Candidate, Candidate]]) -> list[FrontierEntry]:
  """The ranked candidates as a frontier's entries: the best `keep` with their variables, the winner's
  library names, each candidate's estimate; then the evolutionary search's equivalent programs."""
  out = []
  for rank, r in enumerate(ranked, 1):
    named = added.programs[rank - 1] if added is not None and rank <= len(added.programs) else None
    o = r.outcome
    outcome = dataclasses.replace(o, variables=o.variables if rank <= keep else None, state=None,
                                  epochs_run=o.epochs_run if o.status != "estimated" else 0)
    out.append(FrontierEntry(rank=rank, program=r.candidate.program, named=named,
                             fresh_types=dict(r.candidate.fresh_types), order=r.job.index, outcome=outcome,
                             val_history=o.val_history, **_estimate_fields(estimates.get(r.job.index))))
  for dup, rep in equivalent:
    equivalent_to = Outcome(status="equivalent", reason=f"equivalent to {rep.program}")
    out.append(FrontierEntry(rank=len(out) + 1, program=dup.program, fresh_types=dict(dup.fresh_types),
                             order=-1, outcome=equivalent_to))
  return out


def _estimate_fields(e: Scored | None) -> dict[str, float | str]:
  """A frontier entry's estimate fields from a candidate's estimate (none: the defaults)."""
  if e is None:
    return {}
  return {"estimate": e.value, "estimate_method": e.method, "estimate_seconds": e.seconds,
          "estimate_epochs": e.epochs}


def _run(executor: Executor, context: TaskContext, jobs: Sequence[Job], show: Progress,
         stats: EnumerationStats | None) -> list[JobResult]:
  out = []
  for r in executor.run(context, jobs):
    out.append(r)
    o = r.outcome
    logging.info("%s: candidate %d %s -> %s val %.4g (%.1f s)%s", show.task, show.count + 1,
                 r.candidate.program, o.status, o.val_score, o.seconds, f" [{o.reason}]" if o.reason else "")
    if stats is not None:
      show.extra["enumerated"] = stats.expanded  # the search's partial programs expanded so far
    show.done(o.val_score if o.ok else math.nan)
  missing = {j.index for j in jobs} - {r.job.index for r in out}
  if missing:
    raise RuntimeError(f"the executor returned no result for jobs {sorted(missing)}")
  return out


def retrain_winner(task: Any, library: Library, program: P.Program, fresh_types: dict,
                   config: SynthesisConfig, *, seed: int, sequence: str | None = None,
                   library_seed: int | str | None = None, runners_up: Sequence[P.Program] = (),
                   when: str | None = None) -> tuple[Library, JobResult]:
  """The library a `synthesize(task, library, config, seed=seed, ...)` whose winner was `program`
  returned, rebuilt by training that one candidate again, as the synthesis trained it (the same job seed,
  module sizes and training settings of `config`, and library), and adding it as `synthesize` does;
  `runners_up`: the programs the synthesis ranked after it (kept in the library's provenance).

  For a run whose records were kept but not its libraries (`hx.synth.run_sequence` on a fresh clone of a
  committed reproduction): one candidate's training instead of the task's search. On the machine that ran
  the search the variables are those it trained (training is deterministic for a seed); on another, equal
  up to the last digits of float32 arithmetic, which the returned result's scores show against the record's.

  Returns:
    (the library extended with the winner's fresh functions, the retrained candidate's `JobResult`).

  Raises:
    RuntimeError: the candidate failed to train (the result's reason says why).
  """
  from hx.synth.space import equivalence_key

  kind = getattr(getattr(task, "spec", None), "kind", None)
  context = task_context(task, library, config.module_config, config.tune_config(task))
  candidate = _seeded(sequence, library_seed)(Candidate(
      program, tuple((n, fresh_types[n]) for n in P.fresh_names(program)), 0.0,
      equivalence_key(program, fresh_types)))
  executor = LocalExecutor()
  try:
    (result,) = executor.run(context, [Job(0, candidate, job_seed(seed, candidate))])
  finally:
    executor.close()
  if not result.outcome.ok:
    raise RuntimeError(f"retraining {program} for {task.name} failed: {result.outcome.reason}")
  added = _extend(context.library, [result], context, sequence or kind or "task", task.name, when,
                  runners_up=runners_up)
  return added.library, result


def _seeded(sequence: str | None, library_seed: int | str | None) -> Callable[[Candidate], Candidate]:
  """A candidate as its training is seeded: with `sequence`'s library functions named after
  `library_seed` (`hx.synth.space.with_library_seed`); as it is without both."""
  if sequence is None or library_seed is None:
    return lambda c: c
  return lambda c: with_library_seed(c, sequence, library_seed)


def _trained_again(kept: JobResult, context: TaskContext) -> JobResult:
  """The winner `kept`, restored from its kept outcome without variables (`hx.synth.kept`), trained again
  with its job seed for its variables (its checkpoint file is written again; the kept file is left as
  it was). Its place in the ranking stays the kept scores'; its scores become the retrained ones, which
  are those of its variables (the same on the machine that kept them)."""
  without = dataclasses.replace(context, checkpoints=dataclasses.replace(context.checkpoints, scores=None))
  again = run_job(without, kept.job)
  if not again.outcome.ok:
    raise RuntimeError(f"training the winner {kept.candidate.program} again (its outcome was kept without "
                       f"variables) failed: {again.outcome.reason}")
  return again


def _extend(library: Library, top: Sequence[JobResult], context: TaskContext, sequence: str, task: str,
            when: str | None, runners_up: Sequence[P.Program] | None = None) -> Added:
  """`Library.add` of the winner (its fresh functions frozen in; the top programs named as the paper's
  tables name them); `runners_up` default: the programs of `top[1:]` that trained."""
  from hx.compile import compile_program
  from hx.synth.library import Trained

  best = top[0]
  if best.outcome.variables is None:
    raise RuntimeError(f"the executor returned no trained variables for the best program {best.candidate}")
  # The program as a whole, for its module specs and slots: what was trained may be the program without
  # its frozen prefix, in another process, whose CompiledProgram (closures) cannot travel back. Lowering
  # is cached by key and lazy (nothing is traced until `apply` runs, which `Library.add` never calls), so
  # this compiles nothing with XLA.
  compiled = compile_program(best.candidate.program, best.candidate.fresh_types, context.module_config,
                             library.specs())
  trained = Trained(compiled, best.outcome.variables, validation=best.outcome.val_score,
                    test=best.outcome.test_score)
  if runners_up is None:
    runners_up = [r.candidate.program for r in top[1:] if r.outcome.ok]
  return library.add(trained, sequence=sequence, task=task, runners_up=runners_up, when=when)
