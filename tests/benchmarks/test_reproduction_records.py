"""The committed reproduction records (benchmarks/reproduction/): readable, portable, and enough to rebuild
each report. Nothing is trained."""

import json
import shutil
from pathlib import Path

import pytest

from hx.evaluation import build_report, load_records
from hx.evaluation.records import work_seconds
from tests.marks import fast_first

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction"
# A run per sequence at 2% (ROOT/<sequence>), and at other fractions in ROOT/fraction_<f>/<sequence>.
def _recorded(run: Path) -> bool:
  # A run directory with settings and at least one record (one just started has none yet).
  return (run / "settings.json").exists() and any(run.glob("*/seed_*/records/*/fraction_*.json"))


RUNS = sorted(p for p in [*ROOT.iterdir(), *ROOT.glob("fraction_*/*")] if _recorded(p)
              ) if ROOT.exists() else []
# Variants of the paper preset (reproduce.py --module ...): ROOT/variants/<name>/<sequence>, and at other
# fractions ROOT/variants/<name>/fraction_<f>/<sequence>.
VARIANTS = sorted(p for p in [*ROOT.glob("variants/*/*"), *ROOT.glob("variants/*/fraction_*/*")]
                  if _recorded(p))


# The first run in the fast suite, the others slow: a few seconds each, and their number grows.
@pytest.mark.parametrize("run", fast_first(1, [(p,) for p in RUNS + VARIANTS],
                                           ids=[str(p.relative_to(ROOT)) for p in RUNS + VARIANTS]))
def test_a_committed_run_rebuilds_its_report_from_its_records_alone(run, tmp_path):
  copy = tmp_path / run.name
  shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints", "libraries", "networks"))
  records = load_records(copy)
  assert records and all(r["ranked"] or r["method"] != "houdini_topdown" for r in records)
  report = build_report(copy).read_text("utf-8")
  # Byte for byte what was committed: the report and the programs are functions of the records alone.
  assert report == (run / "report.md").read_text("utf-8")
  assert (copy / "programs.md").read_bytes() == (run / "programs.md").read_bytes()
  for r in records:
    if r["method"] == "houdini_topdown" and r["ranked"]:
      assert f"Task {r['task_index']}: {r['task']}" in report
  # Portable: the data are named by content, no path of the machine that ran it.
  for settings in copy.rglob("settings.json"):
    sources = json.loads(settings.read_text("utf-8"))["settings"]["sources"]
    assert sources["mnist"] is None or sources["mnist"].startswith("mnist.pkl.gz sha256:")


def test_cs1_at_2_percent_is_committed():
  records = load_records(ROOT / "cs1")
  houdini = {r["task_index"]: r for r in records if r["method"] == "houdini_topdown"}
  assert sorted(houdini) == [1, 2, 3, 4] and {r["fraction"] for r in records} == {0.02}
  assert {r["method"] for r in records} == {"houdini_topdown", "standalone", "llt", "pnn"}


def _written_now(saved: dict) -> dict:
  """The settings today's hx writes for the evaluation whose committed settings are `saved`
  (`hx.evaluation.runner.settings_json` of `EvalConfig.make` with its sequence, preset, methods, fractions,
  seeds and tasks, and the module settings it changed from its preset's), with its data sources as saved
  (their files, which the sources name by content, are not in the checkout)."""
  from hx.evaluation import EvalConfig
  from hx.evaluation.runner import settings_json
  from hx.synth.jsonfiles import jsonable

  preset = jsonable(EvalConfig.make(saved["sequence"], preset=saved["preset"]).module_config)
  changed = {k: tuple(v) if isinstance(v, list) else v for k, v in saved["module_config"].items()
             if v != preset[k]}
  methods = ["houdini" if m == "houdini_topdown" else m for m in saved["methods"]]
  config = EvalConfig.make(saved["sequence"], preset=saved["preset"], methods=methods,
                           fractions=saved["fractions"], seeds=saved["seeds"], tasks=saved["tasks"],
                           module_overrides=changed)
  return {**settings_json(config), "sources": saved["sources"]}


@pytest.mark.parametrize("run", RUNS, ids=[str(p.relative_to(ROOT)) for p in RUNS])
def test_the_paper_preset_still_writes_the_module_settings_a_committed_run_saved(run):
  # A run resumes only where its saved settings equal what the preset writes now. The committed runs are
  # of layout version 1, whose settings left the ModuleConfig fields added since (mlp_order,
  # fold_step_norm) out at their defaults: migrated (`hx.synth.run_directory.migrated_settings`), they
  # hold every field, at the values the preset writes now.
  from hx.evaluation import EvalConfig
  from hx.synth.jsonfiles import jsonable
  from hx.synth.run_directory import migrated_settings

  whole = json.loads((run / "settings.json").read_text("utf-8"))
  saved = whole["settings"]
  assert saved["preset"] == "paper" and whole.get("record_version", 1) == 1
  now = jsonable(EvalConfig.make(saved["sequence"], preset="paper").module_config)
  assert migrated_settings(saved, {**saved, "module_config": now})["module_config"] == now
  assert {"mlp_order", "fold_step_norm"} <= set(now)


@pytest.mark.parametrize("run", RUNS + VARIANTS, ids=[str(p.relative_to(ROOT)) for p in RUNS + VARIANTS])
def test_a_committed_evaluation_opens_migrated_for_the_settings_written_now(run, tmp_path):
  # Its settings.json (version 1) opens through the migration against what today's hx writes for the same
  # command, and is rewritten as version 3 with the run's start time: the run resumes.
  from hx.evaluation import ConfigError
  from hx.synth.jsonfiles import read_settings
  from hx.synth.run_directory import open_settings

  whole = json.loads((run / "settings.json").read_text("utf-8"))
  asked = _written_now(whole["settings"])
  copy = tmp_path / run.name
  copy.mkdir()
  shutil.copy(run / "settings.json", copy / "settings.json")
  assert open_settings(copy, asked, what="hx evaluation", error=ConfigError) == whole["started"]
  assert json.loads((copy / "settings.json").read_text("utf-8"))["record_version"] == 3
  assert read_settings(copy / "settings.json") == (asked, whole["started"])


@pytest.mark.parametrize("run", VARIANTS, ids=[str(p.relative_to(ROOT)) for p in VARIANTS])
def test_a_committed_variant_is_not_the_paper_preset(run):
  # A variant's folder holds what the paper preset does not write: its module settings differ, once the
  # fields its version 1 settings left out at their defaults are filled in.
  from hx.evaluation import EvalConfig
  from hx.synth.jsonfiles import jsonable
  from hx.synth.run_directory import migrated_settings

  saved = json.loads((run / "settings.json").read_text("utf-8"))["settings"]
  paper = jsonable(EvalConfig.make(saved["sequence"], preset="paper").module_config)
  assert migrated_settings(saved, {**saved, "module_config": paper})["module_config"] != paper


@pytest.mark.slow
def test_reproduce_refuses_a_module_variant_in_the_paper_presets_folders():
  import subprocess
  import sys

  script = ROOT.parent / "reproduce.py"
  out = subprocess.run([sys.executable, str(script), "--sequences", "ss", "--module", "fold_step_norm=False"],
                       capture_output=True, text=True, timeout=120)
  assert out.returncode == 1
  assert "not the paper preset" in out.stderr and "--output_dir" in out.stderr
  out = subprocess.run([sys.executable, str(script), "--sequences", "ss", "--module", "fold_stp_norm=0",
                        "--output_dir", "unused"], capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and "'fold_stp_norm=0' is not NAME=VALUE" in out.stderr


@pytest.mark.slow
def test_reproduce_refuses_another_run_in_a_committed_runs_folder_before_training_anything(tmp_path):
  import subprocess
  import sys

  script = ROOT.parent / "reproduce.py"
  before = (ROOT / "cs1" / "settings.json").read_text()
  out = subprocess.run([sys.executable, str(script), "--sequences", "cs1", "--methods", "houdini",
                        "--strategies", "evolutionary", "--seeds", "0", "--fractions", "0.02"],
                       capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and "Traceback" not in out.stderr
  assert "holds a run with other settings (differing: methods" in out.stderr  # and sources: no --mnist
  assert (ROOT / "cs1" / "settings.json").read_text() == before


def test_committed_kept_candidates_are_readable_and_named_by_their_keys():
  # A task under way keeps its finished candidates' outcomes (hx.synth.kept) so that the next run
  # resumes it; each file must load under its own key, and be named by that key's hash.
  from hx.synth.kept import kept_path, load_kept

  for path in ROOT.rglob("candidates/*/fraction_*/*.json"):
    key = json.loads(path.read_text("utf-8"))["key"]
    assert kept_path(path.parent, key) == path
    outcome = load_kept(path, key)
    assert outcome.status in ("trained", "failed") and outcome.epochs_run >= 0
    assert outcome.status != "trained" or len(outcome.history) == outcome.epochs_run


def test_the_results_file_covers_every_sequence_recorded_not_only_the_last_commands(tmp_path, monkeypatch):
  # Two commands fill one directory (here CS3 and SS at 2%, copied without weights); the file written
  # (here by --results_only, as at the end of either command) holds both, in the order of
  # hx.data.SEQUENCES, a row for each recorded task, and nothing else in the directory changes.
  from benchmarks import reproduce

  for sequence in ("ss", "cs3"):
    shutil.copytree(ROOT / sequence, tmp_path / sequence,
                    ignore=shutil.ignore_patterns("checkpoints", "libraries", "networks", "plots"))
  (tmp_path / "gs1").mkdir()  # a sequence just started: settings, no records yet
  shutil.copy(ROOT / "gs1" / "settings.json", tmp_path / "gs1" / "settings.json")
  before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
  monkeypatch.setattr("sys.argv", ["reproduce.py", "--results_only", "--output_dir", str(tmp_path)])
  assert reproduce.main() == 0
  text = (tmp_path / "results.md").read_text("utf-8")
  assert text.startswith("Generated ") and "--results_only" in text.split("\n")[0]
  assert text.index("### CS3") < text.index("### SS") and "### GS1" not in text
  for sequence in ("cs3", "ss"):
    records = load_records(tmp_path / sequence)
    # A row per task, named as instantiation 0 names it (others count digits of their own): "(n=K)" with
    # K the instantiations recorded.
    for r in records:
      if r["instance"] == 0:
        n = len({q["instance"] for q in records if q["task_index"] == r["task_index"]})
        head = f"| {r['task_index']}: {r['task']} | 2% |"
        row = next(line for line in text.splitlines() if line.startswith(head))
        assert n == 1 or f"(n={n})" in row
        # The last cell: HOUDINI's and the baselines' work seconds over every instantiation of the task.
        group = [q for q in records if q["task_index"] == r["task_index"]]
        houdini = sum(work_seconds(q) for q in group if q["method"].startswith("houdini"))
        baselines = sum(work_seconds(q) for q in group
                        if not q["method"].startswith("houdini") and not q.get("same_as"))
        assert row.endswith(f"| {houdini:.0f} / {baselines:.0f} |"), row
  assert "| work seconds: HOUDINI / baselines |" in text
  assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "results.md"} == before


@pytest.mark.parametrize("argv, message", [
    (["--output_dir", "NO"], "error: --results_only: --output_dir NO is not a directory"),
    (["--output_dir", "EMPTY"], "error: --results_only: --output_dir EMPTY holds no recorded sequence "
                                "(<sequence>/<method>/seed_*/records/)"),
    (["--output_dir", "EMPTY", "--sequences", "cs1", "--seeds", "0"],
     "error: --results_only: it trains nothing and reads every recorded sequence: --sequences, --seeds "
     "cannot go with it"),
    (["--output_dir", "BAD"],
     "error: BAD/cs1/standalone/seed_0/records/01_recognize_digit(0)/fraction_0.02.json: not a readable "
     "record"),
])
def test_results_only_refuses_bad_flags_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, argv,
                                                                      message):
  from benchmarks import reproduce

  (tmp_path / "EMPTY").mkdir()
  bad = tmp_path / "BAD" / "cs1" / "standalone" / "seed_0" / "records" / "01_recognize_digit(0)"
  bad.mkdir(parents=True)
  (bad / "fraction_0.02.json").write_text("{not json")
  argv = [str(tmp_path / a) if a in ("NO", "EMPTY", "BAD") else a for a in argv]
  monkeypatch.setattr("sys.argv", ["reproduce.py", "--results_only", *argv])
  assert reproduce.main() == 1
  err = capsys.readouterr().err.strip().replace(str(tmp_path) + "/", "")
  assert len(err.splitlines()) == 1 and err.startswith(message)
  assert not list(tmp_path.rglob("results.md"))


@pytest.mark.slow
def test_library_after_refuses_a_folder_with_no_run_in_one_line_and_starts_none(tmp_path):
  import subprocess
  import sys

  script = ROOT.parent / "reproduce.py"
  out = subprocess.run([sys.executable, str(script), "--sequences", "ls", "--seeds", "0",
                        "--fractions", "0.02", "--library_after", "5", "--output_dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
  assert out.returncode == 1 and "Traceback" not in out.stderr
  assert out.stderr.strip().splitlines() == [
      f"error: {tmp_path / 'ls'} holds no hx evaluation (no settings.json): nothing to rebuild from"]
  assert list(tmp_path.iterdir()) == []  # no run started, no results file


# The weights a run commits (benchmarks/reproduction/.gitignore's exceptions: GS2 at 10%, which runs
# over several sittings on fresh machines): each must load (its checksums hold) and be the build the records
# name, or a later run would train its candidates and baselines on other weights than the records'.
# Only the folders the .gitignore commits ("!" lines): a machine's own rebuilds elsewhere (ignored) are
# builds of its own, which no record names.
def _committed(name: str) -> list[Path]:
  ignore = ROOT / ".gitignore"
  kept = [ROOT / line[1:].strip().rstrip("/") for line in ignore.read_text("utf-8").splitlines()
          if line.startswith("!")] if ignore.exists() else []
  return sorted(f for folder in kept for f in folder.glob(f"after_*/{name}"))


COMMITTED_LIBRARIES = _committed("library.json")
COMMITTED_NETWORKS = _committed("network.json")


def _run_of(path: Path) -> Path:
  # RUN/<method>/seed_S/(libraries|networks)/after_TT/<file>
  return path.parents[4]


@pytest.mark.parametrize("path", COMMITTED_LIBRARIES, ids=[str(p.parent.relative_to(ROOT))
                                                           for p in COMMITTED_LIBRARIES])
def test_a_committed_library_loads_and_is_the_one_its_records_name(path):
  from hx.synth.library import Library

  library = Library.load(path.parent)
  after = int(path.parent.name.removeprefix("after_"))
  seed_dir = path.parents[2]
  named = set()
  for r in load_records(_run_of(path)):
    if r["method"] == "houdini_topdown" and f"seed_{r['instance']}" == seed_dir.name:
      if r["task_index"] == after:
        named.add(r["library_after"])
      if r["task_index"] == after + 1:
        named.add(r["library_before"])
  # The record of task `after` names the build it wrote; a build made again on another machine (another
  # digest) is named by the next task's record as the library it searched with.
  assert library.version in named, (library.version, named)


@pytest.mark.parametrize("path", COMMITTED_NETWORKS, ids=[str(p.parent.relative_to(ROOT))
                                                          for p in COMMITTED_NETWORKS])
def test_a_committed_network_loads_and_is_the_one_later_records_started_from(path):
  from hx.baselines.networks import load_network
  from hx.evaluation import EvalConfig
  from hx.evaluation.records import network_version

  run = _run_of(path)
  settings = json.loads((run / "settings.json").read_text("utf-8"))["settings"]
  network = load_network(path.parent, EvalConfig.make(settings["sequence"], preset="paper").module_config)
  method, seed_dir = path.parents[3].name, path.parents[2]
  assert network.method == method
  version = network_version(network)
  started = [s for r in load_records(run) if f"seed_{r['instance']}" == seed_dir.name
             for s in r.get("starts_from", []) if (s["method"], s["task"]) == (method, network.task)]
  # A network no later task has started from yet has nothing to match; one that has must be that one
  # (low-level transfer's first network is the standalone's, the same weights under its own name). Each
  # method's own: the standalone network's task 2 and low-level transfer's are different networks.
  assert all(s["version"] == version for s in started), (version, started)
