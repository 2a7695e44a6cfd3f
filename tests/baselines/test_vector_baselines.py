"""The baselines on vectors, lists of vectors and graphs of vectors: an MLP encoder (nn_enc) where the
image networks have a CNN. The data is synthetic (`vectors` below): a yes/no label that a linear function
of the first two components decides, counts of such positives in lists, and per-node regressions on
chains, so that every network can learn it in a few seconds."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hx
from hx import baselines
from hx.baselines import CNN, ENC, MLP, RNN, architecture
from hx.baselines.graph import GraphRNN
from hx.baselines.pnn import PNN
from hx.compile import ModuleConfig, TuneConfig, compile_program
from hx.compile.values import ListBatch
from hx.lang.types import parse_type
from tests.baselines.tiny import task as image_task

SIZES = ModuleConfig(mlp_hidden=16, lstm_hidden=16, mlp_dropout=0.0)
TRAIN = TuneConfig(epochs=10, batch_size=32, learning_rate=1e-2)
ZERO_EPOCHS = dataclasses.replace(TRAIN, epochs=0)
WIDTH = 6


def vectors(rng: np.random.Generator, n: int, width: int = WIDTH, weights: tuple[float, float] = (1.0, 1.0)
            ) -> tuple[np.ndarray, np.ndarray]:
  """Synthetic (x float32 (n, width), labels int (n,)): label 1 where w0 x0 + w1 x1 > 0."""
  x = rng.normal(size=(n, width)).astype(np.float32)
  return x, (weights[0] * x[:, 0] + weights[1] * x[:, 1] > 0).astype(np.int64)


def vector_lists(rng: np.random.Generator, n: int) -> tuple[list[np.ndarray], np.ndarray]:
  """Synthetic (n lists of 2-4 vectors (L_i, WIDTH), float32 (n,) counts of the label-1 ones)."""
  drawn = [vectors(rng, int(rng.integers(2, 5))) for _ in range(n)]
  return [x for x, _ in drawn], np.array([y.sum() for _, y in drawn], np.float32)


def regression(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
  """Synthetic (x float32 (n, WIDTH), float32 (n, 1) targets 2 x0 + x1)."""
  x = rng.normal(size=(n, WIDTH)).astype(np.float32)
  return x, (2 * x[:, :1] + x[:, 1:2]).astype(np.float32)


def chains(rng: np.random.Generator, n: int) -> tuple[list[dict], list[np.ndarray]]:
  """Synthetic graphs: n chains of 2-5 nodes holding vectors, each node's target 2 x0 + x1 (n_i, 1)."""
  graphs, targets = [], []
  for _ in range(n):
    k = int(rng.integers(2, 6))
    x, y = regression(rng, k)
    graphs.append({"nodes": x, "edges": [[i, i + 1] for i in range(k - 1)]})
    targets.append(y)
  return graphs, targets


def make(name: str, type_: str, draw, seed: int, n: tuple[int, int, int] = (300, 100, 100), **kw) -> hx.Task:
  rng = np.random.default_rng(seed)
  return hx.Task.from_arrays(name, type_, *(draw(rng, k, **kw) for k in n))


def is_positive(seed: int = 0, **kw) -> hx.Task:
  return make("is_positive", f"Tensor<real>[{kw.get('width', WIDTH)}] -> Tensor<bool>[1]", vectors, seed,
              **kw)


def count_positive(seed: int = 0) -> hx.Task:
  return make("count_positive", f"List<Tensor<real>[{WIDTH}]> -> Tensor<real>[1]", vector_lists, seed,
              n=(200, 60, 60))


def regress(seed: int = 0) -> hx.Task:
  return make("regress", f"Tensor<real>[{WIDTH}] -> Tensor<real>[1]", regression, seed)


def chain_task(seed: int = 0) -> hx.Task:
  return make("chain", f"Graph<Tensor<real>[{WIDTH}]> -> Graph<Tensor<real>[1]>", chains, seed,
              n=(150, 50, 50))


def rmse_of_the_mean(task: hx.Task) -> float:
  """The trivial predictor's test RMSE: the training targets' mean everywhere (real targets only)."""
  def real(split):
    y = np.asarray(split.targets, np.float64)
    inputs = split.inputs
    if y.ndim == 3:  # a graph's nodes: (B, N, 1), padded nodes masked out
      return y[np.asarray(inputs.mask, bool)]
    return y
  return float(np.sqrt(np.mean((real(task.test) - real(task.train).mean()) ** 2)))


def _equal(a, b):
  return jax.tree.all(jax.tree.map(lambda x, y: np.array_equal(np.asarray(x), np.asarray(y)), a, b))


def _gathered(task: hx.Task, n: int = 8):
  """The first n test inputs as a network takes them: rows of the task's table (a ListBatch for lists,
  the graph batch with its node values for graphs)."""
  table = jnp.asarray(task.table)
  x = task.test.inputs
  if isinstance(x, np.ndarray) or hasattr(x, "shape"):
    return table[np.asarray(x)[:n]]
  part = jax.tree.map(lambda a: np.asarray(a)[:n], x)
  if isinstance(part, ListBatch):
    return ListBatch(table[part.values], part.mask)
  return part._replace(values=table[part.values])


@pytest.fixture(scope="module")
def positive():
  r = baselines.standalone(is_positive(), SIZES, TRAIN, seed=0)
  assert r.status == "trained", r.outcome.reason
  return r


def test_vector_inputs_get_an_mlp_encoder_where_images_get_a_cnn():
  v = architecture(parse_type("Tensor<real>[6] -> Tensor<bool>[1]"), SIZES)
  assert (v.kind, v.encoder, v.description) == ("vector", ENC, "compose(nn_mlp, nn_enc)")
  assert {r: str(t) for r, t in v.fresh_types.items()} == {
      ENC: "Tensor<real>[6] -> Tensor<real>[16]", MLP: "Tensor<real>[16] -> Tensor<bool>[1]"}  # mlp_hidden
  assert v.spec(ENC).template == "mlp" and str(v.program) == v.description
  ls = architecture(parse_type("List<Tensor<real>[6]> -> Tensor<real>[1]"), SIZES)
  assert (ls.kind, ls.encoder, ls.output_role) == ("list", ENC, RNN)
  assert ls.description == "compose(nn_rnn, map_l(compose(nn_mlp, nn_enc)))"
  assert str(ls.fresh_types[RNN]) == "List<Tensor<bool>[1]> -> Tensor<real>[1]"
  g = architecture(parse_type("Graph<Tensor<real>[6]> -> Graph<Tensor<real>[2]>"), SIZES)
  assert (g.kind, g.encoder, g.program) == ("graph", ENC, None)
  assert g.description == "lstm_rows(map_g(compose(nn_mlp, nn_enc)))" and str(g.element) == "Tensor<real>[2]"
  image = architecture(parse_type("Tensor<real>[1][16][16] -> Tensor<bool>[1]"), SIZES)
  assert (image.kind, image.encoder, image.description) == ("image", CNN, "compose(nn_mlp, nn_cnn)")
  for bad, why in (("List<Tensor<real>[6]> -> List<Tensor<real>[1]>", "the baselines take a tensor"),
                   ("Tensor<real>[6] -> Tensor<real>[6] -> Tensor<real>[1]", "a task takes one input"),
                   ("Tensor<real>[6] -> Tensor<real>[1][8][8]", "no template produces an image")):
    with pytest.raises(ValueError, match=f"no baseline network for .*{why}"):
      architecture(parse_type(bad), SIZES)


def test_refusal_names_the_first_task_a_baseline_cannot_take():
  types = [parse_type(t) for t in ("Tensor<real>[6] -> Tensor<bool>[1]", "Tensor<real>[4] -> Tensor<bool>[1]",
                                   "List<Tensor<real>[6]> -> List<Tensor<real>[1]>")]
  assert baselines.refusal("standalone", types[:2], SIZES) is None
  assert baselines.refusal("llt", types[:2], SIZES) is None
  k, why = baselines.refusal("pnn", types[:2], SIZES)
  assert k == 1 and "its input Tensor<real>[4] is not the first column's Tensor<real>[6]" in why
  k, why = baselines.refusal("standalone", types, SIZES)
  assert k == 2 and why.startswith("the baselines take a tensor")
  graph = parse_type("Graph<Tensor<real>[6]> -> Graph<Tensor<real>[1]>")
  assert baselines.refusal("llt", [types[0], graph], SIZES) is None
  assert "not defined for graph tasks" in baselines.refusal("pnn", [types[0], graph], SIZES)[1]
  with pytest.raises(ValueError, match="unknown baseline 'mlp'"):
    baselines.refusal("mlp", types, SIZES)


def test_each_network_gives_one_output_per_example_or_node():
  rng = jax.random.key(0)
  for task in (is_positive(), count_positive()):
    arch = architecture(task.type, SIZES)
    compiled = compile_program(arch.program, arch.fresh_types, SIZES)
    y = compiled.apply(compiled.init(rng), (), _gathered(task), train=False)
    assert y.shape == (8, 1) and bool(jnp.all((0 <= y) & (y <= 1))) == (task.name == "is_positive")
  chain = chain_task()
  arch = architecture(chain.type, SIZES)
  net = GraphRNN(arch, trainable_regressor=True)
  x = _gathered(chain)
  out = net.apply(net.init(rng), {}, x, train=False)
  assert out.values.shape == (8, x.values.shape[1], 1)
  # A progressive network of a vector column and a list column: one output per list.
  archs = [architecture(is_positive().type, SIZES), architecture(count_positive().type, SIZES)]
  pnn = PNN(archs, SIZES)
  first = archs[0].init(jax.random.key(1))
  first["lateral"] = {"params": {}, "batch_stats": {}}
  y = pnn.apply(pnn.init(rng), pnn.frozen([first]), _gathered(count_positive()), train=False)
  assert y.shape == (8, 1)


def test_standalone_learns_a_vector_task(positive):
  assert positive.description == "compose(nn_mlp, nn_enc)" and set(positive.network.modules) == {ENC, MLP}
  assert positive.test_score < 15.0, positive.test_score  # % error; chance is about 50%
  history = positive.outcome.val_history
  assert min(history[1:]) < history[0], history  # validation error falls as it trains
  assert positive.parameters == sum(baselines.count_parameters(m["params"])
                                    for m in positive.network.modules.values())


@pytest.mark.slow
def test_standalone_learns_lists_and_graphs_of_vectors():
  count = count_positive()
  r = baselines.standalone(count, SIZES, TRAIN, seed=0)
  assert r.status == "trained" and set(r.network.modules) == {ENC, MLP, RNN}
  assert r.test_score < 0.6 * rmse_of_the_mean(count), (r.test_score, rmse_of_the_mean(count))
  # A graph with no earlier regressor: the network trains its own with the LSTM, nothing frozen.
  chain = chain_task()
  alone = baselines.standalone(chain, SIZES, dataclasses.replace(TRAIN, epochs=20), seed=0)
  assert alone.status == "trained" and alone.frozen_parameters == 0
  assert alone.description == "lstm_rows(map_g(compose(nn_mlp, nn_enc)))"
  assert alone.test_score < 0.6 * rmse_of_the_mean(chain), (alone.test_score, rmse_of_the_mean(chain))
  # With the regressor of an earlier vector task, mapped frozen: only the LSTM trains.
  regressor = baselines.standalone(regress(), SIZES, TRAIN, seed=0).network
  snapshot = jax.tree.map(np.copy, dict(regressor.modules))
  mapped = baselines.standalone(chain, SIZES, TRAIN, seed=0, regressor=regressor)
  assert mapped.status == "trained" and mapped.frozen_parameters > 0
  assert _equal(dict(regressor.modules), snapshot)
  assert mapped.test_score < 0.6 * rmse_of_the_mean(chain), (mapped.test_score, rmse_of_the_mean(chain))
  # Low-level transfer takes the whole regressor, its output layer included, as for images.
  start = baselines.llt(chain, [regressor], SIZES, ZERO_EPOCHS, seed=1)
  assert dict(start.sources) == {"nn_enc": "regress", "nn_mlp.hidden": "regress", "nn_mlp.out": "regress",
                                 "nn_rnn.recurrence": "fresh: no earlier network has this layer",
                                 "nn_rnn.out": "fresh: the new network's output layer"}
  assert _equal(start.network.modules[ENC], snapshot[ENC]) and _equal(start.network.modules[MLP],
                                                                       snapshot[MLP])


def test_llt_transfers_the_encoder_from_the_previous_task(positive):
  count = count_positive()
  before = positive.network.modules
  start = baselines.llt(count, [positive.network], SIZES, ZERO_EPOCHS, seed=3).network.modules
  fresh = architecture(count.type, SIZES).init(jax.random.key(3))
  assert _equal(start[ENC], before[ENC])  # the whole encoder MLP, batch statistics included
  assert _equal(start[MLP]["params"]["hidden"], before[MLP]["params"]["hidden"])
  assert _equal(start[MLP]["params"]["out"], fresh[MLP]["params"]["out"])  # the earlier task's output
  assert not _equal(start[ENC], fresh[ENC])
  # The encoder comes from the previous task's network, not an older one.
  other = baselines.llt(is_positive(seed=1, weights=(1.0, -1.0)), [positive.network], SIZES, TRAIN, seed=4)
  assert other.status == "trained" and other.test_score < 25.0
  latest = baselines.llt(count, [positive.network, other.network], SIZES, ZERO_EPOCHS, seed=3)
  assert _equal(latest.network.modules[ENC], other.network.modules[ENC])
  assert dict(latest.sources)["nn_enc"] == "is_positive"
  # After an image network nothing below the LSTM transfers: another encoder, other features.
  image = baselines.standalone(image_task("recognize"), SIZES, ZERO_EPOCHS, seed=0).network
  after_image = baselines.llt(count, [image], SIZES, ZERO_EPOCHS, seed=3)
  assert dict(after_image.sources)["nn_enc"] == "fresh: no earlier network has this layer"
  assert dict(after_image.sources)["nn_mlp.hidden"] == (
      "fresh: tiny_recognize's MLP read its nn_cnn's features")


def test_pnn_lateral_connections_read_the_frozen_columns(positive):
  column0 = positive.network
  snapshot = jax.tree.map(np.copy, dict(column0.modules))
  second = is_positive(seed=1, weights=(1.0, -1.0))
  r = baselines.pnn(second, [column0], SIZES, TRAIN, seed=0)
  assert r.status == "trained" and r.test_score < 25.0, r.test_score
  assert _equal(dict(column0.modules), snapshot)  # the earlier column never moves, bit for bit
  assert r.network.column == 1 and set(r.network.modules["lateral"]["params"]) == {"enc_out", "hidden", "out"}
  assert r.frozen_parameters == sum(baselines.count_parameters(m["params"]) for m in snapshot.values())
  net = PNN([column0.architecture, r.network.architecture], SIZES)
  variables = {"params": {k: m["params"] for k, m in r.network.modules.items()},
               "batch_stats": {k: m["batch_stats"] for k, m in r.network.modules.items() if k != "lateral"}}
  x = _gathered(second, 16)
  y = net.apply(variables, net.frozen([column0.modules]), x, train=False, logits=True)
  # The new column reads every layer of the frozen one: changing its encoder, or its MLP's hidden layer
  # alone, changes the new column's output.
  for role, key in ((ENC, "hidden"), (ENC, "out"), (MLP, "hidden")):
    moved = jax.tree.map(np.copy, dict(column0.modules))
    moved[role]["params"][key] = jax.tree.map(lambda a: a * 1.5, moved[role]["params"][key])
    assert not np.allclose(y, net.apply(variables, net.frozen([moved]), x, train=False, logits=True)), role
  # A column whose input is another width cannot read the first column: refused.
  with pytest.raises(ValueError, match="is not the first column's Tensor<real>\\[6\\]"):
    baselines.pnn(is_positive(width=4), [column0], SIZES, TRAIN, seed=0)


def _head_init(key):
  return {"w": jax.random.normal(key, (16, 1)) * 0.1}


def _head_apply(params, x):
  return x @ params["w"]


def test_pnn_refuses_a_column_with_a_registered_module_in_a_role():
  types = [parse_type(f"Tensor<real>[{WIDTH}] -> Tensor<bool>[1]")] * 2
  hx.compile.register_module("head16", "Tensor<real>[16] -> Tensor<bool>[1]", init=_head_init,
                             apply=_head_apply)
  try:
    assert architecture(types[0], SIZES).spec(MLP).template == "user"
    assert baselines.refusal("standalone", types, SIZES) is None  # a compiled program runs it as it is
    k, why = baselines.refusal("pnn", types, SIZES)
    assert k == 0 and why.startswith("its nn_mlp : Tensor<real>[16] -> Tensor<bool>[1] is the registered "
                                     "module 'head16'")
  finally:
    hx.compile.unregister_module("head16")
