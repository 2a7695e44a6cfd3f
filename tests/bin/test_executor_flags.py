"""--executor and the halving flags (hx.bin.executor_flags), without starting any worker."""

import pytest
from absl import flags
from absl.testing import flagsaver

from hx.bin import executor_flags
from hx.bin.checks import FlagError
from hx.synth.executors import LocalExecutor
from hx.synth.halving import Halving
from hx.synth.parallel import ProcessExecutor


def setup_module():
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()


def test_executor_from_flags():
  with flagsaver.flagsaver(executor="local"):
    assert isinstance(executor_flags.executor_from_flags(), LocalExecutor)
  with flagsaver.flagsaver(executor="processes", workers=3, threads=1, max_retries=1):
    pool = executor_flags.executor_from_flags()
    assert isinstance(pool, ProcessExecutor) and (pool.workers, pool.threads, pool.max_retries) == (3, 1, 1)
    assert not pool.lend
  with flagsaver.flagsaver(executor="processes", workers=2, threads=1, lend=True):
    assert executor_flags.executor_from_flags().lend
  with flagsaver.flagsaver(executor="auto"):
    chosen = executor_flags.executor_from_flags()
    assert isinstance(chosen, (LocalExecutor, ProcessExecutor))  # by the machine's backend and cores
    chosen.close()


def test_schedule_from_flags():
  assert executor_flags.schedule_from_flags() is None
  with flagsaver.flagsaver(halving=True, halving_first=0.5, halving_eta=2):
    assert executor_flags.schedule_from_flags() == Halving(first=0.5, eta=2)
  # The flags' defaults are Halving's own (first 2 epochs, eta 4).
  with flagsaver.flagsaver(halving=True):
    assert executor_flags.schedule_from_flags() == Halving() == Halving(first=2.0, eta=4)
  with flagsaver.flagsaver(halving=True, halving_val=300):
    assert executor_flags.schedule_from_flags() == Halving(val_examples=300)
  with flagsaver.flagsaver(halving=True, halving_val=0):
    with pytest.raises(FlagError, match="--halving_val must be a positive number"):
      executor_flags.schedule_from_flags()


def test_cheap_first_from_flags():
  from hx.synth.cheap_first import CheapFirst

  with flagsaver.flagsaver(cheap_first=40):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40) == CheapFirst(40, keep=3)
  with flagsaver.flagsaver(cheap_first=0):
    with pytest.raises(FlagError, match="--cheap_first must be a positive number of optimiser steps, got 0"):
      executor_flags.schedule_from_flags()
  # With --halving the costly candidates go on in halving rungs of --halving_eta, the probe the first.
  with flagsaver.flagsaver(cheap_first=80, halving=True):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=80, eta=4)
  with flagsaver.flagsaver(cheap_first=80, halving=True, halving_eta=2, cheap_keep=0):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=80, keep=None, eta=2)
  for extra in ({"halving_first": 1.0}, {"halving_equal": "time"}, {"halving_val": 300}):
    with flagsaver.flagsaver(cheap_first=80, halving=True, **extra):
      with pytest.raises(FlagError, match=f"--{next(iter(extra))} does not apply with --cheap_first"):
        executor_flags.schedule_from_flags()
  with flagsaver.flagsaver(cheap_first=40, cheap_keep=2):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, keep=2)
  with flagsaver.flagsaver(cheap_first=40, cheap_keep=0):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, keep=None)
  with flagsaver.flagsaver(cheap_first=40, cheap_keep=-1):
    with pytest.raises(FlagError, match=r"--cheap_keep must be a number of candidates \(0: every cheap "
                       r"one\), got -1"):
      executor_flags.schedule_from_flags()
  with flagsaver.flagsaver(cheap_keep=2):
    with pytest.raises(FlagError, match="--cheap_keep needs --cheap_first"):
      executor_flags.schedule_from_flags()
  # --cheap_keep_at: when the keep compares the cheap candidates (0: at the probe).
  with flagsaver.flagsaver(cheap_first=40):
    assert executor_flags.schedule_from_flags().keep_at == 2
  with flagsaver.flagsaver(cheap_first=40, cheap_keep_at=1.0):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, keep_at=1.0)
  with flagsaver.flagsaver(cheap_first=40, cheap_keep=2, cheap_keep_at=0.0):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, keep=2, keep_at=None)
  with flagsaver.flagsaver(cheap_first=40, cheap_keep_at=-1.0):
    with pytest.raises(FlagError, match=r"--cheap_keep_at must be a number of epochs \(0: the probe\), "
                       r"got -1"):
      executor_flags.schedule_from_flags()
  with flagsaver.flagsaver(cheap_keep_at=2.0):
    with pytest.raises(FlagError, match="--cheap_keep_at needs --cheap_first"):
      executor_flags.schedule_from_flags()
  # --cheap_free: the cheap candidates whose rest costs at most one costly probe go on too.
  with flagsaver.flagsaver(cheap_first=40, cheap_free=True):
    assert executor_flags.schedule_from_flags() == CheapFirst(probe_steps=40, free=True)
  with flagsaver.flagsaver(cheap_first=40):
    assert not executor_flags.schedule_from_flags().free
  with flagsaver.flagsaver(cheap_free=True):
    with pytest.raises(FlagError, match="--cheap_free needs --cheap_first"):
      executor_flags.schedule_from_flags()
