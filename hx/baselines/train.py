"""Training the baselines: every one through `hx.compile.fitting.fit` (Tune), as HOUDINI's candidates are
trained.

    r = standalone(task, config, tune_config, seed=0)                       # a new network, random weights
    r = llt(task, [earlier networks...], config, tune_config, seed=0)       # from the earlier weights
    r = pnn(task, [earlier columns...], config, tune_config, seed=0)        # a new column + laterals
    r = from_scratch(task, program, fresh_types, library_types, ...)        # a program, all of it fresh
    r, state = continual("replay", task, state, config, tune_config, seed=0)  # or "ewc": a shared trunk

A task is an `hx.Task` or any value with its attributes `name`, `type`, `objective`, `train`, `val`,
`test` and `table`; the caller passes the same `ModuleConfig` and `TuneConfig` (the task kind's training
settings) as HOUDINI gets, so every method shares the data, the batches, the optimiser, the epochs and
the model selection (the best validation epoch, scored once on the test split). A standalone network
and a program trained from scratch start their output bias at the training targets' mean, as HOUDINI's
fresh candidates do (`TuneConfig.bias_from_targets`, for regressions whose output is a fresh linear
layer); LLT starts from the earlier weights it transfers, and the progressive and graph RNN networks
(not compiled programs) from their own initialisation.

Each function takes `checkpoint_dir`: with it, the training is saved there as it goes and resumed from
there if the file exists (`hx.compile.checkpoint`; the key holds the method, task, network, settings,
and fingerprints of the data and of the starting and frozen variables), to the result an uninterrupted
run gives. The evaluation runner passes one per record and removes it once the record is written.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple, Sequence

import jax
import numpy as np

from hx.baselines.continual import (
  CONTINUAL,
  DEFAULT_SETTINGS,
  ContinualNet,
  ContinualSettings,
  ContinualState,
  learn,
  replay_counts,
  rescore,
  trunk_key,
)
from hx.baselines.graph import GraphRNN
from hx.baselines.llt import transfer
from hx.baselines.networks import MLP, Architecture, Network, architecture, count_parameters
from hx.baselines.pnn import PNN
from hx.baselines.pnn import refusal as pnn_refusal
from hx.compile import ModuleConfig, TuneConfig, compile_program
from hx.compile.checkpoint import checkpoint_in, fingerprint
from hx.compile.fitting import Outcome, ReadsOutcome, fit, prepare, seeded
from hx.compile.tuning import output_bias_from_targets
from hx.lang import program as P
from hx.lang.types import Type

if TYPE_CHECKING:
  import chex

  from hx.compile.lower import CompiledProgram
  from hx.compile.tune_inputs import Tunable
  from hx.data.task import Task

__all__ = ["BaselineResult", "standalone", "llt", "pnn", "from_scratch", "continual", "choose_ewc_strength",
           "EwcChoice", "BASELINES", "refusal"]

BASELINES = ("standalone", "llt", "pnn", "standalone_with_fold") + CONTINUAL
"""The baseline methods: standalone, low-level transfer, progressive networks, HOUDINI's program
trained from random weights (`from_scratch`, the paper's "standalone_with_fold"), and the continual
learners' experience replay and EWC over a shared trunk (`continual`, `hx.baselines.continual`)."""


def refusal(method: str, types: Sequence[Type], config: ModuleConfig,
            elements: Sequence[Type | None] | None = None) -> tuple[int, str] | None:
  """The first task that baseline `method` cannot take in a sequence of tasks of `types`, as (its
  position in `types`, why), or None where it takes them all. Only the architectures are built, nothing
  trained, so that a run refuses a method before it starts (`hx.evaluation.EvalConfig.make`).

  standalone and llt take every type `hx.baselines.networks.architecture` builds a network for; pnn
  also needs every task's input to be the first task's, and no graph (`hx.baselines.pnn.refusal`);
  replay and ewc take what standalone takes (a graph task as the standalone network, `continual`);
  standalone_with_fold trains HOUDINI's
  program for the task, which has the task's type.

  Args:
    method: a baseline of `BASELINES`.
    types: the sequence's task types, in order.
    config: the module sizes the run builds its networks with.
    elements: each list task's per-element output type (`hx.baselines.networks.element_type`), or None.

  Raises:
    ValueError: `method` is not a baseline.
  """
  if method not in BASELINES:
    raise ValueError(f"unknown baseline {method!r}; the baselines are {', '.join(BASELINES)}")
  if method == "standalone_with_fold":
    return None
  elements = list(elements) if elements is not None else [None] * len(types)
  archs = []
  for k, (t, element) in enumerate(zip(types, elements)):
    try:
      archs.append(architecture(t, config, element))
    except ValueError as err:
      return k, str(err).removeprefix(f"no baseline network for {t}: ")
  return pnn_refusal(archs) if method == "pnn" else None


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class BaselineResult(ReadsOutcome):
  """One trained baseline network: its training's `hx.compile.fitting.Outcome` (status, reason, scores as
  for HOUDINI's candidates, the task's metric with lower better; epochs and Tune's split of the time,
  `seconds` the whole call; its status and scores named: `ReadsOutcome`), with what a baseline adds.

  Attributes:
    method: "standalone", "llt", "pnn", "standalone_with_fold", "replay" or "ewc".
    task: the task's name.
    description: the network as an hx program's text (or, for the graph and progressive networks, a
      description in the same style).
    network: the trained network (None when no epoch finished cleanly).
    parameters: trainable parameters; frozen_parameters: parameters it uses but does not train.
    sources: for LLT, where each layer started from (`hx.baselines.llt.transfer`); else ().
  """
  method: str
  task: str
  description: str
  outcome: Outcome
  network: Network | None
  parameters: int
  frozen_parameters: int
  sources: tuple[tuple[str, str], ...] = ()


class _ToTrain(NamedTuple):
  """One baseline network, as `_run` trains it.

  Attributes:
    description: str, the network as an hx program's text, or a description in that style
      (`BaselineResult.description`).
    tunable: what Tune trains: a CompiledProgram, or a network with its protocol (`hx.compile.tuning.Tunable`:
      `GraphRNN`, `PNN`, `ContinualNet`).
    frozen: the `frozen` argument its apply takes (the arrays it uses and does not train; () or {}: none).
    variables: the variables it starts from ({"params", "batch_stats"}, as `tunable.init` gives them), or
      None: `tunable.init` from the seed's key (with the output bias from the targets' mean where the
      settings say so).
    to_modules: trained variables -> role -> {"params", "batch_stats"}, the `Network`'s modules.
    arch: its `Architecture`, or None: a program trained from scratch, which keeps no `Network`.
    column: int, a progressive network's column (from 0), or None.
    sources: for LLT, where each layer started from (`hx.baselines.llt.transfer`); else ().
  """
  description: str
  tunable: Tunable
  frozen: chex.ArrayTree
  variables: chex.ArrayTree | None
  to_modules: Callable[[chex.ArrayTree], Mapping[str, Mapping[str, chex.ArrayTree]]]
  arch: Architecture | None
  column: int | None = None
  sources: tuple[tuple[str, str], ...] = ()


def _run(method: str, task: Task, net: _ToTrain, tune_config: TuneConfig, seed: int,
         checkpoint_dir: os.PathLike | str | None) -> BaselineResult:
  """`net` trained on `task` under `method`'s name (its checkpoint in `checkpoint_dir`, if given)."""
  start = time.perf_counter()
  description, tunable, frozen, variables, to_modules, arch, column, sources = net
  ready = prepare(task, tune_config)
  config = seeded(ready, seed)
  init = variables
  if init is None:
    init = tunable.init(jax.random.key(seed))
    if config.bias_from_targets:
      init = output_bias_from_targets(tunable, init, task.objective, task.train.targets)
  checkpoint = None
  if checkpoint_dir is not None:
    # A fresh start is named by how it is made, not by its bits: the same seed's initialisation computed
    # on another device (or jax) can differ at rounding, and a run saved on one machine must resume on
    # another. Given variables (transferred weights) are named by their bits, read from stored files.
    # Named by the canonical JSON of what is trained (`hx.canonical_json`): every field of the training
    # settings.
    origin = f"seed {seed} fresh" if variables is None else fingerprint(init)
    checkpoint = checkpoint_in(checkpoint_dir, {
        "baseline": method, "task": task.name, "network": description, "training": config,
        "data": fingerprint(ready.data), "start": origin, "frozen": fingerprint(frozen)})
  outcome = fit(tunable, ready, seed=seed, frozen=frozen, variables=init, checkpoint=checkpoint)
  network = None
  if outcome.variables is not None and arch is not None:
    network = Network(method, task.name, arch, to_modules(outcome.variables), column)
  return BaselineResult(
      method=method, task=task.name, description=description, network=network,
      parameters=count_parameters(init["params"]), frozen_parameters=_frozen_parameters(frozen),
      sources=sources, outcome=dataclasses.replace(outcome, seconds=time.perf_counter() - start))


def _frozen_parameters(frozen: chex.ArrayTree) -> int:
  """The parameters (not the batch statistics) in a `frozen` argument: every {"params", ...} in it."""
  if isinstance(frozen, dict) and "params" in frozen:
    return count_parameters(frozen["params"])
  if isinstance(frozen, dict):
    return sum(_frozen_parameters(v) for v in frozen.values())
  if isinstance(frozen, (list, tuple)):
    return sum(_frozen_parameters(v) for v in frozen)
  return 0


def _per_role(variables: Mapping[str, Mapping[str, chex.ArrayTree]]) -> dict:
  """{"params": {role: p}, "batch_stats": {role: s}} -> role -> {"params", "batch_stats"}."""
  return {r: {"params": p, "batch_stats": variables["batch_stats"].get(r, {})}
          for r, p in variables["params"].items()}


def _compiled(arch: Architecture, config: ModuleConfig) -> CompiledProgram:
  return compile_program(arch.program, arch.fresh_types, config)


def _from_modules(compiled: CompiledProgram, modules: Mapping[str, Mapping[str, chex.ArrayTree]]) -> dict:
  """Variables of a compiled program from role -> {"params", "batch_stats"} (slots in program order)."""
  return {"params": tuple(modules[n]["params"] for n in compiled.fresh_slots),
          "batch_stats": tuple(modules[n]["batch_stats"] for n in compiled.fresh_slots)}


def standalone(task: Task, config: ModuleConfig, tune_config: TuneConfig, *, seed: int,
               element: Type | None = None, regressor: Network | None = None,
               checkpoint_dir: os.PathLike | str | None = None) -> BaselineResult:
  """A new network for `task`, from random weights (the paper's "standalone" baseline).

  Args:
    task: the task.
    config, tune_config: module sizes and training settings (HOUDINI's for this task).
    seed: seeds initialisation, shuffling and dropout.
    element: a list task's per-element output type (`hx.baselines.networks.element_type`).
    regressor: for a graph task, the regression network learned on the sequence's first task; it is
      mapped over the grid frozen ("we map a learned MLP ∘ CNN regression module to each image in the
      grid"; the paper shares these regressors across the competing methods), and only the LSTM trains.
      None (a user's sequence with no earlier task of the node regressor's type; ours): the regressor
      trains with the LSTM, from random weights, the task's network alone.

  Raises:
    ValueError: a type no baseline takes, or a regressor of another shape.
  """
  arch = architecture(task.type, config, element)
  if arch.kind == "graph":
    return _graph("standalone", task, arch, arch.description, regressor, tune_config, seed, checkpoint_dir)
  compiled = _compiled(arch, config)
  net = _ToTrain(arch.description, compiled, (), None, compiled.fresh_variables, arch)
  return _run("standalone", task, net, tune_config, seed, checkpoint_dir)


def _graph(method: str, task: Task, arch: Architecture, description: str, regressor: Network | None,
           tune_config: TuneConfig, seed: int, checkpoint_dir: os.PathLike | str | None) -> BaselineResult:
  """The graph network (`hx.baselines.graph`) trained on `task` under `method`'s name: the LSTM over
  `regressor` mapped frozen, or with no regressor the LSTM and a regressor of its own (`standalone`)."""
  if regressor is None:
    own = _ToTrain(description, GraphRNN(arch, trainable_regressor=True), {}, None, _per_role, arch)
    return _run(method, task, own, tune_config, seed, checkpoint_dir)
  _check_regressor(arch, regressor)
  net = GraphRNN(arch, trainable_regressor=False)
  frozen = net.frozen(regressor.modules)

  def modules(v):
    return {**dict(regressor.modules), **_per_role(v)}

  return _run(method, task, _ToTrain(description, net, frozen, None, modules, arch), tune_config, seed,
              checkpoint_dir)


def _check_regressor(arch: Architecture, regressor: Network) -> None:
  for role in (arch.encoder, MLP):
    want = jax.tree.map(np.shape, arch.init(jax.random.key(0))[role])
    got = jax.tree.map(np.shape, regressor.modules.get(role))
    if want != got:
      raise ValueError(f"the regressor from {regressor.task} does not fit {arch.task_type}: its {role} "
                       "has other shapes")


def llt(task: Task, history: Sequence[Network], config: ModuleConfig, tune_config: TuneConfig, *, seed: int,
        element: Type | None = None, checkpoint_dir: os.PathLike | str | None = None) -> BaselineResult:
  """The task's standalone architecture, started from the earlier tasks' weights (`hx.baselines.llt`)
  and fine-tuned, all of it.

  Args:
    history: the earlier tasks' LLT networks, oldest first (empty: this is `standalone` from random
      weights, for a graph task with a trainable regressor).
    element: a list task's per-element output type (`hx.baselines.networks.element_type`).
  """
  arch = architecture(task.type, config, element)
  fresh = arch.init(jax.random.key(seed))
  modules, sources = transfer(arch, fresh, history)
  if arch.kind == "graph":
    net = GraphRNN(arch, trainable_regressor=True)
    variables = {"params": {r: m["params"] for r, m in modules.items()},
                 "batch_stats": {r: m["batch_stats"] for r, m in modules.items()}}
    return _run("llt", task, _ToTrain(arch.description, net, {}, variables, _per_role, arch, sources=sources),
                tune_config, seed, checkpoint_dir)
  compiled = _compiled(arch, config)
  transferred = _ToTrain(arch.description, compiled, (), _from_modules(compiled, modules),
                         compiled.fresh_variables, arch, sources=sources)
  return _run("llt", task, transferred, tune_config, seed, checkpoint_dir)


def pnn(task: Task, columns: Sequence[Network], config: ModuleConfig, tune_config: TuneConfig, *, seed: int,
        element: Type | None = None, checkpoint_dir: os.PathLike | str | None = None) -> BaselineResult:
  """A progressive network (`hx.baselines.pnn`): a new column for `task`, with lateral connections from
  the earlier tasks' columns, which stay frozen.

  Args:
    columns: the earlier tasks' columns (each a `Network` trained by `pnn`; the first task's column may
      be its standalone network, which is what a one-column progressive network is), oldest first.
    element: a list task's per-element output type (`hx.baselines.networks.element_type`).

  Raises:
    ValueError: a graph task, or an input other than the first column's (`hx.baselines.pnn.refusal`).
  """
  arch = architecture(task.type, config, element)
  net = PNN([c.architecture for c in columns] + [arch], config)
  frozen = net.frozen([c.modules for c in columns])
  k = len(columns)
  description = f"pnn(column {k + 1} of {k + 1}: {arch.description})"
  return _run("pnn", task, _ToTrain(description, net, frozen, None, _per_role_lateral, arch, column=k),
              tune_config, seed, checkpoint_dir)


def _per_role_lateral(variables: Mapping[str, Mapping[str, chex.ArrayTree]]) -> dict:
  out = _per_role(variables)
  out["lateral"] = {"params": variables["params"]["lateral"], "batch_stats": {}}
  return out


def _freshen(program: P.Program, prefix: str) -> P.Program:
  if isinstance(program, P.Lib):
    return P.Fresh(prefix + program.name)
  kids = P.children(program)
  return P.with_children(program, tuple(_freshen(k, prefix) for k in kids)) if kids else program


def from_scratch(task: Task, program: P.Program, fresh_types: Mapping[str, Type],
                 library_types: Mapping[str, Type], config: ModuleConfig, tune_config: TuneConfig, *,
                 seed: int, checkpoint_dir: os.PathLike | str | None = None) -> BaselineResult:
  """`program` with every library function replaced by a fresh one of the same type, trained from random
  weights: the paper's "standalone_with_fold" baseline (appendix "Summing Experiment": it "reuses the
  program found by HOUDINI, but trains the parameter from a random initialization").

  Args:
    program: a complete program (e.g. HOUDINI's best for the task).
    fresh_types: the types of its fresh functions.
    library_types: the types of the library functions it calls (name without "lib.").
  """
  prefix = "nn_scratch_"
  scratch = _freshen(program, prefix)
  types = dict(fresh_types)
  for name in P.library_names(program):
    if name not in library_types:
      raise ValueError(f"no type for library function lib.{name} of {program}")
    types[prefix + name] = library_types[name]
  compiled = compile_program(scratch, types, config)
  net = _ToTrain(str(scratch), compiled, (), None, lambda v: {}, None)
  return _run("standalone_with_fold", task, net, tune_config, seed, checkpoint_dir)


def continual(method: str, task: Task, state: ContinualState, config: ModuleConfig,
              tune_config: TuneConfig, *, seed: int, position: int | None = None, element: Type | None = None,
              settings: ContinualSettings = DEFAULT_SETTINGS, ewc_strength: float | None = None,
              regressor: Network | None = None,
              checkpoint_dir: os.PathLike | str | None = None) -> tuple[BaselineResult, ContinualState]:
  """Trains `task`'s network under `method` ("replay" or "ewc") after the tasks `state` holds.

  A graph task's trunk is `regressor`, frozen, and its head the LSTM (`hx.baselines.continual`): it
  trains as `standalone`'s graph network, under `method`'s name, and the state is returned unchanged
  (it shares nothing trained with another task).

  Args:
    method: "replay" or "ewc".
    task: the task (an `hx.Task`, or a value with its attributes).
    state: what the earlier tasks left (`ContinualState()` for the first).
    config, tune_config: module sizes and the task kind's training settings (HOUDINI's).
    seed: seeds the head's initialisation (and the trunk's, for the first task of its kind), shuffling
      and dropout.
    position: the task's place in the stream, from 0 (seeds its memory); default `len(state.learned)`.
    element: a list task's per-element output type (`hx.baselines.networks.element_type`).
    settings: the memory's size and draw, the replay batch, the Fisher's examples.
    ewc_strength: lambda (EWC only; required there).
    regressor: a graph task's shared regressor (`standalone`'s); None: it trains its own.
    checkpoint_dir: saves the training there as it goes, resumed from it (`hx.baselines.train`).

  Returns:
    (its `hx.baselines.BaselineResult`, method "replay" or "ewc", whose network holds this task's trunk
    and head; the state after it).

  Raises:
    ValueError: an unknown method, EWC without a strength, a task type the baselines cannot take, or a
      regressor that does not fit a graph task.
  """
  if method not in CONTINUAL:
    raise ValueError(f"unknown continual baseline {method!r}; they are {', '.join(CONTINUAL)}")
  if method == "ewc" and ewc_strength is None:
    raise ValueError("EWC needs its strength lambda (choose_ewc_strength chooses it)")
  position = len(state.learned) if position is None else position
  arch = architecture(task.type, config, element)
  if arch.kind == "graph":
    description = f"{method}({arch.description}; trunk the shared regressor, frozen)"
    return _graph(method, task, arch, description, regressor, tune_config, seed, checkpoint_dir), state
  key = trunk_key(arch)
  earlier = state.sharing(key)
  counts = ()
  if method == "replay":
    counts = replay_counts(settings.replay_batch or tune_config.batch_size, len(earlier))
  net = ContinualNet(method, arch, config, earlier, counts)
  variables = net.starting(seed, state.trunks.get(key))
  if tune_config.bias_from_targets:
    variables = output_bias_from_targets(net.compiled, variables, task.objective, task.train.targets)
  frozen = net.frozen(earlier, ewc_strength)
  description = f"{method}({arch.description}; trunk {arch.encoder} shared by {len(earlier)} earlier)"
  trunk_and_head = _ToTrain(description, net, frozen, variables, net.compiled.fresh_variables, arch)
  result = _run(method, task, trunk_and_head, tune_config, seed, checkpoint_dir)
  if result.network is None:
    return result, state
  return result, learn(method, task, position, result.network, state, settings, result.test_score, config)




@dataclasses.dataclass(frozen=True)
class EwcChoice:
  """EWC's strength as `choose_ewc_strength` chose it.

  Attributes:
    strength: lambda chosen.
    tasks: the tasks it was chosen on (names).
    scores: per lambda of the grid, the mean over those tasks of each task's validation score after the
      last of them, divided by the grid's best score on that task (so that error and RMSE combine; 1.0
      where the lambda was best on every task), in the grid's order.
  """
  strength: float
  tasks: tuple[str, ...]
  scores: tuple[tuple[float, float], ...]


def choose_ewc_strength(tasks: Sequence[Task], config: ModuleConfig,
                        tune_config: Callable[[Task], TuneConfig] | TuneConfig, *, seed: int,
                        settings: ContinualSettings = DEFAULT_SETTINGS,
                        elements: Sequence[Type | None] | None = None) -> EwcChoice:
  """Chooses EWC's lambda on the first `settings.ewc_tasks` of `tasks`: for each lambda of
  `settings.ewc_strengths`, EWC runs over them (seed `seed` + position), and every one of them is scored
  again on its validation split after the last; the lambda whose mean relative score (`EwcChoice.scores`)
  is lowest is chosen, the smallest on a tie. Only validation splits are read.

  Args:
    tasks: the stream's tasks (only the first ones are used).
    tune_config: the training settings, or a function of the task giving them.
    elements: each list task's per-element output type, or None.
  """
  first = list(tasks[:settings.ewc_tasks])
  elements = list(elements) if elements is not None else [None] * len(first)
  per_lambda = []
  for strength in settings.ewc_strengths:
    state = ContinualState()
    for k, task in enumerate(first):
      settings_k = tune_config(task) if callable(tune_config) else tune_config
      _, state = continual("ewc", task, state, config, settings_k, seed=seed + k, position=k,
                           element=elements[k], settings=settings, ewc_strength=strength)
    trained = {e.position for e in state.learned}
    scores = rescore(state, [t for k, t in enumerate(first) if k in trained], tune_config, config, "val")
    full = [math.inf] * len(first)
    for e, s in zip(state.learned, scores):
      full[e.position] = s if math.isfinite(s) else math.inf
    per_lambda.append(full)
  best = [min(row[k] for row in per_lambda) for k in range(len(first))]
  relative = []
  for row in per_lambda:
    parts = [(s / b if b > 0 else (1.0 if s == b else math.inf)) for s, b in zip(row, best)]
    relative.append(sum(parts) / len(parts))
  chosen = min(range(len(relative)), key=lambda i: (relative[i], settings.ewc_strengths[i]))
  return EwcChoice(float(settings.ewc_strengths[chosen]), tuple(t.name for t in first),
                   tuple(zip(map(float, settings.ewc_strengths), relative)))
