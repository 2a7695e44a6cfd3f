"""The baselines on tiny tasks (`tiny.py`): they learn, LLT starts where the earlier networks stopped,
PNN's earlier columns never move, and the opened-up layers compute what the templates compute."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx import baselines
from hx.baselines import CNN, MLP, RNN, architecture, layers
from hx.baselines.pnn import PNN
from hx.compile import compile_program
from hx.compile.modules import Rows, apply_module, init_module, module_spec
from hx.compile.values import ListBatch
from hx.lang import parse
from hx.lang.types import parse_type
from tests.baselines.tiny import TINY, TUNE, TYPES, task, trivial
from tests.compile.lowering_helpers import products_and_precisions

ZERO_EPOCHS = dataclasses.replace(TUNE, epochs=0)


def _equal(a, b):
  return jax.tree.all(jax.tree.map(lambda x, y: np.array_equal(np.asarray(x), np.asarray(y)), a, b))


@pytest.fixture(scope="module")
def recognizer():
  r = baselines.standalone(task("recognize"), TINY, TUNE, seed=0)
  assert r.status == "trained", r.outcome.reason
  return r


def test_the_architectures_follow_the_task_type():
  assert architecture(TYPES["recognize"], TINY).description == "compose(nn_mlp, nn_cnn)"
  a = architecture(TYPES["count"], TINY)
  assert str(a.program) == "compose(nn_rnn, map_l(compose(nn_mlp, nn_cnn)))" and a.output_role == RNN
  assert str(a.fresh_types[MLP]) == "Tensor<real>[32] -> Tensor<bool>[1]"  # 8 channels of 2x2
  assert str(architecture(TYPES["count"], TINY, parse_type("Tensor<bool>[10]")).element) == "Tensor<bool>[10]"
  g = architecture(TYPES["path"], TINY)
  assert g.kind == "graph" and g.program is None and str(g.element) == "Tensor<real>[2]"
  assert str(baselines.element_type("sum_digits")) == "Tensor<bool>[10]"
  with pytest.raises(ValueError, match="no baseline network"):
    architecture(parse_type("List<Tensor<real>[3]> -> List<Tensor<real>[1]>"), TINY)


@pytest.mark.slow
def test_standalone_learns_image_and_list_tasks(recognizer):
  assert recognizer.test_score < 0.5 * trivial(task("recognize"))
  assert recognizer.parameters > 0 and recognizer.frozen_parameters == 0
  count = task("count")
  r = baselines.standalone(count, TINY, TUNE, seed=0)
  assert r.status == "trained" and r.test_score < 0.7 * trivial(count), (r.test_score, trivial(count))
  assert r.description == "compose(nn_rnn, map_l(compose(nn_mlp, nn_cnn)))"
  assert set(r.network.modules) == {CNN, MLP, RNN}


@pytest.mark.slow
def test_llt_starts_from_the_earlier_weights_except_the_output_layers(recognizer):
  count = task("count")
  r = baselines.llt(count, [recognizer.network], TINY, ZERO_EPOCHS, seed=3)  # the starting point itself
  before, start = recognizer.network.modules, r.network.modules
  fresh = architecture(count.type, TINY).init(jax.random.key(3))
  assert _equal(start[CNN], before[CNN])
  assert _equal(start[MLP]["params"]["hidden"], before[MLP]["params"]["hidden"])
  assert _equal(start[MLP]["params"]["bn"], before[MLP]["params"]["bn"])
  assert _equal(start[MLP]["batch_stats"], before[MLP]["batch_stats"])
  # The recognizer's output layer was its task's: fresh; so is everything of the LSTM.
  assert _equal(start[MLP]["params"]["out"], fresh[MLP]["params"]["out"])
  assert not _equal(start[MLP]["params"]["out"], before[MLP]["params"]["out"])
  assert _equal(start[RNN], fresh[RNN])
  assert dict(r.sources) == {"nn_cnn": "tiny_recognize", "nn_mlp.hidden": "tiny_recognize",
                             "nn_mlp.out": "fresh: the output layer of tiny_recognize",
                             "nn_rnn.recurrence": "fresh: no earlier network has this layer",
                             "nn_rnn.out": "fresh: the new network's output layer"}
  # A second list task takes the per-image output layer and the LSTM's recurrence too, not its output.
  trained = baselines.llt(count, [recognizer.network], TINY, TUNE, seed=3)
  assert trained.status == "trained" and trained.test_score < 0.7 * trivial(count)
  history = [recognizer.network, trained.network]
  again = baselines.llt(task("count", seed=1), history, TINY, ZERO_EPOCHS, seed=4)
  prev, start = trained.network.modules, again.network.modules
  assert _equal(start[MLP], prev[MLP]) and _equal(start[CNN], prev[CNN])
  for k in ("w_i", "w_h", "b"):
    assert np.array_equal(start[RNN]["params"][k], prev[RNN]["params"][k])
  assert not _equal(start[RNN]["params"]["out"], prev[RNN]["params"]["out"])
  # Back to an image task: the image stack from the previous (list) network, a fresh output layer.
  back = baselines.llt(task("recognize"), history, TINY, ZERO_EPOCHS, seed=5)
  assert _equal(back.network.modules[CNN], prev[CNN])
  assert dict(back.sources)["nn_mlp.out"] == "fresh: the new network's output layer"


@pytest.mark.slow
def test_pnn_learns_a_new_column_and_never_moves_the_earlier_ones(recognizer):
  column0 = recognizer.network
  snapshot = jax.tree.map(np.copy, dict(column0.modules))
  count = task("count")
  r = baselines.pnn(count, [column0], TINY, TUNE, seed=0)
  assert r.status == "trained" and r.test_score < 0.7 * trivial(count), (r.test_score, trivial(count))
  assert _equal(dict(column0.modules), snapshot)  # bit for bit
  assert r.network.column == 1 and set(r.network.modules["lateral"]["params"]) == {"hidden", "out", "rnn_in"}
  assert r.frozen_parameters == sum(baselines.count_parameters(m["params"]) for m in snapshot.values())
  # The new column really reads the earlier one: perturbing the frozen column changes its output.
  net = PNN([column0.architecture, r.network.architecture], TINY)
  variables = {"params": {k: m["params"] for k, m in r.network.modules.items()},
               "batch_stats": {k: m["batch_stats"] for k, m in r.network.modules.items() if k != "lateral"}}
  x = ListBatch(jnp.asarray(count.table)[count.test.inputs.values[:8]], count.test.inputs.mask[:8])
  y = net.apply(variables, net.frozen([column0.modules]), x, train=False)
  moved = jax.tree.map(lambda a: a * 1.5, dict(column0.modules))
  assert not np.allclose(y, net.apply(variables, net.frozen([moved]), x, train=False))
  # A third column reads both earlier ones, and the list column's LSTM through "rnn_out".
  short = dataclasses.replace(TUNE, epochs=2)
  third = baselines.pnn(task("count", seed=1), [column0, r.network], TINY, short, seed=0)
  assert set(third.network.modules["lateral"]["params"]) == {"hidden", "out", "rnn_in", "rnn_out"}
  assert _equal(dict(column0.modules), snapshot)


@pytest.mark.slow
def test_a_one_column_pnn_is_the_standalone_network(recognizer):
  t = task("recognize")
  arch = recognizer.network.architecture
  compiled = compile_program(arch.program, arch.fresh_types, TINY)
  modules = recognizer.network.modules
  v = {"params": tuple(modules[n]["params"] for n in compiled.fresh_slots),
       "batch_stats": tuple(modules[n]["batch_stats"] for n in compiled.fresh_slots)}
  x = jnp.asarray(t.table[:16])
  net = PNN([arch], TINY)
  pv = {"params": {**{k: m["params"] for k, m in modules.items()}, "lateral": {}},
        "batch_stats": {k: m["batch_stats"] for k, m in modules.items()}}
  np.testing.assert_allclose(net.apply(pv, (), x, train=False), compiled.apply(v, (), x, train=False),
                             rtol=1e-5, atol=1e-6)


def test_pnn_refuses_graph_tasks(recognizer):
  with pytest.raises(ValueError, match="not defined for graph tasks"):
    baselines.pnn(task("path"), [recognizer.network], TINY, TUNE, seed=0)


@pytest.mark.slow
def test_the_graph_baselines(tmp_path):
  regress = task("regress")
  regressor = baselines.standalone(regress, TINY, TUNE, seed=0)
  assert regressor.test_score < 0.5 * trivial(regress)
  snapshot = jax.tree.map(np.copy, dict(regressor.network.modules))
  path = task("path")
  r = baselines.standalone(path, TINY, TUNE, seed=0, regressor=regressor.network)
  assert r.status == "trained" and r.test_score < 0.6 * trivial(path), (r.test_score, trivial(path))
  assert _equal(dict(regressor.network.modules), snapshot)
  assert r.frozen_parameters > 0 and r.description == "lstm_rows(map_g(compose(nn_mlp, nn_cnn)))"
  # LLT takes the whole regressor, its output layer included (the paper's appendix C), then trains it.
  start = baselines.llt(path, [regressor.network], TINY, ZERO_EPOCHS, seed=1)
  assert _equal(start.network.modules[MLP], snapshot[MLP])
  assert _equal(start.network.modules[CNN], snapshot[CNN])
  assert dict(start.sources)["nn_mlp.out"] == "tiny_regress"
  assert start.frozen_parameters == 0
  # A saved network loads back equal.
  baselines.save_network(r.network, tmp_path / "net")
  back = baselines.load_network(tmp_path / "net", TINY)
  assert back.task == r.network.task and back.architecture == r.network.architecture
  assert _equal(dict(back.modules), dict(r.network.modules))


@pytest.mark.slow
def test_from_scratch_trains_a_program_with_its_library_functions_fresh(recognizer):
  count = task("count")
  program = parse("compose(nn_a, map_l(lib.rec))")
  types = {"nn_a": parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]")}
  r = baselines.from_scratch(count, program, types, {"rec": TYPES["recognize"]}, TINY, TUNE, seed=0)
  assert r.description == "compose(nn_a, map_l(nn_scratch_rec))" and r.status == "trained"
  assert r.test_score < 0.7 * trivial(count)
  with pytest.raises(ValueError, match="no type for library function lib.rec"):
    baselines.from_scratch(count, program, types, {}, TINY, TUNE, seed=0)


@pytest.mark.slow
def test_the_opened_up_layers_compute_what_the_templates_compute():
  rng = jax.random.key(0)
  x = jax.random.normal(rng, (6, 5))
  mask = jnp.array([True] * 5 + [False])
  spec = module_spec(parse_type("Tensor<real>[5] -> Tensor<bool>[3]"), TINY)
  p, s = init_module(spec, rng)
  for train in (False, True):
    want, want_stats = apply_module(spec, p, s, (x,), Rows(mask, train=train))
    got, hidden, got_stats = layers.mlp(spec, p, s, x, Rows(mask, train=train))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert _equal(got_stats, want_stats) and hidden.shape == (6, 16)
  lspec = module_spec(parse_type("List<Tensor<real>[5]> -> Tensor<real>[2]"), TINY)
  lp, ls = init_module(lspec, rng)
  values = jax.random.normal(rng, (3, 4, 5))
  lmask = jnp.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], bool)
  want, _ = apply_module(lspec, lp, ls, (ListBatch(values, lmask),), Rows(jnp.ones(3, bool)))
  states, last = layers.lstm(lp, values, lmask)
  np.testing.assert_allclose(layers.dense(lp["out"], last), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(states[0, 2], states[0, 3])  # the state holds over padding


def test_the_opened_up_layers_ask_for_float32_precision():
  # As the templates do (tests/compile/test_modules.py): no TF32 products on a GPU.
  rng = jax.random.key(0)
  lspec = module_spec(parse_type("List<Tensor<real>[5]> -> Tensor<real>[2]"), TINY)
  lp, _ = init_module(lspec, rng)
  values, lmask = jax.random.normal(rng, (3, 4, 5)), jnp.ones((3, 4), bool)
  ap = layers.init_adapter(rng, 4, 3, 2)

  def loss(lp, ap):
    _, last = layers.lstm(lp, values, lmask)
    return jnp.sum(layers.adapter(ap, layers.dense(lp["out"], last) @ jnp.ones((2, 4))) ** 2)

  found = products_and_precisions(jax.grad(loss, argnums=(0, 1)), lp, ap)
  ours = [p for _, p in found if p is not None]  # the test's own `@ jnp.ones` asks for none
  assert len(found) - len(ours) == 2 and len(ours) >= 8, found  # 5 matmuls and their gradients
  assert all(p == "(Precision.HIGHEST, Precision.HIGHEST)" for p in ours), found


def test_standalone_starts_a_regression_output_at_the_targets_mean():
  """As HOUDINI's fresh candidates (`TuneConfig.bias_from_targets`): the standalone network's output
  layer starts at the training targets' mean on a regression, at 0 with the option off, and a
  classifier's stays at 0."""
  regress = task("regress")
  mean = np.asarray(regress.train.targets, np.float64).mean(0)
  start = baselines.standalone(regress, TINY, ZERO_EPOCHS, seed=0)
  np.testing.assert_allclose(np.asarray(start.network.modules[MLP]["params"]["out"]["b"]), mean, rtol=1e-6)
  off = baselines.standalone(regress, TINY, dataclasses.replace(ZERO_EPOCHS, bias_from_targets=False), seed=0)
  np.testing.assert_array_equal(np.asarray(off.network.modules[MLP]["params"]["out"]["b"]), np.zeros(2))
  classifier = baselines.standalone(task("recognize"), TINY, ZERO_EPOCHS, seed=0)
  np.testing.assert_array_equal(np.asarray(classifier.network.modules[MLP]["params"]["out"]["b"]), [0.0])


@pytest.mark.slow
def test_an_interrupted_baseline_resumes_from_its_checkpoint(tmp_path, monkeypatch):
  import os

  import hx.compile.checkpoint as ck

  short = dataclasses.replace(TUNE, epochs=3)
  real = ck.tune

  def stop_at_second_chunk(*args, **kwargs):
    if kwargs.get("resume") is not None:
      raise KeyboardInterrupt
    return real(*args, **kwargs)

  def same(a, b):
    assert (a.val_score, a.test_score, a.outcome.epochs_run, a.outcome.best_epoch) == \
        (b.val_score, b.test_score, b.outcome.epochs_run, b.outcome.best_epoch)
    assert _equal(dict(a.network.modules), dict(b.network.modules))

  recognize = task("recognize")
  straight = baselines.standalone(recognize, TINY, short, seed=0)
  monkeypatch.setattr(ck, "tune", stop_at_second_chunk)
  with pytest.raises(KeyboardInterrupt):
    baselines.standalone(recognize, TINY, short, seed=0, checkpoint_dir=tmp_path / "s")
  monkeypatch.undo()
  assert len(os.listdir(tmp_path / "s")) == 1  # the first epoch's file
  same(baselines.standalone(recognize, TINY, short, seed=0, checkpoint_dir=tmp_path / "s"), straight)
  # A progressive column (frozen earlier column, lateral connections): the same.
  count = task("count")
  column = baselines.pnn(count, [straight.network], TINY, short, seed=0)
  monkeypatch.setattr(ck, "tune", stop_at_second_chunk)
  with pytest.raises(KeyboardInterrupt):
    baselines.pnn(count, [straight.network], TINY, short, seed=0, checkpoint_dir=tmp_path / "p")
  monkeypatch.undo()
  same(baselines.pnn(count, [straight.network], TINY, short, seed=0, checkpoint_dir=tmp_path / "p"), column)
  # Another starting point (LLT from other earlier weights) is another run: its own file.
  baselines.llt(recognize, [straight.network], TINY, short, seed=0, checkpoint_dir=tmp_path / "p")
  baselines.llt(recognize, [column.network], TINY, short, seed=0, checkpoint_dir=tmp_path / "p")
  assert len(os.listdir(tmp_path / "p")) == 3


@pytest.mark.slow
def test_a_checkpoint_resumes_where_the_fresh_start_differs_at_rounding(tmp_path, monkeypatch):
  """A run saved on one machine resumes on another whose arithmetic draws the same seed's initial
  weights a rounding apart (another device or jax): the key names a fresh start by its seed."""
  import os

  import hx.compile.checkpoint as ck

  short = dataclasses.replace(TUNE, epochs=3)
  recognize = task("recognize")
  straight = baselines.standalone(recognize, TINY, short, seed=0)
  real_tune = ck.tune

  def stop_at_second_chunk(*args, **kwargs):
    if kwargs.get("resume") is not None:
      raise KeyboardInterrupt
    return real_tune(*args, **kwargs)

  monkeypatch.setattr(ck, "tune", stop_at_second_chunk)
  with pytest.raises(KeyboardInterrupt):
    baselines.standalone(recognize, TINY, short, seed=0, checkpoint_dir=tmp_path)
  monkeypatch.undo()
  import hx.baselines.train as baseline_train

  real_compiled = baseline_train._compiled

  def init_an_ulp_apart(*args, **kwargs):
    compiled = real_compiled(*args, **kwargs)

    def init(rng):
      return jax.tree.map(lambda a: jnp.nextafter(a, jnp.inf), compiled.init(rng))

    return dataclasses.replace(compiled, init=init)

  monkeypatch.setattr(baseline_train, "_compiled", init_an_ulp_apart)
  resumed = baselines.standalone(recognize, TINY, short, seed=0, checkpoint_dir=tmp_path)
  assert len(os.listdir(tmp_path)) == 1  # the finished run's file: no second run's
  assert (resumed.val_score, resumed.test_score, resumed.outcome.epochs_run) == \
      (straight.val_score, straight.test_score, straight.outcome.epochs_run)
  assert _equal(dict(resumed.network.modules), dict(straight.network.modules))
  # Without the checkpoint, the nudged start trains to other weights: the resume is what made them equal.
  fresh = baselines.standalone(recognize, TINY, short, seed=0)
  assert not _equal(dict(fresh.network.modules), dict(straight.network.modules))
  # Another seed is another run: its own file.
  monkeypatch.undo()
  baselines.standalone(recognize, TINY, short, seed=1, checkpoint_dir=tmp_path)
  assert len(os.listdir(tmp_path)) == 2
