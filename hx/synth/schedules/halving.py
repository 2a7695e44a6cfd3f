"""Successive halving: train every candidate briefly, and only the better part further.

    budget = Budget(candidates=20, schedule=Halving(first=2, eta=4))
    result = hx.synthesize(task, library, hx.SynthesisConfig(budget=budget))

Successive halving (Jamieson and Talwalkar 2016; the inner loop of Hyperband, Li et al. 2017) spends a
synthesis's training where it matters. With n candidates and E epochs per candidate (the task's
`TuneConfig.epochs`), rung 0 trains all n for `first` epochs; each later rung keeps the best 1/eta by
validation score (at least `min_keep`) and trains them on to eta times the previous rung's epochs, until
the last rung trains its survivors to E. With n = 20, E = 20, first = 2, eta = 4 (the defaults) the rungs
train 20 candidates to 2 epochs, 5 to 8 and 1 to 20: 82 candidate-epochs instead of 400.

Why these defaults (benchmarks/notes/2026-11-23-halving-replay.md; the figures: benchmarks/RESULTS.md,
"Synthesis"): on CS1's count_digit and SS's sum_digits (20 candidates, 20 epochs, output biases from the
targets' mean), the full runs' learning curves replayed over first = 1-4 and eta = 2-4 (below) show one
schedule that keeps the winner's quality on both: first = 2, eta = 4 keeps sum_digits' top program, and on
count_digit picks a program whose mean test error over five training seeds equals the full run's winner's
(that winner is mostly its seed's luck). The default before, eta = 3, did not keep sum_digits' winner.
Slow learners are the risk of any first rung: count_digit's full-run winner ranks 15th-18th of 20 for
four epochs before it becomes the best, and no schedule at 3x keeps it. Chosen on two tasks, and not a
guarantee: on a third, CS2's count_digit(1), first = 2 with eta = 3 or 4 returns a program that starts
best and plateaus where the full run's late learner ends far better. Train fully (no schedule) when the
best candidate matters: with early stopping (`TuneConfig.patience = 2`), which only stops candidates
whose curves flatten, that cost less than every epoch of every candidate and returned the full run's
winner, with its scores, on all three tasks (benchmarks/notes/2026-11-23-early-stopping.md;
benchmarks/studies/curve_replay.py's `stop_by_patience` replays it on a full run's curves).

A survivor continues where it paused (`hx.compile.TuneState`: parameters, batch statistics, optimiser
state, position), so it gets exactly the steps, batches and dropout keys it would have had without
halving; a pause in the middle of an epoch (a `first` below 1) adds one validation of the parameters
reached there, which may be kept as the best. Early stopping within a candidate (`TuneConfig.patience`)
stays: a candidate that stopped is finished and keeps its place among the survivors. A candidate's
validation score can only improve as it trains on (Tune keeps its best epoch), so ranking every
candidate by its last score puts those that trained furthest first.

Rungs give every candidate the same epochs by default. Where candidates' steps differ widely in cost
(GS2's shortest path: a fresh CNN over every cell takes 25 times the steps' time of the library's
regressor and a relaxation), `Halving(equal="time")` gives them the same time instead: after a short
pricing run, each trains a rung's epochs times min(1, m / its step cost), m the geometric mean of the
candidates' step costs (`Halving.reference`; the median before, which put m inside the costly cluster
when it held more than half the candidates: benchmarks/RESULTS.md, "A reference between the clusters").

Only the survivors of the last rung are scored on the test split (a paused run is not): the test set is
scored once, for the chosen parameters.

Since a survivor's curve is the start of its uninterrupted one, one run that trains every candidate to
the end (each `hx.synth.FrontierEntry.val_history`) tells what any schedule with whole-epoch rungs would
have chosen and trained: benchmarks/studies/curve_replay.py's `replay` computes it without training again
(benchmarks/studies/halving_replay.py runs it over schedules on a synthesis benchmark's output).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, Iterable, Mapping, Sequence

from hx.synth.jobs import Job, JobResult, TaskContext, continued, job_seed, step_costs
from hx.synth.schedules.base import ScheduleResult, Train, as_estimates, never
from hx.synth.schedules.estimate import subsample_context
from hx.synth.space import Candidate

__all__ = ["EQUAL", "REFERENCES", "Halving", "Rung", "step_shares", "successive_halving"]

EQUAL = ("epochs", "time")
"""What a schedule's rungs give every candidate alike (`Halving.equal`)."""

REFERENCES = ("median", "geomean")
"""The step cost a rung's epochs are priced at under equal time (`Halving.reference`)."""


@dataclasses.dataclass(frozen=True)
class Rung:
  """One rung of a schedule: train `keep` candidates until `until` epochs (in all)."""
  until: float
  keep: int


@dataclasses.dataclass(frozen=True)
class Halving:
  """A successive-halving schedule (`Budget.schedule`, top-down only; text `halving:first=2,eta=4,...`,
  its keys the fields' names, `val` for `val_examples`; see the module docstring).

  Attributes:
    first: epochs every candidate trains in the first rung (a positive float: 0.5 is half an epoch's
      steps).
    eta: each rung keeps 1/eta of the candidates (rounded down, at least `min_keep`) and trains them to
      eta times the previous rung's epochs.
    min_keep: the fewest candidates any rung keeps.
    equal: what the rungs give every candidate alike: "epochs" (the default: a rung's epochs, whatever
      they cost) or "time" (a rung's epochs at a reference cost of a step, `reference`: a candidate
      whose steps cost c times the reference trains 1/c of the rung's epochs; those cheaper than the
      reference train the rung's epochs, no more). Under "time" every candidate first trains `price`
      of the first rung's epochs, which price its steps (seconds per step, from then on from all the
      steps it has run), and a candidate whose share of a rung does not reach past where it paused
      keeps its score without training. The last rung trains its survivors to the end under both.
      "time" is ours (the paper trains every candidate to the end): Hyperband's resource may be time
      as well as epochs, and a search under a wall-clock target should not spend it on the costliest
      candidates (benchmarks/RESULTS.md, "Synthesis"). Its choices depend on measured times, so two
      runs, or two executors, may rank differently: executors agree (same seed, same ranking) under
      "epochs" only.
    price: under equal time, the share of the first rung's epochs every candidate trains to price its
      steps (0 < price < 1).
    reference: under equal time, the step cost a rung's epochs are priced at: "geomean" (the default:
      the geometric mean of the candidates' step costs) or "median" (their median; the only one before
      this option, kept so that earlier runs can be repeated). Where costs fall in two clusters far
      apart (GS2's shortest path: the library's CNN against a fresh CNN over every cell, 25 times the
      cost a step), the median lies in whichever cluster holds more candidates and jumps between them
      when one candidate is added; the geometric mean lies between the clusters, and one candidate more
      moves it by the n-th root of how far its cost is from it. Measured on GS2 task 2 (25 candidates,
      benchmarks/notes/2026-11-24-gs2-reference-and-lending.md): in our grammar as fast as the median,
      with the same top program and scores (the two references were close there); in the paper's
      grammar it finished where the median's search was stopped unfinished. Both are ours.
    val_examples: the rungs before the last score a fixed subsample of this many validation examples
      (`hx.synth.schedules.estimate.validation_subsample`, drawn from the synthesis seed: the same for every
      candidate), and the last rung all of it; None (the default): every rung scores all of it. At small
      training fractions validation is most of a candidate's cost (CS1's count_digit at 2%: 2,100
      validation lists scored every epoch against 240 training lists), and the early rungs only rank
      the candidates. A survivor of the last rung picks its best epoch among those scored on the whole
      split (its best so far, scored on the subsample, is forgotten when the last rung resumes it); the
      candidates stopped before the last rung are reported with status "estimated" and their
      subsample score as their estimate (method "halving"), ranked after those trained to the end,
      since their scores are not on the same examples. Ours, not the paper's.
  """
  NAME: ClassVar[str] = "halving"
  KEYS: ClassVar[Mapping[str, str]] = {"val": "val_examples"}

  first: float = 2.0
  eta: int = 4
  min_keep: int = 1
  equal: str = "epochs"
  price: float = 0.1
  reference: str = "geomean"
  val_examples: int | None = None

  def __post_init__(self):
    if not self.first > 0:
      raise ValueError(f"Halving.first must be a positive number of epochs, got {self.first}")
    if self.eta < 2 or self.min_keep < 1:
      raise ValueError(f"Halving needs eta >= 2 and min_keep >= 1, got {self}")
    if self.equal not in EQUAL:
      raise ValueError(f"Halving.equal must be one of {', '.join(EQUAL)}, got {self.equal!r}")
    if not 0 < self.price < 1:
      raise ValueError(f"Halving.price must be in (0, 1), got {self.price}")
    if self.reference not in REFERENCES:
      raise ValueError(f"Halving.reference must be one of {', '.join(REFERENCES)}, got {self.reference!r}")
    if self.val_examples is not None and self.val_examples < 1:
      raise ValueError(f"Halving.val_examples must be >= 1 or None, got {self.val_examples}")

  def run(self, candidates: Iterable[Candidate], context: TaskContext, seed: int, train: Train,
          out_of_time: Callable[[], bool] = never, *, first_index: int = 0,
          batch: int | None = None) -> ScheduleResult:
    """Trains `candidates` under this schedule (`successive_halving`; `hx.synth.schedules.Schedule.run`):
    each rung whole, `batch` ignored. Under `val_examples`, the rungs before the last in `context`
    scoring the validation subsample, and each candidate they stopped with its subsample score as its
    estimate (method "halving")."""
    sub = None if self.val_examples is None else subsample_context(context, self.val_examples, seed)
    got, stopped = successive_halving(
        list(candidates), self, context.ready.tune_config.epochs, seed, lambda jobs: train(context, jobs),
        out_of_time, first_index, run_subsample=None if sub is None else lambda jobs: train(sub, jobs))
    return ScheduleResult(tuple(got), as_estimates(got, stopped, "halving"))

  def rungs(self, epochs: int, candidates: int) -> tuple[Rung, ...]:
    """The rungs for `candidates` candidates trained to `epochs` epochs at most; the last reaches
    `epochs` (a single rung when `first` >= `epochs`)."""
    if candidates < 1:
      return ()
    out = []
    until, keep = float(self.first), candidates
    while until < epochs:
      out.append(Rung(until, keep))
      until *= self.eta
      keep = min(keep, max(self.min_keep, keep // self.eta))
    out.append(Rung(float(epochs), keep))
    return tuple(out)


def _score(r: JobResult) -> float:
  return r.outcome.val_score if r.outcome.ok else math.inf


def _best(scores: Sequence[float], keep: int) -> list[int]:
  """The indices of the `keep` lowest finite scores, best first (ties: the earlier candidate); a failed
  or untrained candidate (inf or nan) never goes on."""
  ranked = sorted((i for i, v in enumerate(scores) if math.isfinite(v)), key=lambda i: (scores[i], i))
  return ranked[:keep]


def _stopped(r: JobResult, reached: float) -> JobResult:
  """The result of a candidate that did not train in the last rung (halving stopped it, or it stopped
  early before), scored on the validation subsample only."""
  return r.with_outcome(
      status="estimated", val_score=math.nan, test_score=None, variables=None,
      reason=f"stopped by halving after {reached:g} epochs, before its last rung: validation-subsample "
             f"score {r.outcome.val_score:.4g}")


def successive_halving(candidates: Sequence[Candidate], schedule: Halving, epochs: int, seed: int,
                       run: Callable[[list[Job]], list[JobResult]],
                       out_of_time: Callable[[], bool] = lambda: False, first_index: int = 0,
                       run_subsample: Callable[[list[Job]], list[JobResult]] | None = None
                       ) -> tuple[list[JobResult], dict[int, float]]:
  """Trains `candidates` under `schedule`; returns one result per candidate, in their order.

  Args:
    candidates: the candidates, in the search's order (job `first_index + i` is candidate i).
    schedule: the rungs' epochs and survivors.
    epochs: the epochs a candidate trains at most (the task's `TuneConfig.epochs`).
    seed: the synthesis seed (`job_seed` gives each candidate's, as without halving).
    run: trains a list of jobs (all of one rung at once, so a parallel executor runs them together) and
      returns their results.
    out_of_time: checked before each rung after the first; when true, no further rung starts (the
      candidates keep their last rung's results; paused ones have no test score).
    first_index: the index of the first candidate's job.
    run_subsample: as `run`, scoring the validation subsample (`Halving.val_examples`) instead of the
      whole split, and no test split: the rungs before the last train with it. Needed when the schedule
      has `val_examples`, ignored otherwise.

  Returns:
    (results, stopped): one JobResult per candidate, its last rung's outcome with its times summed over
    its rungs; and under `val_examples`, per job index of each candidate stopped before the last rung
    (status "estimated", see `Halving`), its best score on the validation subsample ({} otherwise).
  """
  subsample = schedule.val_examples is not None
  if subsample and run_subsample is None:
    raise ValueError(f"{schedule!r} scores a validation subsample: pass run_subsample")
  jobs = [Job(first_index + i, c, job_seed(seed, c), schedule=schedule) for i, c in enumerate(candidates)]
  latest: list[JobResult | None] = [None] * len(jobs)
  reached = [0.0] * len(jobs)
  share = [1.0] * len(jobs)
  active = list(range(len(jobs)))

  def train(untils: dict[int, float | None]) -> None:
    final = subsample and any(u is None for u in untils.values())
    batch = []
    for i, u in untils.items():
      resume = None if latest[i] is None else latest[i].outcome.state
      if final and resume is not None:
        resume = resume.without_best()
      batch.append(dataclasses.replace(jobs[i], until=u, resume=resume))
    runner = run_subsample if subsample and not final else run
    got = {r.job.index: r for r in runner(batch)} if batch else {}
    for i, u in untils.items():
      latest[i] = continued(latest[i], got[jobs[i].index])
      reached[i] = epochs if u is None else u

  rungs = schedule.rungs(epochs, len(jobs))
  timed = schedule.equal == "time" and len(rungs) > 1
  if timed and active:
    train({i: rungs[0].until * schedule.price for i in active})
    share = step_shares(latest, schedule.reference)
  for k, rung in enumerate(rungs):
    if k > 0:
      if out_of_time():
        break
      # Those already finished (early stopping) keep their places but need no more training.
      best = _best([_score(r) if r is not None else math.inf for r in latest], rung.keep)
      active = [i for i in best if latest[i].outcome.state is not None]
    elif timed:
      active = [i for i in active if latest[i].outcome.state is not None]
    if not active:
      break
    final = rung.until >= epochs
    untils = {i: None if final else rung.until * share[i] for i in active}
    # Under equal time a costly candidate's share of a rung may not reach past where it paused: it
    # keeps its score and place without training.
    train({i: u for i, u in untils.items() if u is None or u > reached[i]})
    if timed:
      share = step_shares(latest, schedule.reference)
  # Reported with the plain job and without the paused states (their arrays are not needed any more).
  out, stopped = [], {}
  for i, r in enumerate(latest):
    if r is None:
      continue
    # Under `val_examples` only the last rung scores the whole split: a candidate that did not train in it
    # (stopped by halving, or early by patience before it) has a subsample score alone.
    if subsample and reached[i] < epochs and r.outcome.ok:
      stopped[jobs[i].index] = r.outcome.val_score
      r = _stopped(r, reached[i])
    out.append(dataclasses.replace(r.with_outcome(state=None), job=jobs[i]))
  return out, stopped


def step_shares(results: Sequence[JobResult | None], reference: str = "geomean") -> list[float]:
  """Per candidate, the share of a rung's epochs it trains under equal time (`Halving.equal="time"`):
  min(1, m / c) with c its seconds per training step and m the `reference` of those costs ("median" or
  "geomean", `Halving.reference`), from `results` (each candidate's latest result). A candidate without
  a clean result or without steps gets 1 (it does not go on anyway, or cannot be priced)."""
  if reference not in REFERENCES:
    raise ValueError(f"step_shares' reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
  costs = step_costs(results)
  known = sorted(c for c in costs if c is not None and c > 0)
  if not known:
    return [1.0] * len(results)
  if reference == "geomean":
    m = math.exp(math.fsum(math.log(c) for c in known) / len(known))
    # exp(log c) may miss c in its last bit: equal costs must give whole rungs, not 1 - 1e-16 of one.
    m *= 1 + 1e-12
  else:
    m = known[len(known) // 2] if len(known) % 2 else 0.5 * (known[len(known) // 2 - 1] +
                                                              known[len(known) // 2])
  return [1.0 if c is None or c <= 0 else min(1.0, m / c) for c in costs]
