"""The cheap-first schedule (`hx.synth.cheap_first`).

Its logic runs on a scripted trainer (each candidate's step cost and scores fixed), so what each
candidate is asked to train, and when, is exact; one synthesis on real data checks that a candidate it
trains to the end has the very scores of training every candidate.
"""

from __future__ import annotations

import math

import pytest

from hx.compile import TuneConfig
from hx.lang.parser import parse
from hx.synth.cheap_first import CheapFirst, best_cheap, cheap_first, cheap_mask, going_on, probe_epochs
from hx.synth.executors import Job, JobResult
from hx.synth.jobs import step_costs
from hx.synth.space import Candidate, SearchSpace
from hx.synth.synthesize import Budget, synthesize
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

  def __call__(self, jobs: list[Job]) -> list[JobResult]:
    self.calls.append([(j.index, j.until, j.resume) for j in jobs])
    out = []
    for j in jobs:
      start = 0.0 if j.resume is None else j.resume
      end = EPOCHS if j.until is None else j.until
      v = self.score[j.index](end)
      bad = math.isnan(v)
      steps = round((end - start) * STEPS)
      out.append(JobResult(job=j, status="failed" if bad else "trained", reason="nan" if bad else None,
                           val_score=v, test_score=None if j.until is not None or bad else v + 0.01,
                           variables=None, steps_run=round(end * STEPS), epochs_run=round(end),
                           train_seconds=steps * self.cost[j.index], seconds=steps * self.cost[j.index],
                           state=None if j.until is None or bad else end))
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
  r = [JobResult(job=None, status="trained", reason=None, val_score=1.0, steps_run=10, train_seconds=t)
       for t in (0.1, 2.0, 10.0)]
  failed = JobResult(job=None, status="failed", reason="x", steps_run=10, train_seconds=100.0)
  unstepped = JobResult(job=None, status="trained", reason=None, val_score=1.0, steps_run=0,
                        train_seconds=0.0)
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
  assert [r.status for r in out] == ["trained", "estimated", "estimated", "trained", "estimated"]
  assert out[0].val_score == 0.6 and out[3].val_score == 0.2
  assert stopped == {1: 0.9, 2: 1.5, 4: 0.7}
  assert "not among the 1 best of the cheap candidates" in out[1].reason
  assert "behind the cheap candidates' best final score 0.6" in out[4].reason
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
  assert [r.status for r in out] == ["trained", "trained", "estimated", "failed", "trained"]
  assert [r.val_score for r in out][:2] == [0.5, 0.3] and out[4].val_score == 0.55
  assert stopped == {2: 0.6}
  assert math.isnan(out[2].val_score) and out[2].test_score is None
  assert "behind the cheap candidates' best final score 0.5" in out[2].reason
  # A resumed candidate's times are its probe's and its run's.
  assert out[1].train_seconds == pytest.approx(EPOCHS * STEPS * 1.0)
  assert out[0].train_seconds == pytest.approx(EPOCHS * STEPS * 0.01)
  assert all(r.state is None for r in out) and [r.job.index for r in out] == [0, 1, 2, 3, 4]


def test_a_probe_inside_an_epoch_pauses_there_and_keys_the_candidates_by_the_schedule():
  schedule = CheapFirst(probe_steps=15)
  jobs = []
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.4)])

  def recording(batch):
    jobs.extend(batch)
    return run(batch)

  out, stopped = cheap_first(candidates(2), schedule, EPOCHS, STEPS, seed=0, run=recording)
  assert run.calls == [[(0, 1.5, None), (1, 1.5, None)], [(0, None, 1.5)], [(1, None, 1.5)]]
  assert {j.schedule for j in jobs} == {repr(schedule)} and stopped == {}
  # On an epoch's end the jobs are the full run's (no schedule in their checkpoint key).
  jobs.clear()
  cheap_first(candidates(2), CheapFirst(probe_steps=20), EPOCHS, STEPS, seed=0, run=recording)
  assert {j.schedule for j in jobs} == {None}


def test_a_probe_as_long_as_the_run_trains_every_candidate_to_the_end_once():
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.9)])
  out, stopped = cheap_first(candidates(2), CheapFirst(probe_steps=EPOCHS * STEPS), EPOCHS, STEPS, seed=0,
                             run=run)
  assert run.calls == [[(0, None, None), (1, None, None)]]
  assert [r.status for r in out] == ["trained", "trained"] and stopped == {}
  assert out[1].test_score == pytest.approx(0.91)


def test_out_of_time_after_the_probe_trains_nothing_more():
  run = Scripted([0.01, 1.0], [flat(0.5), flat(0.4)])
  out, stopped = cheap_first(candidates(2), CheapFirst(probe_steps=10), EPOCHS, STEPS, seed=0, run=run,
                             out_of_time=lambda: True)
  assert len(run.calls) == 1
  assert [r.status for r in out] == ["estimated", "estimated"] and stopped == {0: 0.5, 1: 0.4}
  assert all("ran out of time" in r.reason for r in out)


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
  with pytest.raises(ValueError, match="top-down"):
    synthesize(None, None, strategy="evolutionary", budget=Budget(schedule=CheapFirst()))


@pytest.mark.slow
def test_a_candidate_trained_to_the_end_has_the_scores_of_training_every_candidate(cs1):  # noqa: F811
  """Real training on CS1's count_digit (tiny sizes), a library recogniser to put fresh heads on: the
  probe pauses after an epoch and the run resumes where it paused."""
  task, library = cs1

  def synth(schedule):
    return synthesize(task, library, budget=Budget(candidates=5, schedule=schedule), module_config=TINY,
                      tune_config=TuneConfig(epochs=3, batch_size=30), seed=0,
                      space=SearchSpace(order="authors"))

  full = {x.order: x for x in synth(None).ranked}
  # 90 lists in batches of 30: a probe of one epoch of 3. At these sizes no candidate's steps cost a
  # fifth of another's: with cheap=0.99 all but the costliest are cheap, and it goes on only if ahead.
  led = synth(CheapFirst(probe_steps=3, cheap=0.99, keep=None))
  assert len(led.ranked) == 5 and led.candidates_trained == 5
  trained = [x for x in led.ranked if x.status == "trained"]
  assert len(trained) >= 4 and led.ranked[0] is trained[0]
  for x in trained:
    assert x.epochs_run == full[x.order].epochs_run
    assert x.val_score == pytest.approx(full[x.order].val_score, rel=1e-5)
    assert x.test_score == pytest.approx(full[x.order].test_score, rel=1e-5)
    assert x.val_history == pytest.approx(full[x.order].val_history, rel=1e-5)
  for x in led.ranked:
    if x.status == "estimated":
      assert x.estimate_method == "probe" and x.estimate_epochs == 1 and x.epochs_run == 0
      # Its probe is the full run's first epoch, and behind a trained candidate's final score.
      assert x.estimate == pytest.approx(full[x.order].val_history[0], rel=1e-5)
      assert x.estimate >= min(t.val_score for t in trained)
