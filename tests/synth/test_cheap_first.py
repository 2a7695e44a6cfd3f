"""The cheap-first schedule (`hx.synth.schedules.cheap_first`).

Its logic runs on a scripted trainer (each candidate's step cost and scores fixed), so what each
candidate is asked to train, and when, is exact; one synthesis on real data checks that a candidate it
trains to the end has the very scores of training every candidate.
"""

from __future__ import annotations

import math

import pytest

import hx.synth.schedules.cheap_first as cheap_first_module
from hx.compile import TuneConfig
from hx.compile.fitting import Outcome
from hx.lang.parser import parse
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import Job, JobResult
from hx.synth.jobs import step_costs
from hx.synth.jsonfiles import jsonable
from hx.synth.schedules.cheap_first import (
  CheapFirst,
  best_cheap,
  cheap_first,
  cheap_mask,
  costly_rungs,
  free_cheap,
  going_on,
  look_epochs,
  probe_epochs,
  survivors,
)
from hx.synth.space import Candidate, SearchSpace
from hx.synth.strategies import Evolutionary
from hx.synth.synthesize import synthesize
from tests.synth.test_estimate import cs1  # noqa: F401 -- the fixture
from tests.synth.test_synthesize import TINY

STEPS = 10  # steps per epoch of the scripted trainer
EPOCHS = 20


def candidates(n):
  return [Candidate(parse(f"compose(nn_1, nn_{i + 2})"), (), 1.0, ("c", i)) for i in range(n)]


class Scripted:
  """Trains jobs by script: candidate i's step costs cost[i] seconds and its validation score after e
  epochs is score[i](e) (nan: it fails). Records each call's jobs as (index, until, resumed from)."""

  def __init__(self, cost, score):
    self.cost, self.score = cost, score
    self.calls: list[list[tuple[int, float | None, float | None]]] = []
    self.jobs: list[Job] = []

  def __call__(self, jobs: list[Job]) -> list[JobResult]:
    self.calls.append([(j.index, j.until, j.resume) for j in jobs])
    self.jobs.extend(jobs)
    out = []
    for j in jobs:
      start = 0.0 if j.resume is None else j.resume
      end = EPOCHS if j.until is None else j.until
      v = self.score[j.index](end)
      bad = math.isnan(v)
      steps = round((end - start) * STEPS)
      out.append(JobResult(job=j, outcome=Outcome(
          status="failed" if bad else "trained", reason="nan" if bad else None,
          val_score=v, test_score=None if j.until is not None or bad else v + 0.01,
          variables=None, steps_run=round(end * STEPS), epochs_run=round(end),
          train_seconds=steps * self.cost[j.index], seconds=steps * self.cost[j.index],
          state=None if j.until is None or bad else end)))
    return out


def flat(v):
  return lambda e: v


def test_the_probe_is_its_steps_at_most_the_run():
  assert probe_epochs(80, 80, 20) == 1      # count_digit at 100%: 12,000 lists in batches of 150
  assert probe_epochs(80, 8, 20) == 10      # at 10%
  assert probe_epochs(80, 2, 20) == 20      # at 2%: the probe is the whole run
  assert probe_epochs(40, 80, 20) == 0.5
  assert probe_epochs(1, 500, 20) == 0.002
  with pytest.raises(ValueError, match="steps_per_epoch"):
    probe_epochs(80, 0, 20)


def test_cheap_is_a_share_of_the_costliest_known_step():
  r = [JobResult(job=None, outcome=Outcome(status="trained", reason=None, val_score=1.0, steps_run=10,
                                           train_seconds=t))
       for t in (0.1, 2.0, 10.0)]
  failed = JobResult(job=None, outcome=Outcome(status="failed", reason="x", steps_run=10,
                                               train_seconds=100.0))
  unstepped = JobResult(job=None, outcome=Outcome(status="trained", reason=None, val_score=1.0, steps_run=0,
                        train_seconds=0.0))
  costs = step_costs(r + [failed, unstepped])
  assert costs[:3] == pytest.approx([0.01, 0.2, 1.0]) and costs[3:] == [None, None]
  # The failed candidate's cost is unknown, not the costliest: 0.2 is at most a fifth of 1.0.
  assert cheap_mask(costs, 0.2) == [True, True, False, False, False]
  assert cheap_mask(costs, 0.1) == [True, False, False, False, False]
  assert cheap_mask([None, None], 0.2) == [False, False]


def test_the_costly_go_on_only_ahead_of_the_cheap_candidates_best_final_score():
  probe = [0.9, 0.4, 0.6, math.nan, 0.3, 0.2]
  cheap = [True, False, False, False, True, False]
  finished = [True, False, False, True, True, True]
  final = [0.5, math.inf, math.inf, math.inf, 0.7, 0.1]
  # The bar is 0.5 (the cheap ones' best final, not their probes); 1 beats it, 2 does not, 3 failed, 5
  # finished in its probe.
  assert going_on(probe, cheap, finished, final) == ([1], 0.5)
  # No cheap candidate: every costly one with a score goes on.
  assert going_on([0.4, 0.6], [False, False], [False, False], [math.inf] * 2) == ([0, 1], math.inf)


def test_keep_trains_the_cheap_candidates_with_the_best_probes():
  probe = [0.9, 0.4, 0.6, math.nan, 0.3, 0.2, 0.4]
  cheap = [True, True, False, True, True, True, True]
  finished = [False, False, False, False, False, True, False]
  # 5 finished in its probe, 2 is costly, 3 failed: the pool is 0, 1, 4, 6; ties (1, 6) to the earlier.
  assert best_cheap(probe, cheap, finished, None) == [0, 1, 3, 4, 6]
  assert best_cheap(probe, cheap, finished, 1) == [4]
  assert best_cheap(probe, cheap, finished, 2) == [1, 4]
  assert best_cheap(probe, cheap, finished, 3) == [1, 4, 6]
  assert best_cheap(probe, cheap, finished, 10) == [0, 1, 4, 6]


def test_with_keep_the_bar_is_the_kept_cheap_candidates_best_final_score():
  cost = [0.01, 0.01, 0.01, 1.0, 1.0]
  score = [lambda e: 0.8 if e < EPOCHS else 0.6,    # cheap, best probe: kept, 0.6 at the end
           lambda e: 0.9 if e < EPOCHS else 0.1,    # cheap, second probe: not kept with keep=1
           flat(1.5),                                # cheap, worst probe
           lambda e: 0.55 if e < EPOCHS else 0.2,   # costly, ahead of 0.6 after its probe
           flat(0.7)]                                # costly, behind 0.6
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(5), CheapFirst(probe_steps=20, keep=1), EPOCHS, STEPS, seed=0,
                             run=run)
  assert run.calls == [[(i, 2.0, None) for i in range(5)], [(0, None, 2.0)], [(3, None, 2.0)]]
  assert [r.outcome.status for r in out] == ["trained", "estimated", "estimated", "trained", "estimated"]
  assert out[0].outcome.val_score == 0.6 and out[3].outcome.val_score == 0.2
  assert stopped == {1: 0.9, 2: 1.5, 4: 0.7}
  assert "not among the 1 best of the cheap candidates" in out[1].outcome.reason
  assert "behind the cheap candidates' best final score 0.6" in out[4].outcome.reason
  # keep=None trains every cheap one: candidate 1's 0.1 raises the bar, and no costly one goes on.
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(5), CheapFirst(probe_steps=20, keep=None), EPOCHS, STEPS, seed=0,
                             run=run)
  assert run.calls[1:] == [[(0, None, 2.0), (1, None, 2.0), (2, None, 2.0)]]
  assert stopped == {3: 0.55, 4: 0.7}


def test_the_schedule_probes_all_then_trains_the_cheap_then_the_costly_ahead_of_them():
  cost = [0.01, 1.0, 1.0, 1.0, 1.0]
  score = [lambda e: 2.0 if e < EPOCHS else 0.5,    # cheap: behind after its probe, 0.5 at the end
           lambda e: 0.45 if e < EPOCHS else 0.3,   # costly, ahead of 0.5 after its probe
           flat(0.6),                                # costly, behind
           flat(math.nan),                           # costly, fails
           lambda e: 0.49 if e < EPOCHS else 0.55]  # costly, ahead, and ends behind the cheap one
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(5), CheapFirst(probe_steps=20), EPOCHS, STEPS, seed=0, run=run)
  # A probe of 20 steps is 2 epochs of 10; then the cheap one, then the costly ahead of it, together.
  assert run.calls == [[(i, 2.0, None) for i in range(5)], [(0, None, 2.0)], [(1, None, 2.0), (4, None, 2.0)]]
  assert [r.outcome.status for r in out] == ["trained", "trained", "estimated", "failed", "trained"]
  assert [r.outcome.val_score for r in out][:2] == [0.5, 0.3] and out[4].outcome.val_score == 0.55
  assert stopped == {2: 0.6}
  assert math.isnan(out[2].outcome.val_score) and out[2].outcome.test_score is None
  assert "behind the cheap candidates' best final score 0.5" in out[2].outcome.reason
  # A resumed candidate's times are its probe's and its run's.
  assert out[1].outcome.train_seconds == pytest.approx(EPOCHS * STEPS * 1.0)
  assert out[0].outcome.train_seconds == pytest.approx(EPOCHS * STEPS * 0.01)
  assert all(r.outcome.state is None for r in out) and [r.job.index for r in out] == [0, 1, 2, 3, 4]


def test_a_probe_inside_an_epoch_pauses_there_and_keys_the_candidates_by_the_schedule():
  schedule = CheapFirst(probe_steps=15)
  jobs = []
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.4)])

  def recording(batch):
    jobs.extend(batch)
    return run(batch)

  out, stopped = cheap_first(candidates(2), schedule, EPOCHS, STEPS, seed=0, run=recording)
  # The cheap one on to 2 epochs (the default keep_at), then to the end; then the costly one.
  assert run.calls == [[(0, 1.5, None), (1, 1.5, None)], [(0, 2.0, 1.5)], [(0, None, 2.0)], [(1, None, 1.5)]]
  assert {j.schedule for j in jobs} == {schedule} and stopped == {}
  # Judged at the probe, the cheap one goes straight on to the end.
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.4)])
  cheap_first(candidates(2), CheapFirst(probe_steps=15, keep_at=None), EPOCHS, STEPS, seed=0, run=run)
  assert run.calls == [[(0, 1.5, None), (1, 1.5, None)], [(0, None, 1.5)], [(1, None, 1.5)]]
  # On an epoch's end the jobs are the full run's (no schedule in their checkpoint key).
  jobs.clear()
  cheap_first(candidates(2), CheapFirst(probe_steps=20), EPOCHS, STEPS, seed=0, run=recording)
  assert {j.schedule for j in jobs} == {None}


def test_a_probe_as_long_as_the_run_trains_every_candidate_to_the_end_once():
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.9)])
  out, stopped = cheap_first(candidates(2), CheapFirst(probe_steps=EPOCHS * STEPS), EPOCHS, STEPS, seed=0,
                             run=run)
  assert run.calls == [[(0, None, None), (1, None, None)]]
  assert [r.outcome.status for r in out] == ["trained", "trained"] and stopped == {}
  assert out[1].outcome.test_score == pytest.approx(0.91)


def test_out_of_time_after_the_probe_trains_nothing_more():
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.4)])
  out, stopped = cheap_first(candidates(2), CheapFirst(probe_steps=10), EPOCHS, STEPS, seed=0, run=run,
                             out_of_time=lambda: True)
  assert len(run.calls) == 1
  assert [r.outcome.status for r in out] == ["estimated", "estimated"] and stopped == {0: 0.5, 1: 0.4}
  assert all("ran out of time" in r.outcome.reason for r in out)


def test_halvings_rungs_multiply_the_probe_by_eta_below_the_end():
  assert costly_rungs(0.5, 4, 20) == [2.0, 8.0]   # count_digit at 100%, a probe of 40 steps
  assert costly_rungs(2, 2, 20) == [4, 8, 16]
  assert costly_rungs(5, 4, 20) == []            # the first rung would reach the end: straight there
  assert costly_rungs(10, 2, 20) == []
  with pytest.raises(ValueError, match="eta >= 2"):
    costly_rungs(1, 1, 20)


def test_survivors_are_the_best_share_still_ahead_of_the_bar():
  scores = [0.3, 0.1, math.nan, 0.2, 0.6, 0.4, 0.2]
  pool = [0, 1, 2, 3, 5, 6]
  # 6 // 2 = 3 go on: 1, then 3 and 6 tied (the earlier first); 2 failed.
  assert survivors(scores, pool, math.inf, 2) == [1, 3, 6]
  assert survivors(scores, pool, math.inf, 4) == [1]
  # The bar removes those behind it before the share is taken; at least one goes on if any is ahead.
  assert survivors(scores, pool, 0.25, 2) == [1, 3, 6]
  assert survivors(scores, pool, 0.15, 2) == [1]
  assert survivors(scores, [4, 5], 0.35, 2) == []
  assert survivors(scores, [2], math.inf, 2) == []


def test_with_eta_the_costly_ahead_of_the_bar_go_on_in_halving_rungs():
  cost = [0.01, 1.0, 1.0, 1.0, 1.0, 1.0]
  score = [lambda e: 0.9 if e < EPOCHS else 0.5,                 # cheap: the bar, 0.5
           lambda e: {2: 0.45, 4: 0.40, 8: 0.35}.get(e, 0.2),     # costly, best throughout: the winner
           lambda e: {2: 0.46, 4: 0.42}.get(e, 0.1),              # second after the probe, not at 4 epochs
           flat(0.47),                                            # third after the probe
           flat(0.48),                                            # fourth
           flat(0.6)]                                             # behind the bar after the probe
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(6), CheapFirst(probe_steps=20, eta=2), EPOCHS, STEPS, seed=0,
                             run=run)
  # Probe 2 epochs; the cheap one to the end; of the 4 costly ones ahead of it the best 2 to 4 epochs,
  # the best 1 to 8, to 16 and to the end.
  assert run.calls == [[(i, 2.0, None) for i in range(6)], [(0, None, 2.0)],
                       [(1, 4.0, 2.0), (2, 4.0, 2.0)], [(1, 8.0, 4.0)], [(1, 16.0, 8.0)], [(1, None, 16.0)]]
  assert [r.outcome.status for r in out] == ["trained", "trained"] + ["estimated"] * 4
  assert out[1].outcome.val_score == 0.2
  assert out[1].outcome.train_seconds == pytest.approx(EPOCHS * STEPS * 1.0)
  assert stopped == {2: 0.42, 3: 0.47, 4: 0.48, 5: 0.6}
  assert out[2].outcome.reason == ("not trained to the end (cheap first: stopped by halving among the "
                                   "costly candidates going on (ahead of the cheap candidates' best final "
                                   "score 0.5)): 4 epochs scored 0.42")
  assert out[3].outcome.reason.endswith("0.5)): probe of 2 epochs scored 0.47")
  assert ("behind the cheap candidates' best final score 0.5): probe of 2 epochs scored 0.6"
          in out[5].outcome.reason)
  # Every pause on an epoch's end: the jobs are keyed as the full run's.
  assert all(j.schedule is None for j in run.jobs)


def test_with_eta_and_nothing_cheap_the_schedule_is_halving_after_the_probe():
  run = Scripted([1.0] * 4, [lambda e, v=v: v / e for v in (4.0, 3.0, 2.0, 1.0)])
  out, stopped = cheap_first(candidates(4), CheapFirst(probe_steps=50, eta=4), EPOCHS, STEPS, seed=0,
                             run=run)
  # A probe of 5 epochs times 4 reaches the end: no rung between, the best quarter (1) to the end.
  assert run.calls == [[(i, 5.0, None) for i in range(4)], [(3, None, 5.0)]]
  assert [r.outcome.status for r in out] == ["estimated"] * 3 + ["trained"]
  assert stopped == {0: 0.8, 1: 0.6, 2: 0.4}
  assert all("stopped by halving among the costly candidates going on): probe of 5 epochs" in r.outcome.reason
             for r in out[:3])
  # Without eta every one of them trains to the end, as the paper's search.
  run = Scripted([1.0] * 4, [lambda e, v=v: v / e for v in (4.0, 3.0, 2.0, 1.0)])
  out, _ = cheap_first(candidates(4), CheapFirst(probe_steps=50), EPOCHS, STEPS, seed=0, run=run)
  assert run.calls[1] == [(i, None, 5.0) for i in range(4)]
  assert all(r.outcome.status == "trained" for r in out)


def test_a_rung_inside_an_epoch_keys_the_candidates_by_the_schedule():
  schedule = CheapFirst(probe_steps=5, eta=3)  # half an epoch, then 1.5 epochs
  run = Scripted([1.0, 1.0], [flat(0.5), flat(0.4)])
  cheap_first(candidates(2), schedule, EPOCHS, STEPS, seed=0, run=run)
  # Nothing cheap (equal costs): the better one goes on, to 1.5 epochs, 4.5, 13.5 and the end.
  assert run.calls == [[(0, 0.5, None), (1, 0.5, None)], [(1, 1.5, 0.5)], [(1, 4.5, 1.5)], [(1, 13.5, 4.5)],
                       [(1, None, 13.5)]]
  assert {j.schedule for j in run.jobs} == {schedule}  # keyed by every field (Checkpoints.key)
  assert repr(schedule) == "CheapFirst(probe_steps=5, cheap=0.2, keep=3, eta=3, keep_at=2.0, free=False)"
  # The settings name every field, at its default too (a run directory's layout version 2).
  assert jsonable(CheapFirst()) == {"probe_steps": 80, "cheap": 0.2, "keep": 3, "eta": None, "keep_at": 2.0,
                                    "free": False}
  assert CheapFirst().keep_at == 2
  assert jsonable(schedule) == {"probe_steps": 5, "cheap": 0.2, "keep": 3, "eta": 3, "keep_at": 2.0,
                                "free": False}


def test_keep_at_judges_the_cheap_candidates_after_more_epochs_than_the_probe():
  # GS2's shortest paths at 2% in miniature: a frozen program probes best and ends worst; a fresh head
  # starts behind and learns.
  cost = [0.01, 0.01, 0.01, 0.01, 1.0]
  score = [lambda e: {1: 0.50, 4: 0.45}.get(e, 0.44),   # cheap, frozen: best probe, flat after
           lambda e: {1: 0.90, 4: 0.30}.get(e, 0.10),   # cheap, fresh head: worst probe, best later
           lambda e: {1: 0.60, 4: 0.50}.get(e, 0.40),   # cheap
           lambda e: {1: 0.70, 4: 0.80}.get(e, 0.70),   # cheap, gets worse
           flat(0.95)]                                   # costly, behind the bar
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(5), CheapFirst(probe_steps=10, keep=2, keep_at=4), EPOCHS, STEPS,
                             seed=0, run=run)
  # Probe 1 epoch; every cheap one on to 4 epochs; the best 2 there (1 and 0) to the end; the costly one
  # is behind the bar (0.10).
  assert run.calls == [[(i, 1.0, None) for i in range(5)], [(i, 4.0, 1.0) for i in range(4)],
                       [(0, None, 4.0), (1, None, 4.0)]]
  assert [r.outcome.status for r in out] == ["trained", "trained", "estimated", "estimated", "estimated"]
  assert out[1].outcome.val_score == 0.10 and out[0].outcome.val_score == 0.44
  assert stopped == {2: 0.50, 3: 0.80, 4: 0.95}
  assert out[2].outcome.reason == ("not trained to the end (cheap first: its score after 4 epochs not among "
                                   "the 2 best of the cheap candidates): 4 epochs scored 0.5")
  assert ("behind the cheap candidates' best final score 0.1): probe of 1 epochs scored 0.95"
          in out[4].outcome.reason)
  # The same candidates judged by the probe keep 0 and 2, and lose candidate 1.
  run = Scripted(cost, score)
  out, _ = cheap_first(candidates(5), CheapFirst(probe_steps=10, keep=2, keep_at=None), EPOCHS, STEPS, seed=0,
                       run=run)
  assert run.calls[1] == [(0, None, 1.0), (2, None, 1.0)] and out[1].outcome.status == "estimated"
  # A resumed candidate's training seconds are its probe's, its look's and the rest's: the whole run's.
  run = Scripted(cost, score)
  out, _ = cheap_first(candidates(5), CheapFirst(probe_steps=10, keep=2, keep_at=4), EPOCHS, STEPS,
                       seed=0, run=run)
  assert out[1].outcome.train_seconds == pytest.approx(EPOCHS * STEPS * 0.01)
  assert all(j.schedule is None for j in run.jobs)  # every pause on an epoch's end


def test_free_cheap_are_those_whose_remaining_steps_cost_at_most_one_probe_of_the_costliest():
  # The costliest step costs 1.0, so a probe of 10 steps costs 10 s: 160 steps at 0.05 (8 s) are within
  # it, at 0.1 (16 s) not; a costly, finished, failed or unpriced candidate never.
  costs = [0.05, 0.1, 1.0, 0.01, 0.05, None]
  cheap = [True, True, False, True, True, False]
  finished = [False, False, False, True, False, False]
  scores = [0.5, 0.5, 0.5, 0.5, math.nan, 0.5]
  assert free_cheap(costs, cheap, finished, scores, [160] * 6, 10) == [0]
  assert free_cheap(costs, cheap, finished, scores, [200, 100, 0, 0, 0, 0], 10) == [0, 1]  # 10 s each
  assert free_cheap(costs, cheap, finished, scores, [201, 100, 0, 0, 0, 0], 10) == [1]
  assert free_cheap([None, None], [True, True], [False, False], [0.5, 0.5], [1, 1], 10) == []


def test_free_trains_to_the_end_the_cheap_candidates_whose_rest_costs_less_than_a_probe():
  # CS1's count_digit(1) at 100% on the Xeon in miniature: a fresh head on frozen functions (candidate 1)
  # starts behind the kept one and ends ahead; its remaining 160 steps at 0.05 s cost 8 s, less than one
  # probe of the costly candidate (10 steps at 1.0 s). Candidate 2 ends better still but costs 16 s more.
  cost = [0.1, 0.05, 0.1, 1.0]
  score = [lambda e: {1: 0.40, 4: 0.30}.get(e, 0.30),
           lambda e: {1: 0.90, 4: 0.60}.get(e, 0.10),
           lambda e: {1: 0.95, 4: 0.70}.get(e, 0.05),
           flat(0.95)]
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(4), CheapFirst(probe_steps=10, keep=1, keep_at=4, free=True), EPOCHS,
                             STEPS, seed=0, run=run)
  assert run.calls == [[(i, 1.0, None) for i in range(4)], [(i, 4.0, 1.0) for i in range(3)],
                       [(0, None, 4.0), (1, None, 4.0)]]
  assert [r.outcome.status for r in out] == ["trained", "trained", "estimated", "estimated"]
  assert min((r.outcome.val_score, i) for i, r in enumerate(out)
             if r.outcome.status == "trained") == (0.10, 1)
  assert stopped == {2: 0.70, 3: 0.95}
  # Without it the keep alone goes on, and the bar (0.30) is the kept candidate's.
  run = Scripted(cost, score)
  out, stopped = cheap_first(candidates(4), CheapFirst(probe_steps=10, keep=1, keep_at=4), EPOCHS, STEPS,
                             seed=0, run=run)
  assert run.calls[2] == [(0, None, 4.0)] and out[1].outcome.status == "estimated" and stopped[1] == 0.60
  # Judged at the probe (no look), the remaining steps are 190: 9.5 s, still within the probe's 10 s.
  run = Scripted(cost, score)
  cheap_first(candidates(4), CheapFirst(probe_steps=10, keep=1, keep_at=None, free=True), EPOCHS, STEPS,
              seed=0, run=run)
  assert run.calls[1] == [(0, None, 1.0), (1, None, 1.0)]


def test_the_look_lies_beyond_the_probe_at_most_at_the_end():
  assert look_epochs(3, 2.0, 0.5, 20) == 2.0
  assert look_epochs(3, 2.0, 2.0, 20) is None and look_epochs(3, 2.0, 3.0, 20) is None  # the probe judges
  assert look_epochs(3, 30.0, 0.5, 20) == 20      # every cheap candidate to the end
  assert look_epochs(None, 2.0, 0.5, 20) is None  # no keep: nothing to judge
  assert look_epochs(3, None, 0.5, 20) is None
  assert look_epochs(3, 2.0, 1.0, 1) is None      # the probe is the whole run


def test_keep_at_at_or_before_the_probe_or_at_the_end():
  cost = [0.01, 0.01, 0.01, 1.0]  # the costly one makes the others cheap
  score = [flat(0.5), lambda e: 0.9 if e < EPOCHS else 0.1, flat(0.7), flat(0.95)]
  # At or before the probe: the probe judges, as without keep_at.
  for at in (0.5, 1):
    run = Scripted(cost, score)
    cheap_first(candidates(4), CheapFirst(probe_steps=10, keep=1, keep_at=at), EPOCHS, STEPS, seed=0,
                run=run)
    assert run.calls[1:] == [[(0, None, 1.0)]]
  # At the end or beyond: every cheap one trains to the end, as keep=None.
  for at in (EPOCHS, EPOCHS + 5):
    run = Scripted(cost, score)
    out, stopped = cheap_first(candidates(4), CheapFirst(probe_steps=10, keep=1, keep_at=at), EPOCHS, STEPS,
                               seed=0, run=run)
    assert run.calls[1:] == [[(0, None, 1.0), (1, None, 1.0), (2, None, 1.0)]] and stopped == {3: 0.95}
  # A look inside an epoch pauses there and keys the jobs by the schedule.
  schedule = CheapFirst(probe_steps=10, keep=1, keep_at=2.5)
  run = Scripted(cost, score)
  cheap_first(candidates(4), schedule, EPOCHS, STEPS, seed=0, run=run)
  assert run.calls[1] == [(i, 2.5, 1.0) for i in range(3)]
  assert {j.schedule for j in run.jobs} == {schedule}
  assert jsonable(schedule) == {"probe_steps": 10, "cheap": 0.2, "keep": 1, "eta": None, "keep_at": 2.5,
                                "free": False}


def test_out_of_time_before_the_look_trains_nothing_more():
  run = Scripted([0.01, 0.01, 1.0], [flat(0.5), flat(0.4), flat(0.3)])
  out, stopped = cheap_first(candidates(3), CheapFirst(probe_steps=10, keep=1, keep_at=4), EPOCHS, STEPS,
                             seed=0, run=run, out_of_time=lambda: True)
  assert len(run.calls) == 1 and stopped == {0: 0.5, 1: 0.4, 2: 0.3}
  assert all(r.outcome.status == "estimated" for r in out)


def test_the_job_indices_follow_first_index_and_no_candidate_is_no_call():
  run = Scripted([1.0] * 8, [flat(0.5)] * 8)
  out, _ = cheap_first(candidates(2), CheapFirst(), EPOCHS, STEPS, seed=0, run=run, first_index=6)
  assert [r.job.index for r in out] == [6, 7]
  assert cheap_first([], CheapFirst(), EPOCHS, STEPS, seed=0, run=run) == ([], {})


def test_bad_schedules_are_refused():
  with pytest.raises(ValueError, match="probe_steps"):
    CheapFirst(probe_steps=0)
  with pytest.raises(ValueError, match="cheap"):
    CheapFirst(cheap=1.0)
  with pytest.raises(ValueError, match="keep must be >= 1 or None, got 0"):
    CheapFirst(keep=0)
  with pytest.raises(ValueError, match="eta must be >= 2 or None, got 1"):
    CheapFirst(eta=1)
  with pytest.raises(ValueError, match="keep_at must be a positive number of epochs or None, got 0"):
    CheapFirst(keep_at=0)
  with pytest.raises(ValueError, match="top-down"):
    SynthesisConfig(strategy=Evolutionary(), budget=Budget(schedule=CheapFirst()))


def _synth(cs1, schedule):  # noqa: F811
  """CS1's count_digit at tiny sizes (90 training lists in batches of 30, 3 epochs), 5 candidates."""
  task, library = cs1
  config = SynthesisConfig(budget=Budget(candidates=5, schedule=schedule), space=SearchSpace(order="authors"),
                           module_config=TINY,
                           tune_configs={task.spec.kind: TuneConfig(epochs=3, batch_size=30)})
  return synthesize(task, library, config, seed=0)


@pytest.mark.slow
def test_a_candidate_trained_to_the_end_has_the_scores_of_training_every_candidate(cs1, monkeypatch):  # noqa: F811
  """Real training on CS1's count_digit (tiny sizes), a library recognizer to put fresh heads on: the
  probe pauses after an epoch and the run resumes where it paused."""
  full = {x.order: x for x in _synth(cs1, None).entries}
  # The probe's prices are measured seconds, and at these sizes the candidates' steps cost about the same:
  # which of them fall within 1% of the costliest depends on the machine (CI's once priced two costly).
  # Priced here instead: the last candidate costs twice the others, so with cheap=0.5 the first four are
  # cheap and go on (keep=None), and the last goes on only if its probe is ahead of their best final score.
  monkeypatch.setattr(cheap_first_module, "step_costs",
                      lambda results: [2.0 if r.job.index == 4 else 1.0 for r in results])
  led = _synth(cs1, CheapFirst(probe_steps=3, cheap=0.5, keep=None))
  assert len(led.entries) == 5 and led.candidates_trained == 5
  trained = [x for x in led.entries if x.outcome.status == "trained"]
  bar = min(full[o].val_score for o in range(4))
  ahead = full[4].val_history[0] < bar
  assert sorted(x.order for x in trained) == [0, 1, 2, 3] + ([4] if ahead else [])
  assert led.entries[0] is trained[0]
  for x in trained:
    assert x.outcome.epochs_run == full[x.order].outcome.epochs_run
    assert x.val_score == pytest.approx(full[x.order].val_score, rel=1e-5)
    assert x.test_score == pytest.approx(full[x.order].test_score, rel=1e-5)
    assert x.val_history == pytest.approx(full[x.order].val_history, rel=1e-5)
  for x in led.entries:
    if x.outcome.status == "estimated":
      assert x.order == 4
      assert x.estimate_method == "probe" and x.estimate_epochs == 1 and x.outcome.epochs_run == 0
      # Its probe is the full run's first epoch, and behind the cheap candidates' best final score.
      assert x.estimate == pytest.approx(full[x.order].val_history[0], rel=1e-5)
      assert x.estimate >= bar


@pytest.mark.slow
def test_with_halving_a_candidate_trained_to_the_end_has_the_scores_of_training_every_candidate(cs1):  # noqa: F811
  """As above with halving's rungs (eta 2): a costly candidate that goes on pauses after its probe (one
  epoch) and at two epochs, and resumes each time where it paused."""
  full = {x.order: x for x in _synth(cs1, None).entries}
  # Nothing cheap (cheap=0.01): every candidate is costly and the bar is infinite, so the schedule is
  # halving with the probe as its first rung: 5 probed, 2 to two epochs, 1 to the end.
  led = _synth(cs1, CheapFirst(probe_steps=3, cheap=0.01, keep=None, eta=2))
  trained = [x for x in led.entries if x.outcome.status == "trained"]
  assert len(led.entries) == 5 and len(trained) == 1 and led.entries[0] is trained[0]
  x = trained[0]
  assert x.val_history == pytest.approx(full[x.order].val_history, rel=1e-5)
  assert x.test_score == pytest.approx(full[x.order].test_score, rel=1e-5)
  # The one trained to the end was the best after two epochs among the two best after one.
  after_one = sorted(full, key=lambda o: (full[o].val_history[0], o))[:2]
  assert x.order == min(after_one, key=lambda o: (min(full[o].val_history[:2]), o))
  estimated = {y.order: y for y in led.entries if y.outcome.status == "estimated"}
  assert len(estimated) == 4
  for o, y in estimated.items():
    reached = 2 if o in after_one else 1
    assert y.estimate == pytest.approx(min(full[o].val_history[:reached]), rel=1e-5)
