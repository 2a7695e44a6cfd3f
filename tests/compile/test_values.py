"""Split containers: shared graph layouts, `take` (NumPy and inside jit), narrow index and target dtypes."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.losses import objective_for_type
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig
from hx.compile.tuning import TuneConfig, TuneData, tune
from hx.compile.values import (
  GraphBatch,
  GraphLayouts,
  ListBatch,
  SharedGraphs,
  Split,
  images_per_example,
  index_dtype,
  num_examples,
  rows,
  take,
)
from hx.lang.parser import parse
from hx.lang.types import parse_type


def _layouts() -> GraphLayouts:
  """Two shapes padded to 3 nodes, K = 2: a 2-node path and a 3-node path."""
  nb = np.array([[[0, 1], [1, 0], [2, 2]], [[0, 1], [1, 0], [2, 1]]], np.int32)
  nb_mask = np.array([[[1, 1], [1, 1], [0, 0]], [[1, 1], [1, 1], [1, 1]]], bool)
  mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
  return GraphLayouts(nb, nb_mask, mask)


def _shared(n: int = 6, seed: int = 0) -> SharedGraphs:
  rng = np.random.default_rng(seed)
  layout = rng.integers(0, 2, size=n).astype(np.uint8)
  values = rng.integers(0, 300, size=(n, 3)).astype(np.uint16)
  return SharedGraphs(values, layout, _layouts())


def test_take_builds_the_graph_batch_of_the_examples():
  shared = _shared()
  idx = np.array([4, 0, 4])
  batch = take(shared, idx)
  assert isinstance(batch, GraphBatch) and batch.values.dtype == np.int32
  np.testing.assert_array_equal(batch.values, shared.values[idx])
  for got, table in zip(batch[1:], shared.layouts):
    np.testing.assert_array_equal(got, table[shared.layout[idx]])
  # The same inside jit, with device arrays.
  jitted = jax.jit(take)(jax.device_put(shared), jnp.asarray(idx))
  for a, b in zip(jitted, batch):
    np.testing.assert_array_equal(np.asarray(a), b)
  # rows keeps the compact form and its layouts.
  part = rows(shared, slice(0, 2))
  assert isinstance(part, SharedGraphs) and part.layouts is shared.layouts and len(part.layout) == 2
  # Arrays and the other containers: rows of every array.
  lb = ListBatch(np.arange(12).reshape(4, 3), np.ones((4, 3), bool))
  np.testing.assert_array_equal(take(lb, np.array([2])).values, [[6, 7, 8]])
  assert take(np.arange(5), np.array([3, 1])).tolist() == [3, 1]


def test_sizes_and_dtypes():
  shared = _shared()
  assert num_examples(shared) == 6 and images_per_example(shared) == 3
  assert images_per_example(np.zeros((4, 1, 28, 28))) == 1 and num_examples(np.zeros((4, 2))) == 4
  assert images_per_example(ListBatch(np.zeros((4, 8)), np.zeros((4, 8), bool))) == 8
  assert [index_dtype(n) for n in (1, 256, 257, 65536, 65537)] == [np.uint8, np.uint8, np.uint16, np.uint16,
                                                                  np.uint32]
  with pytest.raises(ValueError):
    index_dtype(-1)


@pytest.mark.slow
def test_tune_on_shared_layouts_equals_tune_on_graph_batches():
  """The compact split (uint16 indices, shared layouts, uint8 targets) trains exactly like its expansion
  (int32 indices, a neighbour table per graph, float32 targets)."""
  rng = np.random.default_rng(1)
  table = rng.normal(size=(300, 2)).astype(np.float32)

  def split(seed):
    shared = _shared(40, seed)
    x = take(shared, np.arange(40))
    targets = np.where(x.mask[..., None], np.rint(np.abs(table[x.values]) * 3), 0).astype(np.uint8)
    return Split(shared, targets), Split(x, targets.astype(np.float32))

  (tr_s, tr_g), (va_s, va_g), (te_s, te_g) = (split(s) for s in (1, 2, 3))
  state = parse_type("Tensor<real>[2]")
  types = {"nn_k": parse_type("List<Tensor<real>[2]> -> Tensor<real>[2]"),
           "nn_e": parse_type("Tensor<real>[2] -> Tensor<real>[2]")}
  program = compile_program(parse("compose(conv_g(nn_k), map_g(nn_e))"), types,
                            ModuleConfig(mlp_hidden=8, graph_hidden=8, graph_message=4))
  objective = objective_for_type(parse_type(f"Graph<{state}>"))
  config = TuneConfig(batch_size=8, epochs=2, learning_rate=1e-2, eval_images=30)
  a = tune(program, (), TuneData(tr_s, va_s, te_s, table), objective, config)
  b = tune(program, (), TuneData(tr_g, va_g, te_g, table), objective, config)
  assert a.failed is None and [h.val_score for h in a.history] == [h.val_score for h in b.history]
  chex.assert_trees_all_equal(a.variables, b.variables)
  assert a.test_score == b.test_score
