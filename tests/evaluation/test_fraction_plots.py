"""The figures of error against training fraction over many runs (`hx.evaluation.fraction_plots`): exact on
a hand-built root, and the committed ones (benchmarks/reproduction/figures/) against the committed records
and against what the code draws now. Nothing is trained."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from hx.evaluation.fraction_plots import (
  Point,
  collect_figures,
  draw,
  figure_path,
  paper_points,
  run_directories,
  variant_of,
  write_figures,
)
from tests.marks import fast_first

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction"
FIGURES = ROOT / "figures"
REBUILD = "rebuild them: python -m hx.bin.figures benchmarks/reproduction"


def _module_config(**changes) -> dict:
  from hx.presets import EVALUATION_PRESETS
  from hx.synth.jsonfiles import jsonable

  return {**jsonable(EVALUATION_PRESETS["paper"].modules("cs1")), **changes}


def _run(directory: Path, fractions, module_config=None, sequence="cs1") -> Path:
  directory.mkdir(parents=True)
  settings = {"sequence": sequence, "preset": "paper", "fractions": fractions,
              "module_config": module_config or _module_config()}
  (directory / "settings.json").write_text(json.dumps({"settings": settings, "started": "x"}))
  return directory


_TASKS = {1: ("recognize_digit(0)", "error"), 3: ("count_digit(0)", "rmse")}


def _record(run: Path, method: str, instance: int, index: int, fraction: float, test: float | None,
            sequence="cs1", synthetic=False) -> None:
  task, metric = _TASKS[index]
  path = run / method / f"seed_{instance}" / "records" / f"{index:02d}_{task}" / f"fraction_{fraction:g}.json"
  path.parent.mkdir(parents=True, exist_ok=True)
  best = {"rank": 1, "program": "compose(nn_1, nn_2)", "named": None, "val": test, "test": test,
          "status": "trained" if test is not None else "failed",
          "reason": None if test is not None else "the loss turned NaN"}
  path.write_text(json.dumps({"record_version": 1, "sequence": sequence, "task_index": index, "task": task,
                              "metric": metric, "fraction": fraction,
                              "data": {"datasets": ["mnist"], "synthetic": synthetic}, "ranked": [best],
                              "seconds": {"wall": 1.0}}))


@pytest.fixture
def two_fractions(tmp_path):
  """A root of CS1 at 2% (instantiations 0 and 1), at 10% (0), a variant at 2%, and one failed record."""
  root = tmp_path / "root"
  low = _run(root / "cs1", [0.02])
  for method, scores in (("houdini_topdown", (2.0, 4.0)), ("standalone", (3.0, 3.5))):
    for instance, score in enumerate(scores):
      _record(low, method, instance, 1, 0.02, score)
      _record(low, method, instance, 3, 0.02, score / 10)
  high = _run(root / "more" / "fraction_0.1" / "cs1", [0.1])
  _record(high, "houdini_topdown", 0, 1, 0.1, 1.5)
  _record(high, "standalone", 0, 1, 0.1, None)  # failed: no point
  _record(high, "houdini_topdown", 0, 3, 0.1, 0.125)
  variant = _run(root / "variants" / "x" / "cs1", [0.02], _module_config(fold_step_norm=False))
  _record(variant, "houdini_topdown", 0, 1, 0.02, 2.5)
  return root


def test_two_fractions_exactly(two_fractions):
  assert [p.relative_to(two_fractions).as_posix() for p in run_directories(two_fractions)] == [
      "cs1", "more/fraction_0.1/cs1", "variants/x/cs1"]
  figures = collect_figures(two_fractions)
  assert list(figures) == ["cs1"]
  figure = figures["cs1"]
  assert figure.runs == ("cs1", "more/fraction_0.1/cs1", "variants/x/cs1")
  assert figure.fractions == (0.02, 0.1)
  first, third = figure.panels
  assert (first.index, first.name, first.metric, first.other_names, first.synthetic) == (
      1, "recognize_digit(0)", "error", 0, False)
  assert [(x.method, x.variant) for x in first.lines] == [
      ("houdini_topdown", None), ("standalone", None), ("houdini_topdown", "fold_step_norm=False")]
  houdini = first.line("houdini_topdown")
  assert houdini.points == (Point(0.02, (0, 1), (2.0, 4.0)), Point(0.1, (0,), (1.5,)))
  assert (houdini.points[0].mean, houdini.points[0].low, houdini.points[0].high) == (3.0, 2.0, 4.0)
  assert first.line("standalone").points == (Point(0.02, (0, 1), (3.0, 3.5)),)  # the failed 10% left out
  assert first.line("houdini_topdown", "fold_step_norm=False").points == (Point(0.02, (0,), (2.5,)),)
  assert first.line("houdini_topdown", "fold_step_norm=False").label == (
      "HOUDINI (top-down), fold_step_norm=False")
  assert third.metric == "rmse" and third.line("houdini_topdown").points == (
      Point(0.02, (0, 1), (0.2, 0.4)), Point(0.1, (0,), (0.125,)))
  # The paper's numbers at 100%: CS1's tables (tab:CS1Progs, tab:CS1ProgsEvo), in the records' units.
  assert [(p.method, p.source, p.tables, p.scores, p.fraction) for p in first.paper] == [
      ("houdini_topdown", "programs", ("tab:CS1Progs",), (1.0,), 1.0),
      ("houdini_evolutionary", "programs", ("tab:CS1ProgsEvo",), (0.57,), 1.0)]
  assert [(p.method, p.scores) for p in third.paper] == [("houdini_topdown", (0.38,)),
                                                       ("houdini_evolutionary", (0.38,))]


def test_the_paper_points_of_the_graph_table_ls_and_a_score_without_unit():
  gs2 = {(p.method, p.source): p.scores for p in paper_points("gs2", 2, "rmse")}
  assert gs2 == {("houdini_topdown", "programs"): (1.57,), ("houdini_topdown", "graph table"): (1.5,),
                 ("houdini_evolutionary", "programs"): (6.58,),
                 ("houdini_evolutionary", "graph table"): (6.67,),
                 ("standalone", "graph table"): (6.49,), ("llt", "graph table"): (5.0,)}
  ls = paper_points("ls", 1, "rmse")[0]
  assert ls.tables == tuple(f"tab:LS{k}Progs" for k in range(1, 6))
  assert ls.scores == (0.46, 0.43, 0.46, 0.4, 0.45)
  # CS3 task 3's rank-1 score is printed "-0.73", no unit: not drawn.
  assert [p.method for p in paper_points("cs3", 3, "rmse")] == ["houdini_evolutionary"]


def test_a_variant_is_named_by_the_module_settings_that_differ():
  settings = {"sequence": "cs1", "preset": "paper", "module_config": _module_config()}
  assert variant_of(settings) is None
  assert variant_of({**settings, "module_config": _module_config(fold_step_norm=False, mlp_hidden=16)}) == (
      "fold_step_norm=False, mlp_hidden=16")
  assert variant_of({**settings, "sequence": "my_own"}) is None


def test_bad_roots_and_records_are_one_error_naming_them(two_fractions, tmp_path):
  with pytest.raises(FileNotFoundError, match="holds no run directory"):
    collect_figures(tmp_path / "empty")
  again = _run(two_fractions / "again", [0.02])
  _record(again, "houdini_topdown", 1, 1, 0.02, 9.0)
  with pytest.raises(ValueError, match=r"two records of houdini_topdown on cs1 task 1 at 2%, instantiation "
                                       r"1: again/houdini_topdown/seed_1/.* and cs1/houdini_topdown/seed_1/"):
    collect_figures(two_fractions)
  stray = _run(tmp_path / "stray" / "cs1", [0.1])
  _record(stray, "standalone", 0, 1, 0.02, 1.0)
  with pytest.raises(ValueError, match=r"fraction_0.02.json: a record of cs1 at fraction 0.02, but its run's "
                                       r"settings name cs1 at \[0.1\]"):
    collect_figures(tmp_path / "stray")
  (stray / "settings.json").write_text("{")
  with pytest.raises(ValueError, match="settings.json: not an evaluation's settings"):
    collect_figures(tmp_path / "stray")


def test_the_png_is_deterministic_and_carries_no_software_or_time(two_fractions, tmp_path):
  figure = collect_figures(two_fractions)["cs1"]
  png = draw(figure)
  assert png[:8] == b"\x89PNG\r\n\x1a\n" and draw(figure) == png
  assert b"Software" not in png and b"matplotlib" not in png and b"tIME" not in png
  [path] = write_figures({"cs1": figure}, tmp_path / "out")
  assert path == figure_path(tmp_path / "out", "cs1") == tmp_path / "out" / "cs1_error_by_fraction.png"
  assert path.read_bytes() == png


@pytest.mark.slow
def test_the_binary_writes_figures_prints_tables_and_refuses_a_missing_root(two_fractions, tmp_path):
  out = subprocess.run([sys.executable, "-m", "hx.bin.figures", str(two_fractions),
                        f"--output_dir={tmp_path / 'out'}"], capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  assert out.stdout.splitlines() == [f"{tmp_path / 'out' / 'cs1_error_by_fraction.png'}: cs1, "
                                     "more/fraction_0.1/cs1, variants/x/cs1"]
  missing = subprocess.run([sys.executable, "-m", "hx.bin.figures", str(tmp_path / "nothing")],
                           capture_output=True, text=True, timeout=300)
  assert missing.returncode == 1 and missing.stderr.strip().splitlines() == [
      f"error: {tmp_path / 'nothing'} is not a directory"]
  tables = subprocess.run([sys.executable, "-m", "hx.bin.figures", str(two_fractions), "--tables"],
                          capture_output=True, text=True, timeout=300)
  from hx.evaluation.headline import readme_blocks

  assert tables.returncode == 0 and tables.stdout == readme_blocks(two_fractions), tables.stderr


# ---------------------------------------------------------------------------------------------------
# The committed figures.

def _recorded_scores() -> dict:
  """(sequence, task, method, variant, fraction) -> instance -> test score of the best trained candidate or
  network, read from every committed record without the module's code (a variant: a run under variants/,
  whose one module change is the fold step's batch norm)."""
  out = {}
  for settings in ROOT.rglob("settings.json"):
    run = settings.parent
    records = sorted(run.glob("*/seed_*/records/*/fraction_*.json"))
    if not records:
      continue
    sequence = json.loads(settings.read_text("utf-8"))["settings"]["sequence"]
    variant = "fold_step_norm=False" if "variants" in run.relative_to(ROOT).parts else None
    for path in records:
      rec = json.loads(path.read_text("utf-8"))
      method, instance = path.parts[-5], int(path.parts[-4].removeprefix("seed_"))
      best = rec["ranked"][0] if rec["ranked"] else None
      if best is not None and best["status"] == "trained" and math.isfinite(best["test"]):
        key = (sequence, rec["task_index"], method, variant, rec["fraction"])
        out.setdefault(key, {})[instance] = best["test"]
  return out


@pytest.fixture(scope="module")
def committed():
  return collect_figures(ROOT)


def test_the_committed_figures_draw_every_recorded_score_and_nothing_else(committed):
  drawn = {(figure.sequence, panel.index, line.method, line.variant, point.fraction):
           dict(zip(point.instances, point.scores))
           for figure in committed.values() for panel in figure.panels for line in panel.lines
           for point in line.points}
  assert drawn == _recorded_scores()
  assert list(committed) == ["cs1", "cs2", "cs3", "ss", "gs1", "gs2", "ls"]
  assert {p.name for p in FIGURES.glob("*.png")} == {figure_path(FIGURES, s).name for s in committed}, REBUILD


_COMMITTED = sorted((p.name.removesuffix("_error_by_fraction.png") for p in FIGURES.glob("*.png")),
                    key=lambda s: (s != "gs1", s))  # the smallest first: the one in the fast suite


@pytest.mark.parametrize("sequence", fast_first(1, [(s,) for s in _COMMITTED], ids=_COMMITTED))
def test_a_committed_png_is_what_the_code_draws_now(committed, sequence):
  assert sequence in committed, f"{sequence}: a committed figure with no records; {REBUILD}"
  assert figure_path(FIGURES, sequence).read_bytes() == draw(committed[sequence]), REBUILD
