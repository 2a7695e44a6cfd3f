"""The absl flags that say where candidates train and on what schedule, shared by the binaries.

    from hx.bin.executor_flags import executor_from_flags, schedule_from_flags
    executor = executor_from_flags()      # an Executor; close() it when done
    budget = Budget(candidates=20, schedule=schedule_from_flags())

--executor=auto (the default) is `hx.synth.executors.default_executor()`: the calling process on an
accelerator and on CPUs of up to 2 cores (on the 2-core machine two workers of one core were not faster
than one process of two: benchmarks/RESULTS.md), worker processes of 2 cores each on larger CPUs.
"""

from __future__ import annotations

from typing import Any

from absl import flags

from hx.bin.checks import FlagError

__all__ = ["executor_from_flags", "schedule_from_flags"]

_EXECUTOR = flags.DEFINE_enum(
    "executor", "auto", ["auto", "local", "processes", "ray"],
    "Where candidates train: auto (hx.synth.executors.default_executor: this process on up to 2 cores "
    "and on accelerators, workers of 2 cores on larger CPUs), local (this "
    "process), processes (worker processes on this machine), ray (Ray tasks; see --ray_address).")
_WORKERS = flags.DEFINE_integer("workers", None, "--executor=processes: worker processes (default: one per "
                                "core divided by --threads).")
_THREADS = flags.DEFINE_integer("threads", None, "--executor=processes: cores (XLA threads) per worker "
                                "(default: the cores divided by --workers; 0: no pinning).")
_LEND = flags.DEFINE_boolean("lend", False, "--executor=processes: idle workers' cores are lent to busy ones "
                             "(each worker's XLA pool then has a thread per core, so scores differ from "
                             "one-thread workers'; hx.synth.parallel.ProcessExecutor(lend=True)).")
_RAY_ADDRESS = flags.DEFINE_string(
    "ray_address", None, "--executor=ray: 'auto' joins the cluster this machine belongs to (ray start), "
    "HOST:PORT the cluster whose head is there; unset: a local Ray with every core.")
_MAX_RETRIES = flags.DEFINE_integer("max_retries", 2, "Times a candidate whose worker died is started again.")
_HALVING = flags.DEFINE_boolean("halving", False, "Successive halving: every candidate trains "
                                "--halving_first epochs, the best 1/--halving_eta go on, ...")
_HALVING_FIRST = flags.DEFINE_float("halving_first", 2.0, "Epochs of the first halving rung (0.5: half one).")
_HALVING_ETA = flags.DEFINE_integer("halving_eta", 4, "Each halving rung keeps 1/eta of the candidates.")
_HALVING_EQUAL = flags.DEFINE_enum("halving_equal", "epochs", ["epochs", "time"],
                                   "What halving's rungs give every candidate alike: "
                                   "epochs, or time (a costly candidate trains a share of each rung).")
_HALVING_REFERENCE = flags.DEFINE_enum("halving_reference", "geomean", ["geomean", "median"],
                                       "--halving_equal=time: the step cost a rung's epochs are priced at "
                                       "(the geometric mean or the median of the candidates').")
_HALVING_VAL = flags.DEFINE_integer("halving_val", None, "Halving's rungs before the last score this many "
                                    "validation examples (a fixed subsample), the last all of them; unset: "
                                    "every rung scores all of them.")
_CHEAP_FIRST = flags.DEFINE_integer(
    "cheap_first", None, "HOUDINI's candidates probed for this many optimiser steps, then the "
    "cheap ones, and the costly ones already ahead of them, trained to the end (hx.synth.cheap_first; 80 is "
    "one epoch of count_digit at 100%); unset: every candidate to the end. With --halving the costly ones "
    "ahead go on in halving rungs of --halving_eta, the probe the first.")
_CHEAP_KEEP = flags.DEFINE_integer(
    "cheap_keep", None, "With --cheap_first: only this many cheap candidates, the best after "
    "--cheap_keep_at epochs, train to the end; 0: every cheap one; unset: the schedule's default (3).")
_CHEAP_KEEP_AT = flags.DEFINE_float(
    "cheap_keep_at", None, "With --cheap_first: every cheap candidate first trains this many epochs, and "
    "--cheap_keep chooses by the scores there; 0: by the probe's; unset: the schedule's default (2).")
_CHEAP_FREE = flags.DEFINE_boolean(
    "cheap_free", False, "With --cheap_first: beside --cheap_keep, every cheap candidate whose remaining "
    "training costs at most one probe of the costliest candidate trains to the end (CheapFirst(free=True)).")


def executor_from_flags() -> Any:
  """The Executor --executor, --workers, --threads, --lend, --ray_address and --max_retries describe."""
  from hx.synth.executors import default_executor, make_executor

  name, options = _EXECUTOR.value, {}
  if name == "auto":
    name, options = default_executor()
  if name == "processes":
    if _WORKERS.value is not None or _THREADS.value is not None:
      options = {"workers": _WORKERS.value, "threads": _THREADS.value}
    options["max_retries"] = _MAX_RETRIES.value
    if _LEND.value:
      options["lend"] = True
  elif name == "ray":
    options = {"address": _RAY_ADDRESS.value, "max_retries": _MAX_RETRIES.value}
  return make_executor(name, **options)


def schedule_from_flags() -> Any:
  """The `hx.synth.halving.Halving` of --halving, --halving_first, --halving_eta, --halving_equal,
  --halving_reference and --halving_val, the `hx.synth.cheap_first.CheapFirst` of --cheap_first,
  --cheap_keep, --cheap_keep_at and --cheap_free (with --halving, its `eta` from --halving_eta), or None.
  FlagError (`hx.bin.checks`) for a first rung, an eta, a subsample or a probe that cannot work, also
  without --halving (they would be wrong the day it is added), and for halving's flags that do not apply
  under cheap first."""
  if not _HALVING_FIRST.value > 0:
    raise FlagError(f"--halving_first must be a positive number of epochs, got {_HALVING_FIRST.value:g}")
  if _HALVING_ETA.value < 2:
    raise FlagError(f"--halving_eta must be >= 2 (each rung keeps 1/eta of the candidates), got "
                    f"{_HALVING_ETA.value}")
  if _HALVING_VAL.value is not None and _HALVING_VAL.value < 1:
    raise FlagError(f"--halving_val must be a positive number of validation examples, got "
                    f"{_HALVING_VAL.value}")
  if _CHEAP_KEEP.value is not None and _CHEAP_FIRST.value is None:
    raise FlagError("--cheap_keep needs --cheap_first (it says how many cheap candidates train to the end)")
  if _CHEAP_KEEP_AT.value is not None and _CHEAP_FIRST.value is None:
    raise FlagError("--cheap_keep_at needs --cheap_first (it says when the cheap candidates are compared)")
  if _CHEAP_FREE.value and _CHEAP_FIRST.value is None:
    raise FlagError("--cheap_free needs --cheap_first (it adds to the cheap candidates trained to the end)")
  if _CHEAP_FIRST.value is not None:
    if _CHEAP_FIRST.value < 1:
      raise FlagError(f"--cheap_first must be a positive number of optimiser steps, got {_CHEAP_FIRST.value}")
    eta = None
    if _HALVING.value:
      # The probe is halving's first rung, and every rung scores the whole validation split.
      for flag in (_HALVING_FIRST, _HALVING_EQUAL, _HALVING_VAL):
        if flag.value != flag.default:
          raise FlagError(f"--{flag.name} does not apply with --cheap_first, whose probe is halving's first "
                          "rung (equal epochs, the whole validation split); of halving's flags only "
                          "--halving_eta does")
      eta = _HALVING_ETA.value
    from hx.synth.cheap_first import CheapFirst

    keep, at = _CHEAP_KEEP.value, _CHEAP_KEEP_AT.value
    if keep is not None and keep < 0:
      raise FlagError(f"--cheap_keep must be a number of candidates (0: every cheap one), got {keep}")
    if at is not None and not at >= 0:
      raise FlagError(f"--cheap_keep_at must be a number of epochs (0: the probe), got {at:g}")
    options = {} if keep is None else {"keep": keep or None}
    if at is not None:
      options["keep_at"] = at or None
    if _CHEAP_FREE.value:
      options["free"] = True
    return CheapFirst(probe_steps=_CHEAP_FIRST.value, eta=eta, **options)
  if not _HALVING.value:
    return None
  from hx.synth.halving import Halving

  return Halving(first=_HALVING_FIRST.value, eta=_HALVING_ETA.value, equal=_HALVING_EQUAL.value,
                 reference=_HALVING_REFERENCE.value, val_examples=_HALVING_VAL.value)
