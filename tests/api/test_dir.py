"""`dir(hx)` lists the public API, the names loaded on first use included."""

import json
import subprocess
import sys

import hx


def test_dir_lists_the_lazy_names_before_their_first_use():
  # A fresh process: in this one another test may already have loaded them.
  code = "import hx, json; print(json.dumps(dir(hx)))"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
  names = set(json.loads(out.stdout))
  assert {"Task", "synthesize", "evaluate", "Budget", "EvalConfig", "Library", "parse"} <= names
  assert set(hx.__all__) <= names
  assert {"synth", "evaluation"} <= names
