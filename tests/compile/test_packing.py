"""Packed lists: maps over a batch's list run on its real elements only (`apply(pack=...)`, Tune's
`pack_lists`), with the values, batch statistics, gradients, losses and scores of the padded path, in
training and in evaluation. (Graphs: test_packing_graphs.py.)"""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, evaluate, tune
from hx.compile.batching import (
  eval_chunk_size,
  eval_chunks,
  eval_pack_capacity,
  eval_plan,
  num_examples,
  pack_capacity,
  shared_eval_plans,
  signature,
)
from hx.compile.losses import Objective
from hx.compile.scoring import _Evaluator, _Scoring
from hx.compile.values import ListBatch, Split, gather, real_elements, rows, take
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.lang import parse
from hx.lang.types import parse_type as T
from tests.compile.lowering_helpers import assert_resumes_bit_for_bit

SMALL = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), lstm_hidden=8)
PROGRAM = parse("compose(nn_a, map_l(compose(nn_b, nn_c)))")
TYPES = {"nn_c": T("Tensor<real>[1][28][28] -> Tensor<real>[128]"),
         "nn_b": T("Tensor<real>[128] -> Tensor<bool>[1]"),
         "nn_a": T("List<Tensor<bool>[1]> -> Tensor<real>[1]")}


def test_pack_capacity_is_the_fullest_batch_rounded_up_to_a_sixteenth():
  lengths = np.array([2, 5, 3, 4, 5, 1, 2, 2])
  # Batches of 2 lists padded to 5 (10 elements, quantum 1): the fullest holds 5 + 5.
  assert pack_capacity(lengths, [np.arange(8)], 2, 5) == 7  # 2+5, 3+4, 5+1, 2+2
  assert pack_capacity(lengths, [np.arange(8), np.array([1, 4, 0, 2, 3, 5, 6, 7])], 2, 5) is None  # 10
  # Batches of 4 lists padded to 8 (32 elements, quantum 2): 14 and 10 real, rounded up to 14.
  assert pack_capacity(lengths, [np.arange(8)], 4, 8) == 14
  assert pack_capacity(np.array([1, 1, 1, 1]), [np.arange(4)], 4, 8) == 4
  assert pack_capacity(np.full(4, 8), [np.arange(4)], 4, 8) is None  # no padding: nothing to pack

  def orders():
    yield np.array([1, 4, 0, 2, 3, 5, 6, 7])  # a full batch (5 + 5): nothing to save
    raise AssertionError("drew the next epoch's order")
  assert pack_capacity(lengths, orders(), 2, 5) is None


def test_pack_capacity_given_the_steps_answers_alike_and_skips_the_orders_when_the_average_fills_up():
  rng = np.random.default_rng(0)
  for n, batch, pad in [(8, 2, 5), (30, 4, 8), (37, 5, 6), (100, 10, 16), (61, 7, 9)]:
    steps = -(-n // batch)
    for low in (1, pad // 2, pad - 1, pad):
      lengths = rng.integers(low, pad + 1, size=n)
      orders = [np.resize(rng.permutation(n), steps * batch) for _ in range(3)]
      assert pack_capacity(lengths, orders, batch, pad, steps=steps) == pack_capacity(lengths, orders, batch,
                                                                                       pad)

  def never():
    raise AssertionError("drew an order")
    yield

  # GS2's mix in miniature: 1 3x3 grid (9 nodes) to 14 4x4 ones (16), batches of 150 padded to 16:
  # every batch holds more than 15/16 of its slots, so there is nothing to pack, and no order is drawn.
  lengths = np.where(np.arange(1500) % 15 == 0, 9, 16)
  assert pack_capacity(lengths, never(), 150, 16, steps=10) is None


def _batch(lengths, pad=5, seed=0):
  rng = np.random.default_rng(seed)
  lengths = np.asarray(lengths)
  mask = np.arange(pad)[None, :] < lengths[:, None]
  # Padding holds images too (random values): the packed path must not depend on them.
  values = rng.uniform(0, 1, size=(len(lengths), pad, 1, 28, 28)).astype(np.float32)
  return ListBatch(jnp.asarray(values), jnp.asarray(mask))


@pytest.mark.slow
def test_apply_with_pack_equals_the_padded_path_in_training():
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = compiled.init(jax.random.key(0))
  x = _batch([2, 5, 3, 1, 4, 2])  # 17 real elements of 30
  rng = jax.random.key(1)

  def loss(params, pack):
    y, stats = compiled.apply({"params": params, "batch_stats": variables["batch_stats"]}, (), x,
                              train=True, rng=rng, pack=pack)
    return jnp.sum(y ** 2), (y, stats)

  grad = jax.jit(jax.value_and_grad(loss, has_aux=True), static_argnums=1)
  (l0, (y0, s0)), g0 = grad(variables["params"], None)
  (l1, (y1, s1)), g1 = grad(variables["params"], 17)
  np.testing.assert_allclose(y1, y0, rtol=1e-5, atol=1e-6)
  chex.assert_trees_all_close(s1, s0, rtol=1e-4, atol=1e-6)
  # Gradients to the gradients' scale, as in test_packing_graphs: on an H100 with deterministic kernels
  # the first convolution's weight gradient (entries up to 7.5e-3) differed by up to 5.1e-6 between 17
  # and 30 rows (another summation order), where the largest gradient entry is 0.89.
  scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(g0))
  chex.assert_trees_all_close(g1, g0, rtol=1e-4, atol=1e-5 * scale)
  # Exactly as many real elements as the capacity is fine; the step's CNN sees 17 rows, not 30.
  jaxpr = str(jax.make_jaxpr(lambda p: loss(p, 17)[0])(variables["params"]))
  assert "f32[17,24,24,4]" in jaxpr and "f32[30,24,24,4]" not in jaxpr


def test_packed_map_outputs_zeros_on_padding_and_the_same_values_elsewhere():
  program = parse("map_l(compose(nn_b, nn_c))")
  types = {"nn_c": TYPES["nn_c"], "nn_b": T("Tensor<real>[128] -> Tensor<real>[3]")}
  compiled = compile_program(program, types, SMALL)
  variables = compiled.init(jax.random.key(2))
  x = _batch([1, 4, 2])
  mask = np.asarray(x.mask)
  key = jax.random.key(3)
  run = jax.jit(lambda pack: compiled.apply(variables, (), x, train=True, rng=key, pack=pack)[0],
                static_argnums=0)
  y0, y1 = run(None), run(8)
  np.testing.assert_allclose(np.asarray(y1.values)[mask], np.asarray(y0.values)[mask], rtol=1e-5, atol=1e-6)
  assert np.all(np.asarray(y1.values)[~mask] == 0)


def test_pack_must_be_a_positive_int():
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = compiled.init(jax.random.key(0))
  with pytest.raises(ValueError, match="pack must be a positive int"):
    compiled.apply(variables, (), _batch([2, 3]), train=True, rng=jax.random.key(1), pack=0)


@pytest.mark.slow
def test_tune_packs_lists_with_the_losses_and_scores_of_the_padded_path():
  """count_digit built by hx.data (lists of 2-5 digits): dropout, batch norm and an LSTM."""
  task = build_task(task_spec("count_digit(2)"), Sources(), TaskSizes(lists=(200, 60, 60)), 0)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  data = TuneData(task.train, task.val, task.test, task.table)
  runs = [tune(compiled, (), data, task.objective, TuneConfig(epochs=2, batch_size=50, seed=3, pack_lists=p))
          for p in (False, True)]
  padded, packed = runs
  np.testing.assert_allclose([h.train_loss for h in packed.history], [h.train_loss for h in padded.history],
                             rtol=1e-5)
  assert packed.val_score == pytest.approx(padded.val_score, rel=1e-5)
  assert packed.test_score == pytest.approx(padded.test_score, rel=1e-5)
  # (Parameters are not compared: Adam turns a rounding difference in a near-zero gradient into a step of
  # up to its learning rate; one step's gradients are compared in the apply test above.)


@pytest.mark.slow
def test_a_packed_run_paused_and_resumed_equals_the_straight_run_bit_for_bit(monkeypatch):
  """Lists of 1-4 real scalars padded to 6 (synthetic values: Tune's mechanics, not a task). The resumed
  call sizes its step by the whole run's batches, as the straight run does, so it compiles the same step."""
  import hx.compile.tuning as tuning

  seen = []

  def recording(lengths, orders, batch_size, padded_length, steps=None):
    orders = list(orders)
    seen.append(len(orders))
    return pack_capacity(lengths, orders, batch_size, padded_length, steps=steps)

  monkeypatch.setattr(tuning, "pack_capacity", recording)
  program = parse("compose(nn_a, map_l(nn_b))")
  types = {"nn_b": T("Tensor<real>[2] -> Tensor<real>[3]"),
           "nn_a": T("List<Tensor<real>[3]> -> Tensor<real>[1]")}
  compiled = compile_program(program, types, SMALL)
  rng = np.random.default_rng(0)

  def split(n):
    lengths = rng.integers(1, 5, size=n)
    mask = np.arange(6)[None, :] < lengths[:, None]
    values = rng.normal(size=(n, 6, 2)).astype(np.float32)
    targets = (values[..., 0] * mask).sum(1, keepdims=True).astype(np.float32)
    return Split(ListBatch(values, mask), targets)

  data = TuneData(split(120), split(40), None, None)
  objective = Objective("mse", "rmse")
  config = TuneConfig(epochs=3, batch_size=20, seed=1)
  assert_resumes_bit_for_bit(compiled, data, objective, config)
  assert seen == [3, 3, 3]  # every epoch's batches, in each of the three calls


def test_eval_pack_capacity_is_the_fullest_chunk_rounded_up_and_counts_chunk_padding():
  lengths = np.array([8, 6, 7, 6, 6, 8, 7])
  # 7 examples in chunks of at most 3: 3 chunks of 3, the last [6, 7, -1]; its padding slot runs example 0
  # (8 elements) through the network, so it holds 8 + 7 + 8 = 23; the fullest is 8 + 6 + 7 = 21 or 23.
  chunks = eval_chunks(7, 3)
  assert chunks.tolist() == [[0, 1, 2], [3, 4, 5], [6, -1, -1]]
  # Chunks of 3 lists padded to 8: 24 slots, quantum 2; the fullest (7 + 8 + 8 = 23) rounds up to 24.
  assert eval_pack_capacity(lengths, chunks, 8) is None
  assert eval_pack_capacity(lengths, eval_chunks(6, 3), 8) == 22  # 8 + 6 + 7 = 21 -> 22
  assert eval_pack_capacity(lengths, eval_chunks(6, 3), 16) == 21  # 48 slots, quantum 3: 21
  assert eval_pack_capacity(np.array([1, 1]), np.array([[0, 1]]), 8) == 2  # at least one quantum
  assert eval_pack_capacity(np.zeros(0, int), eval_chunks(0, 3), 8) is None
  with pytest.raises(ValueError, match="num_chunks, chunk"):
    eval_pack_capacity(lengths, np.arange(3), 8)


def _list_split(lengths, pad=8):
  lengths = np.asarray(lengths)
  mask = np.arange(pad)[None, :] < lengths[:, None]
  return Split(ListBatch(np.zeros(mask.shape, np.int32), mask), np.zeros((len(lengths), 1), np.float32))


def test_validation_and_test_splits_shaped_alike_share_the_larger_capacity():
  """One executable for both, as before packing: the capacity is the larger of the two (none if either
  has none); a split of other shapes keeps its own."""
  config = TuneConfig()
  val, test = _list_split([6, 7, 6, 6]), _list_split([8, 7, 6, 8])
  alone = [eval_plan(s, config.eval_images, packs=True).pack for s in (val, test)]
  assert alone == [26, 30]  # 32 slots, quantum 2
  shared = lambda *splits: [p.pack for p in shared_eval_plans(list(splits), config.eval_images, packs=True)]
  assert shared(val, test) == [30, 30]
  assert shared(val, _list_split([8, 8, 8, 8])) == [None, None]
  assert shared(val, _list_split([8, 7, 6])) == [26, 22]
  assert eval_plan(val, TuneConfig().eval_images, packs=False).pack is None


def test_a_plan_cuts_a_split_into_chunks_of_at_most_eval_images_and_packs_only_lists():
  lists = _list_split([6, 7, 6, 6, 8, 5, 7])  # 7 lists of 8 padded elements
  assert num_examples(lists) == 7 and eval_chunk_size(lists.inputs, 24) == 3
  plan = eval_plan(lists, 24, packs=True)  # 3 lists a chunk at most: 3 chunks of 3, 2 padding slots
  np.testing.assert_array_equal(plan.chunks, [[0, 1, 2], [3, 4, 5], [6, -1, -1]])
  # Every chunk holds 19 real elements (padding slots count example 0), rounded up to a quantum of 2.
  assert plan.pack == eval_pack_capacity(real_elements(lists.inputs), plan.chunks, 8) == 20
  tensors = Split(np.zeros((5, 3), np.float32), np.zeros((5, 1), np.float32))
  assert eval_chunk_size(tensors.inputs, 2) == 2  # one image an example
  tensor_plan = eval_plan(tensors, 2, packs=True)
  assert tensor_plan.chunks.shape == (3, 2) and tensor_plan.pack is None  # nothing to pack
  # The shapes a plan's executable is compiled for: structure, shapes, dtypes.
  assert signature((tensors.inputs, tensors.targets)) == signature((np.ones((5, 3), np.float32),
                                                                  np.ones((5, 1), np.float32)))
  assert signature(tensors.inputs) != signature(np.zeros((5, 3), np.float64))


def _perturbed(variables, seed):
  """variables with running batch statistics moved off their initial values (means 0, variances 1), as
  training leaves them, so that inference's normalisation is not the identity."""
  leaves, treedef = jax.tree.flatten(variables["batch_stats"])
  rng = np.random.default_rng(seed)
  moved = [leaf + np.abs(rng.normal(0.0, 0.3, size=np.shape(leaf))).astype(np.float32) for leaf in leaves]
  return {"params": variables["params"], "batch_stats": jax.tree.unflatten(treedef, moved)}


@pytest.mark.slow
def test_packed_evaluation_equals_the_padded_one_on_count_digit():
  """count_digit's validation lists from hx.data (6-8 digits padded to 8), in chunks with padding slots:
  the packed evaluation (on by default) gives the padded outputs, loss and score; its CNN sees the
  fullest chunk's real digits, not every slot."""
  task = build_task(task_spec("count_digit(2)"), Sources(), TaskSizes(lists=(200, 60, 60)), 0)
  compiled = compile_program(PROGRAM, TYPES, SMALL)
  variables = _perturbed(compiled.init(jax.random.key(4)), 0)
  n = 50
  split = Split(rows(task.val.inputs, slice(0, n)), task.val.targets[:n])
  lengths = real_elements(split.inputs)
  assert set(lengths.tolist()) == {6, 7, 8}
  config = TuneConfig(eval_images=16 * 8)  # chunks of at most 16 lists: 4 chunks of 13, 2 padding slots
  padded, packed = (TuneConfig(eval_images=config.eval_images, pack_lists=p) for p in (False, True))
  table, objective = jnp.asarray(task.table), task.objective
  evaluator = _Evaluator(_Scoring(compiled, objective, packed, (), table), jax.device_put(split), variables)
  capacity = eval_pack_capacity(lengths, eval_chunks(n, 16), 8)
  assert evaluator.pack == capacity and capacity < 13 * 8
  unpacked = _Scoring(compiled, objective, padded, (), table)
  assert _Evaluator(unpacked, jax.device_put(split), variables).pack is None
  score0, loss0 = evaluate(compiled, variables, (), split, objective, table=table, config=padded)
  score1, loss1 = evaluate(compiled, variables, (), split, objective, table=table, config=packed)
  assert score1 == pytest.approx(score0, rel=1e-5) and loss1 == pytest.approx(loss0, rel=1e-5)
  assert np.isfinite(score0) and score0 > 0

  # The outputs, example by example, of one packed call over the whole split.
  x = gather(table, take(split.inputs, np.arange(n)))
  whole = eval_pack_capacity(lengths, np.arange(n)[None], 8)
  run = jax.jit(lambda pack: compiled.apply(variables, (), x, train=False, pack=pack), static_argnums=0)
  np.testing.assert_allclose(run(whole), run(None), rtol=1e-5, atol=1e-6)
  jaxpr = str(jax.make_jaxpr(lambda v: compiled.apply(v, (), x, train=False, pack=whole))(variables))
  assert f"f32[{whole},24,24,4]" in jaxpr and f"f32[{n * 8},24,24,4]" not in jaxpr


@pytest.mark.parametrize("fuse", [False, True])
def test_packed_evaluation_fused_or_not_equals_the_padded_one(fuse):
  """The chunks of a split in one call (`lax.map`, accelerators' default) or one call each (CPU's): the
  same capacity for every chunk, the padded evaluation's score and loss (lists of 1-6 real scalars
  padded to 8; an MLP with running batch statistics, then an LSTM)."""
  program = parse("compose(nn_a, map_l(nn_b))")
  types = {"nn_b": T("Tensor<real>[2] -> Tensor<real>[3]"),
           "nn_a": T("List<Tensor<real>[3]> -> Tensor<real>[1]")}
  compiled = compile_program(program, types, SMALL)
  variables = _perturbed(compiled.init(jax.random.key(5)), 2)
  rng = np.random.default_rng(1)
  lengths = rng.integers(1, 7, size=45)
  mask = np.arange(8)[None, :] < lengths[:, None]
  values = rng.normal(size=(45, 8, 2)).astype(np.float32)
  split = Split(ListBatch(values, mask), (values[..., 0] * mask).sum(1, keepdims=True).astype(np.float32))
  objective = Objective("mse", "rmse")
  configs = [TuneConfig(eval_images=8 * 10, fuse_eval=fuse, pack_lists=p) for p in (False, True)]
  plan = eval_plan(split, configs[1].eval_images, packs=True)
  assert plan.chunks.shape == (5, 9) and plan.pack is not None and plan.pack < 9 * 8
  (score0, loss0), (score1, loss1) = (evaluate(compiled, variables, (), split, objective, config=c)
                                      for c in configs)
  assert score1 == pytest.approx(score0, rel=1e-5) and loss1 == pytest.approx(loss0, rel=1e-5)
