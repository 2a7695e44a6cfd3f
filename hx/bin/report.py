r"""Rebuilds an evaluation's report and plots from its records alone.

    python -m hx.bin.report runs/cs1-quick

Writes DIR/report.md, DIR/programs.md and DIR/plots/*.png from DIR/<method>/seed_<S>/records/ (see
`hx.evaluation.report`), and prints each task's scores.
"""

from __future__ import annotations

import sys

from absl import app, logging

from hx.evaluation import build_report, load_records, summary_lines


def main(argv: list[str]) -> int:
  logging.set_verbosity(logging.WARNING)
  if len(argv) != 2:
    print("usage: python -m hx.bin.report DIR (a directory written by python -m hx.bin.run)", file=sys.stderr)
    return 1
  directory = argv[1]
  try:
    path = build_report(directory)
  except (FileNotFoundError, ValueError) as err:
    print(f"error: {err}", file=sys.stderr)
    return 1
  for line in summary_lines(load_records(directory)):
    print(line)
  print(f"report: {path}")
  return 0


def console() -> None:
  """The hx-report console script."""
  app.run(main)


if __name__ == "__main__":
  app.run(main)
