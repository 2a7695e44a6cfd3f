"""The reproduction README against the committed records: its generated tables are what
`python -m hx.bin.figures benchmarks/reproduction --tables` prints now, its hand-written table of the
evolutionary search against top-down is checked from the records without the report's code, and every
run, figure and link it names exists. Nothing is trained."""

import json
import math
import re
from pathlib import Path

import pytest

from hx.evaluation.fraction_plots import run_directories
from hx.evaluation.headline import BLOCKS, blocks, blocks_in

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction"
README = ROOT / "README.md"
TEXT = README.read_text("utf-8") if README.exists() else ""
REBUILD = ("paste what `python -m hx.bin.figures benchmarks/reproduction --tables` prints now over the "
           "README's blocks")


@pytest.fixture(scope="module")
def generated():
  return blocks(ROOT)


def test_the_readme_keeps_every_generated_block_once():
  assert sorted(blocks_in(TEXT)) == sorted(BLOCKS)


@pytest.mark.parametrize("name", BLOCKS)
def test_each_generated_block_is_what_the_records_give_now(generated, name):
  assert blocks_in(TEXT)[name] == generated[name], f"{name}: {REBUILD}"


def test_the_headline_comes_first_and_the_run_log_last():
  headings = [line for line in TEXT.splitlines() if line.startswith("## ")]
  assert headings[0] == "## Headline: HOUDINI against the baselines and the paper"
  assert headings[-1] == "## Run log"
  assert len(TEXT.splitlines()) <= 550


def _links() -> list[str]:
  return re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", TEXT)


def test_every_relative_link_and_figure_exists():
  missing = [link for link in _links() if "://" not in link and not (ROOT / link).exists()]
  assert not missing, missing


def test_every_link_within_the_page_names_a_heading():
  # GitHub's anchors: the heading in lower case, without punctuation but hyphens, spaces as hyphens.
  anchors = {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
             for line in TEXT.splitlines() if line.startswith("#")}
  wanted = set(re.findall(r"\]\(#([^)]+)\)", TEXT))
  assert wanted and wanted <= anchors, sorted(wanted - anchors)


def test_every_committed_run_and_figure_is_linked():
  linked = {(ROOT / link).resolve() for link in _links() if "://" not in link}
  runs = [run for run in run_directories(ROOT) if (run / "report.md").exists()]
  unlinked = [str(run.relative_to(ROOT)) for run in runs if (run / "report.md").resolve() not in linked]
  # A run still under way (its report not yet written) may be named without a link.
  assert not unlinked, unlinked
  figures = sorted((ROOT / "figures").glob("*.png"))
  assert figures and all(f.resolve() in linked for f in figures)


def _best_tests(run: Path, method: str, instance: int = 0) -> dict[int, tuple[float, str, str]]:
  """Task -> (test score, program, fresh types) of the best trained candidate of `method` at 2%, read from
  the records."""
  out = {}
  for path in (run / method / f"seed_{instance}" / "records").glob("*/fraction_0.02.json"):
    rec = json.loads(path.read_text("utf-8"))
    best = rec["ranked"][0] if rec["ranked"] else None
    if best is not None and best["status"] == "trained" and math.isfinite(best["test"]):
      types = json.dumps(best.get("fresh_types"), sort_keys=True)
      out[rec["task_index"]] = (best["test"], best["program"], types)
  return out


def _evolution_rows() -> list[list[str]]:
  section = TEXT.split("**The evolutionary search**", 1)[1].split("\n\n", 2)[1]
  rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()]
  return [r for r in rows if r[0] not in ("sequence", "") and not set(r[0]) <= set("-")]


def _tasks(cell: str) -> dict[int, tuple[str, str] | None]:
  """"task 3 (0.819 against 0.877), task 4" or "tasks 1, 5 (task 5: 0.9 against 1.1)" or "-" -> task ->
  the two scores printed for it ("a against b"), or None where none is."""
  out: dict[int, tuple[str, str] | None] = {
      int(n): None for n in re.findall(r"\d+", re.sub(r"\([^)]*\)", "", cell))}
  for m in re.finditer(r"(tasks? [\d, ]+?) \((?:task (\d+): )?([\d.]+)%? against ([\d.]+)%?[^)]*\)", cell):
    task = int(m.group(2)) if m.group(2) else int(re.findall(r"\d+", m.group(1))[-1])
    assert task in out, (cell, task)
    out[task] = (m.group(3), m.group(4))
  return out


def _close(printed: str, value: float) -> bool:
  decimals = len(printed.split(".")[1]) if "." in printed else 0
  return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-9


def test_the_evolutionary_table_is_the_records():
  """Each row's tasks sit in the column the records put them (evolution's score lower, top-down's lower,
  or the same program and score to rounding), and each "a against b" is the two scores, the better
  first."""
  rows = _evolution_rows()
  assert [r[0] for r in rows] == ["CS1", "CS2", "CS3", "SS", "LS", "GS1", "GS2"]
  for sequence, better_evo, better_top, equal in rows:
    evo = _best_tests(ROOT / "evolutionary" / sequence.lower(), "houdini_evolutionary")
    top = _best_tests(ROOT / sequence.lower(), "houdini_topdown")
    printed = {"evo": _tasks(better_evo), "top": _tasks(better_top), "equal": _tasks(equal)}
    expected = {"evo": set(), "top": set(), "equal": set()}
    for task in evo:
      # The same program to rounding (CS2 task 2: 0.8159052 and 0.8159054) is "equal".
      same = math.isclose(evo[task][0], top[task][0], rel_tol=1e-4) and evo[task][1:] == top[task][1:]
      expected["equal" if same else "evo" if evo[task][0] < top[task][0] else "top"].add(task)
    assert {k: set(v) for k, v in printed.items()} == expected, sequence
    for column, first, second in (("evo", evo, top), ("top", top, evo)):
      for task, pair in printed[column].items():
        if pair is not None:
          assert _close(pair[0], first[task][0]) and _close(pair[1], second[task][0]), (sequence, task, pair)


# --- Figures of the prose and the run log, from the records. -------------------------------------------

def _records(run: Path) -> list[dict]:
  """The records of the run directory `run`, each with its method and instance (from its path)."""
  out = []
  for path in run.glob("*/seed_*/records/*/fraction_*.json"):
    method, seed = path.relative_to(run).parts[:2]
    out.append({**json.loads(path.read_text("utf-8")), "method": method, "instance": int(seed[5:])})
  return out


def _best(run: Path, task: int) -> dict[str, float]:
  """Method -> the best trained candidate's test score on `task`, instance 0."""
  out = {}
  for rec in _records(run):
    trained = [x for x in rec["ranked"] if x["status"] == "trained"]
    if rec["task_index"] == task and rec["instance"] == 0 and trained:
      out[rec["method"]] = trained[0]["test"]
  return out


def test_gs1s_ratios_and_baseline_range_are_the_records():
  at = {"2%": _best(ROOT / "gs1", 2), "10%": _best(ROOT / "fraction_0.1" / "gs1", 2)}
  ratios = {f: f"{s['houdini_topdown'] / s['standalone']:.2f}" for f, s in at.items()}
  baselines = [s[m] for s in at.values() for m in ("standalone", "llt")]
  text = " ".join(TEXT.split())
  assert (f"({ratios['2%']} of the standalone network at 2%, {ratios['10%']} at 10%); the RNN baselines "
          f"score {min(baselines):.2f}-{max(baselines):.2f} against") in text


def test_the_run_logs_wall_times_count_the_shared_baseline_once():
  row = r"^\| \[[^\]]+\]\(([^)]+)/report\.md\) \|.*?([\d,]+) s of records' wall time"
  rows = re.findall(row, TEXT, re.M)
  assert len(rows) >= 3, rows
  for run, printed in rows:
    seen, total = set(), 0.0
    for rec in _records(ROOT / run):
      # The baselines' task 1 is one network, recorded once per baseline with the same wall time.
      key = ("shared", rec["instance"], rec["seconds"]["wall"]) if (
          rec["task_index"] == 1 and rec["method"] != "houdini_topdown") else (len(seen), )
      if key not in seen:
        seen.add(key)
        total += rec["seconds"]["wall"]
    assert printed == f"{total:,.0f}", (run, printed, total)
