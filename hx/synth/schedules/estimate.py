"""Estimates of a candidate's final validation score that cost a small part of its training, and the
schedule that trains only the best-estimated candidates to the end.

    budget = Budget(candidates=20, schedule=Estimate(keep=4, method="short"))
    frontier = hx.synthesize(task, library, hx.SynthesisConfig(budget=budget))
    [e for e in frontier.entries if e.outcome.status == "estimated"]  # 16 scored by an estimate only

Every candidate gets an estimate before any trains to the end; the `keep` best estimates train to the
end, exactly as the "every candidate" schedule trains them (same seed, from scratch: their results are
that schedule's), and the rest are reported with status "estimated" and their estimate, never dropped.
Ours, not the paper's (which trains every candidate); the successor of HOUDINI, PICLE (Valkov et al.,
ICLR 2024), ranks module compositions by a probabilistic model for the same reason.

Both estimates are a score in the task's metric (lower is better) on one fixed subsample of the
validation split (`validation_subsample`), so that they are comparable with each other: at small training
fractions validation, not training, is most of a candidate's cost (CS1's count_digit at 2%: 2,100
validation lists scored every epoch against 240 training lists), so the estimates score a few hundred
validation examples, not all of them.

- "short" (`Estimate.method`), any candidate: Tune for `Estimate.share` of the full run's training steps
  (at most `Estimate.max_steps`; the same steps, batches and dropout keys as the start of the full run),
  scored on the subsample at each epoch's end and at the pause; the estimate is the best of those scores.
  It runs through the synthesis's executor, so a parallel executor runs the short runs side by side.
- "head": for a candidate that is a fresh head on frozen library functions (`head_slot`: one fresh
  function, applied last, with a linear output layer, and at least one library function), the head's
  output layer is fitted in closed form and everything else stays as it is: the library functions
  frozen, the head's lower layers (an MLP's hidden layer, an LSTM's recurrence) at their initialisation
  (the seed the full run would start from), which makes their outputs random features of the frozen
  ones (an extreme learning machine, an echo-state network). The output layer's logits are affine in its
  parameters, so its input features are read off exactly as derivatives (`head_features`), and the fit
  is ridge regression for real outputs (`ridge_fit`), a few Newton (IRLS) steps of ridge-regularised
  logistic regression for one bool output (`logistic_fit`), ridge on the one-hot classes for several.
  The library functions run once over the images that the training split and the validation subsample
  use (`hx.compile.memo.apply_prefix` on those rows only, `compact_table`), not over the task's whole
  table. A candidate that is not such a head gets the short run. The fit is not training: its score is
  not on the scale of a trained candidate's (at small fractions it can be far better than the same
  program's after its epochs of Adam), so under "head" the best heads come first whatever the short runs
  of the others say (benchmarks/RESULTS.md).

What each costs and how well it ranks (Spearman's rank correlation with the final validation scores) is
measured in benchmarks/RESULTS.md, "Estimates before training".
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING, Callable, ClassVar, Iterable, Mapping, Sequence

import jax
import numpy as np

from hx.compile.fitting import seeded
from hx.synth.jobs import Job, JobResult, TaskContext, failed_result, job_seed
from hx.synth.schedules.base import ScheduleResult, Scored, Train, never
from hx.synth.space import Candidate

if TYPE_CHECKING:
  import chex

  from hx.compile.lower import CompiledProgram
  from hx.lang.objectives import Objective
  from hx.lang.values import Array, Inputs, Split

__all__ = ["ESTIMATE_METHODS", "Estimate", "validation_subsample", "subsample_split", "subsample_context",
           "ridge_fit", "logistic_fit", "spearman", "compact_table", "head_slot", "head_features", "fit_head",
           "estimate_then_train", "short_run_epochs"]

ESTIMATE_METHODS = ("short", "head")
"""The estimates (`Estimate.method`)."""


@dataclasses.dataclass(frozen=True)
class Estimate:
  """A schedule (`Budget.schedule`, top-down only): estimate every candidate, train the best `keep`. Its
  text is `estimate:method=short,keep=4,...`, its keys the fields' names, `val` for `val_examples`.

  Attributes:
    keep: how many candidates, best estimate first, train to the end; None: every candidate (the
      estimate only orders them, and is reported beside each final score: what measuring its rank
      correlation needs).
    method: "short" (a short run of every candidate) or "head" (the closed-form fit of a fresh head on
      frozen functions where a candidate is one, `head_slot`; the short run for the others). See the
      module docstring.
    share: a short run trains this share of the full run's training steps (epochs x steps per epoch),
      at least one step ...
    max_steps: ... and at most this many (on large splits a few hundred steps say what a share would
      spend many epochs on).
    val_examples: the size of the validation subsample the estimates are scored on (None or more than
      the split: all of it).
    ridge: the ridge penalty of the closed-form fits, relative to the features' mean squared norm
      (`ridge_fit`): scale-free, so one value serves features of any size.
    logistic_steps: Newton steps of the logistic fit of a bool output (0: ridge on the 0/1 targets).
  """
  NAME: ClassVar[str] = "estimate"
  KEYS: ClassVar[Mapping[str, str]] = {"val": "val_examples"}

  keep: int | None = 4
  method: str = "short"
  share: float = 0.1
  max_steps: int = 300
  val_examples: int | None = 300
  ridge: float = 1e-3
  logistic_steps: int = 8

  def __post_init__(self):
    if self.keep is not None and self.keep < 1:
      raise ValueError(f"Estimate.keep must be >= 1 or None, got {self.keep}")
    if self.method not in ESTIMATE_METHODS:
      raise ValueError(f"Estimate.method must be one of {', '.join(ESTIMATE_METHODS)}, got {self.method!r}")
    if not 0 < self.share <= 1 or self.max_steps < 1:
      raise ValueError(f"Estimate needs 0 < share <= 1 and max_steps >= 1, got {self}")
    if self.val_examples is not None and self.val_examples < 1:
      raise ValueError(f"Estimate.val_examples must be >= 1 or None, got {self.val_examples}")
    if self.ridge < 0 or self.logistic_steps < 0:
      raise ValueError(f"Estimate needs ridge >= 0 and logistic_steps >= 0, got {self}")

  def run(self, candidates: Iterable[Candidate], context: TaskContext, seed: int, train: Train,
          out_of_time: Callable[[], bool] = never, *, first_index: int = 0,
          batch: int | None = None) -> ScheduleResult:
    """Estimates every candidate and trains the best `keep` to the end (`estimate_then_train`;
    `hx.synth.schedules.Schedule.run`): the short runs at once, then those trained to the end at once,
    `batch` ignored; every candidate's estimate beside the results."""
    got, estimates = estimate_then_train(list(candidates), self, context, seed, train, out_of_time,
                                         first_index)
    return ScheduleResult(tuple(got), estimates)


# ---------------------------------------------------------------------------------------------------
# Pure pieces.

def validation_subsample(n: int, size: int | None, seed: int) -> np.ndarray:
  """(min(size, n),) int64 sorted indices of the examples of a split of n that the estimates score:
  drawn without replacement from `seed` alone, so every candidate of a synthesis, and every run with the
  seed, is scored on the same examples. None or size >= n: all of them."""
  if n < 0:
    raise ValueError(f"a split has n >= 0 examples, got {n}")
  if size is None or size >= n:
    return np.arange(n, dtype=np.int64)
  if size < 1:
    raise ValueError(f"a subsample needs size >= 1, got {size}")
  return np.sort(np.random.default_rng(seed).choice(n, size, replace=False)).astype(np.int64)


def subsample_split(split: Split, idx: np.ndarray) -> Split:
  """The examples `idx` of `split` (an `hx.compile.values.Split`), in the split's own form."""
  from hx.lang.values import Split, rows

  idx = np.asarray(idx)
  return Split(rows(split.inputs, idx), np.asarray(split.targets)[idx])


def subsample_context(context: TaskContext, val_examples: int | None, seed: int) -> TaskContext:
  """`context` scoring a fixed subsample of `val_examples` validation examples (`validation_subsample`,
  drawn from `seed`; all of them for None), put on the device once for every run in it, with no test
  split and no checkpoints: what the short runs of an `Estimate` and the early rungs of
  `Halving(val_examples=...)` train in."""
  from hx.lang.values import num_examples

  data = context.ready.data
  idx = validation_subsample(num_examples(data.val.inputs), val_examples, seed)
  val = jax.device_put(subsample_split(data.val, idx))
  return context.with_data(data._replace(val=val, test=None), checkpoints=None)


def ridge_fit(features: np.ndarray, targets: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
  """Least squares with an unpenalised intercept and a ridge penalty: (w (d, k), b (k,)) minimising
  |features w + b - targets|^2 + lam |w|^2, lam = `ridge` x the mean squared norm of the centred
  features' rows (so the penalty does not depend on the features' scale). ridge = 0 is ordinary least
  squares (the minimum-norm solution when the features are rank deficient).

  Args:
    features: (n, d) float.
    targets: (n,) or (n, k) float; w and b then have k columns (a (n,) target gives k = 1).
  """
  h = np.asarray(features, np.float64)
  y = np.asarray(targets, np.float64).reshape(h.shape[0], -1)
  mean_h, mean_y = h.mean(0), y.mean(0)
  hc, yc = h - mean_h, y - mean_y
  if ridge > 0:
    lam = ridge * max(float(np.sum(hc * hc)) / max(h.shape[0], 1), 1e-12)
    # Solved in the smaller of the two Gram matrices (d x d or n x n): the same w.
    if h.shape[1] <= h.shape[0]:
      w = np.linalg.solve(hc.T @ hc + lam * np.eye(h.shape[1]), hc.T @ yc)
    else:
      w = hc.T @ np.linalg.solve(hc @ hc.T + lam * np.eye(h.shape[0]), yc)
  else:
    w = np.linalg.lstsq(hc, yc, rcond=None)[0]
  return w, mean_y - mean_h @ w


def logistic_fit(features: np.ndarray, targets: np.ndarray, ridge: float, steps: int
                 ) -> tuple[np.ndarray, np.ndarray]:
  """Ridge-regularised logistic regression by `steps` Newton (IRLS) steps from the ridge fit of the 0/1
  targets mapped to logits: (w (d, 1), b (1,)) with logits = features w + b. The penalty is `ridge_fit`'s
  (relative to the features' mean squared norm; the intercept unpenalised); a step that does not lower
  the penalised loss is halved (at most 20 times), so the loss never rises.

  Args:
    features: (n, d) float.
    targets: (n,) or (n, 1) in {0, 1}.
  """
  h = np.asarray(features, np.float64)
  t = np.asarray(targets, np.float64).reshape(-1)
  n, d = h.shape
  x = np.concatenate([h, np.ones((n, 1))], 1)
  hc = h - h.mean(0)
  lam = ridge * max(float(np.sum(hc * hc)) / max(n, 1), 1e-12) if ridge > 0 else 0.0
  penalty = np.full(d + 1, lam)
  penalty[-1] = 0.0
  # Start: the least-squares line through the 0/1 targets, centred on 0.5 and scaled to logits (4 is the
  # sigmoid's inverse slope at 0.5).
  w0, b0 = ridge_fit(h, t, ridge)
  theta = 4.0 * np.concatenate([w0[:, 0], b0 - 0.5])

  def loss(th):
    z = x @ th
    return float(np.sum(np.logaddexp(0.0, z) - t * z) + 0.5 * np.sum(penalty * th * th))

  current = loss(theta)
  for _ in range(steps):
    z = x @ theta
    p = 1.0 / (1.0 + np.exp(-z))
    grad = x.T @ (p - t) + penalty * theta
    hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(d + 1)
    step = np.linalg.solve(hess, grad)
    for _ in range(20):
      trial = theta - step
      got = loss(trial)
      if got <= current:
        theta, current = trial, got
        break
      step = step / 2
    else:
      break
  return theta[:-1, None], theta[-1:]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
  """Spearman's rank correlation of two sequences of scores (average ranks for ties), over the pairs
  where both are finite; nan with fewer than 3 such pairs or a constant side."""
  pairs = [(x, y) for x, y in zip(a, b) if math.isfinite(x) and math.isfinite(y)]
  if len(pairs) < 3:
    return math.nan

  def ranks(v):
    v = np.asarray(v, np.float64)
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v), dtype=np.float64)
    for value in np.unique(v):  # ties share their mean rank
      tied = v == value
      r[tied] = r[tied].mean()
    return r

  ra, rb = ranks([p[0] for p in pairs]), ranks([p[1] for p in pairs])
  if ra.std() == 0 or rb.std() == 0:
    return math.nan
  return float(np.corrcoef(ra, rb)[0, 1])


def _index_arrays(inputs: Inputs) -> Array:
  """The array of image indices in a split's inputs (an array, or an element batch's or SharedGraphs'
  `values`)."""
  return inputs if isinstance(inputs, np.ndarray) or not hasattr(inputs, "values") else inputs.values


def compact_table(table: Array, splits: Sequence[Split]) -> tuple[np.ndarray, list[Split]]:
  """Only the rows of `table` that `splits` point at: (table (m, ...) with m the distinct indices, the
  splits with their indices renumbered into it), so that a frozen prefix runs over m images, not the
  task's whole table. The splits select the same images as before."""
  from hx.lang.values import Split

  arrays = [np.asarray(_index_arrays(s.inputs)) for s in splits]
  used, inverse = np.unique(np.concatenate([a.reshape(-1) for a in arrays]), return_inverse=True)
  out, start = [], 0
  for s, a in zip(splits, arrays):
    renumbered = inverse[start:start + a.size].reshape(a.shape).astype(np.int32)
    start += a.size
    inputs = renumbered if isinstance(s.inputs, np.ndarray) or not hasattr(s.inputs, "values") else \
        s.inputs._replace(values=renumbered)
    out.append(Split(inputs, s.targets))
  return np.asarray(table)[used], out


def head_slot(compiled: CompiledProgram, prefixed: bool = False) -> int | None:
  """The fresh slot of `compiled` whose output layer the closed form fits, or None when `compiled` is
  not a fresh head on frozen functions: exactly one fresh function, applied last (through `compose`),
  ending in a Dense output layer (an MLP, an LSTM, a CNN with an output layer) with no activation after
  it, or a sigmoid or softmax the program can skip (`CompiledProgram.output_logits`), and at least one
  library function below it. `compiled` is the whole program, or the program without its frozen prefix
  (as `train_program` compiles it: then `prefixed` says that library functions ran before it)."""
  from hx.lang import program as P

  node = compiled.structure
  while isinstance(node, P.Compose):
    node = node.f
  if len(compiled.fresh_slots) != 1 or not isinstance(node, P.Fresh):
    return None
  slot = int(node.name[1:])
  spec = compiled.specs[compiled.fresh_slots[slot]]
  if not (spec.template in ("mlp", "lstm") or (spec.template == "cnn" and spec["output_layer"])):
    return None
  if spec.activation != "none" and not compiled.output_logits:
    return None
  return slot if prefixed or compiled.library_slots else None


def head_features(compiled: CompiledProgram, variables: Mapping[str, chex.ArrayTree], frozen: chex.ArrayTree,
                  inputs: Inputs, table: Array | None, *,
                  logits: bool, slot: int = 0, chunk: int = 512) -> np.ndarray:
  """(n, d) float64: the inputs of the output layer of fresh slot `slot` (`head_slot`) on each example of
  `inputs` (a split's inputs, indices into `table`; n examples), in inference mode. The program's
  output (its logits, with `logits`) is affine in that layer's weights w (d, k): y = h w + b, so column j
  of h is the derivative of y[:, 0] along w[j, 0], computed for all j at once by forward-mode
  differentiation (one pass through the program, its tangents only through the last layer)."""
  import jax
  import jax.numpy as jnp

  from hx.lang.values import gather, num_examples, take

  w = variables["params"][slot]["out"]["w"]
  d = w.shape[0]

  def output(w_new, x):
    params = list(variables["params"])
    params[slot] = dict(params[slot], out=dict(params[slot]["out"], w=w_new))
    y = compiled.apply(dict(variables, params=tuple(params)), frozen, x, train=False, rng=None,
                       logits=logits)
    return y.reshape(y.shape[0], -1)[:, 0]

  @jax.jit
  def features(x):
    tangents = jnp.zeros((d,) + w.shape, w.dtype).at[jnp.arange(d), jnp.arange(d), 0].set(1.0)
    return jax.vmap(lambda t: jax.jvp(lambda v: output(v, x), (w,), (t,))[1])(tangents).T

  n = num_examples(inputs)
  chunk = max(1, min(chunk, n))
  table = jnp.asarray(table) if table is not None else None
  parts = []
  for start in range(0, n, chunk):
    idx = np.arange(start, start + chunk) % n  # a last short chunk is filled from the start, then cut
    batch = take(inputs, idx)
    x = batch if table is None else gather(table, jax.tree.map(jnp.asarray, batch))
    parts.append(np.asarray(features(x), np.float64)[:min(chunk, n - start)])
  return np.concatenate(parts)


def fit_head(compiled: CompiledProgram, variables: Mapping[str, chex.ArrayTree], frozen: chex.ArrayTree,
             train: Split, table: Array | None, objective: Objective, *, ridge: float,
             logistic_steps: int) -> dict:
  """`variables` with the output layer of `compiled`'s head (`head_slot`) fitted in closed form on
  `train` (a Split of examples pointing into `table`): ridge regression for "mse", logistic regression
  for "bce" (ridge on the 0/1 targets when `logistic_steps` is 0), ridge on one-hot classes for "ce"
  (see the module docstring).

  Raises:
    ValueError: `compiled` is not a fresh head.
    NotImplementedError: a bool head whose program cannot give logits (a sigmoid or softmax it cannot
      skip: `head_slot` refuses those), or another objective.
  """
  import jax.numpy as jnp

  from hx.compile.executables import resolve_objective

  objective = resolve_objective(compiled, objective)
  slot = head_slot(compiled, prefixed=True)
  if slot is None:
    raise ValueError(f"{compiled.program} is not a fresh head: no closed form fits it")
  h = head_features(compiled, variables, frozen, train.inputs, table, logits=objective.from_logits, slot=slot)
  if objective.loss in ("bce", "ce") and not objective.from_logits:
    raise NotImplementedError(f"a closed-form fit of a bool head whose program gives no logits ({objective})")
  targets = np.asarray(train.targets)
  out = variables["params"][slot]["out"]
  k = out["w"].shape[1]
  if objective.loss == "mse":
    w, b = ridge_fit(h, targets.reshape(len(targets), -1), ridge)
  elif objective.loss == "bce" and k == 1:
    if logistic_steps > 0:
      w, b = logistic_fit(h, targets, ridge, logistic_steps)
    else:
      w, b = ridge_fit(h, targets.reshape(-1, 1), ridge)
      w, b = 4.0 * w, 4.0 * (b - 0.5)  # the 0.5 threshold at logit 0
  elif objective.loss == "ce":
    w, b = ridge_fit(h, np.eye(k)[targets.astype(np.int64).reshape(-1)], ridge)
  else:
    raise NotImplementedError(f"a closed-form fit for objective {objective}")
  params = list(variables["params"])
  params[slot] = dict(params[slot], out={"w": jnp.asarray(w.reshape(out["w"].shape), out["w"].dtype),
                                         "b": jnp.asarray(b.reshape(out["b"].shape), out["b"].dtype)})
  return dict(variables, params=tuple(params))


def short_run_epochs(schedule: Estimate, epochs: int, steps_per_epoch: int) -> float:
  """The epochs (a float: `hx.compile.tune`'s `until`) a short run trains: `schedule.share` of the full
  run's steps, at least 1 step and at most `schedule.max_steps`."""
  steps = max(1, min(round(schedule.share * epochs * steps_per_epoch), schedule.max_steps))
  return steps / steps_per_epoch


# ---------------------------------------------------------------------------------------------------
# The schedule.

class _Heads:
  """Closed-form estimates of one task's candidates; library prefixes computed once per prefix, over
  the rows the training split and the validation subsample use."""

  def __init__(self, context: TaskContext, val: Split, schedule: Estimate):
    self.context, self.val, self.schedule = context, val, schedule
    self._tables: dict[tuple[str, ...], jax.Array] = {}
    data = context.ready.data
    if data.table is not None:
      self.table, (self.train, self.val) = compact_table(data.table, [data.train, val])
    else:
      self.table, self.train = None, data.train
    # Every candidate is scored on the subsample: on the device once, not once per candidate.
    self.val = jax.device_put(self.val)

  def _table(self, names: tuple[str, ...]) -> Array | None:
    if not names:
      return self.table
    if names not in self._tables:
      from hx.compile.memo import apply_prefix

      library = self.context.library
      self._tables[names] = apply_prefix(names, library.specs(), library.variables(), self.table)
    return self._tables[names]

  def compiled(self, candidate: Candidate) -> tuple[CompiledProgram, tuple[str, ...]] | None:
    """(compiled rest, prefix names) when `candidate` is a fresh head on frozen functions, else None."""
    from hx.compile import compile_program
    from hx.compile.memo import frozen_prefix

    context = self.context
    if context.ready.objective.per_element:
      return None
    names, rest = frozen_prefix(candidate.program) if self.table is not None else ((), candidate.program)
    try:
      compiled = compile_program(rest, candidate.fresh_types, context.module_config, context.library.specs())
    except (ValueError, TypeError, NotImplementedError):
      return None  # the short run reports why it cannot be built (a failed candidate)
    if head_slot(compiled, bool(names)) is None:
      return None
    return compiled, names

  def __call__(self, candidate: Candidate, seed: int, compiled: CompiledProgram,
               names: tuple[str, ...]) -> float:
    from hx.compile import evaluate, make_frozen
    from hx.compile.tuning import initial_variables

    context = self.context
    table = self._table(names)
    config = seeded(context.ready, seed)
    variables = initial_variables(compiled, config, context.ready.objective, self.train.targets)
    frozen = make_frozen(compiled, context.library.variables())
    fitted = fit_head(compiled, variables, frozen, self.train, table, context.ready.objective,
                      ridge=self.schedule.ridge, logistic_steps=self.schedule.logistic_steps)
    score, _ = evaluate(compiled, fitted, frozen, self.val, context.ready.objective, table=table,
                        config=config)
    return float(score)


def estimate_then_train(candidates: Sequence[Candidate], schedule: Estimate, context: TaskContext, seed: int,
                        run: Callable[[TaskContext, list[Job]], list[JobResult]],
                        out_of_time: Callable[[], bool] = lambda: False, first_index: int = 0
                        ) -> tuple[list[JobResult], dict[int, Scored]]:
  """Estimates every candidate, then trains the `schedule.keep` best to the end.

  Args:
    candidates: the candidates, in the search's order (job `first_index + i` is candidate i).
    schedule: the estimate and how many train to the end.
    context: the task's context (`hx.synth.synthesize.task_context`).
    seed: the synthesis seed (`job_seed` gives each candidate's, as in every schedule).
    run: trains jobs in a context (the short runs go in a context whose validation split is the
      subsample and which has no test split or checkpoints) and returns their results.
    out_of_time: checked after the estimates: when true, nothing trains to the end (every candidate is
      reported with its estimate).
    first_index: the index of the first candidate's job.

  Returns:
    (results, estimates): one JobResult per candidate, in their order: the full run's for those trained
    to the end (their times include the estimate's), a "failed" one for those whose estimate failed, an
    "estimated" one (nan validation score, no test score, the estimate's times) for the others; and
    each job index's `Scored` estimate.
  """
  from hx.lang.values import num_examples

  data = context.ready.data
  sub = subsample_context(context, schedule.val_examples, seed)
  val = sub.ready.data.val
  steps_per_epoch = context.ready.tune_config.steps_per_epoch(num_examples(data.train.inputs))
  until = short_run_epochs(schedule, context.ready.tune_config.epochs, steps_per_epoch)
  jobs = [Job(first_index + i, c, job_seed(seed, c)) for i, c in enumerate(candidates)]
  estimates: dict[int, Scored] = {}
  short: list[Job] = []
  heads = _Heads(context, val, schedule) if schedule.method == "head" else None
  for job in jobs:
    got = heads.compiled(job.candidate) if heads is not None else None
    if got is None:
      short.append(dataclasses.replace(job, until=until))
      continue
    start = time.perf_counter()
    try:
      value, reason = heads(job.candidate, job.seed, *got), None
    except (ValueError, TypeError, NotImplementedError, FloatingPointError, np.linalg.LinAlgError) as err:
      value, reason = math.nan, f"closed-form estimate failed: {type(err).__name__}: {err}"
    if reason is None and not math.isfinite(value):
      reason = f"closed-form estimate scored {value}"
    estimates[job.index] = Scored(value, "head", time.perf_counter() - start, 0.0, reason)
  if short:
    for r in run(sub, short):
      r = r.with_outcome(state=None, variables=None)
      o = r.outcome
      epochs = o.steps_run / steps_per_epoch
      reason = None if o.ok else f"short-run estimate failed: {o.reason or o.status}"
      estimates[r.job.index] = Scored(o.val_score if o.ok else math.nan, "short", o.seconds, epochs, reason,
                                      run=r)
  missing = {j.index for j in jobs} - set(estimates)
  if missing:
    raise RuntimeError(f"no estimate for jobs {sorted(missing)}")
  ranked = sorted((j for j in jobs if estimates[j.index].reason is None),
                  key=lambda j: (estimates[j.index].value, j.index))
  chosen = ranked if schedule.keep is None else ranked[:schedule.keep]
  finals: dict[int, JobResult] = {}
  if chosen and not out_of_time():
    finals = {r.job.index: r for r in run(context, chosen)}
  out = []
  for job in jobs:
    e = estimates[job.index]
    if job.index in finals:
      out.append(_with_estimate(finals[job.index], e))
    elif e.reason is not None:
      out.append(failed_result(job, e.reason, e.seconds).with_outcome(**_times(e)))
    else:
      why = ("the search ran out of time" if finals == {} and chosen else
             f"not among the best {schedule.keep} estimates")
      out.append(failed_result(
          job, f"not trained to the end ({why}): {e.method} estimate {e.value:.4g}", e.seconds).with_outcome(
          status="estimated", **_times(e)))
  return out, estimates


def _times(e: Scored) -> dict[str, float]:
  """A JobResult's time fields for the estimate alone."""
  if e.run is None:
    return {"seconds": e.seconds}
  o = e.run.outcome
  return {"seconds": o.seconds, "compile_seconds": o.compile_seconds, "train_seconds": o.train_seconds,
          "eval_seconds": o.eval_seconds, "steps_run": o.steps_run}


def _with_estimate(final: JobResult, e: Scored) -> JobResult:
  """`final` with the estimate's time added (its steps are the full run's: the short run is not resumed)."""
  t, o = _times(e), final.outcome
  return final.with_outcome(
      seconds=o.seconds + t["seconds"], compile_seconds=o.compile_seconds + t.get("compile_seconds", 0.0),
      train_seconds=o.train_seconds + t.get("train_seconds", 0.0),
      eval_seconds=o.eval_seconds + t.get("eval_seconds", 0.0))
