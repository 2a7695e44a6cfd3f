"""Experience replay and EWC over a shared trunk with a head per task (`hx.baselines.continual`): the
replay memory, the Fisher of a known model, the EWC penalty, the heads kept apart, graph tasks over the
frozen regressor, re-scoring from the networks, and a 4-task stream end to end. All data here is
synthetic (small vector tasks drawn below)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hx
from hx import baselines
from hx.baselines import ENC, MLP
from hx.baselines.continual import (
  ContinualNet,
  ContinualSettings,
  ContinualState,
  ewc_penalty,
  fisher_diagonal,
  remember,
  replay_counts,
  stacked,
  trunk_key,
)
from hx.compile import ModuleConfig, TuneConfig
from hx.evaluation.config import EvalConfig
from tests.baselines.test_vector_baselines import chain_task

SIZES = ModuleConfig(mlp_hidden=8, mlp_dropout=0.0)
TRAIN = TuneConfig(epochs=4, batch_size=32, learning_rate=1e-2)
WIDTH = 6


def labelled(name: str, rule, seed: int, n: tuple[int, int, int] = (120, 60, 60)) -> hx.Task:
  """A synthetic yes/no task on (n, WIDTH) vectors: x[:, 0] of training example i is i (so a memory's
  examples can be named), the label `rule(x)`."""
  rng = np.random.default_rng(seed)
  splits = []
  for k, size in enumerate(n):
    x = rng.normal(size=(size, WIDTH)).astype(np.float32)
    y = rule(x).astype(np.int64)
    if k == 0:
      x[:, 5] = np.arange(size)
    splits.append((x, y))
  return hx.Task.from_arrays(name, f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]", *splits)


def rule(j: int):
  return lambda x: x[:, j] * x[:, (j + 1) % 5] > 0


def test_the_memory_holds_a_fixed_seeded_draw_of_each_tasks_training_examples():
  settings = ContinualSettings(memory_per_task=5, seed=3)
  tasks = [labelled("a", rule(0), 0), labelled("b", rule(1), 1, n=(3, 10, 10)), labelled("c", rule(2), 2)]
  for position, task in enumerate(tasks):
    memory = remember(task, position, settings)
    n = len(task.train.targets)
    want = np.sort(np.random.default_rng([3, position]).choice(n, size=min(5, n), replace=False))
    np.testing.assert_array_equal(memory.indices, want)
    assert len(memory.indices) == min(5, n) == len(memory.targets)  # a task of 3 examples keeps all 3
    np.testing.assert_array_equal(memory.inputs[:, 5], want)  # the examples themselves, by their index
    np.testing.assert_array_equal(memory.targets, np.asarray(task.train.targets)[want])
    again = remember(task, position, settings)
    np.testing.assert_array_equal(again.inputs, memory.inputs)
  other = remember(tasks[0], 0, dataclasses.replace(settings, seed=4))
  assert not np.array_equal(other.indices, remember(tasks[0], 0, settings).indices)


def test_replay_counts_spread_the_memory_batch_evenly():
  assert replay_counts(150, 4) == (38, 38, 37, 37)
  assert replay_counts(2, 3) == (1, 1, 1)  # at least one each
  assert replay_counts(10, 0) == ()


def test_the_fisher_of_a_logistic_model_is_its_closed_form():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(10, 3)).astype(np.float32)
  y = (rng.random(10) < 0.5).astype(np.float32)
  params = {"w": jnp.asarray([0.5, -1.0, 2.0]), "b": jnp.asarray(0.3)}

  def nll(p, xi, ti):
    z = jnp.dot(p["w"], xi) + p["b"]
    return -(ti * jax.nn.log_sigmoid(z) + (1 - ti) * jax.nn.log_sigmoid(-z))

  fisher = fisher_diagonal(nll, params, x, y, chunk=3)  # 4 chunks, the last of 1
  p = 1 / (1 + np.exp(-(x.astype(np.float64) @ np.array([0.5, -1.0, 2.0]) + 0.3)))
  r2 = (y - p) ** 2  # d nll / dz = p - y
  np.testing.assert_allclose(fisher["w"], (r2[:, None] * x ** 2).mean(0), rtol=1e-5)
  np.testing.assert_allclose(fisher["b"], r2.mean(), rtol=1e-5)


def test_the_ewc_penalty_and_its_gradient_are_those_written_out():
  params = {"a": jnp.asarray([1.0, 2.0]), "b": jnp.asarray([[3.0]])}
  f1 = {"a": jnp.asarray([2.0, 0.5]), "b": jnp.asarray([[1.0]])}
  t1 = {"a": jnp.zeros(2), "b": jnp.ones((1, 1))}
  f2 = {"a": jnp.asarray([1.0, 1.0]), "b": jnp.asarray([[4.0]])}
  t2 = {"a": jnp.ones(2), "b": jnp.zeros((1, 1))}
  # task 1: 2*1 + 0.5*4 + 1*4 = 8; task 2: 0 + 1 + 4*9 = 37; (lambda / 2) * 45 with lambda 3
  anchors = (stacked([f1, f2]), stacked([t1, t2]))
  assert jax.tree.map(np.shape, anchors[0]) == {"a": (2, 2), "b": (2, 1, 1)}
  assert float(ewc_penalty(params, anchors, 3.0)) == pytest.approx(1.5 * 45)
  grad = jax.grad(ewc_penalty)(params, anchors, 3.0)
  # lambda * sum_k F_k (theta - theta*_k)
  np.testing.assert_allclose(grad["a"], 3.0 * (np.array([2.0, 0.5]) * [1, 2] + np.array([1.0, 1.0]) * [0, 1]))
  np.testing.assert_allclose(grad["b"], 3.0 * np.array([[1.0 * 2 + 4.0 * 3]]))
  assert float(ewc_penalty(params, None, 3.0)) == 0.0


def test_a_networks_fisher_is_the_mean_of_its_per_example_squared_gradients():
  task = labelled("a", rule(0), 0)
  settings = ContinualSettings(fisher_examples=7)
  result, state = baselines.continual("ewc", task, ContinualState(), SIZES, TRAIN, seed=0,
                                      settings=settings, ewc_strength=1.0)
  learned = state.learned[0]
  arch = learned.architecture
  compiled = hx.compile_program(arch.program, arch.fresh_types, SIZES)
  modules = result.network.modules
  variables = {"params": tuple(modules[n]["params"] for n in compiled.fresh_slots),
               "batch_stats": tuple(modules[n]["batch_stats"] for n in compiled.fresh_slots)}
  slot = compiled.fresh_slots.index(ENC)
  objective = hx.compile.resolve_objective(compiled, task.objective)
  x, t = np.asarray(task.train.inputs), np.asarray(task.train.targets, np.float32)
  if task.table is not None:  # the vectors as a table, the inputs indices into it
    x = np.asarray(task.table)[x]

  def loss(trunk, i):
    params = list(variables["params"])
    params[slot] = trunk
    y = compiled.apply({"params": tuple(params), "batch_stats": variables["batch_stats"]}, (), x[i:i + 1],
                       train=False, logits=True)
    return jnp.sum(hx.compile.losses.item_loss(objective, y, t[i:i + 1]))

  grads = [jax.grad(loss)(variables["params"][slot], i) for i in range(7)]
  want = jax.tree.map(lambda *g: np.mean(np.square(np.stack(g)), 0), *grads)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-9), learned.fisher, want)
  jax.tree.map(np.testing.assert_array_equal, learned.anchor, modules[ENC]["params"])


def regression(name: str, seed: int, n: tuple[int, int, int] = (120, 60, 60)) -> hx.Task:
  """A synthetic regression task on (n, WIDTH) vectors (its network shares `labelled`'s trunk)."""
  rng = np.random.default_rng(seed)
  splits = []
  for size in n:
    x = rng.normal(size=(size, WIDTH)).astype(np.float32)
    splits.append((x, (x[:, :1] * 2.0).astype(np.float32)))
  return hx.Task.from_arrays(name, f"Tensor<real>[{WIDTH}] -> Tensor<real>[1]", *splits)


@pytest.mark.slow
def test_the_replayed_loss_is_each_earlier_tasks_loss_written_out():
  """Four earlier tasks in three groups replayed alike (two heads, two draw counts): the vectorised loss
  equals the mean over their drawn memory examples of each one's loss through its own head and the
  step's trunk, each drawn by fold_in(rng, its position)."""
  tasks = [labelled("a", rule(0), 0), regression("r", 5), labelled("b", rule(1), 1),
           labelled("c", rule(2), 2)]
  settings = ContinualSettings(memory_per_task=9)
  state = ContinualState()
  for k, task in enumerate(tasks):
    _, state = baselines.continual("replay", task, state, SIZES, TRAIN, seed=k, settings=settings)
  new = labelled("d", rule(3), 3)
  arch = baselines.architecture(new.type, SIZES)
  counts = replay_counts(6, 4)
  assert counts == (2, 2, 1, 1)
  net = ContinualNet("replay", arch, SIZES, state.learned, counts)
  assert sorted(len(g.positions) for g in net.groups) == [1, 1, 2]  # (a), (r), (b, c): b and c draw one
  frozen = net.frozen(state.learned, None)
  variables = net.starting(7, state.trunks[trunk_key(arch)])
  variables = jax.tree.map(lambda a: a + 0.01, variables)  # a trunk none of them was trained with
  rng = jax.random.key(11)
  got = net.penalty(variables["params"], variables, frozen, rng)

  slot = net.slot
  total = 0.0
  for j, (e, count) in enumerate(zip(state.learned, counts)):
    compiled = hx.compile_program(e.architecture.program, e.architecture.fresh_types, SIZES)
    objective = hx.compile.resolve_objective(compiled, e.objective)
    apply = hx.compile.executables.apply_for(compiled, objective)
    params = [e.head[n]["params"] if n in e.head else None for n in compiled.fresh_slots]
    stats = [e.head[n]["batch_stats"] if n in e.head else None for n in compiled.fresh_slots]
    params[slot], stats[slot] = variables["params"][slot], variables["batch_stats"][slot]
    key = jax.random.fold_in(rng, j)
    idx = jax.random.randint(jax.random.fold_in(key, 0), (count,), 0, 9)
    x = e.memory.inputs[np.asarray(idx)]
    y, _ = apply({"params": tuple(params), "batch_stats": tuple(stats)}, (), x, train=True,
                 rng=jax.random.fold_in(key, 1))
    t = e.memory.targets[np.asarray(idx)].astype(np.int32 if objective.loss == "ce" else np.float32)
    total += float(jnp.sum(hx.compile.losses.item_loss(objective, y, t)))
  assert float(got) == pytest.approx(total / 6, rel=1e-5)
  assert float(got) > 0


@pytest.mark.parametrize("method", ["replay", "ewc"])
def test_an_earlier_head_is_untouched_and_the_trunk_shared(method):
  first, second = labelled("a", rule(0), 0), labelled("b", rule(2), 1)
  r1, state = baselines.continual(method, first, ContinualState(), SIZES, TRAIN, seed=0, ewc_strength=10.0)
  r2, state = baselines.continual(method, second, state, SIZES, TRAIN, seed=1, ewc_strength=10.0)
  assert r2.method == method and r2.status == "trained"
  head1 = state.learned[0].head
  assert set(head1) == {MLP}
  jax.tree.map(np.testing.assert_array_equal, head1[MLP], r1.network.modules[MLP])  # bit for bit
  # One trunk for both (the same input kind): the second task's, changed by its training.
  (trunk,) = state.trunks.values()
  jax.tree.map(np.testing.assert_array_equal, trunk, r2.network.modules[ENC])
  changed = jax.tree.map(lambda a, b: not np.array_equal(a, b), trunk["params"],
                         r1.network.modules[ENC]["params"])
  assert any(jax.tree.leaves(changed))
  assert [e.task for e in state.learned] == ["a", "b"]


def test_a_graph_task_trains_its_own_head_over_the_frozen_regressor_and_leaves_the_state():
  """A graph task's trunk is the shared regressor, frozen; its head the LSTM: it trains as the standalone
  graph network does, and the state the earlier tasks left is handed back as it was."""
  assert baselines.refusal("replay", [chain_task().type], SIZES) is None
  first = labelled("a", rule(0), 0)
  r1, state = baselines.continual("ewc", first, ContinualState(), SIZES, TRAIN, seed=0, ewc_strength=1.0)
  graph = chain_task()
  result, after = baselines.continual("ewc", graph, state, SIZES, TRAIN, seed=1, ewc_strength=1.0)
  alone = baselines.standalone(graph, SIZES, TRAIN, seed=1)
  assert after is state and result.method == "ewc" and result.status == "trained"
  assert "trunk the shared regressor, frozen" in result.description
  assert result.test_score == alone.test_score  # the standalone graph network, trained alike
  # Re-scored from the networks: the graph task is not scored again (None); the first task, whose trunk
  # no later task trained, scores as recorded.
  scores = baselines.rescore_networks([r1.network, result.network], [first, graph], TRAIN, SIZES)
  assert scores[1] is None and scores[0] == pytest.approx(r1.test_score, abs=1e-4)
  assert baselines.rescore_networks([r1.network, None], lambda j: [first, graph][j], TRAIN, SIZES) == \
      [scores[0], None]


def stream() -> list[hx.Task]:
  """4 synthetic tasks on one input kind: task 1's label (x0 x1 > 0) needs features of the trunk that the
  later tasks (x2 x3, x3 x4, x4 x0... > 0 on other components) do not, and a trunk of 4 features cannot
  keep them all: a case built so that fine-tuning the shared trunk forgets task 1."""
  return [labelled(f"t{k + 1} [synthetic]", rule(j), k, n=(400, 200, 200))
          for k, j in enumerate((0, 2, 3, 1))]


@pytest.mark.slow
def test_a_four_task_stream_replay_forgets_less_than_fine_tuning():
  sizes = ModuleConfig(mlp_hidden=4, mlp_dropout=0.0)
  train = TuneConfig(epochs=30, batch_size=32, learning_rate=1e-2)
  tasks = stream()
  choice = baselines.choose_ewc_strength(tasks, sizes, train, seed=0,
                                         settings=ContinualSettings(ewc_strengths=(0.0, 100.0), ewc_tasks=2))
  assert choice.strength in (0.0, 100.0) and choice.tasks == ("t1 [synthetic]", "t2 [synthetic]")
  assert min(s for _, s in choice.scores) == pytest.approx(dict(choice.scores)[choice.strength])
  forgetting = {}
  for method, strength in (("replay", None), ("ewc", choice.strength), ("ewc", 0.0)):
    state, recorded = ContinualState(), []
    for k, task in enumerate(tasks):
      result, state = baselines.continual(method, task, state, sizes, train, seed=k, ewc_strength=strength)
      assert result.status == "trained"
      recorded.append(result.test_score)
    final = baselines.rescore(state, tasks, train, sizes)
    assert final[-1] == pytest.approx(recorded[-1], abs=1e-4)  # the last task: nothing after it
    forgetting[(method, strength)] = [f - r for f, r in zip(final[:-1], recorded[:-1])]
  fine_tuning = forgetting[("ewc", 0.0)]  # lambda 0: the shared trunk fine-tuned, nothing kept
  assert fine_tuning[0] > 5.0  # the case forgets task 1 (points of error)
  assert forgetting[("replay", None)][0] < fine_tuning[0]


@pytest.mark.slow
def test_replay_and_ewc_run_in_an_evaluation_beside_the_standalone_network(tmp_path):
  import json

  from hx.evaluation.runner import run

  tasks = stream()[:3]
  config = EvalConfig.make(hx.TaskStream("vectors", tasks), methods=["standalone", "replay", "ewc"],
                           fractions=[1.0], seeds=[0], training={"epochs": 2})
  out = run(config, tmp_path / "run", time_budget=None)
  assert out.finished and out.ran == 9
  chosen = json.loads((tmp_path / "run" / "ewc" / "seed_0" / "ewc_strength.json").read_text())
  assert chosen["strength"] in chosen["grid"] and len(chosen["tasks"]) == 3
  for method in ("replay", "ewc"):
    folders = sorted((tmp_path / "run" / method / "seed_0" / "records").iterdir())
    assert len(folders) == 3
    rec = json.loads((folders[-1] / "fraction_1.json").read_text())
    assert rec["method"] == method and np.isfinite(rec["ranked"][0]["test"])
    assert (rec.get("ewc_strength") == chosen) == (method == "ewc")
