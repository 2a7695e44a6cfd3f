"""The reproduction README's figures against the committed records: its "Forward transfer at a glance" table
is written by hand, so it is checked here, computed from the records without the report's code. Nothing is
trained."""

import math
import re
import statistics
from pathlib import Path

import pytest

from hx.evaluation import load_records

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction"
README = ROOT / "README.md"


def _glance_rows() -> list[tuple[str, str, str]]:
  """(run, fraction cell, ratios cell) of each row of the README's "Forward transfer at a glance" table."""
  text = README.read_text("utf-8")
  section = text.split("## Forward transfer at a glance", 1)[1].split("\n## ", 1)[0]
  rows = []
  for line in section.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if not line.startswith("| ") or len(cells) != 3 or cells[0] == "run":
      continue
    rows.append((cells[0], cells[1], cells[2]))
  return rows


def _instances(fraction_cell: str) -> list[int]:
  """The instantiations a row averages: "(instantiations 0-3)", "(5 instantiations)", else instantiation 0."""
  if m := re.search(r"instantiations (\d+)-(\d+)", fraction_cell):
    return list(range(int(m.group(1)), int(m.group(2)) + 1))
  if m := re.search(r"\((\d+) instantiations\)", fraction_cell):
    return list(range(int(m.group(1))))
  return [0]


def _run_directory(run: str, fraction: float) -> Path:
  name = run.lower()
  return ROOT / name if fraction == 0.02 else ROOT / f"fraction_{fraction:g}" / name


def _ratios(directory: Path, fraction: float) -> dict[int, dict[int, float]]:
  """Task index -> instance -> HOUDINI's (top-down) test score over the standalone network's."""
  tests: dict[tuple[str, int, int], float] = {}
  for r in load_records(directory):
    if r["fraction"] != fraction or r["method"] not in ("houdini_topdown", "standalone"):
      continue
    best = r["ranked"][0] if r.get("ranked") else None
    if best is not None and best["status"] == "trained" and math.isfinite(best["test"]):
      tests[(r["method"], r["task_index"], r["instance"])] = float(best["test"])
  out: dict[int, dict[int, float]] = {}
  for (method, task, instance), score in tests.items():
    alone = tests.get(("standalone", task, instance))
    if method == "houdini_topdown" and alone:
      out.setdefault(task, {})[instance] = score / alone
  return out


def _printed(cell: str) -> tuple[dict[int, tuple[float, float | None]], list[float]]:
  """From a ratios cell: task -> (mean, spread or None) as printed, and the "(instantiation 0: ...)" list."""
  head, _, tail = cell.partition("(instantiation 0:")
  means = {int(m.group(1)): (float(m.group(2)), float(m.group(3)) if m.group(3) else None)
           for m in re.finditer(r"(?:^|; )(\d+): \**([0-9.]+)(?: ± ([0-9.]+))?", head)}
  first = [float(x) for x in re.findall(r"[0-9.]+", tail.split(")", 1)[0])] if tail else []
  return means, first


ROWS = _glance_rows() if README.exists() else []


def test_the_glance_table_is_found_and_parsed():
  assert len(ROWS) >= 20
  assert all(_printed(cell)[0] for _, _, cell in ROWS)


@pytest.mark.parametrize("run,fraction_cell,cell", ROWS, ids=[f"{r} {f.split()[0]}" for r, f, _ in ROWS])
def test_each_printed_forward_transfer_is_the_records(run, fraction_cell, cell):
  fraction = float(fraction_cell.split("%")[0]) / 100
  directory = _run_directory(run, fraction)
  assert directory.is_dir(), f"{run} at {fraction_cell}: no folder {directory}"
  ratios = _ratios(directory, fraction)
  instances = _instances(fraction_cell)
  means, first = _printed(cell)
  for task, (mean, spread) in means.items():
    values = [ratios.get(task, {}).get(i) for i in instances]
    assert None not in values, f"{run} {fraction_cell} task {task}: not all of {instances} recorded"
    assert abs(statistics.fmean(values) - mean) <= 0.005 + 1e-9, (run, fraction_cell, task, values, mean)
    if len(values) > 1:
      assert spread is not None and abs(statistics.stdev(values) - spread) <= 0.005 + 1e-9, (
          run, fraction_cell, task, values, spread)
  for task, value in enumerate(first, 1):
    assert abs(ratios[task][0] - value) <= 0.005 + 1e-9, (run, fraction_cell, task, ratios[task][0], value)


_KINDS = ("recognize_digit", "recognize_toy", "classify_digit", "count_digit", "count_toy", "sum_digits",
          "regress_speed", "regress_mnist", "shortest_path_street", "shortest_path_mnist")
_NUMBER = re.compile(r"\**(\d+\.\d+)%?\**")


def _score_tables() -> list[tuple[int, list[str], list[str]]]:
  """(line number, header cells, row cells) of every README table row with columns "HOUDINI" and
  "standalone" whose first cell names a task."""
  out, header = [], None
  for number, line in enumerate(README.read_text("utf-8").splitlines(), 1):
    if not line.startswith("|"):
      header = None
      continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if header is None:
      header = cells
    elif not set(cells[0]) <= set("-") and "HOUDINI" in header and "standalone" in header:
      if re.search(r"\b(" + "|".join(_KINDS) + r")\b", cells[0]):
        out.append((number, header, cells))
  return out


def _all_pairs() -> list[tuple[str, str, float, float]]:
  """(run folder, task, HOUDINI's test score, the standalone network's) for every recorded task, fraction
  and instance of every committed run (the task without its "[synthetic: ...]" label)."""
  runs = sorted(p for p in [*ROOT.iterdir(), *ROOT.glob("fraction_*/*"), *ROOT.glob("variants/*/*"),
                            *ROOT.glob("variants/*/fraction_*/*")] if (p / "settings.json").exists())
  out = []
  for run in runs:
    tests = {}
    for r in load_records(run):
      best = r["ranked"][0] if r.get("ranked") else None
      if best is not None and best["status"] == "trained" and math.isfinite(best["test"]):
        tests[(r["method"], r["task_index"], r["fraction"], r["instance"])] = (r["task"], float(best["test"]))
    for (method, index, fraction, instance), (task, score) in tests.items():
      alone = tests.get(("standalone", index, fraction, instance))
      if method == "houdini_topdown" and alone:
        out.append((run.name, task.split(" [")[0], score, alone[1]))
  return out


def _close(printed: str, value: float) -> bool:
  decimals = len(printed.split(".")[1])
  return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-9


SCORE_ROWS = _score_tables() if README.exists() else []


def test_the_score_tables_are_found():
  assert len(SCORE_ROWS) >= 60


def test_each_printed_houdini_and_standalone_score_is_a_records_pair():
  """Every row's HOUDINI and standalone test scores (and their ratio, where the table has one) are those of
  one recorded task of some committed run: a figure mistyped or left stale fails here."""
  pairs = _all_pairs()
  wrong = []
  for number, header, cells in SCORE_ROWS:
    h, s = (_NUMBER.fullmatch(cells[header.index(c)]) for c in ("HOUDINI", "standalone"))
    if h is None or s is None:
      continue
    task = re.search(r"\b((?:" + "|".join(_KINDS) + r")(?:\(\d+\))?)", cells[0]).group(1)
    column = "HOUDINI / standalone"
    ratio = cells[header.index(column)].strip("*") if column in header else None
    if not any(t == task and _close(h.group(1), a) and _close(s.group(1), b)
               and (ratio is None or not re.fullmatch(r"\d+\.\d+", ratio) or _close(ratio, a / b))
               for _, t, a, b in pairs):
      wrong.append(f"line {number}: {cells[0]} {cells[header.index('HOUDINI')]} / "
                   f"{cells[header.index('standalone')]} ({ratio})")
  assert not wrong, "\n".join(wrong)
