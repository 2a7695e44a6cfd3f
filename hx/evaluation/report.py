"""The report of an evaluation, rebuilt from its records alone.

    build_report("runs/cs1-quick")   # writes report.md, programs.md and plots/*.png; returns report.md

- `plots/task_TT.png`: test error (classification error in %, or RMSE) against the training fraction,
  one line per method, like the paper's figures 3-5; with several instantiations, their mean with the
  standard deviation as error bars. `plots/summary.png` puts every task side by side.
- `programs.md`: HOUDINI's top 3 programs per task in the paper's appendix layout (task, program, test
  score), per strategy and instantiation, at the largest training fraction (the paper's tables are at
  100%).
- `report.md`: what was run, on which data (rendered stand-ins are labelled synthetic wherever a result
  on them is shown), the scores of every method per task and fraction, the plots, the programs beside the
  paper's, and the time each method took.

Only `records/` (and, if present, `settings.json` for the header) are read, so `python -m hx.bin.report
DIR` rebuilds everything after a crash, or from records copied elsewhere.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from hx.atomic import write_atomically, write_text
from hx.evaluation.config import method_label
from hx.evaluation.paper import PAPER_GRAPH_ROWS, PAPER_GRAPH_TABLE, paper_top
from hx.evaluation.records import load_records, work_seconds
from hx.synth.frontier import FrontierEntry

if TYPE_CHECKING:
  import os

  from matplotlib.axes import Axes

  from hx.jsonread import JsonValue

__all__ = ["build_report", "summary_lines", "score_text", "paper_score_words", "plot_tasks", "best_test"]


def _finite(x: JsonValue) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def score_text(metric: str, x: JsonValue, paper_style: bool = False) -> str:
  """A test score as the report prints it: "1.33%" / "0.412" (paper_style, its metric named as the paper's
  tables name it, but in words: "1.33% error" (classification error; the paper writes "1.33% CE") /
  "0.41 RMSE")."""
  if not _finite(x):
    return "-"
  if paper_style:
    return f"{x:.2f}% error" if metric == "error" else f"{x:.2f} RMSE"
  return f"{x:.2f}%" if metric == "error" else f"{x:.3f}"


def paper_score_words(text: str) -> str:
  """A score as the paper's tables print it ("1% CE", "0.38 RMSE") with "CE" (classification error) as
  `score_text` words it: "1% error"."""
  return text.replace("% CE", "% error")


def best_test(rec: dict) -> float | None:
  """The test score of a record's best candidate (or network), or None where it did not train or its
  score is not finite: the score every table and plot of a record shows."""
  best = _entries(rec)[0].outcome if rec.get("ranked") else None
  if best is None or best.status != "trained" or not _finite(best.test_score):
    return None
  return best.test_score


def _entries(rec: dict) -> list[FrontierEntry]:
  """A record's "ranked" items as a synthesis's entries (a baseline's network: one, in short form)."""
  return [FrontierEntry.from_json(x, rank=k) for k, x in enumerate(rec["ranked"], 1)]


def _method_order(methods: Iterable[str]) -> list[str]:
  rank = {"houdini_topdown": 0, "houdini_evolutionary": 1, "standalone": 2, "llt": 3, "pnn": 4,
          "standalone_with_fold": 5}
  return sorted(set(methods), key=lambda m: (rank.get(m, 9), m))


def _base_name(task: str) -> str:
  """The task's name without the synthetic-data suffix."""
  return task.split(" [", 1)[0]


class _Table:
  """The records indexed by task, method, fraction and instance."""

  def __init__(self, records: list[dict]):
    self.records = records
    self.by: dict[tuple[int, str, float], dict[int, dict]] = defaultdict(dict)
    self.tasks: dict[int, dict[int, dict]] = defaultdict(dict)  # task index -> instance -> a record
    for r in records:
      self.by[(r["task_index"], r["method"], r["fraction"])][r["instance"]] = r
      self.tasks[r["task_index"]].setdefault(r["instance"], r)
    self.methods = _method_order(r["method"] for r in records)
    self.fractions = sorted({r["fraction"] for r in records})
    self.instances = sorted({r["instance"] for r in records})
    self.sequence = records[0]["sequence"]

  def scores(self, index: int, method: str, fraction: float) -> list[float]:
    got = self.by.get((index, method, fraction), {})
    return [s for r in got.values() if (s := best_test(r)) is not None]

  def cell(self, index: int, method: str, fraction: float) -> str:
    got = self.by.get((index, method, fraction), {})
    if not got:
      return ""
    metric = next(iter(got.values()))["metric"]
    s = self.scores(index, method, fraction)
    if not s:
      return "failed"
    text = score_text(metric, statistics.fmean(s))
    if len(got) > 1:
      text += f" ± {score_text(metric, statistics.stdev(s)) if len(s) > 1 else '-'} (n={len(s)})"
    return text

  def metric(self, index: int) -> str:
    return next(iter(self.tasks[index].values()))["metric"]

  def names(self, index: int) -> list[str]:
    return list(dict.fromkeys(_base_name(r["task"]) for r in self.tasks[index].values()))

  def label(self, index: int) -> str:
    names = self.names(index)
    others = f" (and {len(names) - 1} other instantiations)" if len(names) > 1 else ""
    return f"Task {index}: {names[0]}{others}"

  def datasets(self, index: int) -> tuple[list[str], bool]:
    recs = self.tasks[index].values()
    names = sorted({d for r in recs for d in r["data"]["datasets"]})
    return names, any(r["data"]["synthetic"] for r in recs)


def _data_note(datasets: list[str], synthetic: bool) -> str:
  text = ", ".join(datasets)
  if synthetic:
    stand = [d for d in datasets if d.endswith("-synthetic")]
    text += f" — SYNTHETIC stand-in data ({', '.join(stand)}), not the real data set"
  return text


# ---------------------------------------------------------------------------------------------------
# Plots.

_STYLES = {"houdini_topdown": ("o", "-"), "houdini_evolutionary": ("D", "-"), "standalone": ("s", "--"),
           "llt": ("^", "--"), "pnn": ("v", ":"), "standalone_with_fold": ("x", "-.")}


def _axes_plot(ax: Axes, table: _Table, index: int, title: str) -> None:
  metric = table.metric(index)
  for method in table.methods:
    marker, line = _STYLES.get(method, ("o", "-"))
    xs, ys, es = [], [], []
    for f in table.fractions:
      s = table.scores(index, method, f)
      if s:
        xs.append(100 * f)
        ys.append(statistics.fmean(s))
        es.append(statistics.stdev(s) if len(s) > 1 else 0.0)
    if xs:
      # Distinct markers and line styles: methods that coincide (every method on a first task) overplot.
      ax.errorbar(xs, ys, yerr=es if any(es) else None, marker=marker, linestyle=line, capsize=3,
                  markerfacecolor="none", label=method_label(method))
  if len(table.fractions) > 1:
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks([100 * f for f in table.fractions])
    ax.set_xticklabels([f"{100 * f:g}" for f in table.fractions])
  ax.set_xlabel("training data (%)")
  ax.set_ylabel("classification error (%)" if metric == "error" else "RMSE")
  # From zero: an axis fitted to the points draws a gap of a few test examples as large as any other.
  ax.set_ylim(bottom=0)
  ax.set_title(title, fontsize=9)
  ax.grid(True, alpha=0.3)


def plot_tasks(directory: Path, table: _Table) -> dict[int, Path]:
  """Writes plots/task_TT.png per task and plots/summary.png; returns task index -> its plot."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  out_dir = directory / "plots"
  out_dir.mkdir(parents=True, exist_ok=True)
  paths = {}
  for index in sorted(table.tasks):
    datasets, synthetic = table.datasets(index)
    title = f"{table.sequence.upper()} {table.label(index)}"
    if synthetic:
      title += "\n[synthetic stand-in data]"
    fig, ax = plt.subplots(figsize=(4.2, 3.4))
    _axes_plot(ax, table, index, title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / f"task_{index:02d}.png"
    write_atomically(path, lambda f, fig=fig: fig.savefig(f, format="png", dpi=110))
    plt.close(fig)
    paths[index] = path
  n = len(table.tasks)
  cols = min(n, 4)
  rows = math.ceil(n / cols)
  fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.0 * rows + 0.6), squeeze=False)
  for ax, index in zip(axes.flat, sorted(table.tasks)):
    _, synthetic = table.datasets(index)
    names = table.names(index)
    _axes_plot(ax, table, index, f"Task {index}: {names[0]}" + (" [synthetic]" if synthetic else ""))
  for ax in list(axes.flat)[n:]:
    ax.axis("off")
  handles, labels = axes.flat[0].get_legend_handles_labels()
  fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
  fig.suptitle(f"{table.sequence.upper()}: test error against training data", fontsize=10)
  fig.tight_layout(rect=(0, 0.08, 1, 0.95))
  write_atomically(out_dir / "summary.png", lambda f: fig.savefig(f, format="png", dpi=100))
  plt.close(fig)
  return paths


# ---------------------------------------------------------------------------------------------------
# Text.

def _programs_md(table: _Table) -> list[str]:
  """HOUDINI's top 3 per task, as the paper's appendix tables lay them out."""
  lines = []
  largest = table.fractions[-1]
  for method in [m for m in table.methods if m.startswith("houdini_")]:
    for instance in table.instances:
      recs = [table.by.get((i, method, largest), {}).get(instance) for i in sorted(table.tasks)]
      recs = [r for r in recs if r is not None]
      if not recs:
        continue
      synthetic = any(r["data"]["synthetic"] for r in recs)
      tag = " [synthetic stand-in data]" if synthetic else ""
      lines += [f"### {method_label(method)}, {table.sequence.upper()} instantiation {instance}, "
                f"{100 * largest:g}% of the training data{tag}", "",
                "| Task | Top 3 programs | Test score |", "|---|---|---|"]
      for r in recs:
        ranked = [e for e in _entries(r) if e.outcome.status == "trained"][:3]
        first = f"Task {r['task_index']}: {r['task']}"
        if not ranked:
          lines.append(f"| {first} | no program trained | |")
          continue
        for k, e in enumerate(ranked):
          lines.append(f"| {first if k == 0 else ''} | {k + 1}. `{e.display}` | "
                       f"{score_text(r['metric'], e.outcome.test_score, paper_style=True)} |")
      lines.append("")
  return lines


def summary_lines(records: list[dict]) -> list[str]:
  """A few lines for a terminal: per task, each method's test score at every training fraction run (the
  mean over instantiations; "failed" where every training failed, "-" where none has run yet), and
  HOUDINI's program at the largest fraction (the first instantiation's). No record: no line."""
  if not records:
    return []
  table = _Table(records)
  largest = table.fractions[-1]
  lines = []
  for index in sorted(table.tasks):
    _, synthetic = table.datasets(index)
    metric = table.metric(index)
    name = "error" if metric == "error" else "RMSE"
    lines.append(f"Task {index} {table.names(index)[0]}" + (" [synthetic data]" if synthetic else ""))
    columns = "".join(f"{f'{100 * f:g}%':>10s}" for f in table.fractions)
    lines.append(f"  {'test ' + name + ' at':26s}{columns}")
    for method in table.methods:
      if not any(table.by.get((index, method, f)) for f in table.fractions):
        continue
      cells = []
      for f in table.fractions:
        s = table.scores(index, method, f)
        cells.append(score_text(metric, statistics.fmean(s)) if s else
                     "failed" if table.by.get((index, method, f)) else "-")
      what = ""
      got = table.by.get((index, method, largest), {})
      if got and (method.startswith("houdini_") or method == "standalone_with_fold"):
        best = _entries(got[min(got)])
        what = "  " + (str(best[0].display) if best else "-")
      lines.append(f"  {method_label(method) + ':':26s}" + "".join(f"{c:>10s}" for c in cells) + what)
  return lines


def _budget_text(budget: JsonValue) -> str:
  """A budget as JSON (`hx.synth.Budget`), or a list of them (one per task), in words."""
  if isinstance(budget, list) and budget:
    texts = [_budget_text(b) for b in budget]
    if all(t == texts[0] for t in texts):
      return texts[0]
    return "; ".join(f"task {i}: {t}" for i, t in enumerate(texts, 1))
  if not isinstance(budget, dict):
    return str(budget)
  parts = []
  if budget.get("candidates") is not None:
    parts.append(f"{budget['candidates']} candidate programs")
  if budget.get("seconds") is not None:
    parts.append(f"{budget['seconds']:g} s")
  return ", ".join(parts) or "unlimited"


def _settings(directory: Path) -> dict | None:
  """The whole settings.json of an evaluation ({"settings": ..., "started": ...}) for the report's
  header; None where there is none (records alone still make a report).

  Raises:
    hx.synth.jsonfiles.JsonFileError: the file is there but cannot be read or does not fit (names it).
  """
  from hx.synth.jsonfiles import EVALUATION_SETTINGS, read_settings

  path = directory / "settings.json"
  if not path.exists():
    return None
  settings, started = read_settings(path, EVALUATION_SETTINGS)
  return {"settings": settings, "started": started}


def build_report(directory: os.PathLike | str) -> Path:
  """Writes report.md, programs.md and plots/ into `directory` from its records; returns report.md. A
  directory of an older layout has its names respelt first (`hx.synth.run_directory.respell`), once
  its records are read: a directory refused is left as it is.

  Raises:
    FileNotFoundError: `directory` holds no record.
  """
  from hx.synth.run_directory import respell

  directory = Path(directory)
  records = load_records(directory) if directory.is_dir() else []
  if not records:
    raise FileNotFoundError(f"{directory} holds no evaluation records")
  if respell(directory):
    records = load_records(directory)
  table = _Table(records)
  plots = plot_tasks(directory, table)
  programs = _programs_md(table)
  settings = _settings(directory)
  space = (settings or {}).get("settings", {}).get("space") or {}
  tolerance, errors = space.get("reuse_tolerance"), space.get("reuse_standard_errors")
  margin = " or ".join(([f"{100 * tolerance:g}%"] if tolerance else [])
                       + ([f"{errors:g} standard errors"] if errors else []))
  ranking = ("ranked by validation score" if not margin else
             f"the winner first (the fewest fresh functions within {margin} of the best validation score"
             + (", whichever is wider" if tolerance and errors else "")
             + (", the prior's best-ranked library functions first among equally few"
                if space.get("library_tasks") else "") + "), the others by validation score")
  write_text(directory / "programs.md",
      "\n".join([f"# {table.sequence.upper()}: HOUDINI's top programs", "",
                 f"The top 3 programs per task, {ranking}, with their test scores, as the "
                 "paper's appendix tables print them. Functions named nn_* were trained for the task; lib.* "
                 "are frozen library functions learned on earlier tasks.", ""] + programs))
  lines = _header_lines(settings, table, records) + _scores_lines(table) + _transfer_lines(table)
  for index in sorted(table.tasks):
    lines += _task_lines(directory, table, index, plots[index])
  lines += _time_lines(table, records) + _FILES_LINES + ["## HOUDINI's programs", ""] + programs
  path = directory / "report.md"
  write_text(path, "\n".join(lines))
  return path


def _header_lines(settings: dict | None, table: _Table, records: list[dict]) -> list[str]:
  """The report's title, its synthetic-data warning, the run's settings (`_settings`) and whether it is
  finished."""
  lines = [f"# {table.sequence.upper()}: HOUDINI and the baselines", ""]
  if any(table.datasets(i)[1] for i in table.tasks):
    lines += ["**Some tasks below ran on SYNTHETIC stand-in data (rendered images standing in for a data set "
              "not available here); their numbers say nothing about the real data set.**", ""]
  if not settings:
    return lines
  s = settings["settings"]
  lines += [f"Run started {settings.get('started', '?')}; preset `{s.get('preset')}`; methods "
            f"{', '.join(method_label(m) for m in s.get('methods', []))}; training fractions "
            f"{', '.join(f'{100 * f:g}%' for f in s.get('fractions', []))}; instantiations (seeds) "
            f"{', '.join(map(str, s.get('seeds', [])))}; HOUDINI's budget per task: "
            f"{_budget_text(s.get('budgets') or s.get('budget'))}.", ""]
  per_task = len(s.get("fractions", [])) * len(s.get("seeds", []))
  expected = sum(per_task for t in range(s.get("tasks", 0)) for m in s.get("methods", [])
                 if not (m == "standalone_with_fold" and t == 0))
  if len(records) < expected:
    lines += [f"**Unfinished: {len(records)} of {expected} records so far** (run the same command again to "
              "continue).", ""]
  return lines


def _scores_lines(table: _Table) -> list[str]:
  """The summary table: every task's test score per method at the largest fraction."""
  largest = table.fractions[-1]
  lines = ["![test error against training data](plots/summary.png)", "",
           f"## Test scores at {100 * largest:g}% of the training data", "",
           "Classification error (%) for recognition and classification tasks, RMSE for counting, summing, "
           "regression and shortest paths; mean over instantiations ± standard deviation.", "",
           "| Task | data | " + " | ".join(method_label(m) for m in table.methods) + " |",
           "|---|---|" + "---|" * len(table.methods)]
  for index in sorted(table.tasks):
    datasets, synthetic = table.datasets(index)
    lines.append(f"| {table.label(index)} | {', '.join(datasets)}{' (synthetic)' if synthetic else ''} | "
                 + " | ".join(table.cell(index, m, largest) for m in table.methods) + " |")
  return lines + [""]


def transfer_ratios(table: _Table, index: int, method: str, fraction: float) -> list[float]:
  """Forward transfer of `method` on task `index` at `fraction`: its test score over the standalone
  network's, per instantiation where both trained (below 1: the method does better than the network
  trained for the task alone)."""
  mine, alone = table.by.get((index, method, fraction), {}), table.by.get((index, "standalone", fraction), {})
  out = []
  for instance, r in sorted(mine.items()):
    a, b = best_test(r), best_test(alone[instance]) if instance in alone else None
    if a is not None and b is not None and b > 0:
      out.append(a / b)
  return out


def _transfer_lines(table: _Table) -> list[str]:
  """Each method's forward transfer (`transfer_ratios`) per task and fraction; none without standalone."""
  others = [m for m in table.methods if m != "standalone"]
  if "standalone" not in table.methods or not others:
    return []
  lines = ["## Forward transfer", "",
           "Each method's test score over the standalone network's on the same task, fraction and "
           "instantiation (error or RMSE; below 1: better than the network trained for the task alone), "
           "mean over instantiations ± standard deviation. A first task has nothing to transfer from.", "",
           "| Task | fraction | " + " | ".join(method_label(m) for m in others) + " |",
           "|---|---|" + "---|" * len(others)]
  for index in sorted(table.tasks):
    for fraction in table.fractions:
      cells = []
      for m in others:
        ratios = transfer_ratios(table, index, m, fraction)
        text = f"{statistics.fmean(ratios):.2f}" if ratios else ""
        if len(ratios) > 1:
          text += f" ± {statistics.stdev(ratios):.2f} (n={len(ratios)})"
        cells.append(text)
      if any(cells):
        lines.append(f"| {table.label(index)} | {100 * fraction:g}% | " + " | ".join(cells) + " |")
  return lines + [""]


def _task_lines(directory: Path, table: _Table, index: int, plot: Path) -> list[str]:
  """One task's section: its data, plot, scores per fraction, each method's program and the paper's."""
  datasets, synthetic = table.datasets(index)
  largest = table.fractions[-1]
  lines = [f"## {table.label(index)}", "", f"Data: {_data_note(datasets, synthetic)}.", "",
           f"![Task {index}]({plot.relative_to(directory)})", "",
           "| fraction | " + " | ".join(method_label(m) for m in table.methods) + " |",
           "|---|" + "---|" * len(table.methods)]
  for f in table.fractions:
    lines.append(f"| {100 * f:g}% | " + " | ".join(table.cell(index, m, f) for m in table.methods) + " |")
  lines.append("")
  for method in table.methods:
    r = table.by.get((index, method, largest), {}).get(table.instances[0])
    if r is None or not r.get("ranked"):
      continue
    best = _entries(r)[0]
    note = f" (same as {r['same_as']}: nothing to transfer on a first task)" if r.get("same_as") else ""
    extra = ""
    if "parameters" in r:
      extra = f"; {r['parameters']:,} trained parameters" + (
          f", {r['frozen_parameters']:,} frozen" if r.get("frozen_parameters") else "")
    if r.get("candidates_trained") is not None:
      n = r["candidates_trained"]
      extra = f"; {n} candidate{'' if n == 1 else 's'} trained in {r['seconds']['wall']:.0f} s"
      work = work_seconds(r)
      if work > 1.01 * r["seconds"]["wall"]:
        # Resumed across calls (or trained by several workers): the wall is the last call's alone.
        extra += (f" (the recording call's wall time; {work:,.0f} s of the candidates' own "
                  "compiling, training and scoring over every call and worker)")
    lines.append(f"- {method_label(method)}: `{best.display}`{note}{extra}")
  algorithms = ["top-down"] + (["evolutionary"] if "houdini_evolutionary" in table.methods else [])
  for algorithm in algorithms:
    for t in paper_top(table.sequence, index, algorithm):
      lines.append(f"- the paper ({t.table}, {t.task}, 100% of its data): `{t.program}`, "
                   f"{paper_score_words(t.score)}")
  graph = PAPER_GRAPH_TABLE.get(table.sequence)
  if graph:
    cells = [f"{row} {vals[index - 1]:g}" for row, vals in graph.items() if index - 1 < len(vals)]
    ours = {PAPER_GRAPH_ROWS[m]: m for m in table.methods if m in PAPER_GRAPH_ROWS}
    lines.append(f"- the paper's graph table (RMSE): {', '.join(cells)}; our rows compare as "
                 + ", ".join(f"{method_label(m)} ~ '{row}'" for row, m in ours.items()))
  return lines + [""]


def _time_lines(table: _Table, records: list[dict]) -> list[str]:
  """Wall seconds and work seconds (`work_seconds`) per method."""
  lines = ["## Time", "", "Seconds per method, summed over tasks, fractions and instantiations. Wall: the "
           "calls that wrote the records (HOUDINI's: its whole synthesis, every candidate's training "
           "included), the last call's alone for a task resumed across calls. Work: the candidates' and "
           "networks' own compiling, training and scoring, over every call and worker.", "",
           "| method | wall seconds | work seconds | records |", "|---|---|---|---|"]
  for method in table.methods:
    recs = [r for r in records if r["method"] == method]
    counted = [r for r in recs if not r.get("same_as")]
    wall = sum(r["seconds"]["wall"] for r in counted)
    lines.append(f"| {method_label(method)} | {wall:.0f} | {sum(map(work_seconds, counted)):.0f} | "
                 f"{len(recs)} |")
  return lines + [""]


_FILES_LINES = [
    "## Files", "",
    "- `programs.md`: HOUDINI's top 3 programs per task in the paper's appendix layout.",
    "- `plots/`: the figures above.",
    "- `<method>/seed_<S>/records/TT_TASK/fraction_F.json`: one record per method, instantiation, "
    "task and training fraction (scores, programs, timings, library or network versions, data "
    "provenance); `python -m hx.bin.report DIR` rebuilds this report from them.", ""]
