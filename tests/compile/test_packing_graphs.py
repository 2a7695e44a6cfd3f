"""Packed graphs: map_g over a batch's graphs runs its function on the real nodes only (`apply(pack=...)`,
Tune's `pack_lists`), with the values, batch statistics, gradients, losses and scores of the padded
path, in training and in evaluation, for both graph forms: grids from hx.data (`SharedGraphs`, 3x3 and
4x4 grids padded to 16 nodes, taken as a `GraphBatch`) and random graphs (`EdgeGraphBatch`, 5-12 nodes
padded to 16)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, evaluate, tune
from hx.compile.batching import eval_chunks, eval_pack_capacity, pack_capacity
from hx.compile.losses import Objective
from hx.compile.scoring import _Evaluator, _Scoring
from hx.compile.values import EdgeGraphBatch, GraphBatch, SharedGraphs, Split, gather, real_elements, take
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.data.grids import grid_layouts
from hx.lang import parse
from hx.lang.types import parse_type as T
from tests.compile.lowering_helpers import assert_resumes_bit_for_bit
from tests.compile.test_packing import _perturbed

SMALL = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), lstm_hidden=8, graph_hidden=8, graph_message=4)
SOURCES = Sources(standin_per_class=(30, 12, 12))
# A CNN on every node's cell image (the dominant cost) and an MLP (batch norm, dropout) after it, as the
# paper's GS regressor, then one round of a graph kernel over the neighbours: padded nodes' outputs must
# not reach a real node through it.
PROGRAM = parse("compose(conv_g(nn_k), map_g(compose(nn_r, nn_c)))")
TYPES = {"nn_c": T("Tensor<real>[3][28][28] -> Tensor<real>[8]"),
         "nn_r": T("Tensor<real>[8] -> Tensor<real>[2]"),
         "nn_k": T("List<Tensor<real>[2]> -> Tensor<real>[2]")}
FORMS = ["grids", "random"]


def _task(form: str):
  """A shortest-path task built by hx.data whose every split mixes graph sizes padded to 16 nodes."""
  if form == "grids":
    sizes = TaskSizes(grids_train=((3, 40), (4, 40)), grids_val=((3, 20), (4, 21)),
                      grids_test=((3, 10), (4, 10)))
    task = build_task(task_spec("shortest_path_mnist"), SOURCES, sizes, 0)
    assert isinstance(task.val.inputs, SharedGraphs)
  else:
    sizes = TaskSizes(graphs=(60, 31, 30), graph_nodes=((5, 12), (5, 12), (5, 12)))
    task = build_task(task_spec("shortest_path_graph_mnist"), SOURCES, sizes, 0)
    assert isinstance(task.val.inputs, EdgeGraphBatch)
  return task


def _batch(task, form):
  """Two training examples, as a training step sees them (images gathered): a 3x3 and a 4x4 grid (25
  real nodes of 32 slots), or the first two random graphs (10-24 of 32)."""
  sizes = real_elements(task.train.inputs)
  idx = [int(np.flatnonzero(sizes == 9)[0]), int(np.flatnonzero(sizes == 16)[0])] if form == "grids" \
      else [0, 1]
  return gather(jnp.asarray(task.table), take(task.train.inputs, np.asarray(idx)))


# The random-graph (edge-list) cases of the two equality tests are slow: their grid cases stay fast.
FORMS_RANDOM_SLOW = [pytest.param(f, marks=pytest.mark.slow) if f == "random" else f for f in FORMS]


@pytest.mark.parametrize("form", FORMS_RANDOM_SLOW)
def test_apply_with_pack_equals_the_padded_path_in_training(form):
  """Outputs on real nodes, the loss, every gradient and the batch statistics of the MLP after the CNN
  (training mode: dropout keys per node, statistics over real nodes only) are those of the padded path."""
  task = _task(form)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = compiled.init(jax.random.key(0))
  x = _batch(task, form)
  real = np.asarray(x.mask)
  count = int(real.sum())
  assert isinstance(x, GraphBatch if form == "grids" else EdgeGraphBatch) and count < real.size
  rng = jax.random.key(1)

  def loss(params, pack):
    y, stats = compiled.apply({"params": params, "batch_stats": variables["batch_stats"]}, (), x,
                              train=True, rng=rng, pack=pack)
    # Real nodes only, as Tune's loss: a padded node's output is zeros when packed, a function of its
    # padding otherwise.
    return jnp.sum(jnp.where(x.mask[..., None], y.values, 0.0) ** 2), (y, stats)

  grad = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
  (l0, (y0, s0)), g0 = grad(variables["params"], None)
  # Room for a few more than the real nodes, as Tune's rounded capacity leaves: the spare rows must stay
  # out of the batch statistics.
  assert count + 6 < real.size
  (l1, (y1, s1)), g1 = grad(variables["params"], count + 6)
  np.testing.assert_allclose(l1, l0, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(y1.values)[real], np.asarray(y0.values)[real], rtol=1e-5, atol=1e-6)
  chex.assert_trees_all_close(s1, s0, rtol=1e-4, atol=1e-6)
  # Gradients to the gradients' scale: some are zero but for rounding (a bias before batch norm).
  scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(g0))
  chex.assert_trees_all_close(g1, g0, rtol=1e-4, atol=1e-5 * scale)
  # The MLP's statistics moved (the check above compares something).
  before = jax.tree.leaves(variables["batch_stats"])
  assert before and any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(s1), before))


@pytest.mark.parametrize("form", FORMS)
def test_the_node_function_sees_capacity_rows_not_every_node_slot(form):
  """A 3x3 and a 4x4 grid (or two random graphs): the training step's CNN convolves `capacity`
  rows (here the real nodes exactly) and the MLP after it gets as many, not the 32 padded slots; in
  inference too. (Training runs the CNN in slices of up to 29 images here: 25 real nodes are one slice,
  32 slots two; its (rows, 128) features are whole.)"""
  task = _task(form)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = compiled.init(jax.random.key(0))
  x = _batch(task, form)
  count, slots = int(np.asarray(x.mask).sum()), int(np.asarray(x.mask).size)
  assert slots == 32 and count < slots and (count == 25 or form == "random")
  rng = jax.random.key(1)
  for train in (True, False):
    def run(v, pack, train=train):
      y = compiled.apply(v, (), x, train=train, rng=rng, pack=pack)
      return y[0].values if train else y.values
    packed, padded = (str(jax.make_jaxpr(lambda v, p=p: run(v, p))(variables)) for p in (count, None))
    assert f"f32[{count},24,24,4]" in packed and f"f32[{slots},24,24,4]" not in packed
    assert f"f32[{count},128]" in packed and f"f32[{slots},128]" not in packed
    assert f"f32[{slots},128]" in padded


@pytest.mark.parametrize("form", FORMS_RANDOM_SLOW)
def test_packed_evaluation_equals_the_padded_one_on_graphs(form):
  """A validation split of mixed graph sizes in chunks with padding slots: the packed evaluation (on by
  default) gives the padded one's outputs on real nodes, loss and score."""
  task = _task(form)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = _perturbed(compiled.init(jax.random.key(2)), 1)
  split, table, objective = task.val, jnp.asarray(task.table), task.objective
  n = int(split.targets.shape[0])
  lengths = real_elements(split.inputs)
  assert len(set(lengths.tolist())) > 1 and lengths.min() < 16
  config = TuneConfig(eval_images=16 * 12)  # chunks of at most 12 graphs, the last with padding slots
  padded, packed = (TuneConfig(eval_images=config.eval_images, pack_lists=p) for p in (False, True))
  chunks = eval_chunks(n, 12)
  assert (chunks < 0).any()
  capacity = eval_pack_capacity(lengths, chunks, 16)
  assert capacity is not None and capacity < chunks.shape[1] * 16
  scoring = _Scoring(compiled, objective, packed, (), table)
  assert _Evaluator(scoring, jax.device_put(split), variables).pack == capacity
  score0, loss0 = evaluate(compiled, variables, (), split, objective, table=table, config=padded)
  score1, loss1 = evaluate(compiled, variables, (), split, objective, table=table, config=packed)
  assert np.isfinite(score0) and score0 > 0
  assert score1 == pytest.approx(score0, rel=1e-5) and loss1 == pytest.approx(loss0, rel=1e-5)

  x = gather(table, take(split.inputs, np.arange(n)))
  whole = eval_pack_capacity(lengths, np.arange(n)[None], 16)
  run = jax.jit(lambda pack: compiled.apply(variables, (), x, train=False, pack=pack).values,
                static_argnums=0)
  real = np.asarray(x.mask)
  np.testing.assert_allclose(np.asarray(run(whole))[real], np.asarray(run(None))[real], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_tune_packs_graphs_with_the_losses_and_scores_of_the_padded_path(form, monkeypatch):
  """Tune on a shortest-path task from hx.data: the packed run (the default) trains with the padded
  run's losses and reaches its validation and test scores; its training step really was packed."""
  import hx.compile.tuning as tuning

  capacities = []

  def recording(*args, **kwargs):
    capacities.append(pack_capacity(*args, **kwargs))
    return capacities[-1]

  monkeypatch.setattr(tuning, "pack_capacity", recording)
  task = _task(form)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  data = TuneData(task.train, task.val, task.test, task.table)
  padded, packed = (tune(compiled, (), data, task.objective,
                         TuneConfig(epochs=2, batch_size=20, seed=3, pack_lists=p)) for p in (False, True))
  assert len(capacities) == 1 and capacities[0] is not None and capacities[0] < 20 * 16
  np.testing.assert_allclose([h.train_loss for h in packed.history], [h.train_loss for h in padded.history],
                             rtol=1e-5)
  # Validation and test to 1e-4: the biases before a batch norm (the MLP's hidden layer, and the CNN's
  # output layer feeding it) have gradients that are zero but for rounding, which Adam normalises into
  # steps of up to its learning rate, different in the two runs; batch norm cancels them in training, but
  # the running means that follow them shift the evaluation's outputs at about 1e-5 (measured: every
  # other parameter agrees to 1e-7 after these steps).
  np.testing.assert_allclose([h.val_loss for h in packed.history], [h.val_loss for h in padded.history],
                             rtol=1e-4)
  assert packed.val_score == pytest.approx(padded.val_score, rel=1e-4)
  assert packed.test_score == pytest.approx(padded.test_score, rel=1e-4)


@pytest.mark.slow  # tests/compile/test_packing.py's packed list run checks the same resume path, fast
def test_a_packed_graph_run_paused_and_resumed_equals_the_straight_run_bit_for_bit(monkeypatch):
  """3x3 and 4x4 grid layouts from hx.data padded to 16 nodes, with synthetic node values (Tune's
  mechanics, not a task): the resumed call sizes its step by the whole run's batches, as the straight run
  does, so it compiles the same packed step."""
  import hx.compile.tuning as tuning

  seen = []

  def recording(lengths, orders, batch_size, padded_length, steps=None):
    orders = list(orders)
    capacity = pack_capacity(lengths, orders, batch_size, padded_length, steps=steps)
    seen.append((len(orders), capacity))
    return capacity

  monkeypatch.setattr(tuning, "pack_capacity", recording)
  program = parse("compose(conv_g(nn_k), map_g(nn_b))")
  types = {"nn_b": T("Tensor<real>[2] -> Tensor<real>[3]"),
           "nn_k": T("List<Tensor<real>[3]> -> Tensor<real>[1]")}
  compiled = compile_program(program, types, SMALL)
  layouts = grid_layouts([3, 4], 16)
  rng = np.random.default_rng(0)

  def split(n):
    layout = rng.integers(0, 2, size=n).astype(np.uint8)
    mask = np.asarray(layouts.mask)[layout]
    values = rng.normal(size=(n, 16, 2)).astype(np.float32)
    targets = (values[..., :1] * mask[..., None]).astype(np.float32)
    return Split(SharedGraphs(values, layout, layouts), targets)

  data = TuneData(split(120), split(40), None, None)
  objective = Objective("mse", "rmse", per_element=True)
  config = TuneConfig(epochs=3, batch_size=20, seed=1)
  assert_resumes_bit_for_bit(compiled, data, objective, config)
  assert [s for s, _ in seen] == [3, 3, 3]  # every epoch's batches, in each of the three calls
  assert len({c for _, c in seen}) == 1 and seen[0][1] is not None and seen[0][1] < 20 * 16
