r"""Rebuilds an evaluation's report and plots from its records alone.

    python -m hx.bin.report runs/cs1-quick

Writes DIR/report.md, DIR/programs.md and DIR/plots/*.png from DIR/<method>/seed_<S>/records/ (see
`hx.evaluation.report`), and prints each task's scores. A DIR that does not exist or is not a directory,
holds no record, or holds a record that cannot be read (the line names it and its field), or is being
written by a run (`hx.atomic.hold_directory`), is one line and exit status 1, with nothing written.
"""

from __future__ import annotations

import sys

from absl import app, logging

from hx.atomic import hold_directory
from hx.bin.checks import existing_path, parse_flags, refuse
from hx.evaluation import build_report, load_records, summary_lines


def main(argv: list[str]) -> int:
  logging.set_verbosity(logging.WARNING)
  if len(argv) != 2:
    print("usage: python -m hx.bin.report DIR (a directory written by python -m hx.bin.run)", file=sys.stderr)
    return 1
  directory = argv[1]
  problem = existing_path(directory, "DIR", "directory", "a directory written by python -m hx.bin.run")
  if problem is not None:
    return refuse(problem)
  try:
    with hold_directory(directory):  # not while a run writes there (DirectoryInUse, an OSError)
      path = build_report(directory)
  except (FileNotFoundError, ValueError, OSError) as err:  # OSError: a report path that cannot be written
    return refuse(err)
  for line in summary_lines(load_records(directory)):
    print(line)
  print(f"report: {path}")
  return 0


def console() -> None:
  """The hx-report console script."""
  app.run(main, flags_parser=parse_flags)


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
