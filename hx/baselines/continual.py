"""Continual-learning baselines over a shared trunk with a head per task: experience replay and EWC.

    state = ContinualState()                                   # nothing learned yet
    for task in tasks:
      result, state = continual("replay", task, state, config, tune_config, seed=0)
    scores = rescore(state, tasks, tune_config)                # every task again, after the last one

These are the two strategies a continual-learning researcher compares with first (Avalanche's `Replay`
and `EWC`), over the network Avalanche's multi-head models have: one trunk per input kind, shared by
every task whose input it encodes, and one head per task.

- **The trunk and the heads.** A task's network is its standalone architecture
  (`hx.baselines.networks.architecture`: MLP ∘ E for an image or a vector, RNN(map(MLP ∘ E)) for a list);
  its encoder E (nn_cnn for an image, nn_enc for another tensor) is the trunk, shared by every task whose
  encoder has the same `ModuleSpec` (the same input type and sizes: `trunk_key`); the rest (nn_mlp, and
  nn_rnn for a list) is the task's head. A task starts from the latest trunk of its kind (random weights
  for the first) and a fresh head, and trains both; the heads of earlier tasks are frozen from the end
  of their task on (their batch statistics too), so an earlier task changes only through the trunk.
- **Graph tasks.** Their network (`hx.baselines.graph`) maps a regressor (MLP ∘ E) over the nodes and
  runs an LSTM over them; its trunk is the regressor learned on the stream's first task, shared frozen by
  every graph task (the paper's protocol for every competing method: "shared the regressors learned for
  the first tasks"), and its head the LSTM, fresh per task. A graph task trains as the standalone graph
  network does (`hx.baselines.train.continual`) and enters no `ContinualState`: it shares no trained
  parameter with another task, so replay and EWC have nothing to protect there, and nothing later
  changes it (its forgetting is zero by construction, as a standalone network's). Where the stream has
  no such regressor the graph network trains its own with the LSTM (as the standalone one does; ours).
- **Experience replay** (`method="replay"`): after each task, `ContinualSettings.memory_per_task` of its
  training examples (fewer where it has fewer) are kept, drawn uniformly without replacement by a
  generator seeded by (`ContinualSettings.seed`, the task's position in the stream): a fixed-size memory
  per task, not a reservoir, so a task's share never shrinks as the stream grows. Each training step of a
  later task adds to its batch's loss the loss of `replay_batch` memory examples of the earlier tasks that
  share its trunk, spread evenly over them (`replay_counts`; each task's drawn uniformly with replacement,
  per step, from the step's key), each through its own frozen head and the trunk being trained, in
  training mode (batch statistics, dropout) as the rest of the batch. Avalanche concatenates the memory
  batch to the current one and averages the loss over both; here the two means are added (the current
  batch's and the memory's, over the memory examples): with a memory batch as large as the current one
  that is twice Avalanche's loss, and Adam's steps do not depend on the loss's scale.
- **EWC** (`method="ewc"`, Kirkpatrick et al. 2017, Avalanche's "separate" mode): after each task, the
  diagonal Fisher of the trunk's parameters, the mean over the task's training examples of the squared
  gradient of the example's log-likelihood (`fisher_diagonal`; the objective's loss per example is its
  negative log-likelihood: cross-entropies exactly, MSE that of a Gaussian of variance 1/2), computed in
  inference mode (running statistics, no dropout), and the trunk's parameters theta* then. A later
  task's loss adds (lambda/2) sum_k sum_i F_k,i (theta_i - theta*_k,i)^2 over the earlier tasks k that
  share its trunk (`ewc_penalty`). Only the trunk is penalised: the earlier heads never change, and the
  task's own head is new. Avalanche's EWC squares mini-batch gradients, which differs from the per-example
  Fisher by the batch's averaging; this is the per-example one the definition gives. lambda is chosen on
  the first tasks' validation from `ContinualSettings.ewc_strengths` (`choose_ewc_strength`).
- **Forgetting**, as CTrL measures it: every earlier task scored again on its test split with the
  final trunk and its own head (`rescore` from a state, `rescore_networks` from the networks each task
  left, as an evaluation keeps them), against its score when it was learned.
- **Memory**, as CTrL counts it (`footprint`): what each task adds to what the method keeps: its head,
  the latest trunk of its kind (one per kind), and its replay memory or its Fisher and anchor.

Every task trains through `hx.compile.fitting.fit` (Tune), as the other baselines do
(`hx.baselines.train`), with the same data, batches, optimiser, epochs and model selection; the replayed
loss and the EWC penalty reach Tune's step as the model's `penalty` (`hx.compile.tuning.Tunable`), their
arrays (memories, frozen heads, Fishers, anchors, lambda) as its `frozen` argument, so one executable per
task's structure serves every value. Deterministic for a seed on a machine.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hx.baselines.networks import Architecture, Network
from hx.compile import ModuleConfig, TuneConfig, compile_program
from hx.compile.executables import apply_for, resolve_objective
from hx.compile.losses import Objective, item_loss
from hx.compile.tuning import evaluate
from hx.lang.values import gather, num_examples, take

if TYPE_CHECKING:
  import chex

  from hx.baselines.networks import Network
  from hx.compile.lower import CompiledProgram
  from hx.data.task import Task
  from hx.lang.values import Batch

__all__ = ["CONTINUAL", "ContinualSettings", "Memory", "Learned", "ContinualState", "trunk_key", "remember",
           "replay_counts", "fisher_diagonal", "stacked", "ewc_penalty", "ContinualNet", "learn", "rescore",
           "rescore_networks", "footprint", "DEFAULT_SETTINGS"]

CONTINUAL = ("replay", "ewc")
"""The continual-learning baselines: experience replay and elastic weight consolidation."""


@dataclasses.dataclass(frozen=True)
class ContinualSettings:
  """The continual baselines' own settings (the training's are the task kind's `TuneConfig`).

  Attributes:
    memory_per_task: replay: training examples kept per task (ours: 50; Avalanche's `ReplayPlugin`
      keeps 200 in all, shared by the tasks seen, which for a 100-task stream is 2 a task).
    replay_batch: replay: memory examples added to each training step, spread evenly over the earlier
      tasks that share the trunk, at least one each; None: the training batch's size (Avalanche's
      default, a memory batch as large as the current one).
    ewc_strengths: EWC: the grid lambda is chosen from (`choose_ewc_strength`).
    ewc_tasks: EWC: how many first tasks lambda is chosen on.
    fisher_examples: EWC: the Fisher averages over at most this many of a task's training examples (the
      first ones); None: all of them.
    seed: seeds the memory's draw (with the task's position).
  """
  memory_per_task: int = 50
  replay_batch: int | None = None
  ewc_strengths: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
  ewc_tasks: int = 3
  fisher_examples: int | None = None
  seed: int = 0

  def __post_init__(self):
    if self.memory_per_task < 1:
      raise ValueError(f"memory_per_task must be at least 1, got {self.memory_per_task}")
    if self.replay_batch is not None and self.replay_batch < 1:
      raise ValueError(f"replay_batch must be at least 1 or None, got {self.replay_batch}")
    if not self.ewc_strengths or any(not (s >= 0 and math.isfinite(s)) for s in self.ewc_strengths):
      raise ValueError(f"ewc_strengths must be finite and >= 0, at least one, got {self.ewc_strengths}")
    if self.ewc_tasks < 1:
      raise ValueError(f"ewc_tasks must be at least 1, got {self.ewc_tasks}")


DEFAULT_SETTINGS = ContinualSettings()
"""The settings a run takes unless given others."""


def trunk_key(arch: Architecture) -> tuple:
  """What a trunk is shared by: the encoder's role and `ModuleSpec` (input type, output, sizes)."""
  return (arch.encoder, arch.spec(arch.encoder))


@dataclasses.dataclass(frozen=True, eq=False)
class Memory:
  """A task's replay memory.

  Attributes:
    indices: (m,) int64, sorted: which training examples (positions in the task's training split).
    inputs: the examples' inputs with images gathered: (m, *shape) arrays, or a ListBatch of (m, L, ...)
      values and (m, L) mask.
    targets: (m, *output) as the training split stores them.
  """
  indices: np.ndarray
  inputs: Batch = dataclasses.field(repr=False)
  targets: np.ndarray = dataclasses.field(repr=False)


def remember(task: Task, position: int, settings: ContinualSettings) -> Memory:
  """The replay memory of `task` (the `position`-th of its stream, from 0): `settings.memory_per_task` of
  its training examples (all where it has no more), drawn uniformly without replacement by
  `np.random.default_rng([settings.seed, position])`, in their split's order."""
  n = num_examples(task.train.inputs)
  rng = np.random.default_rng([settings.seed, position])
  idx = np.sort(rng.choice(n, size=min(settings.memory_per_task, n), replace=False)).astype(np.int64)
  inputs = take(task.train.inputs, idx)
  if task.table is not None:
    inputs = gather(np.asarray(task.table), inputs)
  return Memory(idx, jax.tree.map(np.asarray, inputs), np.asarray(task.train.targets)[idx])


def replay_counts(total: int, tasks: int) -> tuple[int, ...]:
  """Memory examples drawn per step from each of `tasks` earlier tasks: `total` spread as evenly as
  possible (the first ones one more), at least one each."""
  if tasks == 0:
    return ()
  base, extra = divmod(max(total, tasks), tasks)
  return tuple(base + (1 if j < extra else 0) for j in range(tasks))


def fisher_diagonal(loss: Callable[[chex.ArrayTree, chex.ArrayTree, jax.Array], jax.Array],
                    params: chex.ArrayTree, inputs: chex.ArrayTree, targets: chex.ArrayTree, *,
                    chunk: int = 256) -> chex.ArrayTree:
  """The diagonal empirical Fisher: the mean over the n examples of grad(loss)(params, x_i, t_i) ** 2.

  Args:
    loss: loss(params, x, t) -> the negative log-likelihood of one example (a float32 scalar); x and t are
      one example's input and target, without a batch axis.
    params: a pytree of arrays.
    inputs, targets: n examples, with a leading axis n (arrays or pytrees of them).
    chunk: examples per vectorised call (bounds memory).

  Returns:
    A pytree shaped as `params`, float32.
  """
  n = int(jax.tree.leaves(targets)[0].shape[0])
  if n == 0:
    raise ValueError("the Fisher of no examples")
  squared = jax.jit(lambda p, x, t: jax.tree.map(
      lambda g: jnp.sum(jnp.square(g.astype(jnp.float32)), axis=0),
      jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(p, x, t)))
  total = jax.tree.map(lambda p: jnp.zeros(jnp.shape(p), jnp.float32), params)
  for start in range(0, n, chunk):
    rows = slice(start, min(start + chunk, n))
    part = squared(params, *jax.tree.map(lambda a: a[rows], (inputs, targets)))  # noqa: B023 -- used at once
    total = jax.tree.map(jnp.add, total, part)
  return jax.tree.map(lambda s: s / n, total)


def stacked(trees: Sequence[chex.ArrayTree]) -> chex.ArrayTree:
  """The pytrees `trees` (one structure, one shape per leaf) as one, each leaf with a new leading axis
  (K, *shape): K earlier tasks' arrays as one argument of a step, whose program then does not grow with K."""
  return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def ewc_penalty(params: chex.ArrayTree, anchors: tuple[chex.ArrayTree, chex.ArrayTree] | None,
                strength: jax.typing.ArrayLike) -> jax.Array:
  """(strength / 2) * sum_k sum_i fisher_k,i * (params_i - anchor_k,i) ** 2 over the K earlier tasks.

  Args:
    params: a pytree of arrays.
    anchors: (fishers, anchors), each a pytree shaped as `params` with a leading axis K (`stacked` of the
      tasks' Fishers and of their parameters), or None: no earlier task (0).
    strength: lambda, a float or a float32 scalar array.
  """
  if anchors is None:
    return jnp.float32(0.0)
  fishers, points = anchors
  terms = jax.tree.map(lambda f, p, a: jnp.sum(f * jnp.square(p[None] - a)), fishers, params, points)
  return 0.5 * jnp.asarray(strength, jnp.float32) * sum(jax.tree.leaves(terms), jnp.float32(0.0))


@dataclasses.dataclass(frozen=True, eq=False)
class Learned:
  """One task a continual baseline has learned, as later tasks see it.

  Attributes:
    task: its name; position: its place in the stream (from 0).
    architecture: its standalone architecture; objective: its objective.
    head: role -> {"params", "batch_stats"} (host arrays) of every module but the trunk, frozen.
    memory: its replay memory (replay), else None.
    fisher, anchor: the trunk's diagonal Fisher and parameters after the task (EWC), else None.
    score: its test score when it was learned (None if it had none).
  """
  task: str
  position: int
  architecture: Architecture
  objective: Objective
  head: Mapping[str, Mapping[str, chex.ArrayTree]] = dataclasses.field(repr=False)
  memory: Memory | None = dataclasses.field(default=None, repr=False)
  fisher: chex.ArrayTree | None = dataclasses.field(default=None, repr=False)
  anchor: chex.ArrayTree | None = dataclasses.field(default=None, repr=False)
  score: float | None = None

  @property
  def trunk(self) -> tuple:
    return trunk_key(self.architecture)


@dataclasses.dataclass(frozen=True, eq=False)
class ContinualState:
  """What a continual baseline carries from task to task: the latest trunk of each kind (`trunk_key` ->
  {"params", "batch_stats"}, host arrays) and the tasks learned, in order."""
  trunks: Mapping[tuple, Mapping[str, chex.ArrayTree]] = dataclasses.field(default_factory=dict, repr=False)
  learned: tuple[Learned, ...] = ()

  def sharing(self, key: tuple) -> tuple[Learned, ...]:
    """The tasks learned whose trunk is `key`'s."""
    return tuple(e for e in self.learned if e.trunk == key)


def _slot(compiled: CompiledProgram, role: str) -> int:
  return compiled.fresh_slots.index(role)


def _with_trunk(variables: Mapping[str, Sequence[chex.ArrayTree]], slot: int, trunk_params: chex.ArrayTree,
                trunk_stats: chex.ArrayTree) -> dict:
  """{"params", "batch_stats"} slot tuples with slot `slot` replaced."""
  params, stats = list(variables["params"]), list(variables["batch_stats"])
  params[slot], stats[slot] = trunk_params, trunk_stats
  return {"params": tuple(params), "batch_stats": tuple(stats)}


def _variables(compiled: CompiledProgram, modules: Mapping[str, Mapping[str, chex.ArrayTree]]) -> dict:
  return {"params": tuple(modules[n]["params"] for n in compiled.fresh_slots),
          "batch_stats": tuple(modules[n]["batch_stats"] for n in compiled.fresh_slots)}


def _shapes(tree: chex.ArrayTree) -> tuple:
  return tuple((np.shape(x), np.asarray(x).dtype.str) for x in jax.tree.leaves(tree))


class _Replayed:
  """Earlier tasks the replay loss applies alike, as one vectorised call: the same network structure
  (compiled program, trunk slot, logits-resolved objective), memory examples drawn per step (`count`)
  and memory shapes. `positions` are their places among the earlier tasks sharing the trunk (from 0),
  which seed their draws."""

  def __init__(self, learned: Learned, config: ModuleConfig, count: int):
    arch = learned.architecture
    self.compiled = compile_program(arch.program, arch.fresh_types, config)
    self.slot = _slot(self.compiled, arch.encoder)
    self.objective = resolve_objective(self.compiled, learned.objective)
    self.apply = apply_for(self.compiled, self.objective)
    self.count = count
    self.positions: list[int] = []

  def key(self, learned: Learned) -> tuple:
    """What tasks replayed as one call share (this one's with `learned`'s memory)."""
    memory = learned.memory
    return (self.compiled.key, self.objective, self.count, _shapes((memory.inputs, memory.targets)))

  def head(self, learned: Learned) -> dict:
    """The task's frozen variables ({"params", "batch_stats"} slot tuples), its trunk slot empty (the step's
    trunk goes there)."""
    modules = {**dict(learned.head), self.compiled.fresh_slots[self.slot]: {"params": (), "batch_stats": ()}}
    return _variables(self.compiled, modules)

  def loss(self, held: Mapping[str, chex.ArrayTree], trunk_params: chex.ArrayTree,
           trunk_stats: chex.ArrayTree, rng: jax.Array) -> jax.Array:
    """The summed loss of `count` memory examples of each of the group's tasks (drawn uniformly with
    replacement from its memory, by `fold_in(rng, its position)`), through its head and the trunk, in
    training mode. `held` is {"head", "inputs", "targets", "position"}, each with a leading axis over the
    group's tasks."""

    def one(head: chex.ArrayTree, inputs: Batch, targets: jax.Array, position: jax.Array) -> jax.Array:
      key = jax.random.fold_in(rng, position)
      idx = jax.random.randint(jax.random.fold_in(key, 0), (self.count,), 0, targets.shape[0])
      variables = _with_trunk(head, self.slot, trunk_params, trunk_stats)
      y, _ = self.apply(variables, (), take(inputs, idx), train=True, rng=jax.random.fold_in(key, 1))
      t = targets[idx].astype(jnp.int32 if self.objective.loss == "ce" else jnp.float32)
      return jnp.sum(item_loss(self.objective, y, t))

    return jnp.sum(jax.vmap(one)(held["head"], held["inputs"], held["targets"], held["position"]))


class ContinualNet:
  """A task's network trained under replay or EWC (an `hx.compile.tuning.Tunable` with a `penalty`).

  Its variables are the compiled standalone program's ({"params": slot tuple, "batch_stats": ...});
  `frozen` is {"replay": ({"head", "inputs", "targets", "position"}, ...)}, one entry per group of
  earlier tasks replayed alike (`_Replayed`), their arrays stacked along a leading axis, or {"ewc":
  (fishers, anchors) stacked over the earlier tasks or None, "strength": float32 scalar}; `apply`
  ignores it and runs the program. The step's program grows with the number of such groups, not with the
  number of earlier tasks, so neither its compiled size nor its time per example grows along a stream.
  """

  packs_lists = True

  def __init__(self, method: str, arch: Architecture, config: ModuleConfig, earlier: Sequence[Learned],
               counts: Sequence[int] = ()):
    self.method, self.arch = method, arch
    self.compiled = compile_program(arch.program, arch.fresh_types, config)
    self.slot = _slot(self.compiled, arch.encoder)
    self.counts = tuple(counts)
    groups: dict[tuple, _Replayed] = {}
    if method == "replay":
      for j, (e, count) in enumerate(zip(earlier, self.counts)):
        group = _Replayed(e, config, count)
        groups.setdefault(group.key(e), group).positions.append(j)
    self.groups = tuple(groups.values())
    structure = tuple((g.compiled.key, g.objective, g.count, len(g.positions)) for g in self.groups)
    self.key = ("hx.baselines.continual", method, self.compiled.key, structure,
                len(earlier) if method == "ewc" else 0)
    for name in ("output_activation", "output_slot", "specs", "fresh_slots"):
      setattr(self, name, getattr(self.compiled, name))

  def init(self, rng: jax.Array) -> dict:
    return self.compiled.init(rng)

  def starting(self, seed: int, trunk: Mapping[str, chex.ArrayTree] | None) -> dict:
    """The variables training starts from: `init` with `jax.random.key(seed)`, the trunk's slot replaced by
    `trunk` ({"params", "batch_stats"}, the latest of its kind) where there is one."""
    variables = self.init(jax.random.key(seed))
    if trunk is None:
      return variables
    return _with_trunk(variables, self.slot, trunk["params"], trunk["batch_stats"])

  def apply(self, variables: chex.ArrayTree, frozen: chex.ArrayTree, x: Batch,
            **kwargs: object) -> Batch | tuple[Batch, tuple]:
    return self.compiled.apply(variables, (), x, **kwargs)

  def penalty(self, params: Sequence[chex.ArrayTree], state: Mapping[str, Sequence[chex.ArrayTree]],
              frozen: Mapping[str, chex.ArrayTree], rng: jax.Array) -> jax.Array:
    """The replayed memory's mean loss (replay) or the EWC penalty, for the trunk in `params`."""
    if self.method == "ewc":
      return ewc_penalty(params[self.slot], frozen["ewc"], frozen["strength"])
    if not self.groups:
      return jnp.float32(0.0)
    trunk, trunk_stats = params[self.slot], state["batch_stats"][self.slot]
    losses = [g.loss(held, trunk, trunk_stats, rng) for g, held in zip(self.groups, frozen["replay"])]
    total = sum(losses, jnp.float32(0.0))
    return total / sum(self.counts)

  def frozen(self, earlier: Sequence[Learned], strength: float | None) -> dict:
    """The `frozen` argument for the tasks `earlier` (those sharing the trunk, oldest first)."""
    if self.method == "ewc":
      anchors = None
      if earlier:
        anchors = (stacked([e.fisher for e in earlier]), stacked([e.anchor for e in earlier]))
      return {"ewc": anchors, "strength": np.float32(0.0 if strength is None else strength)}
    held = []
    for g in self.groups:
      tasks = [earlier[j] for j in g.positions]
      held.append({"head": stacked([g.head(e) for e in tasks]),
                   "inputs": stacked([e.memory.inputs for e in tasks]),
                   "targets": stacked([e.memory.targets for e in tasks]),
                   "position": np.asarray(g.positions, np.int32)})
    return {"replay": tuple(held)}


def learn(method: str, task: Task, position: int, network: Network, state: ContinualState,
          settings: ContinualSettings, score: float | None, config: ModuleConfig) -> ContinualState:
  """The state after `task` was learned with `network` (its architecture, and its modules role ->
  {"params", "batch_stats"}): its trunk the latest of its kind, its head frozen, and its memory (replay)
  or Fisher and anchor (EWC). A run resumed from saved networks rebuilds its state through this, task by
  task."""
  arch = network.architecture
  modules = jax.tree.map(np.asarray, dict(network.modules))
  enc = arch.encoder
  memory = fisher = anchor = None
  if method == "replay":
    memory = remember(task, position, settings)
  else:
    fisher = _task_fisher(task, arch, modules, config, settings)
    anchor = modules[enc]["params"]
  head = {r: m for r, m in modules.items() if r != enc}
  entry = Learned(task.name, position, arch, task.objective, head, memory, fisher, anchor, score)
  return ContinualState({**state.trunks, trunk_key(arch): modules[enc]}, state.learned + (entry,))


def _task_fisher(task: Task, arch: Architecture, modules: Mapping[str, Mapping[str, chex.ArrayTree]],
                 config: ModuleConfig, settings: ContinualSettings) -> chex.ArrayTree:
  """The trunk's diagonal Fisher on the task's training examples, the network in inference mode."""
  compiled = compile_program(arch.program, arch.fresh_types, config)
  slot = _slot(compiled, arch.encoder)
  objective = resolve_objective(compiled, task.objective)
  apply = apply_for(compiled, objective)
  variables = _variables(compiled, modules)
  n = num_examples(task.train.inputs)
  if settings.fisher_examples is not None:
    n = min(n, settings.fisher_examples)
  idx = np.arange(n)
  inputs = take(task.train.inputs, idx)
  if task.table is not None:
    inputs = gather(np.asarray(task.table), inputs)
  targets = np.asarray(task.train.targets)[idx].astype(np.int32 if objective.loss == "ce" else np.float32)

  def loss(trunk: chex.ArrayTree, x: chex.ArrayTree, t: jax.Array) -> jax.Array:
    v = _with_trunk(variables, slot, trunk, variables["batch_stats"][slot])
    y = apply(v, (), jax.tree.map(lambda a: a[None], x), train=False, rng=None)
    return jnp.sum(item_loss(objective, y, t[None]))

  return jax.tree.map(np.asarray, fisher_diagonal(loss, variables["params"][slot], inputs, targets))


def _score(arch: Architecture, modules: Mapping[str, Mapping[str, chex.ArrayTree]], task: Task,
           tune_config: Callable[[Task], TuneConfig] | TuneConfig, config: ModuleConfig, split: str) -> float:
  """`task`'s `split` scored by the image, vector or list network `arch` with `modules` (role ->
  {"params", "batch_stats"})."""
  compiled = compile_program(arch.program, arch.fresh_types, config)
  settings = tune_config(task) if callable(tune_config) else tune_config
  score, _ = evaluate(compiled, _variables(compiled, modules), (), getattr(task, split), task.objective,
                      table=task.table, config=settings)
  return float(score)


def rescore(state: ContinualState, tasks: Sequence[Task],
            tune_config: Callable[[Task], TuneConfig] | TuneConfig, config: ModuleConfig,
            split: str = "test") -> list[float]:
  """Every learned task scored again on its `split` ("test" or "val") with the latest trunk of its kind
  and its own head: CTrL's score of each earlier task after the last one.

  Args:
    state: the state after the last task.
    tasks: the learned tasks' data, in `state.learned`'s order.
    tune_config: the evaluation's settings (chunk sizes), or a function of the task giving them.
    config: the module sizes.
  """
  if len(tasks) != len(state.learned):
    raise ValueError(f"{len(state.learned)} tasks learned, {len(tasks)} given")
  return [_score(e.architecture, {**dict(e.head), e.architecture.encoder: state.trunks[e.trunk]}, task,
                 tune_config, config, split)
          for e, task in zip(state.learned, tasks)]


def rescore_networks(networks: Sequence[Network | None], tasks: Sequence[Task] | Callable[[int], Task],
                     tune_config: Callable[[Task], TuneConfig] | TuneConfig, config: ModuleConfig,
                     split: str = "test") -> list[float | None]:
  """`rescore` from the networks the tasks left (`hx.baselines.Network`s, one per task in stream order,
  None for a task with none): each task's head with the trunk of the last network of its kind (`trunk_key`)
  in `networks`. A graph network shares nothing trained (module docstring): its score is unchanged, so
  it is not scored again (None), as a task with no network.

  Args:
    networks: each task's network (its trunk as it left it, and its head), or None.
    tasks: the tasks' data, in the same order, or a function of the position (from 0) building each
      when it is scored (a long stream's tasks need not be held at once).
    tune_config, config, split: as `rescore`'s.

  Returns:
    One score per task (float), None where not scored again.
  """
  if not callable(tasks) and len(tasks) != len(networks):
    raise ValueError(f"{len(networks)} networks, {len(tasks)} tasks given")
  trunks = {trunk_key(n.architecture): n.modules[n.architecture.encoder] for n in networks
            if n is not None and n.architecture.kind != "graph"}
  out: list[float | None] = []
  for j, network in enumerate(networks):
    if network is None or network.architecture.kind == "graph":
      out.append(None)
      continue
    task = tasks(j) if callable(tasks) else tasks[j]
    arch = network.architecture
    out.append(_score(arch, {**dict(network.modules), arch.encoder: trunks[trunk_key(arch)]}, task,
                      tune_config, config, split))
  return out


def _count(tree: chex.ArrayTree) -> int:
  return int(sum(np.size(x) for x in jax.tree.leaves(tree)))


def footprint(method: str, task: Task, position: int, arch: Architecture,
              modules: Mapping[str, Mapping[str, chex.ArrayTree]],
              settings: ContinualSettings = DEFAULT_SETTINGS, shared_regressor: bool = True) -> dict:
  """What task `task` (the `position`-th, from 0) adds to what `method` keeps, for CTrL's memory figure:
  {"trunk": the trunk's kind as text (None for a graph task: its trunk, the shared regressor, is not
  the method's), "trunk_parameters": int (the trunk's, kept once per kind: the latest replaces the one
  before), "head_parameters": int (the task's head, kept from then on), "kept_bytes": int (replay: the
  bytes of its memory's inputs and targets; EWC: its Fisher and anchor, float32, twice the trunk's
  parameters; 0 for a graph task)}.

  Args:
    modules: the task's trained network, role -> {"params", "batch_stats"} (a graph network's includes
      the regressor's modules).
    shared_regressor: a graph task mapped the shared regressor (else it trained its own, counted as its
      head's).
  """
  if arch.kind == "graph":
    regressor = (arch.encoder, arch.roles[1]) if shared_regressor else ()
    head = _count([m["params"] for r, m in modules.items() if r not in regressor])
    return {"trunk": None, "trunk_parameters": 0, "head_parameters": head, "kept_bytes": 0}
  trunk = _count(modules[arch.encoder]["params"])
  head = _count([m["params"] for r, m in modules.items() if r != arch.encoder])
  if method == "replay":
    memory = remember(task, position, settings)
    kept = int(sum(np.asarray(x).nbytes for x in jax.tree.leaves((memory.inputs, memory.targets))))
  else:
    kept = 2 * 4 * trunk
  return {"trunk": f"{arch.encoder}: {arch.spec(arch.encoder).type}", "trunk_parameters": trunk,
          "head_parameters": head, "kept_bytes": kept}
