"""Scoring variables on a split, as `hx.compile.tuning.tune` validates and tests them (`_Evaluator`) and
as `evaluate` scores them outside a training: the metric (% error or RMSE) and the objective's loss, over
the whole split in chunks that bound the images pushed through the network at once (one fused call on
accelerators, one call per chunk on XLA:CPU), packed lists and graphs where the program can, and a
program's per-image part once per distinct image of the split where that saves work
(`hx.compile.distinct`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.batching import EvalPlan, eval_plan
from hx.compile.cache import ensure_compilation_cache
from hx.compile.distinct import element_split, select_slots, worth_it
from hx.compile.executables import (
  apply_for,
  executable,
  gathered,
  make_eval,
  make_per_image,
  resolve_objective,
)
from hx.compile.losses import Objective, finish_metric
from hx.compile.tune_inputs import Tunable, TuneConfig
from hx.lang.values import Split, images_per_example, real_elements

if TYPE_CHECKING:
  from collections.abc import Hashable

  import chex

  from hx.lang.values import Array

__all__ = ["evaluate"]


class _Scoring(NamedTuple):
  """What scores a program's variables on its splits, fixed for a training (`_Evaluator`, `_per_image`).

  Attributes:
    compiled: the candidate (a `Tunable`: a CompiledProgram, or a baseline's network).
    objective: its `Objective`, resolved for it (`resolve_objective`: from logits where it gives them).
    config: the `TuneConfig` whose evaluation settings apply (eval_images, fuse_eval, pack_lists).
    frozen: the frozen library parameters it calls, as its `apply` takes them (a pytree of arrays).
    table: the image table the splits' inputs index ((N, *image shape) float32), or None.
  """
  compiled: Tunable
  objective: Objective
  config: TuneConfig
  frozen: chex.ArrayTree
  table: Array | None


class _PerImage(NamedTuple):
  """A scoring over distinct images (`hx.compile.distinct`): the per-image part (its executable, the
  calls' image rows on the device, its fresh slots' names and its frozen slots), and the rest (its
  `apply` and executable key, its fresh slots' names and frozen slots, the shape of the per-image
  outputs it reads as its table, the split with its inputs indexed by the distinct images)."""
  exe: jax.stages.Compiled
  rows: list[jax.Array]
  fresh: tuple[str, ...]
  frozen: chex.ArrayTree
  compile_seconds: float
  rest_apply: Callable
  rest_key: Hashable
  rest_fresh: tuple[str, ...]
  rest_frozen: chex.ArrayTree
  rest_table: jax.ShapeDtypeStruct
  split: Split


def _per_image(scoring: _Scoring, plan: EvalPlan, split: Split,
               variables: chex.ArrayTree) -> _PerImage | None:
  """The scoring of `split` over its distinct images (`plan.distinct`), or None where it does not apply (no
  image table, not a CompiledProgram, no per-image part) or would not save a tenth of the rows
  (`distinct.worth_it`)."""
  from hx.compile.lower import CompiledProgram, compile_part

  compiled, objective, _, frozen, table = scoring
  distinct, pack = plan.distinct, plan.pack
  if table is None or distinct is None or not isinstance(compiled, CompiledProgram):
    return None
  parts = element_split(compiled.program, real_elements(split.inputs) is not None)
  if parts is None:
    return None
  num_chunks, chunk = np.asarray(plan.chunks).shape
  plain = num_chunks * (pack if pack is not None else chunk * images_per_example(split.inputs))
  if not worth_it(distinct.rows.size, plain):
    return None
  part, rest = parts
  inner = compile_part(compiled, part)
  inner_frozen = select_slots(frozen, compiled.library_slots, inner.library_slots)
  rows = [jax.device_put(r) for r in distinct.rows]
  # The part's output is the program's only where nothing comes after it: only then is it logits.
  logits = rest is None and objective.from_logits and inner.output_logits
  args = (select_slots(variables, compiled.fresh_slots, inner.fresh_slots), inner_frozen, table, rows[0])
  exe, seconds = executable("per_image", (inner.key, logits), lambda: make_per_image(inner.apply, logits), (),
                            args)
  rest_table = jax.ShapeDtypeStruct((distinct.rows.size, *exe.out_info.shape[1:]), exe.out_info.dtype)
  remapped = split._replace(inputs=jax.device_put(distinct.inputs))
  if rest is None:
    return _PerImage(exe, rows, inner.fresh_slots, inner_frozen, seconds, gathered, ("gathered",), (), (),
                     rest_table, remapped)
  outer = compile_part(compiled, rest)
  return _PerImage(exe, rows, inner.fresh_slots, inner_frozen, seconds, apply_for(outer, objective),
                   outer.key, outer.fresh_slots,
                   select_slots(frozen, compiled.library_slots, outer.library_slots), rest_table, remapped)


class _Evaluator:
  """Scores variables on one split with the cached evaluation executable(s).

  Where the program has a per-image part (`hx.compile.distinct`) and `distinct` is on, that part runs
  once per distinct image of the split and the rest of the program on its outputs, when that runs at
  least a tenth fewer rows through it (`distinct.worth_it`)."""

  def __init__(self, scoring: _Scoring, split: Split, variables: chex.ArrayTree, plan: EvalPlan | None = None,
               distinct: bool = True):
    compiled, objective, config, frozen, table = scoring
    self.objective = objective
    self.fused = config.fuse_eval if config.fuse_eval is not None else jax.default_backend() != "cpu"
    plan = plan if plan is not None else eval_plan(split, config.eval_images, _packs(compiled, config))
    chunks, self.pack = plan.chunks, plan.pack
    self.frozen, self.table, self.split = frozen, table, split
    self.slots = getattr(compiled, "fresh_slots", ())
    if self.fused:
      self.idx = [jax.device_put(chunks)]
    else:
      self.idx = [jax.device_put(row) for row in chunks]
    self.per_image = p = _per_image(scoring, plan, split, variables) if distinct else None
    if p is None:
      apply, key, scored = apply_for(compiled, objective), compiled.key, (variables, frozen, table, split)
    else:
      apply, key = p.rest_apply, p.rest_key
      scored = (select_slots(variables, self.slots, p.rest_fresh), p.rest_frozen, p.rest_table, p.split)
    name = "eval_fused" if self.fused else "eval"
    v, f, t, s = scored
    args = (v, f, t, s.inputs, s.targets, self.idx[0])
    self.exe, seconds = executable(name, (key, objective, self.pack),
                                   lambda: make_eval(apply, objective, self.fused, self.pack), (), args)
    self.compile_seconds = seconds + (p.compile_seconds if p is not None else 0.0)

  def __call__(self, variables: chex.ArrayTree) -> tuple[float, float]:
    """(score, mean loss) of `variables` on the split."""
    frozen, table, split, p = self.frozen, self.table, self.split, self.per_image
    if p is not None:
      inner = select_slots(variables, self.slots, p.fresh)
      outs = [p.exe(inner, p.frozen, self.table, rows) for rows in p.rows]
      table = outs[0] if len(outs) == 1 else jnp.concatenate(outs)
      variables, frozen, split = select_slots(variables, self.slots, p.rest_fresh), p.rest_frozen, p.split
    sums = [self.exe(variables, frozen, table, split.inputs, split.targets, idx) for idx in self.idx]
    total = np.asarray(jax.device_get(sum(sums[1:], sums[0])), np.float64)
    score = finish_metric(self.objective, total[0], total[1])
    loss = float(total[2] / total[3]) if total[3] > 0 else float("nan")
    return score, loss


def evaluate(compiled: Tunable, variables: chex.ArrayTree, frozen: chex.ArrayTree, split: Split,
             objective: Objective, *, table: Array | None = None, config: TuneConfig = TuneConfig(),
             distinct: bool = True) -> tuple[float, float]:
  """(score, mean loss) of `variables` on `split`: the metric (% error or RMSE) and the objective's loss
  (from logits when the program can give them, as in `tune`). `distinct`: score the program's per-image
  part once per distinct image of the split where that saves work (`hx.compile.distinct`; the same
  scores up to rounding), as `tune` does; False: every occurrence."""
  ensure_compilation_cache()
  objective = resolve_objective(compiled, objective)
  frozen, table, split = jax.device_put((frozen, table, split))
  scoring = _Scoring(compiled, objective, config, frozen, table)
  return _Evaluator(scoring, split, variables, distinct=distinct)(variables)


def _packs(compiled: Tunable, config: TuneConfig) -> bool:
  """Whether a run packs its lists and graphs: `TuneConfig.pack_lists`, for a program that can."""
  return bool(config.pack_lists and getattr(compiled, "packs_lists", False))
