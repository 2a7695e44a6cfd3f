"""The schedule protocol (`hx.synth.schedules`): one `run` signature, text that parses to every schedule and
back, one-line errors, `ToEnd`'s batches, and `Budget`'s settings as runs saved them."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.compile.fitting import Outcome
from hx.lang.parser import parse
from hx.synth.executors import Job, JobResult
from hx.synth.jsonfiles import jsonable
from hx.synth.schedules import (
  SCHEDULES,
  CheapFirst,
  Estimate,
  Halving,
  Schedule,
  ToEnd,
  parse_schedule,
  schedule_keys,
  schedule_text,
)
from hx.synth.space import Candidate
from hx.synth.synthesize import Budget


def candidates(n):
  return [Candidate(parse(f"compose(nn_1, nn_{i + 2})"), (), 1.0, ("c", i)) for i in range(n)]


class Recorder:
  """A `Train` that records the job indices of each call and scores candidate i as i."""

  def __init__(self):
    self.calls: list[list[int]] = []

  def __call__(self, context, jobs):
    self.calls.append([j.index for j in jobs])
    return [JobResult(job=j, outcome=Outcome(status="trained", reason=None, val_score=float(j.index),
                                             test_score=0.0, epochs_run=1))
            for j in reversed(jobs)]  # an executor may return them in any order


def test_every_schedule_has_the_protocols_run():
  protocol = inspect.signature(Schedule.run)
  assert set(SCHEDULES) == {"to_end", "halving", "cheap_first", "estimate"}
  for name, cls in SCHEDULES.items():
    assert cls.NAME == name and inspect.signature(cls.run) == protocol, name
    assert cls() == parse_schedule(name)  # the name alone: the defaults


def test_text_names_each_field_its_default_left_out():
  assert parse_schedule("halving:eta=4,first=2,equal=epochs,reference=geomean,val=200") == Halving(
      first=2.0, eta=4, val_examples=200)
  assert parse_schedule(" cheap_first : probe=40, keep=none, keep_at=none, free=true, eta=2 ") == CheapFirst(
      probe_steps=40, keep=None, keep_at=None, free=True, eta=2)
  assert parse_schedule("estimate:method=head,keep=none,val=none,ridge=0.01") == Estimate(
      method="head", keep=None, val_examples=None, ridge=0.01)
  assert schedule_text(Halving(eta=2, val_examples=200)) == "halving:eta=2,val=200"
  assert schedule_text(CheapFirst(probe_steps=40, free=True)) == "cheap_first:probe=40,free=true"
  assert schedule_text(None) == schedule_text(ToEnd()) == "to_end"
  assert list(schedule_keys(Halving)) == ["first", "eta", "min_keep", "equal", "price", "reference", "val"]
  with pytest.raises(ValueError, match="is not a schedule of hx.synth.schedules"):
    schedule_text("halving")


@settings(max_examples=60, deadline=None)
@given(st.one_of(
    st.builds(Halving, first=st.sampled_from([0.5, 1.0, 2.0, 3.25]), eta=st.integers(2, 6),
              min_keep=st.integers(1, 3), equal=st.sampled_from(["epochs", "time"]),
              price=st.sampled_from([0.05, 0.1, 0.5]), reference=st.sampled_from(["geomean", "median"]),
              val_examples=st.one_of(st.none(), st.integers(1, 5000))),
    st.builds(CheapFirst, probe_steps=st.integers(1, 500), cheap=st.sampled_from([0.1, 0.2, 0.9]),
              keep=st.one_of(st.none(), st.integers(1, 9)), eta=st.one_of(st.none(), st.integers(2, 5)),
              keep_at=st.one_of(st.none(), st.sampled_from([0.5, 2.0, 3.0])), free=st.booleans()),
    st.builds(Estimate, keep=st.one_of(st.none(), st.integers(1, 9)),
              method=st.sampled_from(["short", "head"]), share=st.sampled_from([0.05, 0.1, 1.0]),
              max_steps=st.integers(1, 1000),
              val_examples=st.one_of(st.none(), st.integers(1, 999)), ridge=st.sampled_from([0.0, 1e-3]),
              logistic_steps=st.integers(0, 9)),
    st.just(ToEnd())))
def test_a_schedule_as_text_reads_back_as_itself(schedule):
  text = schedule_text(schedule)
  assert parse_schedule(text) == schedule and repr(parse_schedule(text)) == repr(schedule)


@pytest.mark.parametrize("text, message", [
    ("halvin", "unknown schedule 'halvin'; the schedules are to_end, halving, cheap_first, estimate"),
    ("", "unknown schedule ''; the schedules are to_end, halving, cheap_first, estimate"),
    ("halving:etaa=2", "halving: unknown key 'etaa'; its keys are first, eta, min_keep, equal, price, "
                       "reference, val"),
    ("halving:val_examples=2", "halving: unknown key 'val_examples'; its keys are first, eta, min_keep, "
                               "equal, price, reference, val"),
    ("halving:eta", "halving: 'eta' is not KEY=VALUE; its keys are"),
    ("halving:eta=2,eta=3", "halving: eta is given twice"),
    ("halving:eta=2.5", "halving: eta='2.5' is not an integer"),
    ("halving:val=lots", "halving: val='lots' is not an integer or none"),
    ("halving:equal=size", "halving:equal=size: Halving.equal must be one of epochs, time, got 'size'"),
    ("cheap_first:free=maybe", "cheap_first: free='maybe' is not true or false"),
    ("cheap_first:keep=0", "cheap_first:keep=0: CheapFirst.keep must be >= 1 or None, got 0"),
    ("estimate:method=long", "estimate:method=long: Estimate.method must be one of short, head, got 'long'"),
    ("to_end:eta=2", "to_end: unknown key 'eta'; it takes no keys"),
])
def test_bad_text_is_one_line_naming_what_and_what_would_do(text, message):
  with pytest.raises(ValueError) as err:
    parse_schedule(text)
  assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_budget_settings_are_as_runs_saved_them():
  """A run resumes where its settings.json equals what the code writes: `Budget`'s JSON form for each
  schedule is the one written before schedules shared a protocol (`ToEnd` is the None it was), with every
  field (a run directory's layout version 2; version 1 left CheapFirst's eta, keep_at and free out at
  their defaults, `hx.synth.run_directory.VERSION_1_OMITTED`)."""
  base = {"candidates": 20, "enumerated": None, "seconds": None}
  halving = {"first": 2.0, "eta": 4, "min_keep": 1, "equal": "epochs", "price": 0.1, "reference": "geomean",
             "val_examples": None}
  cheap_first = {"probe_steps": 80, "cheap": 0.2, "keep": 3, "eta": None, "keep_at": 2.0, "free": False}
  expected = [
      (Budget(), {**base, "schedule": None}),
      (Budget(schedule=ToEnd()), {**base, "schedule": None}),
      (Budget(schedule=parse_schedule("to_end")), {**base, "schedule": None}),
      (Budget(candidates=8, seconds=60.0, schedule=Halving()), {**base, "candidates": 8, "seconds": 60.0,
                                                               "schedule": halving}),
      (Budget(schedule=parse_schedule("halving:eta=2,equal=time,val=300")),
       {**base, "schedule": {**halving, "eta": 2, "equal": "time", "val_examples": 300}}),
      (Budget(schedule=CheapFirst()), {**base, "schedule": cheap_first}),
      (Budget(schedule=parse_schedule("cheap_first:probe=1")), {**base, "schedule": {**cheap_first,
                                                                                     "probe_steps": 1}}),
      (Budget(schedule=CheapFirst(eta=4, keep_at=None, free=True)),
       {**base, "schedule": {"probe_steps": 80, "cheap": 0.2, "keep": 3, "eta": 4, "keep_at": None,
                             "free": True}}),
      (Budget(schedule=Estimate()),
       {**base, "schedule": {"keep": 4, "method": "short", "share": 0.1, "max_steps": 300,
                             "val_examples": 300, "ridge": 0.001, "logistic_steps": 8}}),
  ]
  for budget, json_form in expected:
    assert jsonable(budget) == json_form, budget
  assert Budget(schedule=ToEnd()) == Budget() and Budget().schedule is None
  assert Budget().training_schedule == ToEnd() and Budget(schedule=Halving()).training_schedule == Halving()


def test_a_budget_refuses_what_is_no_schedule():
  with pytest.raises(ValueError, match="Budget.schedule must be a schedule of hx.synth.schedules"):
    Budget(schedule="halving")


def test_to_end_trains_in_batches_checking_the_time_after_each_full_one():
  # batch None: every candidate in one call, the time not checked.
  train = Recorder()
  got = ToEnd().run(candidates(5), None, 0, train, lambda: True, first_index=3)
  assert train.calls == [[3, 4, 5, 6, 7]]
  assert [r.job.index for r in got.results] == [3, 4, 5, 6, 7] and got.estimates == {}
  # Batches of 2: the candidates' order, the time checked after each full batch.
  train = Recorder()
  assert len(ToEnd().run(candidates(5), None, 0, train, batch=2).results) == 5
  assert train.calls == [[0, 1], [2, 3], [4]]
  train, checks = Recorder(), []
  got = ToEnd().run(candidates(5), None, 0, train, lambda: checks.append(1) or len(checks) >= 2, batch=2)
  assert train.calls == [[0, 1], [2, 3]]
  assert [r.outcome.val_score for r in got.results] == [0.0, 1.0, 2.0, 3.0]
  # The last batch, short of full, is not started once the time is up.
  train = Recorder()
  assert ToEnd().run(candidates(3), None, 0, train, lambda: True, batch=2).results[-1].job.index == 1
  assert train.calls == [[0, 1]]


def test_to_end_takes_candidates_only_as_it_trains_them():
  taken = []

  def search():
    for c in candidates(6):
      taken.append(c)
      yield c

  train = Recorder()
  ToEnd().run(search(), None, 0, train, lambda: True, batch=2)
  assert len(taken) == 2  # a search under a time budget enumerates no candidate beyond those trained
  train = Recorder()
  assert ToEnd().run(iter(()), None, 0, train).results == () and train.calls == []


def test_to_end_jobs_are_the_plain_ones_seeded_as_every_schedule_seeds_them():
  from hx.synth.jobs import job_seed

  train = Recorder()
  seen: list[Job] = []
  ToEnd().run(candidates(2), None, 7, lambda ctx, jobs: seen.extend(jobs) or train(ctx, jobs))
  assert [(j.seed, j.until, j.resume, j.schedule) for j in seen] == [
      (job_seed(7, c), None, None, None) for c in candidates(2)]
