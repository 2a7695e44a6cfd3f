r"""Draws the paper's figures (test error against training fraction) over every run under a root.

    python -m hx.bin.figures benchmarks/reproduction   # ROOT/figures/<sequence>_error_by_fraction.png
    python -m hx.bin.figures benchmarks/reproduction --output_dir=DIR
    python -m hx.bin.figures benchmarks/reproduction --tables   # the headline tables; writes nothing

Reads the records of every run directory under ROOT (a directory with settings.json and
<method>/seed_<S>/records/, at any depth), groups them by the sequence their settings name, and writes one
figure per sequence (`hx.evaluation.fraction_plots`); prints each figure's path and the runs it drew.
With --tables it writes nothing and prints the markdown a reproduction's README shows first
(`hx.evaluation.headline`): every method's scores per sequence, task and fraction beside the paper's,
HOUDINI's forward transfer counted, and where the paper's rank-1 programs ranked in hx's searches, each
block between the markers a README keeps it in.
`python -m hx.bin.report DIR` is the one-run report; this binary spans runs (fractions, searches and
variants recorded in separate directories).
"""

from __future__ import annotations

import sys
from pathlib import Path

from absl import app, flags, logging

from hx.bin.checks import FlagError, parse_flags, refuse, writable_directory

_OUTPUT = flags.DEFINE_string("output_dir", None, "Where the PNGs go (default ROOT/figures).")
_TABLES = flags.DEFINE_boolean("tables", False, "Print the headline tables (markdown); write nothing.")

_USAGE = ("usage: python -m hx.bin.figures ROOT [--output_dir=DIR | --tables] (ROOT: a folder of runs' "
          "directories)")


def main(argv: list[str]) -> int:
  logging.set_verbosity(logging.WARNING)
  from hx.evaluation.fraction_plots import collect_figures, write_figures
  from hx.evaluation.headline import readme_blocks

  if len(argv) != 2:
    print(_USAGE, file=sys.stderr)
    return 1
  root = Path(argv[1])
  output = Path(_OUTPUT.value) if _OUTPUT.value else root / "figures"
  try:
    if not root.is_dir():
      raise FlagError(f"{root} is not a directory")
    if _TABLES.value and _OUTPUT.value:
      raise FlagError("--tables writes nothing: leave out --output_dir")
    if _TABLES.value:
      print(readme_blocks(root), end="")
      return 0
    writable_directory(output, "--output_dir")
    figures = collect_figures(root)
    paths = write_figures(figures, output)
  except (FlagError, ValueError, OSError) as err:  # OSError: a full disk (hx.atomic.WriteFailed)
    return refuse(err)
  for path, figure in zip(paths, figures.values()):
    print(f"{path}: {', '.join(figure.runs)}")
  return 0


def console() -> None:
  """The hx-figures console script."""
  app.run(main, flags_parser=parse_flags)


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
