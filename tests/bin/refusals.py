"""Runs one binary's `main` on many command lines in one process, through absl's flag parsing as the
binary's `app.run` does it (`hx.bin.checks.parse_flags`), so that a test of many refusals starts Python
and imports JAX once rather than once a command line.

    python -m tests.bin.refusals hx.bin.run < cases.json > results.json

cases.json: a JSON list of command lines (each a list of arguments, without the program). results.json:
for each, {"rc": exit status, "stdout": ..., "stderr": ...}. Between command lines the flags go back to
their defaults (`FLAGS.unparse_flags`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys

from absl import flags


def run_one(module, args: list[str]) -> dict:
  """The exit status and output of `module.main` on `args`, flags parsed as `app.run` would."""
  from hx.bin.checks import parse_flags

  flags.FLAGS.unparse_flags()
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
      rc = module.main(parse_flags([module.__name__, *args]))
    except SystemExit as stop:
      rc = stop.code if isinstance(stop.code, int) else 1
  return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
  module = importlib.import_module(sys.argv[1])
  cases = json.load(sys.stdin)
  results = [run_one(module, args) for args in cases]
  json.dump(results, sys.stdout)


if __name__ == "__main__":
  main()
