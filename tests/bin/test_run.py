"""The run and report binaries: bad flags are one line before any work; a short sequence end to end."""

import json
import subprocess
import sys

import pytest

from hx.evaluation.config import EvalConfig
from hx.evaluation.runner import check_directory, expected_records
from hx.synth.schedules import CheapFirst, Halving
from tests.marks import fast_first


def _run(*args, module="hx.bin.run", code=None, timeout=900):
  cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", module, *args]
  return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _refused(out, message):
  assert out.returncode == 1, (out.stdout, out.stderr)
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1 and message in lines[0], out.stderr
  assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args, message", fast_first(1, [
    (("--sequence=cs9",), "error: unknown sequence 'cs9'; the sequences are cs1, cs2, cs3, ss, gs1, gs2, ls"),
    ((), "--sequence is required"),
    (("--sequence=cs1", "--fractions=0.1,1.5"), "training fraction 1.5 is outside (0, 1]"),
    (("--sequence=cs1", "--fractions=0"), "training fraction 0 is outside (0, 1]"),
    (("--sequence=cs1", "--fractions=half"), "--fractions: 'half' is not a list of floats"),
    (("--sequence=cs1", "--mnist=/nonexistent/m.pkl.gz"), "--mnist: /nonexistent/m.pkl.gz does not exist"),
    (("--sequence=gs1", "--gtsrb=/nonexistent"), "--gtsrb: /nonexistent does not exist"),
    (("--sequence=gs1", "--methods=houdini,pnn"), "pnn is not defined for the graph sequence gs1"),
    (("--sequence=cs1", "--methods=houdini,rnn"), "unknown method 'rnn'"),
    (("--sequence=cs1", "--methods=houdini,standalone_with_fold"), "standalone_with_fold is the SS"),
    (("--sequence=cs1", "--preset=huge"), "unknown preset 'huge'"),
    (("--sequence=cs1", "--strategy=random"),
     "error: --strategy: unknown strategy 'random'; the strategies are topdown, evolutionary"),
    (("--sequence=cs1", "--tasks=5"), "--tasks must be in 1..4 for cs1, got 5"),
    (("--sequence=cs1", "--module=mlp_width=3"), "--module: 'mlp_width=3' is not NAME=VALUE"),
    (("--sequence=cs1", "--module=cnn_channels=0"), "module sizes: cnn_channels must be one or more"),
    (("--sequence=cs1", "--module=lstm_hidden=0"), "module sizes: lstm_hidden must be a positive int, got 0"),
    (("--sequence=ss", "--module=fold_step_norm=maybe"), "--module: fold_step_norm='maybe' is not a bool"),
    (("--sequence=cs1", "--schedule=halving", "--strategy=topdown,evolutionary"),
     "error: a schedule (Halving) is for the top-down strategy; the evolutionary one scores each "
     "generation to the end"),
    (("--sequence=cs1", "--schedule=cheap_first:probe=80", "--strategy=evolutionary"),
     "error: a schedule (CheapFirst) is for the top-down strategy"),
    (("--sequence=cs1", "--patience=0"), "patience must be >= 1, got 0"),
    (("--sequence=cs1", "--schedule=halving:val=0"),
     "error: --schedule: halving:val=0: Halving.val_examples must be >= 1 or None, got 0"),
    (("--sequence=cs1", "--schedule=cheap_first:probe=0"),
     "error: --schedule: cheap_first:probe=0: CheapFirst.probe_steps must be >= 1, got 0"),
    (("--sequence=cs1", "--schedule=cheap_first:first=1"),
     "error: --schedule: cheap_first: unknown key 'first'; its keys are probe, cheap, keep, eta, keep_at, "
     "free"),
    (("--sequence=cs1", "--schedule=cheap_first:keep=-1"),
     "error: --schedule: cheap_first:keep=-1: CheapFirst.keep must be >= 1 or None, got -1"),
    (("--sequence=cs1", "--schedule=halvng"),
     "error: --schedule: unknown schedule 'halvng'; the schedules are to_end, halving, cheap_first, "
     "estimate"),
    (("--sequence=cs1", "--executor=ray:address=nowhere"),
     "error: --executor: a Ray address is 'auto' or HOST:PORT"),
    (("--sequence=cs1", "--executor=processes:workers=two"),
     "error: --executor: processes: workers='two' is not an integer or none"),
]))
def test_bad_flags_are_one_line_before_any_work(tmp_path, args, message):
  out_dir = tmp_path / "out"
  _refused(_run(*args, f"--output_dir={out_dir}"), message)
  assert not out_dir.exists()


@pytest.mark.parametrize("args, message", fast_first(1, [
    (("--time_budget=0",), "error: --time_budget must be a positive number of seconds, got 0"),
    (("--time_budget=-5",), "error: --time_budget must be a positive number of seconds, got -5"),
    (("--schedule=halving:eta=1",), "error: --schedule: halving:eta=1: Halving needs eta >= 2 and "
                                    "min_keep >= 1"),
    (("--schedule=halving:first=0",), "error: --schedule: halving:first=0: Halving.first must be a positive "
                                      "number of epochs, got 0.0"),
    (("--fractions=",), "error: --fractions is empty: give at least one value, or leave the flag out"),
    (("--methods=",), "error: --methods is empty: give at least one value, or leave the flag out"),
    (("--seeds=",), "error: --seeds is empty"),
    (("stray", "words"), "error: unexpected arguments stray words (flags take the form --name=value)"),
]))
def test_bad_flags_once_accepted_or_a_traceback_are_one_line(tmp_path, args, message):
  out_dir = tmp_path / "out"
  _refused(_run("--sequence=cs1", *args, f"--output_dir={out_dir}"), message)
  assert not out_dir.exists()


@pytest.mark.slow
def test_an_output_directory_that_cannot_be_written_is_one_line(tmp_path):
  (tmp_path / "file").write_text("mine")
  file = tmp_path / "file"
  for where, message in ((file, f"--output_dir: {file} is a file, not a directory"),
                         (file / "run", f"--output_dir: cannot create {file / 'run'}: {file} is not a "
                                        "directory"),
                         ("/proc/hx-run", "--output_dir: cannot create or write /proc/hx-run: ")):
    _refused(_run("--sequence=cs1", f"--output_dir={where}"), f"error: {message}")
  assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.slow
def test_a_bad_data_file_is_refused_before_anything_is_written_and_a_corrected_rerun_proceeds(tmp_path):
  made = tmp_path / "made_by_the_pickle"
  crafted = tmp_path / "mnist.pkl"
  # A pickle that calls open(made, "w") when loaded by pickle.load.
  crafted.write_bytes(b"cbuiltins\nopen\n(V" + str(made).encode() + b"\nVw\ntR.")
  out_dir = tmp_path / "out"
  tiny = ("--sequence=cs1", "--tasks=1", "--methods=standalone", "--fractions=1", "--examples=20,10,10",
          "--epochs=1", "--module=mlp_hidden=8,cnn_channels=2:2", f"--output_dir={out_dir}")
  _refused(_run(*tiny, f"--mnist={crafted}"),
           "error: MNIST: not a readable mnist.pkl.gz ((x, y) x 3) (UnpicklingError: it names builtins.open, "
           "which is not part of a NumPy array (refused: unpickling it could run code)); "
           f"looked at: {crafted}; set --mnist")
  assert not made.exists() and not out_dir.exists()
  # The same directory, the data flag corrected: the run proceeds.
  out = _run(*tiny)
  assert out.returncode == 0, out.stderr
  assert "1 records written" in out.stdout and (out_dir / "settings.json").exists()
  # Its progress: stderr is not a terminal here, so a plain line per network trained.
  assert "standalone recognize_digit(0) @ 100%: 1/1 networks, best val " in out.stderr


@pytest.mark.slow
def test_a_directory_of_another_run_or_of_other_files_is_refused(tmp_path):
  other = tmp_path / "other"
  check_directory(EvalConfig.make("cs1", fractions=(0.5,)), other)
  _refused(_run("--sequence=cs1", f"--output_dir={other}"),
           f"{other} holds a run with other settings (differing: fractions)")
  assert sorted(p.name for p in other.iterdir()) == ["settings.json"]
  stray = tmp_path / "stray"
  stray.mkdir()
  (stray / "notes.txt").write_text("mine")
  _refused(_run("--sequence=cs1", f"--output_dir={stray}"), "is not empty and holds no hx evaluation")


@pytest.mark.slow
def test_a_sequence_script_runs_its_sequence_only(tmp_path):
  code = "import sys; from hx.bin.run import cs1; cs1()"
  _refused(_run("--sequence=cs2", f"--output_dir={tmp_path / 'x'}", code=code),
           "hx-cs1 runs CS1; for --sequence=cs2 use hx-run")


@pytest.mark.parametrize("flag, expected", fast_first(1, [("--nobias_from_targets", "[False]"),
                                                         ("--sequence=gs2", "[True]")]))
def test_the_output_bias_flag_reaches_every_tasks_training(flag, expected):
  code = ("import sys; from absl import flags; from hx.bin.run import config_from_flags; "
          "flags.FLAGS(sys.argv); "
          "print(sorted({t.bias_from_targets for _, t in config_from_flags().tune_configs}))")
  out = _run("--sequence=gs2", flag, code=code)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip().splitlines()[-1] == expected


@pytest.mark.slow
def test_the_schedule_and_patience_flags_reach_the_runs_settings():
  code = ("import sys; from absl import flags; from hx.bin.run import config_from_flags; "
          "flags.FLAGS(sys.argv); c = config_from_flags(); "
          "print(c.budget.schedule, sorted({t.patience for _, t in c.tune_configs}))")
  out = _run("--sequence=cs1", "--schedule=halving:eta=2", "--patience=2", code=code)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip().splitlines()[-1] == f"{Halving(first=2.0, eta=2, min_keep=1)!r} [2]"
  out = _run("--sequence=cs1", "--schedule=halving:equal=time", code=code)
  assert out.stdout.strip().splitlines()[-1] == f"{Halving(equal='time')!r} [None]"
  out = _run("--sequence=cs1", "--schedule=halving:equal=time,reference=median", code=code)
  assert out.stdout.strip().splitlines()[-1] == f"{Halving(equal='time', reference='median')!r} [None]"
  out = _run("--sequence=cs1", "--schedule=cheap_first:probe=80", code=code)
  assert out.stdout.strip().splitlines()[-1] == f"{CheapFirst(probe_steps=80)!r} [None]"
  # The paper's: every candidate to the end, every epoch; the budget's schedule None as before.
  for given in ((), ("--schedule=to_end",)):
    out = _run("--sequence=cs1", *given, code=code)
    assert out.stdout.strip().splitlines()[-1] == "None [None]"


@pytest.mark.slow
def test_the_budget_epochs_and_strategy_flags_reach_the_runs_settings():
  # --budget_seconds keeps the preset's candidates of each task (SS under paper: 10, then 100);
  # --candidates sets every task's; --strategy runs HOUDINI once per strategy beside the default baselines.
  code = ("import sys; from absl import flags; from hx.bin.run import config_from_flags; "
          "flags.FLAGS(sys.argv); c = config_from_flags(); "
          "print([(b.candidates, b.seconds) for b in c.budgets], "
          "sorted({t.epochs for _, t in c.tune_configs}), c.methods, [s.name for s in c.strategies])")
  out = _run("--sequence=ss", "--preset=paper", "--budget_seconds=30", "--epochs=2",
             "--strategy=topdown,evolutionary", code=code)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip().splitlines()[-1] == (
      "[(10, 30.0), (100, 30.0)] [2] ('houdini_topdown', 'houdini_evolutionary', 'standalone', 'llt', 'pnn', "
      "'standalone_with_fold') ['topdown', 'evolutionary']")
  out = _run("--sequence=ss", "--preset=paper", "--candidates=3", "--methods=houdini,llt",
             "--strategy=evolutionary", code=code)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip().splitlines()[-1] == (
      "[(3, None), (3, None)] [20, 30] ('houdini_evolutionary', 'llt') ['evolutionary']")


@pytest.mark.slow
def test_the_report_binary_needs_records(tmp_path):
  _refused(_run(str(tmp_path), module="hx.bin.report"), "holds no evaluation records")
  _refused(_run(module="hx.bin.report"), "usage: python -m hx.bin.report DIR")


TINY_RUN = ("--sequence=cs1", "--tasks=3", "--examples=150,60,60", "--epochs=2", "--candidates=2",
            "--module=mlp_hidden=16,cnn_channels=4:8,lstm_hidden=8", "--fractions=0.5,1")


def _essence(directory):
  out = {}
  for method, instance, index, fraction in expected_records(EvalConfig.make(
      "cs1", tasks=3, fractions=(0.5, 1.0), examples=(150, 60, 60), training={"epochs": 2},
      budget={"candidates": 2},
      module_overrides={"mlp_hidden": 16, "cnn_channels": (4, 8), "lstm_hidden": 8})):
    records = directory / method / f"seed_{instance}" / "records"
    paths = list(records.glob(f"{index:02d}_*/fraction_{fraction:g}.json"))
    assert len(paths) == 1, (method, index, fraction)
    rec = json.loads(paths[0].read_text())
    out[(method, index, fraction)] = [(x["program"], x["val"], x["test"]) for x in rec["ranked"]]
  return out


@pytest.mark.slow
def test_a_run_under_cheap_first_records_its_schedule_and_each_candidates_probe(tmp_path):
  out = _run(*TINY_RUN[:-1], "--fractions=1", "--methods=houdini", "--schedule=cheap_first:probe=1",
             "--candidates=3",
             f"--output_dir={tmp_path}")
  assert out.returncode == 0, out.stderr[-3000:]
  settings = json.loads((tmp_path / "settings.json").read_text())["settings"]
  assert settings["budget"]["schedule"] == {"probe_steps": 1, "cheap": 0.2, "keep": 3, "eta": None,
                                          "keep_at": 2.0,
                                          "free": False}
  [rec] = [json.loads(p.read_text()) for p in tmp_path.glob("houdini_topdown/seed_0/records/03_*/*.json")]
  ranked = rec["ranked"]
  assert len(ranked) == 3 and ranked[0]["status"] == "trained"
  # A probe of one step is one of the 2 epochs: each candidate trained to the end or stopped there.
  for x in ranked:
    assert (x["status"], x["epochs_run"]) == ("trained", 2) or (
        x["status"], x["estimate_method"], x["estimate_epochs"]) == ("estimated", "probe", 1), x


@pytest.mark.slow
def test_a_short_sequence_end_to_end_with_resume_and_a_rebuilt_report(tmp_path):
  whole = tmp_path / "whole"
  out = _run(*TINY_RUN, f"--output_dir={whole}")
  assert out.returncode == 0, out.stderr[-3000:]
  assert "Task 3 count_digit(0)" in out.stdout and f"Report: {whole / 'report.md'}" in out.stdout
  assert "HOUDINI (top-down):" in out.stdout and "progressive NN:" in out.stdout
  essence = _essence(whole)
  assert len(essence) == 4 * 3 * 2

  # Every record says what ran, on which data, how well and how long.
  recs = {(p.parts[-5], p.parts[-2], p.name): json.loads(p.read_text())
          for p in whole.glob("*/seed_0/records/*/fraction_*.json")}
  for (method, task, _), r in recs.items():
    assert r["data"]["datasets"] == ["mnist-5k"] and r["data"]["synthetic"] is False
    assert r["task_index"] == int(task[:2]) and r["metric"] in ("error", "rmse")
    assert isinstance(r["ranked"][0]["test"], float) and r["seconds"]["wall"] >= 0
    if method == "houdini_topdown":
      assert r["library_after"] and len(r["ranked"]) == 2
    else:
      assert r["network_version"] and r["tune_config"]["epochs"] == 2
  assert recs[("llt", "01_recognize_digit(0)", "fraction_1.json")]["same_as"] == "standalone"
  assert recs[("pnn", "01_recognize_digit(0)", "fraction_1.json")]["ranked"][0]["test"] == \
      recs[("standalone", "01_recognize_digit(0)", "fraction_1.json")]["ranked"][0]["test"]
  llt3 = recs[("llt", "03_count_digit(0)", "fraction_1.json")]
  assert dict(map(tuple, llt3["transfer"]))["nn_cnn"] == "recognize_digit(1)"
  assert [s["task"] for s in llt3["starts_from"]] == ["recognize_digit(1)"]
  pnn3 = recs[("pnn", "03_count_digit(0)", "fraction_1.json")]
  assert [s["task"] for s in pnn3["starts_from"]] == ["recognize_digit(0)", "recognize_digit(1)"]
  assert pnn3["ranked"][0]["program"].startswith("pnn(column 3 of 3")
  for method in ("standalone", "llt", "pnn"):
    for t in (1, 2, 3):
      assert (whole / method / "seed_0" / "networks" / f"after_{t:02d}" / "variables.msgpack").exists()

  # The report, its plots and the programs in the paper's layout.
  report = (whole / "report.md").read_text()
  for text in ("| Task 1: recognize_digit(0) | mnist-5k |", "## Task 3: count_digit(0)", "low-level transfer",
               "progressive NN", "![Task 2](plots/task_02.png)", "tab:CS1Progs"):
    assert text in report
  assert "SYNTHETIC" not in report
  for name in ("task_01.png", "task_02.png", "task_03.png", "summary.png"):
    assert (whole / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  programs = (whole / "programs.md").read_text()
  assert "| Task 1: recognize_digit(0) | 1. `" in programs and "| Task 3: count_digit(0) | 1. `" in programs

  # The report rebuilds from the records alone.
  for name in ("report.md", "programs.md"):
    (whole / name).unlink()
  for p in (whole / "plots").iterdir():
    p.unlink()
  out = _run(str(whole), module="hx.bin.report")
  assert out.returncode == 0, out.stderr
  assert (whole / "report.md").read_text() == report and (whole / "programs.md").read_text() == programs
  assert (whole / "plots" / "summary.png").exists()

  # A second run of the finished directory says so and does nothing.
  stamp = {p: p.stat().st_mtime_ns for p in whole.glob("*/seed_0/records/*/*.json")}
  out = _run(*TINY_RUN, f"--output_dir={whole}")
  assert out.returncode == 0 and "already holds this run, finished; nothing to do" in out.stdout
  assert stamp == {p: p.stat().st_mtime_ns for p in whole.glob("*/seed_0/records/*/*.json")}

  # Stopped by its time budget and run again, a run ends where an uninterrupted one does.
  part = tmp_path / "part"
  out = _run(*TINY_RUN, f"--output_dir={part}", "--time_budget=1")
  assert out.returncode == 0 and "stopped: the time budget of 1 s ran out" in out.stdout
  assert "Unfinished" in (part / "report.md").read_text()
  out = _run(*TINY_RUN, f"--output_dir={part}")
  assert out.returncode == 0, out.stderr[-3000:]
  assert _essence(part) == essence


def test_a_bool_module_setting_is_read_as_the_word_it_is():
  from hx.bin.checks import module_overrides

  assert module_overrides(["fold_step_norm=False"]) == {"fold_step_norm": False}
  assert module_overrides(["fold_step_norm=true", "mlp_hidden=8"]) == {"fold_step_norm": True,
                                                                          "mlp_hidden": 8}
