"""Test error against training fraction over many runs, from their records alone: the paper's figures.

    figures = collect_figures("benchmarks/reproduction")        # sequence -> Figure: the numbers drawn
    write_figures(figures, "benchmarks/reproduction/figures")   # <sequence>_error_by_fraction.png each

A root holds any number of run directories, at any depth: a directory with a `settings.json` and records
under `<method>/seed_<S>/records/` (`hx.evaluation.records`). Each run's settings say its sequence and
training fractions; its records give one test score per method, task, fraction and instantiation. Runs of
one sequence are drawn together, whatever their folders: the 2% run, the runs at other fractions and the
evolutionary search's add lines and points to one figure.

A run whose module settings differ from its preset's (`hx.presets.Preset.modules`) is a variant: its
methods are lines of their own, labelled by the settings that differ ("fold_step_norm=False"), never
merged with the preset's.

The figure is the paper's layout (its figures 3-5): one panel per task, the training fraction on a log
axis (percent), test error (classification error in %, or RMSE where the records' metric is "rmse"), one
line per method. A point is the mean over the instantiations recorded at that fraction; where there are
several, a bar spans their min to max (a band needs two fractions, and only some fractions have several
instantiations). Stars are the paper's numbers where `hx.evaluation.paper` has them, all at 100% of its
data: each task's rank-1 program's test score from its programs tables (top-down and evolutionary; LS's
five tables, one per instantiation, as a mean with their min-max), and, on the graph sequences, its table
"Lifelong learning on graphs" (which states no fraction; the paper's programs there are at 100%), in the
colour of the method its row compares with (`PAPER_GRAPH_ROWS`). A paper score printed without its unit
(CS3 task 3's "-0.73") is not drawn.

PNGs are deterministic: matplotlib's Agg canvas, the default style whatever the user's matplotlibrc, a
fixed size and dpi, and no "Software" entry (nor any timestamp) in the file's metadata, so the same
records give the same bytes.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from hx.evaluation.config import method_label
from hx.evaluation.paper import PAPER_GRAPH_ROWS, PAPER_GRAPH_TABLE, paper_top
from hx.evaluation.records import load_records
from hx.evaluation.report import best_test

if TYPE_CHECKING:
  from matplotlib.axes import Axes

__all__ = ["Point", "Line", "PaperPoint", "Panel", "Figure", "run_directories", "variant_of",
           "collect_figures", "paper_points", "draw", "figure_path", "write_figures", "METHOD_ORDER"]

METHOD_ORDER = ("houdini_topdown", "houdini_evolutionary", "standalone", "llt", "pnn", "standalone_with_fold")
"""The order of lines in a panel, a legend and a table: HOUDINI's searches, then the baselines."""

_COLOURS = {"houdini_topdown": "#1f77b4", "houdini_evolutionary": "#ff7f0e", "standalone": "#2ca02c",
            "llt": "#d62728", "pnn": "#9467bd", "standalone_with_fold": "#8c564b"}
_MARKERS = {"houdini_topdown": "o", "houdini_evolutionary": "D", "standalone": "s", "llt": "^", "pnn": "v",
            "standalone_with_fold": "X"}
_DPI = 100


@dataclasses.dataclass(frozen=True)
class Point:
  """One method's test score on one task at one training fraction.

  Attributes:
    fraction: the training fraction (0.02 is 2%).
    instances: the instantiations (seeds) whose records trained, ascending.
    scores: their test scores, in the same order (error in %, or RMSE).
  """
  fraction: float
  instances: tuple[int, ...]
  scores: tuple[float, ...]

  @property
  def mean(self) -> float:
    """The mean of `scores`: where the line is drawn."""
    return statistics.fmean(self.scores)

  @property
  def low(self) -> float:
    """The lowest of `scores`: the bar's foot."""
    return min(self.scores)

  @property
  def high(self) -> float:
    """The highest of `scores`: the bar's top."""
    return max(self.scores)


@dataclasses.dataclass(frozen=True)
class Line:
  """One method's points on one task, ascending in fraction; `variant` names the module settings of a
  variant run ("fold_step_norm=False"), None for the preset's own."""
  method: str
  variant: str | None
  points: tuple[Point, ...]

  @property
  def label(self) -> str:
    """How the legend and tables name the line: the method's label, then the variant's settings."""
    return method_label(self.method) + (f", {self.variant}" if self.variant else "")

  def at(self, fraction: float) -> Point | None:
    """The point at `fraction`, or None where the line has none."""
    return next((p for p in self.points if p.fraction == fraction), None)


@dataclasses.dataclass(frozen=True)
class PaperPoint:
  """A number the paper prints for one method on one task, at 100% of its data.

  Attributes:
    method: the method of ours it compares with.
    source: "programs" (its rank-1 program's test score in the programs tables) or "graph table".
    tables: the tables it comes from (LS: up to five, one per instantiation).
    scores: one per table.
  """
  method: str
  source: str
  tables: tuple[str, ...]
  scores: tuple[float, ...]
  fraction: float = 1.0

  @property
  def mean(self) -> float:
    """The mean over `tables`: where the star is drawn."""
    return statistics.fmean(self.scores)


@dataclasses.dataclass(frozen=True)
class Panel:
  """One task of a sequence.

  Attributes:
    index: the task's number, 1-based.
    name: its name in instantiation 0 (or the lowest recorded), without the synthetic-data label.
    other_names: how many other names its other instantiations give it (other digits or classes).
    metric: "error" (classification error, %) or "rmse".
    synthetic: whether any of its records ran on a rendered stand-in data set.
    lines: one per method and variant, in `METHOD_ORDER`, the preset's before the variants'.
    paper: the paper's numbers for it.
  """
  index: int
  name: str
  other_names: int
  metric: str
  synthetic: bool
  lines: tuple[Line, ...]
  paper: tuple[PaperPoint, ...]

  def line(self, method: str, variant: str | None = None) -> Line | None:
    """The line of `method` (and `variant`), or None where the panel has none."""
    return next((x for x in self.lines if x.method == method and x.variant == variant), None)


@dataclasses.dataclass(frozen=True)
class Figure:
  """One sequence's figure: its panels by task and the run directories they came from (relative to the
  root, as POSIX paths)."""
  sequence: str
  panels: tuple[Panel, ...]
  runs: tuple[str, ...]

  @property
  def fractions(self) -> tuple[float, ...]:
    """Every fraction any line has a point at, ascending."""
    return tuple(sorted({p.fraction for panel in self.panels for line in panel.lines for p in line.points}))


# ---------------------------------------------------------------------------------------------------
# Reading.

def _is_run(directory: Path) -> bool:
  return (directory / "settings.json").is_file() and any(directory.glob("*/seed_*/records/*/fraction_*.json"))


def run_directories(root: Path | str) -> list[Path]:
  """Every run directory under `root` (itself included): one with settings.json and records below its
  method folders (a HOUDINI run's own settings.json in `<method>/seed_<S>/` is not one), sorted."""
  root = Path(root)
  return sorted(p.parent for p in root.rglob("settings.json") if _is_run(p.parent))


def _settings(run: Path) -> dict:
  from hx.synth.jsonfiles import EVALUATION_SETTINGS, JsonFileError, read_settings

  path = run / "settings.json"
  try:
    settings, _ = read_settings(path, EVALUATION_SETTINGS)
  except JsonFileError as err:
    raise ValueError(f"{path}: not an evaluation's settings ({err.problem})") from None
  if not isinstance(settings.get("sequence"), str) or not isinstance(settings.get("fractions"), list):
    raise ValueError(f"{path}: not an evaluation's settings (no sequence or fractions)")
  return settings


def variant_of(settings: dict) -> str | None:
  """The module settings where a run's (its settings.json "settings") differ from its preset's for its
  sequence, as "name=value, ..." sorted by name; None where they do not differ, or where the preset or
  sequence is not one hx knows (a user's sequence)."""
  from hx.data import SEQUENCES
  from hx.presets import EVALUATION_PRESETS
  from hx.synth.jsonfiles import jsonable
  from hx.synth.run_directory import migrated_settings

  preset, sequence = EVALUATION_PRESETS.get(settings.get("preset")), settings.get("sequence")
  saved = settings.get("module_config")
  if preset is None or sequence not in SEQUENCES or not isinstance(saved, dict):
    return None
  expected = jsonable(preset.modules(sequence))
  # A version-1 settings.json left fields out at their defaults: read as versions 2 and 3 write them.
  saved = migrated_settings(saved, expected)
  changed = sorted(k for k in set(saved) | set(expected) if saved.get(k) != expected.get(k))
  return ", ".join(f"{k}={saved[k]}" if k in saved else f"{k} unset" for k in changed) or None


def _paper_score(text: str, metric: str) -> float | None:
  """A score as the paper prints it ("1% CE", "0.38 RMSE") in the records' units, or None where its unit
  is missing or is not `metric`'s."""
  unit = "% CE" if metric == "error" else " RMSE"
  m = re.fullmatch(r"(\d+(?:\.\d+)?)" + re.escape(unit), text.strip())
  return float(m.group(1)) if m else None


def paper_points(sequence: str, index: int, metric: str) -> tuple[PaperPoint, ...]:
  """The paper's numbers for task `index` (1-based) of `sequence` (see the module docstring)."""
  out = []
  for algorithm, method in (("top-down", "houdini_topdown"), ("evolutionary", "houdini_evolutionary")):
    tops = [(t.table, s) for t in paper_top(sequence, index, algorithm)
            if (s := _paper_score(t.score, metric)) is not None]
    if tops:
      out.append(PaperPoint(method, "programs", tuple(t for t, _ in tops), tuple(s for _, s in tops)))
  rows = {row: method for method, row in PAPER_GRAPH_ROWS.items()}
  for row, values in PAPER_GRAPH_TABLE.get(sequence, {}).items():
    if row in rows and index - 1 < len(values):
      out.append(PaperPoint(rows[row], "graph table", (sequence,), (float(values[index - 1]),)))
  return tuple(sorted(out, key=lambda p: (_rank(p.method), p.source)))


def _rank(method: str) -> int:
  return METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)


def collect_figures(root: Path | str, runs: Iterable[Path] | None = None) -> dict[str, Figure]:
  """Every sequence's figure from the records of the run directories under `root` (`run_directories`,
  or `runs`), keyed by sequence in the order of `hx.data.SEQUENCES` (others after, by name).

  Raises:
    FileNotFoundError: `root` holds no run with records.
    ValueError: a settings file or record that cannot be read, a record whose sequence or fraction its
      run's settings do not name, one task recorded with two metrics, or two runs that both record one
      method (and variant) on the same task, fraction and instantiation (each names the paths).
  """
  from hx.data import SEQUENCES

  root = Path(root)
  runs = sorted(runs) if runs is not None else run_directories(root)
  if not runs:
    raise FileNotFoundError(f"{root} holds no run directory with records (settings.json and "
                            "<method>/seed_<S>/records/)")
  # (sequence, task, method, variant) -> fraction -> instance -> (score or None, the record's path)
  cells: dict[tuple[str, int, str, str | None], dict[float, dict[int, tuple[float | None, str]]]] = {}
  tasks: dict[tuple[str, int], list[dict]] = {}
  used: dict[str, list[str]] = {}
  for run in runs:
    settings = _settings(run)
    sequence, variant = settings["sequence"], variant_of(settings)
    where = run.relative_to(root).as_posix() if run != root else "."
    for rec in load_records(run):
      path = f"{where}/{rec['path']}"
      if rec["sequence"] != sequence or rec["fraction"] not in settings["fractions"]:
        raise ValueError(f"{run / rec['path']}: a record of {rec['sequence']} at fraction "
                         f"{rec['fraction']:g}, but its run's settings name {sequence} at "
                         f"{settings['fractions']}")
      key = (sequence, rec["task_index"], rec["method"], variant)
      got = cells.setdefault(key, {}).setdefault(rec["fraction"], {})
      if rec["instance"] in got:
        raise ValueError(f"two records of {rec['method']} on {sequence} task {rec['task_index']} at "
                         f"{100 * rec['fraction']:g}%, instantiation {rec['instance']}: "
                         f"{got[rec['instance']][1]} and {path}")
      got[rec["instance"]] = (best_test(rec), path)
      tasks.setdefault((sequence, rec["task_index"]), []).append(rec)
    used.setdefault(sequence, []).append(where)
  known = {s: i for i, s in enumerate(SEQUENCES)}
  figures = {}
  for sequence in sorted(used, key=lambda s: (known.get(s, len(known)), s)):
    panels = []
    for index in sorted(i for s, i in tasks if s == sequence):
      recs = sorted(tasks[sequence, index], key=lambda r: r["instance"])
      metrics = {r["metric"] for r in recs}
      if len(metrics) != 1:
        raise ValueError(f"{sequence} task {index} is recorded with metrics {sorted(metrics)}")
      names = list(dict.fromkeys(r["task"].split(" [", 1)[0] for r in recs))
      lines = []
      for (s, i, method, variant), by_fraction in cells.items():
        if (s, i) != (sequence, index):
          continue
        points = []
        for fraction in sorted(by_fraction):
          trained = sorted((inst, score) for inst, (score, _) in by_fraction[fraction].items()
                           if score is not None)
          if trained:
            points.append(Point(fraction, tuple(x for x, _ in trained), tuple(y for _, y in trained)))
        if points:
          lines.append(Line(method, variant, tuple(points)))
      lines.sort(key=lambda x: (x.variant is not None, x.variant or "", _rank(x.method), x.method))
      metric = metrics.pop()
      panels.append(Panel(index, names[0], len(names) - 1, metric, any(r["data"]["synthetic"] for r in recs),
                          tuple(lines), paper_points(sequence, index, metric)))
    figures[sequence] = Figure(sequence, tuple(panels), tuple(sorted(used[sequence])))
  return figures


# ---------------------------------------------------------------------------------------------------
# Drawing.

def _bars(values: list[tuple[float, float, float]]) -> list[list[float]] | None:
  """Asymmetric error bars (below, above) from (mean, low, high) triples; None where none has a spread."""
  if all(low == high for _, low, high in values):
    return None
  return [[m - low for m, low, _ in values], [high - m for m, _, high in values]]


def _panel(ax: Axes, panel: Panel, ticks: list[float]) -> None:
  for k, line in enumerate(panel.lines):
    colour = _COLOURS.get(line.method, "#7f7f7f")
    variant = line.variant is not None
    # Each line a little to the side of the fraction (a few % on the log axis), so that the bars of
    # methods with close scores do not hide one another; the ticks stay at the fractions.
    dodge = 1 + 0.035 * (k - (len(panel.lines) - 1) / 2)
    xs = [100 * p.fraction * dodge for p in line.points]
    values = [(p.mean, p.low, p.high) for p in line.points]
    # Variants: the method's colour, a dotted line and crosses, so they read as "this method, changed".
    ax.errorbar(xs, [m for m, _, _ in values], yerr=_bars(values), color=colour,
                marker="x" if variant else _MARKERS.get(line.method, "o"), markerfacecolor="none",
                linestyle=":" if variant else "-", linewidth=1.2, markersize=5, capsize=3, label=line.label)
  for point in panel.paper:
    values = [(point.mean, min(point.scores), max(point.scores))]
    ax.errorbar([100 * point.fraction], [point.mean], yerr=_bars(values),
                color=_COLOURS.get(point.method, "#7f7f7f"), linestyle="none", capsize=3,
                marker="*" if point.source == "programs" else "P", markersize=10 if point.source == "programs"
                else 7, markeredgecolor="black", markeredgewidth=0.5)
  ax.set_xscale("log")
  ax.minorticks_off()
  ax.set_xticks(ticks)
  ax.set_xticklabels([f"{t:g}" for t in ticks])
  ax.set_xlim(ticks[0] / 1.4, ticks[-1] * 1.4)
  ax.set_ylim(bottom=0)
  ax.set_xlabel("training data (%)", fontsize=8)
  ax.set_ylabel("test error (%)" if panel.metric == "error" else "test RMSE", fontsize=8)
  ax.tick_params(labelsize=7)
  title = f"Task {panel.index}: {panel.name}"
  notes = ([f"+{panel.other_names} other instantiation{'s' if panel.other_names > 1 else ''}"]
           if panel.other_names else []) + (["synthetic stand-in data"] if panel.synthetic else [])
  ax.set_title(title + (f"\n({'; '.join(notes)})" if notes else ""), fontsize=8)
  ax.grid(True, alpha=0.3)


def draw(figure: Figure) -> bytes:
  """The PNG of `figure` (see the module docstring): the same figure gives the same bytes."""
  import matplotlib.style
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure as Canvas
  from matplotlib.lines import Line2D

  n = len(figure.panels)
  cols = 2 if n == 4 else min(n, 3)
  rows = math.ceil(n / cols)
  ticks = sorted({100 * f for f in figure.fractions} | {100 * p.fraction for panel in figure.panels
                                                         for p in panel.paper})
  with matplotlib.style.context("default"):
    labels: dict[str, Line] = {}
    for panel in figure.panels:
      for line in panel.lines:
        labels.setdefault(line.label, line)
    sources = {p.source for panel in figure.panels for p in panel.paper}
    ncol = 3 if cols > 2 else 2
    legend_rows = math.ceil((len(labels) + len(sources)) / ncol)
    width, height = 3.6 * cols, 2.7 * rows + 0.6 + 0.2 * legend_rows
    fig = Canvas(figsize=(width, height), dpi=_DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, panel in zip(axes.flat, figure.panels):
      _panel(ax, panel, ticks)
    for ax in list(axes.flat)[n:]:
      ax.axis("off")
    handles = []
    for label, line in labels.items():
      variant = line.variant is not None
      handles.append(Line2D([], [], color=_COLOURS.get(line.method, "#7f7f7f"), label=label,
                            marker="x" if variant else _MARKERS.get(line.method, "o"), markerfacecolor="none",
                            linestyle=":" if variant else "-"))
    if "programs" in sources:
      handles.append(Line2D([], [], color="#bbbbbb", marker="*", markersize=10, markeredgecolor="black",
                            markeredgewidth=0.5, linestyle="none",
                            label="the paper, rank-1 program (100%; in its method's colour)"))
    if "graph table" in sources:
      handles.append(Line2D([], [], color="#bbbbbb", marker="P", markersize=7, markeredgecolor="black",
                            markeredgewidth=0.5, linestyle="none", label="the paper's graph table"))
    legend_height = (0.2 * legend_rows + 0.1) / height
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.suptitle(f"{figure.sequence.upper()}: test error against training data, from hx's records\n"
                 "a point: the mean over the instantiations recorded there; a bar: their min to max",
                 fontsize=9)
    # tight_layout keeps the suptitle clear of the panels itself.
    fig.tight_layout(rect=(0, legend_height, 1, 1))
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=_DPI, metadata={"Software": None})
  return out.getvalue()


def figure_path(directory: Path | str, sequence: str) -> Path:
  """Where `write_figures` puts a sequence's figure: DIR/<sequence>_error_by_fraction.png."""
  return Path(directory) / f"{sequence}_error_by_fraction.png"


def write_figures(figures: dict[str, Figure], directory: Path | str) -> list[Path]:
  """Writes each figure's PNG (`draw`) into `directory` (made if missing); returns the paths."""
  from hx.atomic import write_atomically

  directory = Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  paths = []
  for sequence, figure in figures.items():
    path = figure_path(directory, sequence)
    data = draw(figure)
    write_atomically(path, lambda f, data=data: f.write(data))
    paths.append(path)
  return paths
