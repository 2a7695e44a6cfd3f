"""The reproduction README's figures against the committed records: its "Forward transfer at a glance" table
is written by hand, so it is checked here, computed from the records without the report's code. Nothing is
trained."""

import math
import re
import statistics
from pathlib import Path

import pytest

from hx.evaluation import load_records
from tests.benchmarks.test_reproduction_records import RUNS, VARIANTS

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


def _scores(directory: Path) -> dict[tuple[str, int, float, int], tuple[str, float]]:
  """(method, task index, fraction, instance) -> (task, test score of its best trained candidate or
  network) for every record of a run folder; the task without its "[synthetic: ...]" label."""
  out = {}
  for r in load_records(directory):
    best = r["ranked"][0] if r.get("ranked") else None
    if best is not None and best["status"] == "trained" and math.isfinite(best["test"]):
      out[(r["method"], r["task_index"], r["fraction"], r["instance"])] = (r["task"].split(" [")[0],
                                                                           float(best["test"]))
  return out


def _ratios(directory: Path, fraction: float) -> dict[int, dict[int, float]]:
  """Task index -> instance -> HOUDINI's (top-down) test score over the standalone network's."""
  scores = _scores(directory)
  out: dict[int, dict[int, float]] = {}
  for (method, task, f, instance), (_, score) in scores.items():
    alone = scores.get(("standalone", task, f, instance))
    if method == "houdini_topdown" and f == fraction and alone:
      out.setdefault(task, {})[instance] = score / alone[1]
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
  "standalone" whose first cell names a task or starts with an instantiation's number."""
  out, header = [], None
  for number, line in enumerate(README.read_text("utf-8").splitlines(), 1):
    if not line.startswith("|"):
      header = None
      continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if header is None:
      header = cells
    elif not set(cells[0]) <= set("-") and "HOUDINI" in header and "standalone" in header:
      if re.search(r"\b(" + "|".join(_KINDS) + r")\b", cells[0]) or re.match(r"\d+\b", cells[0]):
        out.append((number, header, cells))
  return out


def _all_groups() -> list[tuple[str, int, dict[str, float]]]:
  """(task, instance, method -> test score) for every recorded task, fraction and instance of every
  committed run (the task without its "[synthetic: ...]" label; HOUDINI as "houdini_topdown")."""
  out = []
  for run in RUNS + VARIANTS:
    groups: dict[tuple[int, float, int], tuple[str, int, dict[str, float]]] = {}
    for (method, index, fraction, instance), (task, score) in _scores(run).items():
      groups.setdefault((index, fraction, instance), (task, instance, {}))[2][method] = score
    out.extend(groups.values())
  return out


_COLUMNS = {"HOUDINI": "houdini_topdown", "standalone": "standalone", "low-level transfer": "llt",
            "LLT": "llt", "progressive NN": "pnn", "PNN": "pnn",
            "standalone_with_fold": "standalone_with_fold"}


def _close(printed: str, value: float) -> bool:
  decimals = len(printed.split(".")[1])
  return abs(value - float(printed)) <= 0.5 * 10 ** -decimals + 1e-9


SCORE_ROWS = _score_tables() if README.exists() else []


def test_the_score_tables_are_found():
  assert len(SCORE_ROWS) >= 60


def test_each_printed_score_row_is_one_recorded_task():
  """Every row's test scores (HOUDINI, standalone, and low-level transfer, progressive networks and
  standalone_with_fold where printed as numbers) and the ratio HOUDINI / standalone, where the table has
  one, are those of one recorded task of some committed run: a figure mistyped or left stale fails here."""
  groups = _all_groups()
  wrong = []
  for number, header, cells in SCORE_ROWS:
    printed = {}
    for column, method in _COLUMNS.items():
      if column in header and (m := _NUMBER.fullmatch(cells[header.index(column)])):
        printed[method] = m.group(1)
    if "houdini_topdown" not in printed or "standalone" not in printed:
      continue
    named = re.search(r"\b((?:" + "|".join(_KINDS) + r")(?:\(\d+\))?)", cells[0])
    # A row of a task's table names it; a row of a table by instantiation starts with its number.
    task, instance = (named.group(1), None) if named else (None, int(re.match(r"\d+", cells[0]).group()))
    column = "HOUDINI / standalone"
    ratio = cells[header.index(column)].strip("*") if column in header else None
    if not re.fullmatch(r"\d+\.\d+", ratio or ""):
      ratio = None
    if not any((t == task if task else i == instance)
               and all(m in scores and _close(v, scores[m]) for m, v in printed.items())
               and (ratio is None or _close(ratio, scores["houdini_topdown"] / scores["standalone"]))
               for t, i, scores in groups):
      wrong.append(f"line {number}: {' | '.join(cells[:len(header) - 1])}")
  assert not wrong, "\n".join(wrong)


_METHODS = ("houdini_topdown", "standalone", "llt", "pnn")


def _instantiation_tables() -> list[tuple[int, str, dict[int, int], list[str]]]:
  """(line number, sequence, column -> task index, row cells) of the rows of every README table by
  instantiation ("| instantiation ... | task 1 | task 2 ..."), each cell "HOUDINI / standalone / low-level
  transfer / progressive NN", under a "## SEQ at 2% ..." heading."""
  out, sequence, columns = [], None, None
  for number, line in enumerate(README.read_text("utf-8").splitlines(), 1):
    if line.startswith("## "):
      m = re.match(r"## (\w+) at 2%", line)
      sequence = m.group(1).lower() if m else None
    if not line.startswith("|"):
      columns = None
      continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if columns is None:
      columns = {k: int(m.group(1)) for k, c in enumerate(cells) if (m := re.match(r"task (\d+)", c))}
      if not cells[0].startswith("instantiation") or sequence is None:
        columns = {}
    elif columns and not set(cells[0]) <= set("-"):
      out.append((number, sequence, columns, cells))
  return out


def _slashed(cell: str) -> list[tuple[str, str | None]] | None:
  """"a / b / c / d%" (or "a ± s / ...") -> [(a, None), ...] or [(a, s), ...]; None unless four parts."""
  parts = [p.strip().replace("*", "").rstrip("%") for p in cell.split(" / ")]
  out = []
  for p in parts:
    m = re.fullmatch(r"(\d+\.\d+)(?: ± (\d+\.\d+))?", p)
    if m is None:
      return None
    out.append((m.group(1), m.group(2)))
  return out if len(out) == 4 else None


INSTANTIATION_ROWS = _instantiation_tables() if README.exists() else []


def test_each_instantiation_tables_scores_and_means_are_the_records():
  """The tables by instantiation (CS1, CS2, CS3 at 2%): each instantiation's four test scores per task,
  and each "mean ± sd" row over the instantiations it names ("(0-2)", "of 0-4") or those above it."""
  assert len(INSTANTIATION_ROWS) >= 20
  scores: dict[str, dict[tuple[int, int, str], float]] = {}
  wrong, above = [], []
  for number, sequence, columns, cells in INSTANTIATION_ROWS:
    if sequence not in scores:
      scores[sequence] = {(task, instance, method): score for (method, task, fraction, instance), (_, score)
                          in _scores(ROOT / sequence).items() if fraction == 0.02}
    if m := re.match(r"(\d+)\b", cells[0]):
      instances = [int(m.group(1))]
      above = [] if above and number != above[-1][0] + 1 else above
      above.append((number, instances[0]))
    elif m := re.search(r"(\d+)-(\d+)", cells[0]):
      instances = list(range(int(m.group(1)), int(m.group(2)) + 1))
    else:
      instances = [i for _, i in above]
    for column, task in columns.items():
      printed = _slashed(cells[column])
      if printed is None:
        continue
      for method, (value, spread) in zip(_METHODS, printed):
        got = [scores[sequence].get((task, i, method)) for i in instances]
        if None in got or not _close(value, statistics.fmean(got)) or (
            spread is not None and not _close(spread, statistics.stdev(got))):
          wrong.append(f"line {number}: {sequence} task {task} {method}: printed {value} ± {spread}, "
                       f"records {got}")
  assert not wrong, "\n".join(wrong)
