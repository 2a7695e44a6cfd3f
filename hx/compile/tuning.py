"""Tune: the training loop that fits one compiled candidate program to a task.

    result = tune(compiled, frozen, data, objective, TuneConfig(epochs=20, patience=5, seed=0))

What it does, per the paper (appendix C) and DESIGN.md "Lowering and training":

- Adam (learning rate 1e-3 by default), mini-batches of 150, a fresh permutation of the training set
  every epoch; the loss is the objective's (MSE / binary / categorical cross-entropy, `losses.py`).
- One jitted call per training step, with the optimiser state donated; the batch is taken from the
  training split (kept on the device) and its images gathered from the task's table inside that call.
- Last partial batch: an epoch runs ceil(n / batch_size) steps, and its last batch is filled up with the
  first examples of the same epoch's permutation, so every example is seen at least once per epoch and
  every step has the same shape (no recompilation, no padding that could leak into batch-norm statistics).
- The validation split is scored once per epoch (and more often under `TuneConfig.val_every`), over
  the whole split, in chunks that push at most `eval_images` images (list elements, graph nodes) through
  the network at once, to bound memory: 1,000 5x5 grids are 25,000 images. One fused call with
  `lax.map` over the chunks on accelerators; on XLA:CPU one call per chunk, as a convolution inside a
  rolled loop runs 10-40x slower there. The parameters of the best validation epoch are kept (early
  stopping after `patience` epochs without improvement); the test split is scored once, at the end, for
  those parameters. A program's per-image part (the function its input-end map applies, or the whole
  program on an image input) is scored once per distinct image of the split, the rest of the program
  on its outputs (`hx.compile.distinct`): the same scores up to rounding, wherever it saves a tenth of
  the rows.
- Packing (`TuneConfig.pack_lists`, on by default): a map over the input list's elements or the input
  graph's nodes runs its network on the real ones only, gathered into as many rows as the fullest
  training batch of the run, or the fullest chunk of the split evaluated, holds (known on the host from
  the masks before anything runs); the pack capacity is part of each executable's cache key.
- A loss that turns NaN or infinite stops the candidate within `nan_check_every` steps: each step
  records the first bad step on the device, and the host reads that flag every `nan_check_every` steps
  and at the end of each epoch (one scalar read; never a sync per step). The candidate comes back
  failed, with the reason ("loss became nan at epoch 3 step 17"), and with the variables and scores of
  its best clean epoch if it had one (see `TuneResult`).
- Cross-entropies from logits: when the compiled program can return logits for its whole output
  (`CompiledProgram.output_activation` is "sigmoid" for a "bce" objective, "softmax" for "ce"), Tune
  calls `apply(..., logits=True)` and scores with `Objective(from_logits=True)`: log-sigmoid /
  log-softmax, exact gradients for confident mistakes. Otherwise (a fold at the output, a model without
  the attribute) it uses the objective as given: probabilities, clipped before the log.
- Deterministic for a given seed on a given machine: initialisation, shuffling and dropout keys all
  derive from `TuneConfig.seed`.
- No recompilation per candidate: the jitted step and evaluation are compiled ahead of time and cached by
  (the compiled program's `key`, the objective, the optimiser settings, the shapes and dtypes of all
  arguments). Candidates that differ only in parameter values or in which frozen library function of the
  same architecture they call share the executables. `tune_stats()` counts traces and compilations.
- JAX's persistent compilation cache is switched on at the first `tune` (see `hx.compile.cache`).
- Pause and resume (successive halving trains survivors further rather than from the start):
  `tune(..., until=e)` stops after `e` epochs (a float: 0.5 is half an epoch's steps) and returns the
  `TuneState` (parameters, batch statistics, optimiser state, position, model selection so far) in
  `TuneResult.state`; `tune(..., resume=state)` continues from it. Shuffling and dropout keys depend only
  on the seed, the epoch and the step, so pausing at an epoch boundary and resuming gives exactly what one
  uninterrupted run gives. A pause in the middle of an epoch scores the parameters reached so far on the
  validation split, and they may be kept as the best (as a check every epoch would keep them); a paused
  run does not score the test split (the run that finishes does).
- Validation within epochs (`TuneConfig.val_every`, off by default): the validation split is also scored
  every given share of the run's steps, as the authors' code does every 1% of its iterations, and the
  best point is kept. A point is a step count from the run's start, so pausing and resuming scores the
  same points (and the pause point besides).
- Nothing to train: a program whose variables are empty (only frozen library functions, which run in
  inference mode) would come out of any number of steps as it went in, so Tune runs none and scores it
  as it is, as with `epochs=0` (`epochs_run` 0, no history). A synthesis meets such candidates first
  (`map_g(lib.f)`), and at the paper's sizes their epochs would be the most expensive of all: the
  library's CNN over every image of every step, for nothing.

A `CompiledProgram` (hx.compile.lower) provides `init(rng) -> variables` (a dict with "params" and other
collections such as "batch_stats"), `apply(variables, frozen, x, *, train, rng)` returning `(y,
new_state)` when training (the updated non-"params" collections) and `y` otherwise, and a hashable `key`
that identifies `apply`; optionally `output_activation` (then `apply` takes `logits=`).

Where the parts are: `hx.compile.tune_inputs` holds what `tune` is given (`Tunable`, `TuneConfig`,
`TuneData`) and `hx.compile.tune_results` what it gives back (`EpochRecord`, `TuneResult`, and the
`TuneState` a paused run resumes from); `hx.compile.batching` cuts the run into fixed shapes (epoch
orders, evaluation chunks, pack capacities); `hx.compile.executables` holds what runs on the device (the
training step and its `TrainState` carry, the evaluation, the executable cache); `hx.compile.scoring`
scores variables on a split (`evaluate`, and the evaluator `tune` validates and tests with). Here is
`tune` as a few small functions (the run prepared, the epoch loop, a pause, the result), with its
optimiser and first variables; the names users import from those modules are importable from here too.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
import time
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from hx.compile.batching import (
  EvalPlan,
  epoch_order,
  num_examples,
  pack_capacity,  # looked up here by each run (tests wrap it)
  shared_eval_plans,
)
from hx.compile.cache import ensure_compilation_cache
from hx.compile.executables import (
  TrainState,
  apply_for,
  clear_tune_caches,
  executable,
  make_train_step,
  resolve_objective,
  tune_stats,
)
from hx.compile.losses import Objective
from hx.compile.modules import set_output_bias
from hx.compile.scoring import _Evaluator, _packs, _Scoring, evaluate
from hx.compile.tune_inputs import Tunable, TuneConfig, TuneData
from hx.compile.tune_results import EpochRecord, TuneResult, TuneState
from hx.lang.values import Split, images_per_example, real_elements

if TYPE_CHECKING:
  import chex

  from hx.lang.values import Array

__all__ = [
  "TuneConfig", "TuneData", "EpochRecord", "TuneResult", "TuneState", "TrainState", "Tunable", "tune",
  "evaluate", "tune_stats", "clear_tune_caches", "resolve_objective", "initial_variables",
  "output_bias_from_targets", "epochs_watched", "optimizer",
]


# ----------------------------------------------------------------------------------------------------
# Tune, in parts: the arguments checked, the first carry, the run prepared (schedule, orders, executables),
# the epoch loop (`_train`, `_epoch`, `_steps`), a pause, the result.

# Who is told of every finished epoch of a `tune` in this thread (a progress bar): see `epochs_watched`.
_EPOCH_WATCHER: contextvars.ContextVar[Callable[[int, int, float], None] | None] = contextvars.ContextVar(
    "hx_epoch_watcher", default=None)


@contextlib.contextmanager
def epochs_watched(watcher: Callable[[int, int, float], None]) -> Iterator[None]:
  """Within the block, every epoch a `tune` in this thread finishes calls `watcher(epoch, epochs,
  val_score)` (the epoch's number from 1, the run's epochs, its validation score). A context variable
  rather than an argument: the bar that shows it sits several layers above the trainings it watches (a
  synthesis's candidates, a baseline's network), which do not pass it on; training in other processes
  is not seen."""
  token = _EPOCH_WATCHER.set(watcher)
  try:
    yield
  finally:
    _EPOCH_WATCHER.reset(token)


def optimizer(config: TuneConfig) -> optax.GradientTransformation:
  """The optimiser Tune trains with: Adam at `config.learning_rate`, as the authors' code trains
  (`torch.optim.Adam`; its other settings optax's defaults, which are torch's). A checkpoint's optimiser
  state has this one's structure."""
  return optax.adam(config.learning_rate)


def tune(compiled: Tunable, frozen: chex.ArrayTree, data: TuneData, objective: Objective,
         config: TuneConfig = TuneConfig(), *, variables: chex.ArrayTree | None = None,
         resume: TuneState | None = None, until: float | None = None) -> TuneResult:
  """Trains `compiled`'s fresh parameters on `data.train`, selecting by `data.val` (see module docstring).

  Args:
    compiled: the candidate (a CompiledProgram).
    frozen: the frozen library parameters it calls, as `apply` expects them (never updated).
    data: the task's splits and image table; pass `data.on_device()` to share one copy between candidates.
    objective: loss and metric (a task's `objective`, or `hx.compile.losses.objective_for_type`); Tune
      sets `from_logits` itself when the program can give logits (`resolve_objective`).
    config: optimiser, batching, epochs, patience, seed, evaluation chunks and the NaN check interval.
    variables: initial variables; default `initial_variables(compiled, config, objective,
      data.train.targets)`: `compiled.init(key)` with a key derived from `config.seed`, the output bias
      from the training targets' mean where that applies (`TuneConfig.bias_from_targets`).
    resume: a paused run's `TuneState` to continue from (then `variables` must be None, and `config`'s
      seed, batch size and learning rate must be those it was trained with).
    until: pause after this many epochs in all (a positive float; the steps are rounded to the nearest
      step, at least one more than `resume` had done); None or >= `config.epochs`: train to the end.

  Returns:
    A TuneResult. If the loss or validation score became NaN or infinite, `failed` says where, and the
    variables and scores (validation and test) are those of the best clean epoch before it, or none.
    If it paused, `state` holds what `resume` needs.
  """
  ensure_compilation_cache()
  _check_arguments(config, variables, resume, until)
  objective = resolve_objective(compiled, objective)
  tx = optimizer(config)
  start = time.perf_counter()
  carry, variables = _first_carry(compiled, config, objective, tx, data.train.targets, variables, resume)
  init_seconds = time.perf_counter() - start
  frozen, data = jax.device_put((frozen, data))
  run = _prepare(_Scoring(compiled, objective, config, frozen, data.table), data, tx, carry, variables,
                 resume, until)
  progress = _train(run, carry, _Progress.start(resume))
  return _result(run, progress, variables, init_seconds)


def _check_arguments(config: TuneConfig, variables: chex.ArrayTree | None, resume: TuneState | None,
                     until: float | None) -> None:
  """Raises ValueError for arguments `tune` cannot honour together."""
  if resume is not None and variables is not None:
    raise ValueError("pass variables or resume, not both")
  if until is not None and not until > 0:
    raise ValueError(f"until must be a positive number of epochs, got {until}")
  if resume is not None:
    settings = (resume.seed, resume.batch_size, resume.learning_rate)
    if settings != (config.seed, config.batch_size, config.learning_rate):
      raise ValueError(f"resuming a run trained with (seed, batch_size, learning_rate) {settings} under "
                       f"{(config.seed, config.batch_size, config.learning_rate)}")


def _first_carry(compiled: Tunable, config: TuneConfig, objective: Objective,
                 tx: optax.GradientTransformation, targets: Array, variables: chex.ArrayTree | None,
                 resume: TuneState | None) -> tuple[TrainState, dict]:
  """(the carry training starts from, the variables it holds): `variables`, or `initial_variables` for
  the training `targets`, or the paused run's. Private device copies: a step donates its carry."""
  if resume is None:
    if variables is None:
      variables = initial_variables(compiled, config, objective, targets)
    variables = jax.tree.map(jnp.copy, jax.device_put(dict(variables)))
    params, collections = _split_variables(variables)
    opt_state, loss_sum = tx.init(params), 0.0
  else:
    params, collections, opt_state = jax.tree.map(
        jnp.copy, jax.device_put((resume.params, dict(resume.collections), resume.opt_state)))
    variables, loss_sum = {"params": params, **collections}, resume.loss_sum
  jax.block_until_ready((params, collections, opt_state))
  return TrainState.begin(params, collections, opt_state, loss_sum), variables


@dataclasses.dataclass(frozen=True)
class _Run:
  """What one call to `tune` trains and scores with, fixed before its first step.

  Attributes:
    scoring: the candidate, its resolved objective, the call's settings, and the library parameters and
      image table on the device (`hx.compile.scoring._Scoring`).
    data: the splits and image table, on the device.
    steps: training steps per epoch.
    epochs: the last epoch of the run (`config.epochs`, or 0 when there is nothing to train).
    first_epoch, first_step: full epochs done before this call, and steps done of the next.
    end: the step, counted from the run's start, after which this call stops (pauses or finishes).
    every: validation within epochs (`TuneConfig.val_every`) after every this many steps of the run;
      None: at the ends of epochs only.
    orders: epoch (from 0) -> its (steps * batch_size,) int32 example order on the device.
    step_id: step s -> s as an int32 device scalar (made once, reused by later epochs).
    dropout_key: the run's dropout key (per epoch and step keys fold into it).
    train_exe: the compiled training step (None when no step runs).
    val_eval: the validation split's evaluator; test_plan: the test split's plan (None without one).
    compile_seconds: wall time of the compilations so far.
  """
  scoring: _Scoring
  data: TuneData
  steps: int
  epochs: int
  first_epoch: int
  first_step: int
  end: int
  every: int | None
  orders: Callable[[int], jax.Array]
  step_id: Callable[[int], jax.Array]
  dropout_key: jax.Array
  train_exe: jax.stages.Compiled | None
  val_eval: _Evaluator
  test_plan: EvalPlan | None
  compile_seconds: float

  @property
  def config(self) -> TuneConfig:
    """The call's settings (`scoring.config`)."""
    return self.scoring.config


def _prepare(scoring: _Scoring, data: TuneData, tx: optax.GradientTransformation, carry: TrainState,
             variables: dict, resume: TuneState | None, until: float | None) -> _Run:
  """The run's schedule, example orders, compiled training step and validation evaluator; `scoring.table`
  is `data.table`, and `variables` what `carry` holds."""
  compiled, objective, config, frozen, _ = scoring
  _, order_key, dropout_key = _run_keys(config)
  n = num_examples(data.train)
  steps = config.steps_per_epoch(n)
  if resume is not None and resume.steps_per_epoch != steps:
    raise ValueError(f"resuming a run of {resume.steps_per_epoch} steps per epoch on data of {steps}")
  first_epoch, first_step = (resume.epoch, resume.step) if resume is not None else (0, 0)
  # Nothing to train (module docstring): no epoch, as with epochs=0.
  epochs = config.epochs if jax.tree.leaves((carry.params, carry.collections)) else 0
  end = steps * epochs
  if until is not None:
    end = min(end, max(first_epoch * steps + first_step + 1, round(until * steps)))
  orders = _orders(order_key, first_epoch, n, steps * config.batch_size)
  # Each step's index on the device, made when first needed and reused by later epochs: making all of
  # them up front cost ~1 s per call at GS2's 7,134 steps an epoch, paid again by every short halving rung.
  step_id = functools.cache(lambda s: jax.device_put(np.int32(s)))
  train_exe, compile_seconds = None, 0.0
  if end:
    pack = _train_pack(compiled, config, data.train, orders, steps)
    args = (carry, frozen, data.table, data.train.inputs, data.train.targets, orders(first_epoch),
            step_id(0), dropout_key)
    apply, penalty = apply_for(compiled, objective), getattr(compiled, "penalty", None)
    train_exe, compile_seconds = executable(
        "train_step", (compiled.key, objective, config.learning_rate, config.batch_size, pack),
        lambda: make_train_step(apply, objective, tx, config.batch_size, pack, penalty), (0,), args)
  # Validation and test splits of the same shapes share one capacity, hence one executable.
  splits = [data.val] + ([data.test] if data.test is not None else [])
  plans = shared_eval_plans(splits, config.eval_images, _packs(compiled, config))
  val_eval = _Evaluator(scoring, data.val, variables, plans[0])
  every = None if config.val_every is None else max(1, round(config.val_every * steps * config.epochs))
  test_plan = plans[1] if data.test is not None else None
  return _Run(scoring, data, steps, epochs, first_epoch, first_step, end, every, orders, step_id,
              dropout_key, train_exe, val_eval, test_plan, compile_seconds + val_eval.compile_seconds)


def _orders(key: jax.Array, first_epoch: int, n: int, total: int) -> Callable[[int], jax.Array]:
  """epoch (from 0) -> its example order (`epoch_order`). The order of the first epoch this call trains
  is drawn once (a permutation of the training set: ~1 s for GS2's million grids on 2 cores) and shared by
  the packing, the compilation and the loop."""
  first = epoch_order(key, first_epoch, n, total)
  return lambda e: first if e == first_epoch else epoch_order(key, e, n, total)


def _train_pack(compiled: Tunable, config: TuneConfig, train: Split, orders: Callable[[int], jax.Array],
                steps: int) -> int | None:
  """The pack capacity the training step is compiled for (`pack_capacity`), or None: not packed."""
  lengths = real_elements(train.inputs) if _packs(compiled, config) else None
  if lengths is None:
    return None
  # Over the whole run, also when resuming: a paused and resumed run compiles the very step an
  # uninterrupted one does, so it gives the same numbers bit for bit.
  return pack_capacity(lengths, (orders(e) for e in range(config.epochs)), config.batch_size,
                       images_per_example(train.inputs), steps=steps)


class _Best(NamedTuple):
  """The best validation so far: its variables, score and epoch (None, inf, 0 if none)."""
  variables: chex.ArrayTree | None = None
  score: float = math.inf
  epoch: int = 0

  def keep(self, variables: chex.ArrayTree, score: float, epoch: int) -> _Best:
    """This, or the given ones if `score` is lower. Kept variables are copies: the carry's buffers are
    donated to (and overwritten by) the next training step."""
    if score < self.score:
      return _Best(jax.tree.map(jnp.copy, variables), score, epoch)
    return self


class _Progress(NamedTuple):
  """What a run has done so far, as the epoch loop carries it on the host.

  Attributes:
    best: the best validation so far; since_best: full epochs since it (for `patience`).
    history: the records of the epochs done; steps_run: training steps run in all; epochs_run: the
      last epoch begun.
    train_seconds, eval_seconds: wall time of this call's training steps and validation passes.
    failed: why the run failed (NaN or infinite loss or score), or None.
    paused: the state to resume from when this call paused, or None.
  """
  best: _Best
  since_best: int
  history: tuple[EpochRecord, ...]
  steps_run: int
  epochs_run: int
  train_seconds: float = 0.0
  eval_seconds: float = 0.0
  failed: str | None = None
  paused: TuneState | None = None

  @staticmethod
  def start(resume: TuneState | None) -> _Progress:
    """Nothing done yet, or what the paused run `resume` had done."""
    if resume is None:
      return _Progress(_Best(), 0, (), 0, 0)
    return _Progress(_Best(resume.best_variables, resume.best_score, resume.best_epoch), resume.since_best,
                     tuple(resume.history), resume.steps_run, resume.epoch)


def _train(run: _Run, carry: TrainState, progress: _Progress) -> _Progress:
  """The epoch loop: epochs after `run.first_epoch` until the last, a failure, `patience` or the pause."""
  for epoch in range(run.first_epoch + 1, run.epochs + 1):
    carry, progress, go_on = _epoch(run, carry, epoch, progress)
    if not go_on:
      break
    carry = carry.next_epoch()
  return progress


def _epoch(run: _Run, carry: TrainState, epoch: int,
           progress: _Progress) -> tuple[TrainState, _Progress, bool]:
  """Epoch `epoch` (from 1), or its steps up to the pause point: the steps, the validation at its end,
  its record and the model selection. Returns (carry, progress, whether the next epoch follows)."""
  t0 = time.perf_counter()
  stop = min(run.steps, run.end - (epoch - 1) * run.steps)
  done = _steps(run, carry, epoch, run.first_step if epoch == run.first_epoch + 1 else 0, stop, progress.best)
  carry = done.carry
  loss_sum, bad_step, bad_loss = map(float, jax.device_get((carry.loss_sum, carry.bad_step, carry.bad_loss)))
  t1 = time.perf_counter()
  progress = progress._replace(best=done.best, steps_run=progress.steps_run + done.ran, epochs_run=epoch,
                               train_seconds=progress.train_seconds + t1 - t0 - done.within,
                               eval_seconds=progress.eval_seconds + done.within)
  if done.failed is None and bad_step >= 0:
    done = done._replace(failed=f"loss became {bad_loss} at epoch {epoch} step {int(bad_step) + 1}")
  if done.failed is not None:
    return carry, progress._replace(failed=done.failed), False
  val_score, val_loss = run.val_eval(carry.variables)
  t2 = time.perf_counter()
  progress = progress._replace(eval_seconds=progress.eval_seconds + t2 - t1)
  if not math.isfinite(val_score):
    return carry, progress._replace(failed=f"validation score became {val_score} at epoch {epoch}"), False
  progress = progress._replace(best=progress.best.keep(carry.variables, val_score, epoch))
  if stop < run.steps:
    # A pause in the middle of the epoch: its parameters were scored, and may be the best so far, but
    # the epoch is not over (no record, no patience count).
    return carry, progress._replace(paused=_pause(run, carry, progress, epoch - 1, stop, val_score)), False
  record = EpochRecord(epoch, loss_sum / run.steps, val_score, val_loss, t1 - t0 - done.within,
                       t2 - t1 + done.within)
  if (watcher := _EPOCH_WATCHER.get()) is not None:
    watcher(epoch, run.config.epochs, val_score)
  # The best was scored in this epoch (at its end, or within it: val_every, a pause), or it was not.
  since_best = 0 if progress.best.epoch == epoch else progress.since_best + 1
  progress = progress._replace(history=progress.history + (record,), since_best=since_best)
  if run.config.patience is not None and since_best >= run.config.patience:
    return carry, progress, False
  if epoch * run.steps >= run.end and epoch < run.config.epochs:
    # A pause at the end of the epoch: the next call goes on as the next epoch of this one would.
    return carry, progress._replace(paused=_pause(run, carry, progress, epoch, 0, val_score)), False
  return carry, progress, True


class _Steps(NamedTuple):
  """What `_steps` did: the carry after them, the steps run, the best validation (within the epoch,
  `val_every`), the seconds of those validations, and why they failed (None if they did not)."""
  carry: TrainState
  ran: int
  best: _Best
  within: float
  failed: str | None = None


def _steps(run: _Run, carry: TrainState, epoch: int, begin: int, stop: int, best: _Best) -> _Steps:
  """Training steps begin .. stop - 1 of epoch `epoch` (from 1), with the NaN checks and the validations
  within the epoch (`val_every`) between them; the last step's checks are `_epoch`'s."""
  order, key = run.orders(epoch - 1), jax.random.fold_in(run.dropout_key, epoch)
  exe, frozen, table, train, within = run.train_exe, run.scoring.frozen, run.data.table, run.data.train, 0.0
  for s in range(begin, stop):
    carry = exe(carry, frozen, table, train.inputs, train.targets, order, run.step_id(s), key)
    inside = s + 1 < stop  # the epoch's last step and a pause point are scored after the loop in any case
    score_here = inside and run.every is not None and ((epoch - 1) * run.steps + s + 1) % run.every == 0
    if score_here or (inside and (s + 1) % run.config.nan_check_every == 0):
      # One scalar read: it waits for the steps so far, so a bad candidate stops within
      # nan_check_every steps instead of running out its epoch.
      if int(jax.device_get(carry.bad_step)) >= 0:
        return _Steps(carry, s + 1 - begin, best, within)
    if score_here:
      v0 = time.perf_counter()
      score, _ = run.val_eval(carry.variables)
      if not math.isfinite(score):
        return _Steps(carry, s + 1 - begin, best, within, f"validation score became {score} at epoch {epoch} "
                      f"step {s + 1}")
      best = best.keep(carry.variables, score, epoch)
      within += time.perf_counter() - v0
  return _Steps(carry, stop - begin, best, within)


def _pause(run: _Run, carry: TrainState, progress: _Progress, epoch: int, step: int,
           score: float) -> TuneState:
  """The state of a run paused after `epoch` full epochs and `step` steps of the next, whose current
  parameters scored `score`."""
  c = run.config
  loss_sum = carry.loss_sum if step else np.float32(0.0)  # at an epoch boundary the next epoch starts at 0
  return TuneState(
      params=carry.params, collections=carry.collections, opt_state=carry.opt_state, epoch=epoch, step=step,
      loss_sum=loss_sum, score=score, best_variables=progress.best.variables, best_score=progress.best.score,
      best_epoch=progress.best.epoch, since_best=progress.since_best, history=progress.history,
      steps_run=progress.steps_run, seed=c.seed, batch_size=c.batch_size, learning_rate=c.learning_rate,
      steps_per_epoch=run.steps)


def _result(run: _Run, progress: _Progress, variables: dict, init_seconds: float) -> TuneResult:
  """The TuneResult of a run: the test split scored for the best variables, unless the run paused."""
  best, compile_seconds, eval_seconds = progress.best, run.compile_seconds, progress.eval_seconds
  if best.variables is None and progress.failed is None and progress.epochs_run == 0:
    # No epoch ran (epochs=0, or nothing to train): report the initial variables.
    best = best._replace(variables=variables, score=run.val_eval(variables)[0])
  test_score = None
  if best.variables is not None and run.data.test is not None and progress.paused is None:
    t0 = time.perf_counter()
    test_eval = _Evaluator(run.scoring, run.data.test, best.variables, run.test_plan)
    compile_seconds += test_eval.compile_seconds
    test_score, _ = test_eval(best.variables)
    eval_seconds += time.perf_counter() - t0 - test_eval.compile_seconds
  return TuneResult(
      variables=best.variables, val_score=best.score if best.variables is not None else math.nan,
      test_score=test_score, best_epoch=best.epoch, epochs_run=progress.epochs_run,
      history=list(progress.history), failed=progress.failed, steps_run=progress.steps_run,
      objective=run.scoring.objective, init_seconds=init_seconds, compile_seconds=compile_seconds,
      train_seconds=progress.train_seconds, eval_seconds=eval_seconds, state=progress.paused)


# ----------------------------------------------------------------------------------------------------
# The first variables, and the small helpers of the run.

def _run_keys(config: TuneConfig) -> tuple[jax.Array, jax.Array, jax.Array]:
  """(initialisation, example order, dropout) keys of a run, all from `config.seed`."""
  return tuple(jax.random.split(jax.random.key(config.seed), 3))


def initial_variables(compiled: Tunable, config: TuneConfig, objective: Objective | None = None,
                      targets: chex.ArrayTree | None = None) -> chex.ArrayTree:
  """The variables `tune` starts from when given none: `compiled.init` with the key `config.seed` gives
  it, then, given the objective and the training split's targets, the output bias of
  `output_bias_from_targets` (when `config.bias_from_targets`). A caller can start from them changed and
  pass them as `variables`."""
  variables = compiled.init(_run_keys(config)[0])
  if config.bias_from_targets and objective is not None and targets is not None:
    variables = output_bias_from_targets(compiled, variables, objective, targets)
  return variables


def output_bias_from_targets(compiled: Tunable, variables: chex.ArrayTree, objective: Objective,
                             targets: chex.ArrayTree) -> chex.ArrayTree:
  """`variables` with the output layer's bias of `compiled.output_slot` set to the mean of `targets`
  (`TuneConfig.bias_from_targets`), or unchanged when that does not apply: not an "mse" objective, a
  per-element one, a program without an output slot (or not a `CompiledProgram`), or targets that are
  not one array of the bias's size per example. The module's template knows where its output layer is
  and sets the bias (`hx.compile.modules.set_output_bias`).

  Args:
    compiled: the program (`CompiledProgram.output_slot` says which slot, if any).
    variables: {"params": (slot params, ...), ...} as `compiled.init` returns them.
    objective: the task's objective.
    targets: (n, *output shape) training targets (host or device).
  """
  slot = getattr(compiled, "output_slot", None)
  if objective.loss != "mse" or objective.per_element or slot is None or not hasattr(targets, "shape"):
    return variables
  spec = compiled.specs[compiled.fresh_slots[slot]]
  targets = np.asarray(jax.device_get(targets), np.float64)
  if targets.ndim < 1 or targets.shape[0] == 0 or targets[0].size != math.prod(spec.output.shape):
    return variables
  params = list(variables["params"])
  params[slot] = set_output_bias(spec, params[slot], targets.reshape(targets.shape[0], -1).mean(0))
  return dict(variables, params=tuple(params))


def _split_variables(variables: dict) -> tuple[chex.ArrayTree, dict]:
  """(params, the other collections) of {"params": ..., "batch_stats": ..., ...}."""
  return variables["params"], {k: v for k, v in variables.items() if k != "params"}
