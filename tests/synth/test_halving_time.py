"""Successive halving with rungs of equal time (`Halving(equal="time")`).

The schedule's logic runs on a scripted trainer (each candidate's step cost and score fixed), so what
each candidate is asked to train is exact; one synthesis checks that real training reports the steps
the costs are measured from.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from hx.compile.fitting import Outcome, Prepared
from hx.lang.parser import parse
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import Job, JobResult, Local
from hx.synth.schedules.halving import Halving, step_shares, successive_halving
from hx.synth.space import Candidate
from hx.synth.synthesize import synthesize
from hx.synth.topdown import enumerate_programs
from tests.synth.test_parallel import CONFIG
from tests.synth.test_synthesize import TINY, sum_task

STEPS = 100  # steps per epoch of the scripted trainer


def candidates(n):
  return [Candidate(parse(f"compose(nn_1, nn_{i + 2})"), (), 1.0, ("c", i)) for i in range(n)]


class Scripted:
  """Trains jobs by script: candidate i's step costs cost[i] seconds and its validation score after e
  epochs is score[i](e). Records the `until` each job was given."""

  def __init__(self, cost, score):
    self.cost, self.score = cost, score
    self.calls: list[list[tuple[int, float | None]]] = []

  def __call__(self, jobs: list[Job]) -> list[JobResult]:
    self.calls.append([(j.index, None if j.until is None else round(j.until, 6)) for j in jobs])
    out = []
    for j in jobs:
      start = 0.0 if j.resume is None else j.resume
      end = 1.0 if j.until is None else j.until
      steps = round((end - start) * STEPS)
      v = self.score[j.index](end)
      bad = math.isnan(v)  # a candidate whose loss diverged: failed, nothing to resume
      out.append(JobResult(job=j, outcome=Outcome(status="failed" if bad else "trained",
                           reason="nan" if bad else None,
                           val_score=v, test_score=None if j.until is not None or bad else 0.0,
                           variables=None, steps_run=round(end * STEPS),
                           train_seconds=steps * self.cost[j.index],
                           state=None if j.until is None or bad else end)))
    return out


def result(cost, steps, ok=True):
  return JobResult(job=None, outcome=Outcome(status="trained" if ok else "failed", reason=None,
                   val_score=1.0 if ok else math.nan, test_score=None, variables=None,
                   steps_run=steps, train_seconds=cost * steps))


def test_step_shares_under_the_median_reference():
  shares = step_shares([result(0.01, 10), result(0.02, 10), result(0.5, 10), None, result(1.0, 0),
                        result(0.04, 10, ok=False)], "median")
  # Median of 0.01, 0.02, 0.5 is 0.02: the cheaper ones get all of a rung, the costly 0.02 / 0.5.
  assert shares == pytest.approx([1.0, 1.0, 0.04, 1.0, 1.0, 1.0])
  assert step_shares([result(0.01, 10), result(0.03, 10)], "median") == pytest.approx([1.0, 0.02 / 0.03])
  assert step_shares([None, None]) == [1.0, 1.0]


def test_the_geometric_mean_reference_lies_between_two_clusters_of_costs():
  cheap, costly = result(0.01, 10), result(0.25, 10)
  # Two cheap candidates and three costly ones: the median is a costly one's cost, so every candidate
  # gets all of a rung; the geometric mean, 0.01^0.4 * 0.25^0.6, gives the costly ones a share of it.
  assert step_shares([cheap, cheap, costly, costly, costly], "median") == pytest.approx([1.0] * 5)
  m = math.exp((2 * math.log(0.01) + 3 * math.log(0.25)) / 5)
  assert step_shares([cheap, cheap, costly, costly, costly]) == pytest.approx(
      [1.0, 1.0, m / 0.25, m / 0.25, m / 0.25])
  # One costly candidate more moves the median from the cheap cluster to the middle of the two (the
  # costly ones' share from 0.04 to 0.52); the geometric mean moves by 1.38 times, from 0.145 to 0.2.
  shares = step_shares([cheap, cheap, cheap, costly, costly], "geomean")
  more = step_shares([cheap, cheap, cheap, costly, costly, costly], "geomean")
  assert step_shares([cheap, cheap, cheap, costly, costly], "median")[-1] == pytest.approx(0.04)
  assert step_shares([cheap, cheap, cheap, costly, costly, costly], "median")[-1] == pytest.approx(0.52)
  assert shares[-1] == pytest.approx(0.01 ** 0.6 * 0.25 ** 0.4 / 0.25)
  assert more[-1] == pytest.approx(0.2) and more[-1] / shares[-1] == pytest.approx(1.38, abs=0.01)
  with pytest.raises(ValueError, match="reference"):
    step_shares([cheap], "mean")


def test_a_schedule_priced_at_the_geometric_mean_trains_the_costly_cluster_less():
  # Three candidates of a fresh network (25 times the cost a step) and two cheap ones: at the median
  # every candidate trains all of the first rung; at the geometric mean the costly ones train their share.
  cost = [0.01, 0.01, 0.25, 0.25, 0.25]
  score = [lambda e: 2.0 - e, lambda e: 2.5, lambda e: 3.0, lambda e: 3.1, lambda e: 3.2]
  trainer = Scripted(cost, score)
  schedule = Halving(first=0.1, eta=2, equal="time", reference="median")
  got, _ = successive_halving(candidates(5), schedule, 1, seed=0, run=trainer)
  assert trainer.calls[1] == [(0, 0.1), (1, 0.1), (2, 0.1), (3, 0.1), (4, 0.1)]
  # 10 steps of 0.25 s each (the cheap two go on).
  assert [r.outcome.train_seconds for r in got[2:]] == pytest.approx([2.5] * 3)
  trainer = Scripted(cost, score)
  schedule = Halving(first=0.1, eta=2, equal="time")
  assert schedule.reference == "geomean"  # the default
  got, _ = successive_halving(candidates(5), schedule, 1, seed=0, run=trainer)
  share = round(0.1 * math.exp((2 * math.log(0.01) + 3 * math.log(0.25)) / 5) / 0.25, 6)
  assert trainer.calls[1] == [(0, 0.1), (1, 0.1), (2, share), (3, share), (4, share)]
  assert got[0].outcome.test_score == 0.0
  # The pricing run's step and two more (to 0.0276 epochs of 100 steps), at 0.25 s.
  assert share == pytest.approx(0.0276, abs=1e-4)
  assert [r.outcome.train_seconds for r in got[2:]] == pytest.approx([0.75] * 3)


def test_equal_time_rungs_let_a_cheap_learner_overtake_a_costly_one():
  # Candidate 3 scores best at equal epochs, but its steps cost 25 times the others'; candidate 1 is
  # cheap and learns on.
  cost = [0.01, 0.01, 0.01, 0.25]
  score = [lambda e: 2.8, lambda e: 2.5 - 4.0 * e, lambda e: 2.6, lambda e: 2.0 - 2.0 * e]
  schedule = Halving(first=0.1, eta=2, equal="time", reference="median")
  assert [(r.until, r.keep) for r in schedule.rungs(1, 4)] == [(0.1, 4), (0.2, 2), (0.4, 1), (0.8, 1),
                                                                (1.0, 1)]
  trainer = Scripted(cost, score)
  got, _ = successive_halving(candidates(4), schedule, 1, seed=0, run=trainer)
  # Every candidate first trains a tenth of the first rung (0.01 epochs), which prices its steps: the
  # median 0.01 s, so candidate 3's share of a rung is 0.01 / 0.25. In the first rung that is 0.004
  # epochs, short of the 0.01 it has: it trains no further. The second rung keeps the best two, 3 (1.98)
  # and 1 (2.1); 3's share (0.008) again falls short, and candidate 1, at 1.7 after 0.2 epochs, goes on
  # alone to the end.
  assert trainer.calls == [[(0, 0.01), (1, 0.01), (2, 0.01), (3, 0.01)], [(0, 0.1), (1, 0.1), (2, 0.1)],
                           [(1, 0.2)], [(1, 0.4)], [(1, 0.8)], [(1, None)]]
  assert got[1].outcome.test_score == 0.0 and got[3].outcome.test_score is None
  assert got[3].outcome.val_score == pytest.approx(1.98)
  # The times of all its rungs add up: 100 steps at 0.01 s.
  assert got[1].outcome.train_seconds == pytest.approx(1.0)
  assert got[3].outcome.train_seconds == pytest.approx(0.25)

  # Under equal epochs there is no pricing, and candidate 3 trains every rung at full length (1.6 at
  # 0.2 epochs beats 1.7) and wins.
  trainer = Scripted(cost, score)
  got, _ = successive_halving(candidates(4), Halving(first=0.1, eta=2), 1, seed=0, run=trainer)
  assert trainer.calls == [[(0, 0.1), (1, 0.1), (2, 0.1), (3, 0.1)], [(3, 0.2), (1, 0.2)], [(3, 0.4)],
                           [(3, 0.8)], [(3, None)]]
  assert got[3].outcome.train_seconds == pytest.approx(25.0)


def test_equal_time_keeps_a_costly_candidate_no_one_beats():
  # What a costly candidate scored when it last trained stands: if no cheaper one gets below it, it
  # goes on, training its share of each rung once that reaches past where it paused, and to the end in
  # the last rung (the same under both).
  cost = [0.01, 0.01, 0.25]
  score = [lambda e: 2.8, lambda e: 2.5, lambda e: 2.0 - e]
  trainer = Scripted(cost, score)
  schedule = Halving(first=0.2, eta=2, equal="time", reference="median")
  got, _ = successive_halving(candidates(3), schedule, 1, seed=0, run=trainer)
  # Rungs (0.2, 3), (0.4, 1), (0.8, 1), (1, 1); candidate 2's share is 0.04: 0.008 epochs of the first
  # rung and 0.016 of the second (short of the 0.02 priced), 0.032 of the third.
  assert trainer.calls == [[(0, 0.02), (1, 0.02), (2, 0.02)], [(0, 0.2), (1, 0.2)], [(2, 0.032)],
                           [(2, None)]]
  assert got[2].outcome.test_score == 0.0


def test_a_candidate_that_fails_while_priced_is_not_trained_on():
  cost = [0.01, 0.01]
  score = [lambda e: math.nan, lambda e: 2.0]
  trainer = Scripted(cost, score)
  got, _ = successive_halving(candidates(2), Halving(first=0.5, eta=2, equal="time"), 1, seed=0, run=trainer)
  assert trainer.calls == [[(0, 0.05), (1, 0.05)], [(1, 0.5)], [(1, None)]]
  assert not got[0].outcome.ok and got[1].outcome.test_score == 0.0


def test_equal_time_is_checked():
  with pytest.raises(ValueError, match="Halving.equal"):
    Halving(equal="flops")
  with pytest.raises(ValueError, match="Halving.price"):
    Halving(equal="time", price=1.0)
  with pytest.raises(ValueError, match="Halving.reference"):
    Halving(equal="time", reference="mean")


@pytest.mark.slow
def test_a_synthesis_under_equal_time_prices_candidates_by_their_steps():
  config = dataclasses.replace(CONFIG, epochs=2)
  budget = Budget(candidates=4, schedule=Halving(first=0.5, eta=2, equal="time"))
  r = synthesize(sum_task(n=300), None, SynthesisConfig(budget=budget, module_config=TINY,
                                                        tune_configs={"sum_numbers": config}),
                 seed=1, executor=Local())
  assert r.candidates_trained == 4
  assert r.best.test_score is not None and r.best.outcome.epochs_run == config.epochs


def test_a_job_reports_the_steps_its_cost_is_priced_by():
  from hx.compile import TuneData
  from hx.synth.executors import TaskContext, job_seed, run_job
  from hx.synth.library import Library

  task = sum_task(n=300)  # 6 steps of 50 an epoch
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  context = TaskContext(Prepared(data, task.objective, dataclasses.replace(CONFIG, epochs=2)), Library(),
                        TINY)
  c = next(enumerate_programs(task.type, None, config=TINY, limit=1))
  job = Job(0, c, job_seed(0, c), until=0.5)
  paused = run_job(context, job)
  assert (paused.outcome.state is not None and paused.outcome.steps_run == 3
          and paused.outcome.train_seconds > 0)
  done = run_job(context, dataclasses.replace(job, until=None, resume=paused.outcome.state))
  assert done.outcome.state is None and done.outcome.steps_run == 12
  assert step_shares([paused, paused]) == [1.0, 1.0]


def test_a_schedules_repr_is_the_dataclasss_with_every_field():
  # No longer a key (a halved candidate's checkpoint is keyed by the schedule's canonical JSON,
  # hx.synth.jobs.Checkpoints.key): the dataclass's own repr, every field named.
  assert repr(Halving(first=0.5, eta=2)) == ("Halving(first=0.5, eta=2, min_keep=1, equal='epochs', "
                                             "price=0.1, reference='geomean', val_examples=None)")
