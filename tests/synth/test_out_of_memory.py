"""A candidate that runs out of memory (XLA's RESOURCE_EXHAUSTED, a host allocation's MemoryError) is
recorded as failed with the reason, and the search goes on to the next candidate; a task none of whose
candidates fits is one warning line."""

import logging

import jax
import pytest

import hx.compile.fitting as fitting
import hx.synth.jobs as jobs
from hx.compile import TuneConfig
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.executors import Local
from hx.synth.synthesize import synthesize
from tests.synth.test_synthesize import TINY, sum_task

TUNE = TuneConfig(epochs=2, batch_size=50)


def _config(candidates: int) -> SynthesisConfig:
  return SynthesisConfig(budget=Budget(candidates=candidates), module_config=TINY,
                         tune_configs={"sum_numbers": TUNE})


def _exhausted():
  return jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 "
                                    "bytes.\nBufferAssignment OOM Debugging.")


def _running_out(monkeypatch, which, error):
  """Makes the candidates whose training is the `which`-th (1-based; all: None) raise `error()`; returns the
  programs in the order they were trained."""
  real, calls = jobs.train_program, []

  def train_program(program, *args, **kwargs):
    calls.append(str(program))
    if which is None or len(calls) == which:
      raise error()
    return real(program, *args, **kwargs)
  monkeypatch.setattr(jobs, "train_program", train_program)
  return calls


@pytest.mark.parametrize("error, reason", [
    (_exhausted, "out of memory (JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                 "17179869184 bytes.)"),
    (MemoryError, "out of memory (MemoryError: a host allocation failed)"),
])
def test_a_candidate_out_of_memory_is_failed_with_its_reason_and_the_search_goes_on(monkeypatch, error,
                                                                                    reason):
  calls = _running_out(monkeypatch, 2, error)
  r = synthesize(sum_task(n=200), None, _config(3), seed=0, executor=Local())
  assert len(calls) == 3 and len(r.entries) == 3
  failed = [x for x in r.entries if x.outcome.status == "failed"]
  assert [(str(x.program), x.outcome.reason) for x in failed] == [(calls[1], reason)]
  assert r.entries[-1] is failed[0]  # ranked below every trained candidate
  assert r.best.outcome.status == "trained" and str(r.best.program) != calls[1]


def test_a_task_no_candidate_of_which_fits_is_one_line(monkeypatch, caplog):
  _running_out(monkeypatch, None, _exhausted)
  with caplog.at_level(logging.WARNING):
    r = synthesize(sum_task(n=200), None, _config(2), seed=0, executor=Local())
  assert [x.outcome.status for x in r.entries] == ["failed", "failed"]
  (line,) = [m for m in caplog.messages if "cannot fit" in m]
  assert line.startswith("sum_numbers: every candidate (2) ran out of memory (JaxRuntimeError: "
                         "RESOURCE_EXHAUSTED") and "\n" not in line, line
  assert len(r.library) == 0
  with pytest.raises(ValueError, match="no candidate of sum_numbers trained successfully"):
    _ = r.best


def test_fit_gives_a_failed_outcome_for_a_model_out_of_memory_and_raises_other_errors(monkeypatch):
  def exhausted(*args, **kwargs):
    raise _exhausted()
  monkeypatch.setattr(fitting, "train", exhausted)
  outcome = fitting.fit(None, None, seed=0)
  assert outcome.status == "failed" and outcome.reason.startswith("out of memory (JaxRuntimeError: ")

  def broken(*args, **kwargs):
    raise jax.errors.JaxRuntimeError("INTERNAL: something else")
  monkeypatch.setattr(fitting, "train", broken)
  with pytest.raises(jax.errors.JaxRuntimeError, match="INTERNAL"):
    fitting.fit(None, None, seed=0)
