"""Cheap candidates first: a schedule that trains to the end every candidate whose steps cost little, and a
costly one only where its first steps already beat them.

    budget = Budget(candidates=20, schedule=CheapFirst(probe_steps=80))
    result = hx.synthesize(task, library, hx.SynthesisConfig(budget=budget))

Where a task's library holds functions trained on earlier tasks, a candidate that puts fresh functions on
top of frozen ones (a fresh head on the earlier task's CNN) trains at a small part of the cost of one that
trains a fresh CNN: its frozen functions run once over the task's images (`hx.compile.memo`), not at
every step. On CS1's count_digit at 100% of MNIST such a candidate's epoch cost dozens of times less than
a fresh CNN's, and one of them won (benchmarks/RESULTS.md, "Estimates before training", has the
figures). This schedule spends accordingly:

1. Probe: every candidate trains `probe_steps` optimiser steps (at most the full run: where the task's
   training split is small, the probe is the whole run and the schedule trains every candidate to the
   end, as the paper does). The probe prices each candidate's steps (training seconds per step) and
   scores it on the whole validation split at each epoch's end and where it pauses.
2. The cheap candidates, whose step costs at most `cheap` times the costliest candidate's, train on to
   the end: the `keep` (3) whose probes scored best (but see 2a), or all of them (`keep=None`); the others
   stop, as in rule 3. The best final validation score among those trained is the bar.
2a. With `keep_at` (epochs beyond the probe; 2 by default), the keep is judged later: every cheap
   candidate trains on to `keep_at` epochs first, and the `keep` best there train to the end. A probe of
   a few dozen steps measures where a candidate starts more than how it learns: on GS2's shortest paths
   at 2% (5 epochs) the programs that freeze task 1's whole regressor probe best after 40 steps, while a
   fresh MLP on task 1's CNN starts behind and ends far ahead of them (benchmarks/RESULTS.md, "Estimates
   before training"). Cheap candidates are cheap, so a later look at all of them costs little.
2b. With `free`, every cheap candidate whose remaining training costs at most one probe of the costliest
   candidate (its step cost times its steps still to train, against `probe_steps` times the costliest
   step cost) trains to the end too, whatever it scored: a fresh head on frozen functions whose outputs
   are memoised can cost a few percent of a fresh CNN's step, so its whole run costs less than probing
   one more costly candidate, and a keep chosen by early scores loses such heads that start behind and
   end ahead (on CS1's count_digit(1) at 100% a fresh counter over task 2's frozen MLP and task 1's CNN:
   benchmarks/RESULTS.md, "Estimates before training"). What it adds is at most one costly probe per
   such candidate.
3. A costly candidate trains on to the end only if its probe already scored better than the bar. Those
   behind it stop: they are reported with status "estimated", their probe's best score as the estimate
   (method "probe"), ranked after every candidate trained to the end.
4. With halving (`eta`), the costly candidates ahead of the bar do not all train to the end: they go on
   in successive-halving rungs (`hx.synth.schedules.halving`), the probe being the first. Each rung keeps
   the best 1/eta (at least one) of the previous rung's candidates among those still ahead of the bar,
   and trains them to eta times its epochs, the last rung to the end. A candidate stopped at a rung is
   "estimated", with its best score so far.

Rule 3 bets that a costly candidate behind a cheap one's final score after its probe stays behind. The
costly candidates that go on train together (a parallel executor runs them side by side), so which ones
train does not depend on the search's order: the bar is the cheap candidates' best, lowered by none of the
costly ones'. Measured on the reproduction's records (`benchmarks/studies/schedule_replay.py`, its rows
"cheap first", which replay this schedule): the bet held on CS1's count_digit at 100%; with a probe of
one epoch it lost the winner on many searches at 2% and 10% of the data, where one epoch is a few steps
and a fresh CNN that trails after it often wins in the end. A probe counted in steps is what makes the
schedule the same at every fraction. The default, 80 steps, is one epoch of count_digit at 100% (12,000
lists in batches of 150) and 10 of its 20 epochs at 10%.

A candidate trained to the end resumes where its probe paused (`hx.compile.TuneState`: the same steps,
batches and dropout keys). Where the probe ends on an epoch's end (the default on CS1's count_digit at
2%, 10% and 100%), its scores, its checkpoint and its kept file (`hx.synth.kept`) are those of training
it without the schedule. A probe that ends inside an epoch adds one validation there, which may become
the run's best (as under `Halving(first=0.5)`), so such a candidate's checkpoint is keyed by the
schedule.
Halving (rule 4) matters only where many costly candidates beat the bar: where no candidate is cheap
(the bar is then infinite, and without `eta` the schedule trains every candidate to the end), or where
the cheap ones end poorly. Since a candidate's best score so far only improves and the bar is fixed,
the bar acts after the probe, the rungs' share after that. Replayed on the reproduction's records
(benchmarks/RESULTS.md, "Estimates before training"), eta on top of the default keep changed no choice on
the list tasks' searches and trained less on a few at 10% of the data, where the records priced no
candidate cheap; elsewhere the bar stopped all but a few costly candidates. On the graph tasks' searches
the bet of rule 3 itself fails more often: their fresh-CNN candidates start far behind the cheap ones and
overtake them within the run, so the schedule (with or without eta) can lose the winner there.
Ours, not the paper's (which trains every candidate to the end): a search that trains less.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, Iterable, Mapping, Sequence

from hx.synth.jobs import Job, JobResult, TaskContext, continued, job_seed, step_costs
from hx.synth.schedules.base import ScheduleResult, Train, as_estimates, never
from hx.synth.space import Candidate

__all__ = ["CheapFirst", "probe_epochs", "step_costs", "cheap_mask", "look_epochs", "best_cheap",
           "free_cheap", "going_on", "costly_rungs", "survivors", "cheap_first"]


@dataclasses.dataclass(frozen=True)
class CheapFirst:
  """A schedule (`Budget.schedule`, top-down only): every candidate probed, the cheap ones and the costly
  ones ahead of them trained to the end (see the module docstring). Its text is
  `cheap_first:probe=80,keep=3,...`, its keys the fields' names, `probe` for `probe_steps`.

  Attributes:
    probe_steps: optimiser steps every candidate trains first (at most the task's epochs; a probe that
      ends inside an epoch pauses there).
    cheap: a candidate whose training step costs at most this share of the costliest candidate's
      (measured in its probe) is cheap: it trains to the end whatever its probe scored (0 < cheap < 1),
      unless `keep` says otherwise.
    keep: k: only the k cheap candidates with the best probe scores train to the end (among those whose
      probe did not end their run), the others are reported "estimated" with their probe's score; None:
      every cheap candidate does. The default, 3, is ours: in the replays and live runs of
      benchmarks/RESULTS.md ("Estimates before training") it lost no winner that keeping every cheap
      candidate kept, where 1 and 2 did.
    eta: None (the default): the costly candidates ahead of the bar train to the end at once; an integer
      >= 2: they go on in successive-halving rungs, each eta times the previous one's epochs, keeping
      the best 1/eta of those still ahead of the bar (rule 4 of the module docstring). Ours.
    keep_at: epochs: where it is beyond the probe, every cheap candidate first trains on to that many
      epochs (all of its run where it reaches the end) and `keep` chooses by the scores there (rule 2a of
      the module docstring); at or before the probe, or None, `keep` chooses by the probe's scores.
      Without a keep it changes nothing. The default, 2, is ours: where halving's first rung
      (`Halving(first=2)`) judges; replayed on the reproduction's records it changed no choice that
      judging at the probe made, and live on GS2's shortest paths at 2% it kept the program that judging
      at the probe lost (benchmarks/RESULTS.md, "Estimates before training").
    free: True: beside the keep, every cheap candidate whose remaining training costs at most one probe
      of the costliest candidate trains to the end (rule 2b of the module docstring). False (the
      default) leaves the keep alone. Ours: replayed on the reproduction's records it kept more of the
      full searches' winners for more modelled time (benchmarks/RESULTS.md, "Estimates before
      training"), so it is a named option, not the default.
  """
  NAME: ClassVar[str] = "cheap_first"
  KEYS: ClassVar[Mapping[str, str]] = {"probe": "probe_steps"}

  probe_steps: int = 80
  cheap: float = 0.2
  keep: int | None = 3
  eta: int | None = None
  keep_at: float | None = 2.0
  free: bool = False

  def __post_init__(self):
    if self.probe_steps < 1:
      raise ValueError(f"CheapFirst.probe_steps must be >= 1, got {self.probe_steps}")
    if not 0 < self.cheap < 1:
      raise ValueError(f"CheapFirst.cheap must be in (0, 1), got {self.cheap}")
    if self.keep is not None and self.keep < 1:
      raise ValueError(f"CheapFirst.keep must be >= 1 or None, got {self.keep}")
    if self.eta is not None and self.eta < 2:
      raise ValueError(f"CheapFirst.eta must be >= 2 or None, got {self.eta}")
    if self.keep_at is not None and not self.keep_at > 0:
      raise ValueError(f"CheapFirst.keep_at must be a positive number of epochs or None, got "
                       f"{self.keep_at}")

  def run(self, candidates: Iterable[Candidate], context: TaskContext, seed: int, train: Train,
          out_of_time: Callable[[], bool] = never, *, first_index: int = 0,
          batch: int | None = None) -> ScheduleResult:
    """Trains `candidates` under this schedule (`cheap_first`; `hx.synth.schedules.Schedule.run`): each
    phase whole, `batch` ignored; each candidate it stopped with its best validation score then as its
    estimate (method "probe")."""
    from hx.lang.values import num_examples

    tune_config = context.ready.tune_config
    got, stopped = cheap_first(list(candidates), self, tune_config.epochs,
                               tune_config.steps_per_epoch(num_examples(context.ready.data.train.inputs)),
                               seed, lambda jobs: train(context, jobs), out_of_time, first_index)
    return ScheduleResult(tuple(got), as_estimates(got, stopped, "probe"))


# ---------------------------------------------------------------------------------------------------
# Pure pieces.

def probe_epochs(probe_steps: int, steps_per_epoch: int, epochs: int) -> float:
  """The epochs a probe of `probe_steps` steps trains: probe_steps / steps_per_epoch, at most `epochs`
  (then the probe is the full run)."""
  if steps_per_epoch < 1 or epochs < 1:
    raise ValueError(f"probe_epochs needs steps_per_epoch >= 1 and epochs >= 1, got {steps_per_epoch}, "
                     f"{epochs}")
  return min(float(epochs), probe_steps / steps_per_epoch)


def cheap_mask(costs: Sequence[float | None], share: float) -> list[bool]:
  """Per candidate, whether its step cost is at most `share` times the largest known cost (an unknown
  cost is not cheap; with no known cost, none is)."""
  known = [c for c in costs if c is not None]
  if not known:
    return [False] * len(costs)
  top = max(known)
  return [c is not None and c <= share * top for c in costs]


def look_epochs(keep: int | None, keep_at: float | None, probe: float, epochs: float) -> float | None:
  """Where the cheap candidates are compared before the keep (rule 2a of the module docstring): `keep_at`
  epochs, at most `epochs` (then they all train to the end), where there is a keep and `keep_at` lies
  beyond a probe of `probe` epochs that is not the whole run; else None (the keep judges the probe)."""
  if keep is None or keep_at is None or not probe < keep_at or not probe < epochs:
    return None
  return min(keep_at, epochs)


def best_cheap(probe_scores: Sequence[float], cheap: Sequence[bool], finished: Sequence[bool],
               keep: int | None) -> list[int]:
  """The cheap, unfinished candidates that train on to the end (rule 2 of the module docstring): all of
  them for keep=None, else the `keep` with the best (lowest) probe scores, ties to the earlier; a failed
  probe (nan or inf) is never kept. In their order."""
  pool = [i for i, (c, f) in enumerate(zip(cheap, finished)) if c and not f]
  if keep is None:
    return pool
  ranked = sorted((i for i in pool if math.isfinite(probe_scores[i])), key=lambda i: (probe_scores[i], i))
  return sorted(ranked[:keep])


def free_cheap(costs: Sequence[float | None], cheap: Sequence[bool], finished: Sequence[bool],
               scores: Sequence[float], remaining_steps: Sequence[float], probe_steps: float) -> list[int]:
  """The cheap, unfinished candidates whose remaining training costs at most one probe of the costliest
  candidate (rule 2b of the module docstring): costs[i] * remaining_steps[i] <= probe_steps * the
  largest known cost. A failed one (score nan or inf) or one of unknown cost never. In their order.

  Args:
    costs: per candidate, its training seconds per optimiser step (`step_costs`; None: unknown).
    cheap: per candidate, whether it is cheap (`cheap_mask`).
    finished: per candidate, whether it needs no more training.
    scores: per candidate, its best validation score so far.
    remaining_steps: per candidate, the optimiser steps it still has to train to the end.
    probe_steps: the probe's optimiser steps.
  """
  known = [c for c in costs if c is not None]
  if not known:
    return []
  probe = probe_steps * max(known)
  return [i for i, (c, k, f, v, n) in enumerate(zip(costs, cheap, finished, scores, remaining_steps))
          if k and not f and c is not None and math.isfinite(v) and c * n <= probe]


def going_on(probe_scores: Sequence[float], cheap: Sequence[bool], finished: Sequence[bool],
             final_scores: Sequence[float]) -> tuple[list[int], float]:
  """Which costly candidates train on to the end (rule 3 of the module docstring), and the bar.

  Args:
    probe_scores: per candidate, its best validation score in the probe (nan or inf: failed).
    cheap: per candidate, whether it is cheap.
    finished: per candidate, whether its probe ended its training (the full run, or early stopping):
      it needs no more, whatever it is.
    final_scores: per candidate, its final validation score where it is cheap and trained to the end
      (others' entries are ignored).

  Returns:
    (indices, bar): the costly, unfinished candidates whose probe scored below the bar, in their order;
    the bar, the best final score of the cheap candidates (inf if none has one).
  """
  bar = min((v for v, c in zip(final_scores, cheap) if c and math.isfinite(v)), default=math.inf)
  return [i for i, (v, c, f) in enumerate(zip(probe_scores, cheap, finished))
          if not c and not f and math.isfinite(v) and v < bar], bar


def costly_rungs(probe: float, eta: int, epochs: int) -> list[float]:
  """The epochs at which halving's rungs (rule 4 of the module docstring) pause the costly candidates after
  a probe of `probe` epochs: probe * eta, probe * eta**2, ... while below `epochs` (the last rung, to the
  end, is not listed). Empty where probe * eta reaches the end."""
  if not probe > 0 or eta < 2:
    raise ValueError(f"costly_rungs needs probe > 0 and eta >= 2, got {probe}, {eta}")
  out, until = [], probe * eta
  while until < epochs:
    out.append(until)
    until *= eta
  return out


def survivors(scores: Sequence[float], pool: Sequence[int], bar: float, eta: int) -> list[int]:
  """Of the candidates `pool` (indices into `scores`, each one's best validation score so far), those that
  go on to the next rung: the best len(pool) // eta (at least one) by score, ties to the earlier, among
  those whose score is below `bar` (a failed one, nan or inf, never goes on). In their order."""
  ahead = sorted((i for i in pool if math.isfinite(scores[i]) and scores[i] < bar),
                 key=lambda i: (scores[i], i))
  return sorted(ahead[:max(1, len(pool) // eta)])


# ---------------------------------------------------------------------------------------------------
# The schedule.

def _score(r: JobResult) -> float:
  return r.outcome.val_score if r.outcome.ok else math.inf


def cheap_first(candidates: Sequence[Candidate], schedule: CheapFirst, epochs: int, steps_per_epoch: int,
                seed: int, run: Callable[[list[Job]], list[JobResult]],
                out_of_time: Callable[[], bool] = lambda: False, first_index: int = 0
                ) -> tuple[list[JobResult], dict[int, float]]:
  """Trains `candidates` under `schedule`; returns one result per candidate, in their order.

  Args:
    candidates: the candidates, in the search's order (job `first_index + i` is candidate i).
    schedule: the probe's steps, what counts as cheap, how many cheap ones go on, and halving's eta.
    epochs: the epochs a candidate trains at most (the task's `TuneConfig.epochs`).
    steps_per_epoch: optimiser steps in one epoch of the task's training split.
    seed: the synthesis seed (`job_seed` gives each candidate's, as in every schedule).
    run: trains a list of jobs (all of a phase at once, so a parallel executor runs them together) and
      returns their results.
    out_of_time: checked after the probe, before the cheap candidates' later look (`keep_at`), after the
      cheap candidates and before each of halving's rungs:
      when true, nothing more trains (a candidate still paused is reported "estimated", with its best
      score so far).
    first_index: the index of the first candidate's job.

  Returns:
    (results, stopped): one JobResult per candidate, its last run's outcome with the times of its probe
    added (a finished run's status and scores; "estimated", with nan validation score and no test score,
    for one stopped after its probe or at one of halving's rungs); and per job index of each stopped
    candidate, its best validation score when it stopped (its estimate).
  """
  until = probe_epochs(schedule.probe_steps, steps_per_epoch, epochs)
  whole = until >= epochs
  rungs = [] if whole or schedule.eta is None else costly_rungs(until, schedule.eta, epochs)
  look = look_epochs(schedule.keep, schedule.keep_at, until, epochs)
  # Pauses on epochs' ends leave the runs as they would be without the schedule: keyed as the full run's
  # (their checkpoints and kept files shared with it); one inside an epoch adds a validation.
  pauses = [until] + rungs + ([] if look is None or look >= epochs else [look])
  key = None if all(u == int(u) for u in pauses) else schedule
  jobs = [Job(first_index + i, c, job_seed(seed, c), schedule=key) for i, c in enumerate(candidates)]
  if not jobs:
    return [], {}
  latest = run([dataclasses.replace(j, until=None if whole else until) for j in jobs])
  by_index = {r.job.index: r for r in latest}
  latest = [by_index[j.index] for j in jobs]
  finished = [r.outcome.state is None for r in latest]  # the whole run, early stopping, or a failure
  reached: dict[int, float] = {}  # costly candidates paused at a rung: the epochs they reached
  halted: set[int] = set()  # those halving stopped there

  def resume(indices: Sequence[int], to: float | None = None) -> None:
    """Trains `indices` on from where they paused, to `to` epochs (None: the end)."""
    got = {r.job.index: r for r in run([dataclasses.replace(jobs[i], until=to, resume=latest[i].outcome.state)
                                         for i in indices])}
    for i in indices:
      latest[i] = continued(latest[i], got[jobs[i].index])
      finished[i] = latest[i].outcome.state is None
      if to is not None:
        reached[i] = to

  probe = [_score(r) for r in latest]
  costs = step_costs(latest)  # priced by the probe
  cheap = cheap_mask(costs, schedule.cheap)
  if look is not None and not out_of_time():
    pool = [i for i, (c, f) in enumerate(zip(cheap, finished)) if c and not f]
    if pool:
      resume(pool, None if look >= epochs else look)  # a look at the end trains them all to it
  # The costly candidates have not trained since their probe: their scores are still the probe's.
  scores = [_score(r) for r in latest]
  kept = best_cheap(scores, cheap, finished, schedule.keep)
  if schedule.free:  # with keep=None every cheap candidate is kept already
    remaining = [(epochs - reached.get(i, until)) * steps_per_epoch for i in range(len(latest))]
    kept = sorted(set(kept) | set(free_cheap(costs, cheap, finished, scores, remaining,
                                             schedule.probe_steps)))
  if kept and not out_of_time():
    resume(kept)
  costly, bar = going_on(probe, cheap, finished, [_score(r) if finished[i] else math.inf
                                                  for i, r in enumerate(latest)])
  if schedule.eta is None:
    if costly and not out_of_time():
      resume(costly)
  else:
    halted = _halving_rungs(costly, rungs, bar, schedule.eta, latest, finished, resume, out_of_time)
  return _reported(latest, jobs, finished, reached, until, lambda i: _why_stopped(
      i, schedule, halted=halted, costly=costly, kept=kept, cheap=cheap, reached=reached, bar=bar))


def _halving_rungs(costly: list[int], rungs: list[float], bar: float, eta: int, latest: list[JobResult],
                   finished: list[bool], resume: Callable[[Sequence[int], float | None], None],
                   out_of_time: Callable[[], bool]) -> set[int]:
  """Rule 4 of the module docstring: halving's rungs for the `costly` candidates ahead of the bar, the
  probe as the first; each keeps the best 1/eta of the one before (those finished by early stopping keep
  their places but need no more training). `latest` and `finished` are the schedule's, which `resume`
  updates. Returns the candidates halving stopped."""
  halted: set[int] = set()
  pool = costly
  for to in rungs + [None]:
    before, pool = pool, survivors([_score(r) for r in latest], pool, bar, eta)
    halted.update(i for i in before if i not in pool and not finished[i])
    going = [i for i in pool if not finished[i]]
    if not going or out_of_time():
      break
    resume(going, to)
  return halted


def _why_stopped(i: int, schedule: CheapFirst, *, halted: set[int], costly: list[int], kept: list[int],
                 cheap: list[bool], reached: dict[int, float], bar: float) -> str:
  """Why candidate `i` was not trained to the end, in words."""
  if i in halted:
    return "stopped by halving among the costly candidates going on" + (
        f" (ahead of the cheap candidates' best final score {bar:.4g})" if math.isfinite(bar) else "")
  if i in costly or i in kept:
    return "the search ran out of time"
  if cheap[i]:
    return (f"its probe not among the {schedule.keep} best of the cheap candidates" if i not in reached
            else f"its score after {reached[i]:g} epochs not among the {schedule.keep} best of the cheap "
            "candidates")
  return f"behind the cheap candidates' best final score {bar:.4g}"


def _reported(latest: list[JobResult], jobs: list[Job], finished: list[bool], reached: dict[int, float],
              until: float, why: Callable[[int], str]) -> tuple[list[JobResult], dict[int, float]]:
  """The schedule's results: each candidate's latest, with its plain job and without a paused state;
  one not finished "estimated" (nan validation score, no test score, `why` it stopped in its reason),
  its best validation score so far by job index in the second value."""
  out, stopped = [], {}
  for i, r in enumerate(latest):
    if not finished[i]:
      stopped[jobs[i].index] = r.outcome.val_score
      scored = f"{reached[i]:g} epochs" if i in reached else f"probe of {until:g} epochs"
      r = r.with_outcome(
          status="estimated", val_score=math.nan, test_score=None, variables=None,
          reason=f"not trained to the end (cheap first: {why(i)}): {scored} scored {r.outcome.val_score:.4g}")
    out.append(dataclasses.replace(r.with_outcome(state=None), job=jobs[i]))
  return out, stopped
