"""train_throughput.py --authors: the harness runs as a child process with the run's sizes, its warm-up
epoch is dropped, and a harness directory that lacks its parts is refused by name. A fake harness stands
in for the authors' code (no torch here)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from benchmarks.train_throughput import authors_run

FAKE = r'''
import argparse, json, sys
p = argparse.ArgumentParser()
for name in ("--threads", "--epochs", "--eval_every", "--batch_size", "--train_per_len", "--val_per_len"):
  p.add_argument(name, type=int)
p.add_argument("--json")
a = p.parse_args()
with open(a.json, "w") as f:
  json.dump({"argv": sys.argv[1:], "epoch_train_s": [9.0] + [1.0 + i for i in range(a.epochs - 1)],
             "data": {"train_lists": 4 * a.train_per_len, "train_lengths": [2, 3, 4, 5],
                      "batches_per_epoch": 4}}, f)
'''


def _harness(tmp_path):
  os.makedirs(tmp_path / "venv" / "bin")
  os.symlink(sys.executable, tmp_path / "venv" / "bin" / "python")
  (tmp_path / "bench_count.py").write_text(FAKE)
  return str(tmp_path)


def test_the_harness_gets_the_runs_sizes_and_its_first_epoch_is_dropped(tmp_path):
  figures = authors_run(_harness(tmp_path), epochs=2, threads=2, batch_size=150, train_lists=6000,
                        val_lists=2100)
  argv = figures["argv"]
  assert argv[argv.index("--epochs") + 1] == "3"  # one warm-up epoch more than timed
  assert argv[argv.index("--train_per_len") + 1] == "1500"
  assert argv[argv.index("--val_per_len") + 1] == "700"
  assert argv[argv.index("--threads") + 1] == "2"
  assert int(argv[argv.index("--eval_every") + 1]) > 1000  # no evaluations inside the timed epochs
  assert figures["epoch_train_s"] == [1.0, 2.0]
  assert figures["sec_per_epoch"] == 1.5
  json.dumps(figures)


def test_a_harness_without_its_script_is_refused_by_path(tmp_path):
  harness = _harness(tmp_path)
  os.remove(os.path.join(harness, "bench_count.py"))
  with pytest.raises(SystemExit, match="bench_count.py is missing"):
    authors_run(harness, epochs=1, threads=1, batch_size=150, train_lists=600, val_lists=300)
