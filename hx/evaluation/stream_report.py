"""The report of a long stream's run: `write_stream_report` measures the run (`hx.evaluation.stream_metrics`
and the stream modules beside it) and writes the plots and `stream.md`, whose markdown is
`stream_section`'s.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from hx.atomic import write_text
from hx.baselines.continual import CONTINUAL
from hx.evaluation.config import method_label
from hx.evaluation.records import load_records
from hx.evaluation.stream_forgetting import (
  Forgetting,
  _forgettings,
  continual_forgetting,
  keep_rescores,
  kept_rescores,
  rescore_winners,
)
from hx.evaluation.stream_memory import (
  LibraryPoint,
  keep_sizes,
  library_growth,
  memory_growth,
  process_memory_after,
  saved_libraries,
)
from hx.evaluation.stream_metrics import TaskRow, _instance, task_rows
from hx.evaluation.stream_plots import plot_stream
from hx.evaluation.stream_repeats import (
  REPEATS,
  Growth,
  Reuse,
  growth_by_relation,
  repeats_growth,
  reuse_on_repeats,
)
from hx.evaluation.stream_summary import MethodSummary, summary
from hx.synth.run_directory import respell

if TYPE_CHECKING:
  import os

  from hx.data.streams import StreamTask
  from hx.evaluation.config import EvalConfig

__all__ = ["stream_section", "write_stream_report"]


def _score(metric: str, x: float | None) -> str:
  if x is None:
    return "-"
  return f"{x:.2f}%" if metric == "error" else f"{x:.3f}"


def _ratio(x: float | None) -> str:
  return "-" if x is None else f"{x:.2f}"


def _process_memory_lines(rows: Sequence[TaskRow], early: int = 20) -> list[str]:
  """The process's resident memory after task `early` (or the first recorded past it) and after the last
  task, with their ratio: whether a long run's memory stays bounded. A run resumed in a new process starts
  its memory afresh, so the ratio is of one process's only where no resumption falls between them."""
  after = process_memory_after(rows)
  if not after:
    return []
  last = max(after)
  first = min((i for i in after if i >= early), default=min(after))
  return ["### Memory of the process", "",
          f"Resident memory of the run's process after task {first}: {after[first] / 1e6:.0f} MB; after task "
          f"{last}: {after[last] / 1e6:.0f} MB (**{after[last] / after[first]:.2f}x**).", ""]


def _search_lines(rows: Sequence[TaskRow], early: tuple[int, int] = (10, 20)) -> list[str]:
  """A HOUDINI method's search seconds and wall seconds per task: the median over tasks `early`, the
  median over as many last tasks, and the last task's, each against the early median."""
  mine = sorted((r for r in rows if r.search_seconds is not None), key=lambda r: r.index)
  first = [r for r in mine if early[0] <= r.index <= early[1]]
  if not first or mine[-1].index <= early[1]:
    return []
  last = mine[-len(first):]

  def row(what: str, get: Callable[[TaskRow], float]) -> str:
    a, b, c = (statistics.median(get(r) for r in first), statistics.median(get(r) for r in last),
               get(mine[-1]))
    times = "" if a <= 0 else f" ({b / a:.2f}x; {c / a:.2f}x)"
    return f"| {what} | {a:.2f} | {b:.2f} | {c:.2f}{times} |"

  return ["### Cost per task as the library grows", "",
          f"{method_label(mine[0].method)}'s seconds per task: median over tasks {early[0]}-{early[1]}, "
          f"median over tasks {last[0].index}-{last[-1].index}, and task {mine[-1].index} (each ÷ the "
          "first).", "",
          "| seconds | early | late | last |", "|---|---|---|---|",
          row("search (the prior's choice and the enumeration)", lambda r: r.search_seconds),
          row("wall (search, training, scoring)", lambda r: r.wall_seconds), ""]


def _reuse_lines(reuse: Reuse | None, plan: Sequence[StreamTask] = ()) -> list[str]:
  if reuse is None or not reuse.repeats:
    return []
  n = len(reuse.repeats)
  relation = {t.index: t.relation for t in plan}
  per = [f"{r} {sum(relation.get(i) == r for i in reuse.calls_earlier)} of "
         f"{sum(relation.get(i) == r for i, _ in reuse.repeats)}"
         for r in REPEATS if any(relation.get(i) == r for i, _ in reuse.repeats)]
  return ["### Reuse on the repeated tasks", "",
          f"Of the {n} tasks that repeat an earlier one ({', '.join(REPEATS)}), "
          f"{method_label(reuse.method)}'s winner calls a library function on "
          f"**{len(reuse.calls_library)}**, and a function the repeated task's winner computes with on "
          f"**{len(reuse.calls_earlier)}** (tasks {', '.join(map(str, reuse.calls_earlier)) or 'none'})"
          + (f"; per relation: {', '.join(per)}." if per else "."), ""]


def _transfer_lines(summaries: Sequence[MethodSummary]) -> list[str]:
  """Transfer per relation: per method, the mean score ÷ standalone's and ÷ its own on the task repeated."""
  if not any(s.transfer_by_relation for s in summaries):
    return []
  methods = [s.method for s in summaries]
  lines = ["### Transfer per relation", "",
           "Mean over the tasks of each relation: the score ÷ the standalone network's, and ÷ the "
           "method's own score on the task it repeats (CTrL's S^- is less_data, S^in new_input, S^out "
           "new_output, S^pl distractor).", "",
           "| relation | tasks | " + " | ".join(f"{method_label(m)} ÷ standalone | ÷ own earlier"
                                               for m in methods) + " |",
           "|---|---|" + "---|---|" * len(methods)]
  relations = list(dict.fromkeys(r for s in summaries for r, *_ in s.transfer_by_relation))
  for relation in relations:
    cells, count = [], 0
    for s in summaries:
      got = {r: (a, b, n) for r, a, b, n in s.transfer_by_relation}.get(relation, (None, None, 0))
      count = max(count, got[2])
      cells.append(f"{_ratio(got[0])} | {_ratio(got[1])}")
    lines.append(f"| {relation} | {count} | " + " | ".join(cells) + " |")
  lines.append("")
  return lines


def _growth_lines(growth: Sequence[Growth]) -> list[str]:
  if not growth:
    return []
  lines = ["### The library's growth per relation", "",
           "KB HOUDINI's library gained per task of each relation (its arrays' bytes after the task minus "
           "before), the tasks that added no function, and KB per task over the relation's first half of "
           "tasks against its second half (sub-linear growth: the second smaller).", "",
           "| relation | tasks | KB per task | added nothing | first half | second half |",
           "|---|---|---|---|---|---|"]
  every = repeats_growth(growth)
  for g in [*growth, *([every] if every is not None else [])]:
    halves = g.halves()
    cells = ("-", "-") if halves is None else (f"{halves[0] / 1e3:.1f}", f"{halves[1] / 1e3:.1f}")
    lines.append(f"| {g.relation} | {len(g.tasks)} | {g.mean / 1e3:.1f} | {g.nothing} | {cells[0]} | "
                 f"{cells[1]} |")
  return lines + [""]


def _forgetting_cell(s: MethodSummary) -> str:
  """A summary's forgetting: error points / RMSE, signed (above 0 forgot); "-" where not measured."""
  parts = [f"{x:+.2f}" if metric == "error" else f"{x:+.3f}"
           for metric, x in (("error", s.forgetting_error), ("rmse", s.forgetting_rmse)) if x is not None]
  return " / ".join(parts) or "-"


def _forgetting_lines(forgetting: Sequence[Forgetting]) -> list[str]:
  """The forgetting section: HOUDINI's winners re-scored on the final library; each continual baseline's
  tasks re-scored with the final trunks."""
  lines = []
  for f in forgetting:
    if f.method.startswith("houdini_"):
      lines.append(f"Every winner of {method_label(f.method)} re-scored on the library saved after task "
                   f"{f.after} (its functions frozen): {len(f.rows)} programs, largest change of a test "
                   f"score **{f.largest_change:.3g}**; every function they use has the version it had after "
                   f"its task: **{'yes' if f.all_unchanged else 'no'}**.")
      continue
    earlier = [r for r in f.rows if r.index < f.after]
    kept = sum(r.unchanged for r in earlier)
    parts = [f"error tasks {x:+.2f} points" if m == "error" else f"RMSE tasks {x:+.3f}"
             for m in ("error", "rmse") if (x := f.mean_change(m)) is not None]
    lines.append(f"Every earlier task of {method_label(f.method)} re-scored after task {f.after} with the "
                 f"final trunks and its own head ({len(earlier)} tasks; {kept} share no trunk, graph tasks "
                 f"over the frozen regressor, and are not scored again): mean change of the test score "
                 f"**{'; '.join(parts) or 'none'}**, largest {f.largest_change:.3g} (above 0: forgotten).")
  return ["### Forgetting", "", *[x for line in lines for x in (line, "")]] if lines else []


def stream_section(rows: Sequence[TaskRow], summaries: Sequence[MethodSummary],
                   library: Sequence[LibraryPoint] = (), plan: Sequence[StreamTask] | None = None,
                   forgetting: Forgetting | Sequence[Forgetting] | None = None) -> list[str]:
  """The markdown section of a stream's metrics: the summary per method, transfer per relation,
  forgetting, the process's memory, the library's growth per relation, the cost per task as the library
  grows, reuse on the repeated tasks, the plots and one line per task. Where a continual baseline ran
  (`hx.baselines.CONTINUAL`: the methods whose earlier tasks can change) the summary is CTrL's whole: a
  forgetting column, and each mean score with its 95% interval over the tasks (`interval`); a report
  without one keeps the layout it was committed in."""
  methods = [s.method for s in summaries]
  lost = any(m in CONTINUAL for m in methods)
  lines = ["## The stream: CTrL's summary figures", "",
           "Per method over the stream's tasks (largest training fraction): the average final test score "
           "(error tasks and RMSE tasks apart), the mean forward transfer (score ÷ standalone's, below 1 "
           "better), " + ("each mean with its 95% interval over the tasks (± 1.96 standard errors), "
                          "the forgetting (each earlier task's final test score minus its score when "
                          "learned, mean over the tasks before the last: error points / RMSE; 0 by "
                          "construction for a method that keeps every task's network or freezes its "
                          "library), " if lost else "")
           + "the memory kept at the end and its growth per task, and the time.", "",
           "| method | tasks | mean error | mean RMSE | mean transfer | " + ("forgetting | " if lost else "")
           + "memory (MB) | KB per task | wall s | work s |",
           "|---|---|---|---|---|" + ("---|" if lost else "") + "---|---|---|---|"]
  for s in summaries:
    memory = "-" if s.final_bytes is None else f"{s.final_bytes / 1e6:.2f}"
    per = "-" if s.bytes_per_task is None else f"{s.bytes_per_task / 1e3:.1f}"
    error, rmse = _score("error", s.mean_error), _score("rmse", s.mean_rmse)
    if lost:  # CTrL's layout: each mean with its 95% interval over the tasks
      error += "" if s.error_interval is None or s.mean_error is None else f" ± {s.error_interval:.2f}"
      rmse += "" if s.rmse_interval is None or s.mean_rmse is None else f" ± {s.rmse_interval:.3f}"
    lines.append(f"| {method_label(s.method)} | {s.tasks} | {error} | {rmse} | {_ratio(s.mean_transfer)} | "
                 + (f"{_forgetting_cell(s)} | " if lost else "") + f"{memory} | {per} | "
                 f"{s.wall_seconds:.0f} | {s.work_seconds:.0f} |")
  lines.append("")
  lines += _transfer_lines(summaries)
  lines += _forgetting_lines(_forgettings(forgetting))
  lines += _process_memory_lines(rows)
  lines += _growth_lines(growth_by_relation(library, plan) if plan else [])
  lines += _search_lines(rows)
  houdini = next((m for m in methods if m.startswith("houdini_")), None)
  lines += _reuse_lines(reuse_on_repeats(rows, plan, houdini) if plan and houdini else None, plan or ())
  lines += ["![scores](plots/stream_scores.png)", "", "![cost](plots/stream_cost.png)", "",
            "![memory](plots/stream_memory.png)", "", "### Per task", ""]
  relation = {t.index: (t.relation + (f" of {t.of}" if t.of else "")) for t in plan or ()}
  sizes = {p.index: f"{p.functions} / {p.parameters:,} / {p.bytes / 1e3:.0f}" for p in library}
  head = "| # | task | relation | " + " | ".join(method_label(m) for m in methods)
  head += " | transfer | wall s | candidates (trained) | library: functions / parameters / KB |"
  lines += [head, "|---|---|---|" + "---|" * len(methods) + "---|---|---|---|"]
  for index in sorted({r.index for r in rows}):
    mine = {r.method: r for r in rows if r.index == index}
    first = next(iter(mine.values()))
    h = mine.get(houdini)
    cells = [_score(first.metric, mine[m].test) if m in mine else "" for m in methods]
    lines.append(f"| {index} | {first.task} | {relation.get(index, '')} | " + " | ".join(cells) + " | "
                 + (f"{_ratio(h.transfer)} | {h.wall_seconds:.0f} | {h.candidates} ({h.trained}) | "
                    if h else "- | - | - | ") + f"{sizes.get(index, '-')} |")
  return lines + [""]


def write_stream_report(config: EvalConfig, directory: os.PathLike | str,
                        plan: Sequence[StreamTask] | None = None, rescore: bool = True) -> Path:
  """Measures the run in `directory` (the stream modules' rows, memory, re-scores and summary), writes
  the plots and `stream.md` (`stream_section`, after a title) into it; returns stream.md's path.

  The run's libraries (`<houdini>/seed_S/libraries/after_TT`) and networks (`<baseline>/seed_S/networks/
  after_TT`) are not committed: what the report measures of them is kept beside the records as it is
  made where they are, HOUDINI's re-scores in `<houdini>/seed_S/rescored.json` (`keep_rescores`) and the
  library's and networks' sizes per task in `<method>/seed_S/sizes.json` (`keep_sizes`), and read where
  they are absent. So stream.md and plots/stream_*.png rebuild byte for byte, with no library or network,
  from these files of the run: settings.json, every `*/seed_S/settings.json`, the records
  (`*/seed_S/records/*/fraction_*.json`), `*/seed_S/rescored.json` (HOUDINI's and the continual
  learners'), `*/seed_S/sizes.json` and `ewc/seed_S/ewc_strength.json`.

  Args:
    config: the run's `hx.EvalConfig` (for re-scoring).
    directory: the run's directory.
    plan: the stream's `hx.data.stream_plan` (for the relations), or None.
    rescore: re-score HOUDINI's winners where the run's libraries are here (`rescore_winners`; needs
      them and the data) and keep the re-scores; without (or where the libraries are absent), the kept
      re-scores are read, if any. Replay's and EWC's re-scores are read from the run
      (`continual_forgetting`), whatever `rescore` says.

  A directory of an older layout has its names respelt first (`hx.synth.run_directory.respell`), once
  its records are read: a directory refused is left as it is.

  Raises:
    ValueError: the directory holds no record, or a kept file is not readable (its path named).
  """
  directory = Path(directory)
  records = load_records(directory) if directory.is_dir() else []
  if not records:
    raise ValueError(f"{directory} holds no evaluation records")
  if respell(directory):
    records = load_records(directory)
  rows = task_rows(records)
  instance = _instance(records, None)
  houdini = next((m for m in sorted({r["method"] for r in records}) if m.startswith("houdini_")), None)
  keep_sizes(records, directory, instance)
  library = library_growth(directory, houdini, instance) if houdini else []
  memory = memory_growth(records, directory, instance)
  forgetting = []
  if houdini and rescore and saved_libraries(directory, houdini, instance):
    forgetting.append(rescore_winners(config, directory, houdini, instance))
    keep_rescores(directory, forgetting[0], max(config.fractions))
  elif houdini and (kept := kept_rescores(directory, houdini, instance)) is not None:
    forgetting.append(kept)
  forgetting += [f for m in CONTINUAL if (f := continual_forgetting(directory, m, instance)) is not None]
  summaries = summary(rows, memory, plan, forgetting)
  plot_stream(directory, rows, memory, library)
  lines = [f"# The {records[0]['sequence']} stream: {len({r.index for r in rows})} tasks", ""]
  lines += stream_section(rows, summaries, library, plan, forgetting)
  path = directory / "stream.md"
  write_text(path, "\n".join(lines))
  return path
