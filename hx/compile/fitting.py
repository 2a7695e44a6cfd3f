"""Training one model on one task, the one way hx does it: `prepare` a task once (its data on the device,
its training settings for its size), then `fit` each model on it, which gives an `Outcome` (`train` gives
Tune's own result, for callers that pause and resume runs in memory).

    ready = prepare(task, tune_config)                        # once per task
    outcome = fit(compiled, ready, seed=0)                    # per model: a compiled program, a network
    print(outcome.status, outcome.val_score, outcome.test_score)

`Prepared` is the one value of a task being trained; a synthesis's `hx.synth.jobs.TaskContext` holds one
beside its library and module sizes. The baselines (`hx.baselines.train`) and `hx.bin.train` train
through `fit`; synthesis (`hx.synth.jobs.train_program`) through `train`, which `run_job` turns into the
same `Outcome`, since a candidate may pause and resume.

`Outcome` is the record of one training, a frozen value. The results that report a training hold one as
their field `outcome`: `hx.synth.jobs.JobResult` (with the job), `hx.synth.FrontierEntry` (a candidate
of a synthesis, with its rank; its `to_json` writes a record's entry) and
`hx.baselines.BaselineResult` (with the network). Its scores, epochs and times are read from Tune's
result once (`Outcome.of`) and handed on whole, and read as they are: `result.outcome.val_score`.

A model that runs out of memory (XLA's RESOURCE_EXHAUSTED from a device's or the host's memory, or a
host allocation's MemoryError) is a failed training, not a crash: `fit` and `hx.synth.jobs.run_job` give
a failed `Outcome` whose reason starts "out of memory" (`out_of_memory`), and a search goes on to its
next candidate.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from hx.compile import TuneConfig, TuneData, tune
from hx.compile.batching import num_examples
from hx.compile.tuning import EpochRecord, TuneResult

if TYPE_CHECKING:
  import chex
  import jax

  from hx.compile.checkpoint import Checkpoint
  from hx.compile.losses import Objective
  from hx.compile.tune_inputs import Tunable
  from hx.compile.tuning import TuneState
  from hx.lang.values import Array, Split

__all__ = ["Outcome", "ReadsOutcome", "score_json", "Prepared", "prepare", "seeded", "train", "fit",
           "out_of_memory", "OUT_OF_MEMORY"]

OUT_OF_MEMORY = "out of memory"
"""How the reason of a training that ran out of memory starts (`out_of_memory`)."""


def out_of_memory(err: BaseException) -> str | None:
  """The reason (str) to record for a training that raised `err` when `err` says memory ran out: a
  MemoryError (a host allocation) or XLA's RESOURCE_EXHAUSTED (a `jax.errors.JaxRuntimeError`, jaxlib's
  XlaRuntimeError, from a device's or the host's memory), e.g. "out of memory (JaxRuntimeError:
  RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.)"; None for any other
  error. The first line of the error's message, at most 300 characters."""
  exhausted = isinstance(err, RuntimeError) and "RESOURCE_EXHAUSTED" in str(err)
  if not (isinstance(err, MemoryError) or exhausted):
    return None
  lines = [line.strip() for line in str(err).splitlines() if line.strip()]
  message = lines[0] if lines else "a host allocation failed"
  if len(message) > 300:
    message = message[:297] + "..."
  return f"{OUT_OF_MEMORY} ({type(err).__name__}: {message})"


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class Outcome:
  """One model trained (or not) on one task: what ranks, records and reports read.

  Attributes:
    status: "trained" or "failed" (a synthesis's ranks add "estimated" and "equivalent").
    reason: why it failed (or was not trained); None if it trained.
    val_score, test_score: the validation score of its best epoch (nan if none) and the test score of
      those parameters (None if not scored).
    variables: its trained {"params", "batch_stats"} (host NumPy arrays), None if none.
    epochs_run, best_epoch: epochs trained, and the epoch (from 1) the variables come from.
    steps_run: training steps run in all (those of earlier runs included when it resumed a paused one).
    compile_seconds, train_seconds, eval_seconds: time compiling, in training steps (initialisation
      included), in scoring.
    seconds: wall time of the whole training (of the whole job, for a `hx.synth.jobs.JobResult`; of the
      whole call, for a `hx.baselines.BaselineResult`).
    state: the `hx.compile.TuneState` (host NumPy arrays) to continue from when the training paused, else
      None.
    history: Tune's `hx.compile.tuning.EpochRecord` of each full epoch trained, from the first (all of
      them when it resumed a paused run: `hx.compile.TuneState.history` carries the earlier ones).
  """
  status: str
  reason: str | None
  val_score: float = math.nan
  test_score: float | None = None
  # Arrays and curves stay out of the repr: a result prints as its scores, not as its weights.
  variables: chex.ArrayTree | None = dataclasses.field(default=None, repr=False)
  epochs_run: int = 0
  best_epoch: int = 0
  steps_run: int = 0
  compile_seconds: float = 0.0
  train_seconds: float = 0.0
  eval_seconds: float = 0.0
  seconds: float = 0.0
  state: TuneState | None = dataclasses.field(default=None, repr=False)
  history: tuple[EpochRecord, ...] = dataclasses.field(default=(), repr=False)

  @property
  def ok(self) -> bool:
    """Trained, with a finite validation score."""
    return self.status == "trained" and math.isfinite(self.val_score)

  @property
  def val_history(self) -> tuple[float, ...]:
    """The validation score after each full epoch trained, from the first: a learning curve, for reports
    and for studying budget schedules (benchmarks/studies/halving_replay.py)."""
    return tuple(float(e.val_score) for e in self.history)

  @staticmethod
  def of(r: TuneResult, seconds: float) -> Outcome:
    """The outcome of Tune's result `r` (variables and state brought to the host), `seconds` the wall
    time of the call that produced it. A run resumed from a checkpoint reports, in `r`, the init,
    compile, train and eval seconds of every call that made it (`hx.compile.checkpoint`), so its wall
    seconds are at least their sum: the cost of the whole run, not of the last call's chunk."""
    import jax
    import numpy as np

    variables = None if r.variables is None else jax.tree.map(np.asarray, jax.device_get(r.variables))
    failed = r.failed is not None or r.variables is None
    return Outcome(status="failed" if failed else "trained", reason=r.failed, val_score=float(r.val_score),
                   test_score=None if r.test_score is None else float(r.test_score), variables=variables,
                   epochs_run=r.epochs_run, best_epoch=r.best_epoch, steps_run=r.steps_run,
                   compile_seconds=r.compile_seconds, train_seconds=r.train_seconds + r.init_seconds,
                   eval_seconds=r.eval_seconds,
                   seconds=max(seconds, r.init_seconds + r.compile_seconds + r.train_seconds
                               + r.eval_seconds),
                   state=None if r.state is None else r.state.on_host(), history=tuple(r.history))


def score_json(x: float | None) -> float | str | None:
  """A score as a record holds it: a float, "nan" or "inf" (JSON has no such numbers), or None."""
  if x is None:
    return None
  return float(x) if math.isfinite(x) else str(x)


class ReadsOutcome:
  """The base of a result holding one training's `Outcome` as its field `outcome`
  (`hx.synth.FrontierEntry`, `hx.baselines.BaselineResult`): what a first look reads of it (its status,
  whether it trained, its two scores), as plain properties; everything else of the training is read
  from `outcome`."""

  outcome: Outcome

  @property
  def status(self) -> str:
    """The outcome's status (`Outcome.status`)."""
    return self.outcome.status

  @property
  def ok(self) -> bool:
    """Trained, with a finite validation score (`Outcome.ok`)."""
    return self.outcome.ok

  @property
  def val_score(self) -> float:
    """The outcome's validation score (`Outcome.val_score`): what ranks it."""
    return self.outcome.val_score

  @property
  def test_score(self) -> float | None:
    """The outcome's test score (`Outcome.test_score`), None if not scored."""
    return self.outcome.test_score


class TaskData(Protocol):
  """What `prepare` reads of a task (an `hx.Task` has it): its splits, the image table their inputs index
  (or None) and its objective."""

  @property
  def train(self) -> Split: ...

  @property
  def val(self) -> Split: ...

  @property
  def test(self) -> Split | None: ...

  @property
  def table(self) -> Array | None: ...

  @property
  def objective(self) -> Objective: ...


@dataclasses.dataclass(frozen=True, eq=False)
class Prepared:
  """A task ready to train on (`prepare`).

  Attributes:
    data: the task's `hx.compile.TuneData` (splits and image table), on the device.
    objective: the task's `hx.compile.Objective`.
    tune_config: the training settings for the task's training split (`TuneConfig.for_examples`: epochs
      raised to meet `min_steps`); its seed is replaced per model (`fit`).
  """
  data: TuneData
  objective: Objective
  tune_config: TuneConfig


def seeded(ready: Prepared, seed: int) -> TuneConfig:
  """The training settings of one model trained on `ready` with `seed` (initialisation, shuffling,
  dropout): what `train` trains with, and what a checkpoint's key names."""
  return dataclasses.replace(ready.tune_config, seed=seed)


def prepare(task: TaskData, tune_config: TuneConfig) -> Prepared:
  """`task` (an `hx.Task`, or any value with `train`, `val`, `test`, `table` and `objective`) ready to
  train on with `tune_config`: its data put on the device once, for every model trained on it (`_on_device`:
  once per task, for all its fractions and methods), and the epochs raised to the task's minimum of steps
  (`TuneConfig.for_examples`)."""
  data = _on_device(TuneData(task.train, task.val, task.test, task.table))
  return Prepared(data, task.objective, tune_config.for_examples(num_examples(task.train)))


_LAST_PUT: list[tuple[Array, jax.Array]] = []
"""The host arrays of the last `prepare` with their device copies (each host array held, so that its id
is not reused by another while it is here)."""
_LAST_PUT_LOCK = threading.Lock()


def _on_device(data: TuneData) -> TuneData:
  """`data` on the device, the device copies of the last call reused for the very same host arrays.

  A task's fractions (`hx.Task.with_fraction`) share its image table and its validation and test
  splits, and every method of an evaluation trains on the same task: prepared one after another, they
  copy those arrays to the device once, not once per fraction and method. Only the last call's copies
  are kept, so the device holds no more than one task's data beyond what is in use. (Task data is a
  value: hx never writes into a task's arrays, so the same host array has the same contents.)
  """
  import jax

  leaves, treedef = jax.tree.flatten(data)
  with _LAST_PUT_LOCK:
    kept = {id(host): device for host, device in _LAST_PUT}
    missing = [i for i, leaf in enumerate(leaves) if id(leaf) not in kept]
    put = jax.device_put([leaves[i] for i in missing])
    device = [kept.get(id(leaf)) for leaf in leaves]
    for i, d in zip(missing, put):
      device[i] = d
    _LAST_PUT[:] = list(zip(leaves, device))
  return jax.tree.unflatten(treedef, device)


def train(model: Tunable, ready: Prepared, *, seed: int, frozen: chex.ArrayTree = (),
          variables: chex.ArrayTree | None = None, until: float | None = None,
          resume: TuneState | None = None, checkpoint: Checkpoint | None = None) -> TuneResult:
  """Trains `model` on the task `ready` with Tune (`hx.compile.tune`, or `tune_checkpointed`); Tune's own
  result (device arrays; `fit` gives the host `Outcome`).

  Args:
    model: what Tune trains: an `hx.compile.CompiledProgram` or any `hx.compile.Tunable` (a baseline's
      network).
    ready: the task's data, objective and training settings (`prepare`; a synthesis's
      `TaskContext.ready`).
    seed: the training seed (initialisation, shuffling, dropout); replaces `ready.tune_config.seed`.
    frozen: the frozen variables `model` applies (a program's library functions, a network's frozen part).
    variables: where to start (default: `model.init`); used only when nothing is resumed.
    until, resume: pause after `until` epochs, continue a paused run (see `hx.compile.tune`).
    checkpoint: an `hx.compile.checkpoint.Checkpoint` to save the run to and resume it from (used only
      when the run trains to the end, `until` None; from `resume` or its file, whichever is further).
  """
  config = seeded(ready, seed)
  if checkpoint is not None and until is None:
    from hx.compile.checkpoint import tune_checkpointed

    return tune_checkpointed(model, frozen, ready.data, ready.objective, config, checkpoint,
                             variables=variables, resume=resume)
  return tune(model, frozen, ready.data, ready.objective, config, variables=variables, until=until,
              resume=resume)


def fit(model: Tunable, ready: Prepared, **train_args: Any) -> Outcome:
  """`train(model, ready, **train_args)` (same arguments: `seed`, `frozen`, `variables`, `until`,
  `resume`, `checkpoint`), as an `Outcome` whose seconds are this call's wall time; failed, with the
  reason, where the model ran out of memory (`out_of_memory`)."""
  start = time.perf_counter()
  try:
    r = train(model, ready, **train_args)
  except (MemoryError, RuntimeError) as err:
    reason = out_of_memory(err)
    if reason is None:
      raise
    gc.collect()  # the failed model's buffers, before the next model allocates its own
    return Outcome(status="failed", reason=reason, seconds=time.perf_counter() - start)
  return Outcome.of(r, time.perf_counter() - start)
