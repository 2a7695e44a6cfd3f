"""A reproduction's headline, from its records alone: the markdown its README shows first.

    figures = collect_figures("benchmarks/reproduction")    # hx.evaluation.fraction_plots
    print(scores_markdown(figures))                          # per sequence: every method at each fraction
    print(transfer_markdown(figures))                        # HOUDINI / standalone, counted
    print(paper_ranks_markdown("benchmarks/reproduction"))   # where the paper's programs ranked in hx

`python -m hx.bin.figures ROOT --tables` prints all three between the markers a README keeps them in
(`readme_blocks`); `blocks_in` reads a README's copies back, for a test to hold them to the records.

- `scores_markdown`: per sequence, a row per task and training fraction with each method's test score
  (the mean over the instantiations recorded there: "0-4" in the row's instantiations column; a method
  recorded on fewer says which, "(inst. 0)"), the best of the paper preset's methods over the row's
  instantiations in bold, HOUDINI's forward transfer (its test score over the standalone network's, per
  instantiation, mean ± standard deviation), and a row of the paper's numbers at 100% of its data
  (`hx.evaluation.fraction_plots.paper_points`; LS: the mean over its five tables, with their range).
- `transfer_markdown`: on how many task runs after a first task HOUDINI (top-down) is ahead of the
  standalone network, per fraction, and its largest leads.
- `paper_ranks`: for each top-down run, task and instantiation, the paper's rank-1 program (of its table
  for that instantiation: LS's instantiation i is the paper's LS(i+1)) in the names of hx's library, and
  the rank (by validation) and search position of each candidate of the record that is it (its normal
  form, `hx.synth.space.normal_form`, equal up to the names of fresh functions; its two link typings
  count as two candidates). A library function the paper's program reuses stands for the function of the
  same task in the same place of that task's winner, ours and the paper's rank 1 aligned node by node;
  where our winner has no fresh function there, hx's library lacks the function and the program is not
  in hx's search.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from hx.evaluation.fraction_plots import Figure, Line, Panel, collect_figures, run_directories, variant_of
from hx.evaluation.records import load_records
from hx.evaluation.report import score_text

if TYPE_CHECKING:
  from hx.lang import program as P

__all__ = ["scores_markdown", "transfer_markdown", "TransferRun", "transfer_runs", "PaperRank",
           "paper_ranks", "paper_ranks_markdown", "instances_text", "BLOCKS", "blocks", "readme_blocks",
           "blocks_in"]


def instances_text(instances: Iterable[int]) -> str:
  """Instantiations as a reader takes them: (0, 1, 2, 3, 4) -> "0-4", (0, 2) -> "0, 2", (3,) -> "3"."""
  xs = sorted(instances)
  if len(xs) > 2 and xs == list(range(xs[0], xs[-1] + 1)):
    return f"{xs[0]}-{xs[-1]}"
  return ", ".join(map(str, xs))


def _ratio_text(values: list[float]) -> str:
  if not values:
    return ""
  text = f"{statistics.fmean(values):.2f}"
  return text + (f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else "")


def _ratios(panel: Panel, fraction: float) -> list[float]:
  """HOUDINI's (top-down) test score over the standalone network's at `fraction`, per instantiation both
  recorded (`hx.evaluation.report.transfer_ratios`, from the figure's points)."""
  houdini, alone = panel.line("houdini_topdown"), panel.line("standalone")
  a = houdini.at(fraction) if houdini else None
  b = alone.at(fraction) if alone else None
  if a is None or b is None:
    return []
  theirs = dict(zip(b.instances, b.scores))
  return [x / theirs[i] for i, x in zip(a.instances, a.scores) if i in theirs and theirs[i] > 0]


def _columns(figure: Figure) -> list[tuple[str, str | None]]:
  """(method, variant) of every line of the figure, in the panels' line order."""
  seen: dict[tuple[str, str | None], None] = {}
  for panel in figure.panels:
    for line in panel.lines:
      seen.setdefault((line.method, line.variant), None)
  return list(seen)


def _paper_cell(panel: Panel, method: str) -> str:
  unit = "%" if panel.metric == "error" else ""
  texts = []
  for point in (p for p in panel.paper if p.method == method):
    if len(point.scores) > 1:
      texts.append(f"{point.mean:.2f}{unit} ({min(point.scores):g}-{max(point.scores):g}{unit}, "
                   f"{len(point.scores)} tables)")
    else:
      texts.append(f"{point.scores[0]:g}{unit}" + (" (graph table)" if point.source == "graph table" else ""))
  return "; ".join(texts)


def _sequence_table(figure: Figure) -> list[str]:
  columns = _columns(figure)
  labels = [Line(m, v, ()).label for m, v in columns]
  lines = [f"| task | fraction | instantiations | {' | '.join(labels)} | HOUDINI / standalone |",
           "|---|---|---|" + "---|" * len(columns) + "---|"]
  for panel in figure.panels:
    name = f"{panel.index} {panel.name}" + (", synthetic" if panel.synthetic else "")
    fractions = sorted({p.fraction for line in panel.lines for p in line.points})
    for k, fraction in enumerate(fractions):
      points = {(line.method, line.variant): line.at(fraction) for line in panel.lines}
      houdini = points.get(("houdini_topdown", None))
      shown = [p for p in points.values() if p is not None]
      base = houdini.instances if houdini else max((p.instances for p in shown), key=len)
      texts = {c: score_text(panel.metric, p.mean) for c, p in points.items() if p is not None}
      # The best of the preset's methods recorded on the row's instantiations, at the printed precision.
      rivals = [texts[c] for c, p in points.items() if p is not None and c[1] is None and p.instances == base]
      best = min(rivals, key=lambda t: float(t.rstrip("%"))) if len(rivals) > 1 else None
      cells = []
      for c in columns:
        p = points.get(c)
        if p is None:
          cells.append("")
          continue
        text = f"**{texts[c]}**" if best is not None and c[1] is None and p.instances == base and (
            float(texts[c].rstrip("%")) == float(best.rstrip("%"))) else texts[c]
        cells.append(text + ("" if p.instances == base else f" (inst. {instances_text(p.instances)})"))
      lines.append(f"| {name if k == 0 else ''} | {100 * fraction:g}% | {instances_text(base)} | "
                   + " | ".join(cells) + f" | {_ratio_text(_ratios(panel, fraction))} |")
    if panel.paper:
      cells = [_paper_cell(panel, m) if v is None else "" for m, v in columns]
      lines.append(f"| {name if not fractions else ''} | the paper, 100% | | " + " | ".join(cells) + " | |")
  return lines


def scores_markdown(figures: dict[str, Figure]) -> str:
  """Per sequence a heading, its table (see the module docstring) and its figure
  (figures/<sequence>_error_by_fraction.png, as `hx.bin.figures` writes them)."""
  out = []
  for sequence, figure in figures.items():
    out += [f"### {sequence.upper()}", "", *_sequence_table(figure), "",
            f"![{sequence.upper()}: test error against training data]"
            f"(figures/{sequence}_error_by_fraction.png)", ""]
  return "\n".join(out).rstrip("\n") + "\n"


@dataclasses.dataclass(frozen=True)
class TransferRun:
  """HOUDINI's forward transfer on one task after a first task at one fraction: `ratios` per
  instantiation (its test score over the standalone network's), `mean` theirs."""
  sequence: str
  task: int
  fraction: float
  ratios: tuple[float, ...]

  @property
  def mean(self) -> float:
    """The mean over instantiations: a run of several counts once, by it."""
    return statistics.fmean(self.ratios)


def transfer_runs(figures: dict[str, Figure]) -> list[TransferRun]:
  """Every task after a first task, at every fraction where HOUDINI (top-down) and the standalone network
  both trained on some instantiation, in figure and task order."""
  out = []
  for sequence, figure in figures.items():
    for panel in figure.panels[1:]:
      for fraction in sorted({p.fraction for line in panel.lines for p in line.points}):
        if ratios := _ratios(panel, fraction):
          out.append(TransferRun(sequence, panel.index, fraction, tuple(ratios)))
  return out


def transfer_markdown(figures: dict[str, Figure], leads: int = 6) -> str:
  """How often HOUDINI (top-down) is ahead of the standalone network after a first task (a ratio below 1),
  per fraction, and its `leads` largest leads; a paragraph."""
  runs = transfer_runs(figures)
  ahead = [r for r in runs if r.mean < 1]
  parts = []
  for fraction in sorted({r.fraction for r in runs}):
    at = [r for r in runs if r.fraction == fraction]
    behind = [r for r in at if r.mean >= 1]
    text = f"{sum(r.mean < 1 for r in at)} of {len(at)} at {100 * fraction:g}%"
    if behind and len(behind) <= 3:
      text += " (behind on " + ", ".join(f"{r.sequence.upper()} task {r.task}, {r.mean:.2f}"
                                         for r in behind) + ")"
    parts.append(text)
  best = sorted(runs, key=lambda r: (r.mean, r.sequence, r.task, r.fraction))[:leads]
  tops = [f"{r.sequence.upper()} task {r.task} at {100 * r.fraction:g}% ({r.mean:.2f}"
          + (f", {len(r.ratios)} instantiations" if len(r.ratios) > 1 else "") + ")" for r in best]
  return (f"After a first task, HOUDINI (top-down) is ahead of the standalone network on {len(ahead)} of "
          f"{len(runs)} task runs (a task at a fraction; several instantiations counted once, by their mean "
          f"ratio): {'; '.join(parts)}. Its {leads} largest leads: {', '.join(tops)}.\n")


# ---------------------------------------------------------------------------------------------------
# Where the paper's rank-1 programs ranked in hx's searches.

@dataclasses.dataclass(frozen=True)
class PaperRank:
  """The paper's rank-1 program of one task in one of hx's top-down searches.

  Attributes:
    sequence, fraction, instance, task: which search.
    table: the paper's table the program comes from.
    paper: the program as the paper prints it.
    ours: it in the names of hx's library before the task, or None where that library lacks a function
      it reuses.
    found: (rank by validation, position in the search's order, 1-based) of each candidate that is it.
    trained: the candidates the record ranks.
  """
  sequence: str
  fraction: float
  instance: int
  task: int
  table: str
  paper: str
  ours: str | None
  found: tuple[tuple[int, int], ...]
  trained: int


def _key(program: P.Program) -> str:
  from hx.lang.program import canonical
  from hx.synth.space import normal_form

  return str(canonical(normal_form(program)))


def _align(paper: P.Program, ours: P.Program, out: dict[str, str]) -> None:
  """Maps each fresh function of `paper` to the fresh function of `ours` in the same place, descending
  while the two programs have nodes of the same kind."""
  from hx.lang import program as P

  if isinstance(paper, P.Fresh) and isinstance(ours, P.Fresh):
    out.setdefault(paper.name, ours.name)
    return
  kids, theirs = P.children(paper), P.children(ours)
  if type(paper) is type(ours) and len(kids) == len(theirs):
    for a, b in zip(kids, theirs):
      _align(a, b, out)


def _rename_library(program: P.Program, names: dict[str, str]) -> P.Program | None:
  """`program` with each library function renamed by `names`; None where one is not in it."""
  from hx.lang import program as P

  if isinstance(program, P.Lib):
    return P.Lib(names[program.name]) if program.name in names else None
  kids = P.children(program)
  new = tuple(_rename_library(k, names) for k in kids)
  return None if any(k is None for k in new) else (P.with_children(program, new) if kids else program)


def _paper_table(sequence: str, instance: int) -> str:
  return f"tab:LS{instance + 1}Progs" if sequence == "ls" else f"tab:{sequence.upper()}Progs"


def paper_ranks(root: Path | str, runs: Iterable[Path] | None = None) -> list[PaperRank]:
  """For every top-down record of the paper preset under `root` (`run_directories`, or `runs`; a variant's
  are left out) whose task the paper's table gives a rank-1 program, where that program ranked (see the
  module docstring); ordered by sequence as `collect_figures` orders them, then fraction, instantiation
  and task."""
  import json

  from hx.lang import parse
  from hx.lang.paper import paper_programs
  from hx.lang.program import fresh_names
  from hx.synth.space import normal_form

  root = Path(root)
  out = []
  order = list(collect_figures(root, runs))  # the sequences' order (and the same errors as the figures')
  for run in sorted(runs) if runs is not None else run_directories(root):
    settings = json.loads((run / "settings.json").read_text("utf-8"))["settings"]
    if variant_of(settings) is not None:
      continue  # not the paper preset's search
    sequence = settings["sequence"]
    records = [r for r in load_records(run) if r["method"] == "houdini_topdown"]
    by_search: dict[tuple[float, int], dict[int, dict]] = {}
    for r in records:
      by_search.setdefault((r["fraction"], r["instance"]), {})[r["task_index"]] = r
    for (fraction, instance), tasks in by_search.items():
      table = _paper_table(sequence, instance)
      rank1 = {p.task_number: p for p in paper_programs()
               if p.table == table and p.rank == 1 and p.algorithm == "top-down"}
      names: dict[str, str] = {}  # the paper's function -> ours, from the earlier tasks' winners
      for index in sorted(tasks):
        rec, p = tasks[index], rank1.get(index)
        if p is not None:
          ours = _rename_library(p.program, names)
          target = _key(ours) if ours is not None else None
          found = tuple(sorted((c["rank"], c["order"] + 1) for c in rec["ranked"] if target is not None
                               and c.get("order", -1) >= 0 and _key(parse(c["program"])) == target))
          out.append(PaperRank(sequence, fraction, instance, index, table, p.text,
                               str(ours) if ours is not None else None, found, len(rec["ranked"])))
          winner = rec["ranked"][0]["named"] if rec["ranked"] else None
          if winner:
            aligned: dict[str, str] = {}
            _align(normal_form(p.program), normal_form(parse(winner)), aligned)
            names.update({a: b for a, b in aligned.items() if b in fresh_names(parse(winner))})
  out.sort(key=lambda x: (order.index(x.sequence) if x.sequence in order else len(order), x.sequence,
                          x.fraction, x.instance, x.task))
  return out


def _rank_cell(rank: PaperRank) -> str:
  if rank.ours is None:
    return "-"
  if not rank.found:
    return "none"
  return ", ".join(f"**{r}** ({o})" if r == 1 else f"{r} ({o})" for r, o in rank.found)


def paper_ranks_markdown(root: Path | str, runs: Iterable[Path] | None = None) -> str:
  """One table: a row per sequence and task, a column per top-down search (fraction, instantiation) any
  sequence ran, each cell the rank of the paper's program there and, in brackets, its position in the
  search ("-": hx's library lacks a function it reuses; "none": not among the candidates trained; empty:
  no such search)."""
  ranks = paper_ranks(root, runs)
  searches = sorted({(r.fraction, r.instance) for r in ranks})
  cells = {(r.sequence, r.task, r.fraction, r.instance): r for r in ranks}
  out = ["| task | " + " | ".join(f"{100 * f:g}%, {i}" for f, i in searches) + " |",
         "|---|" + "---|" * len(searches)]
  for sequence, task in dict.fromkeys((r.sequence, r.task) for r in ranks):
    row = [cells.get((sequence, task, f, i)) for f, i in searches]
    out.append(f"| {sequence.upper()} {task} | " + " | ".join(_rank_cell(r) if r else "" for r in row) + " |")
  return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------
# The README's copies.

BLOCKS = ("scores", "transfer", "paper_ranks")
"""The blocks a README keeps, each between `<!-- BEGIN headline:NAME -->` and `<!-- END headline:NAME -->`."""


def blocks(root: Path | str) -> dict[str, str]:
  """Each of `BLOCKS` as `scores_markdown`, `transfer_markdown` and `paper_ranks_markdown` give it for the
  runs under `root`."""
  figures = collect_figures(root)
  return {"scores": scores_markdown(figures), "transfer": transfer_markdown(figures),
          "paper_ranks": paper_ranks_markdown(root)}


def readme_blocks(root: Path | str) -> str:
  """`blocks`, each between its markers, one after the other: what to paste into a README."""
  return "\n".join(f"<!-- BEGIN headline:{name} -->\n{text}<!-- END headline:{name} -->\n"
                   for name, text in blocks(root).items())


def blocks_in(text: str) -> dict[str, str]:
  """The blocks a README's `text` holds between the markers (see `BLOCKS`), by name.

  Raises:
    ValueError: a BEGIN marker without its END, or a block given twice.
  """
  import re

  out: dict[str, str] = {}
  for m in re.finditer(r"<!-- BEGIN headline:(\w+) -->\n", text):
    name = m.group(1)
    end = text.find(f"<!-- END headline:{name} -->", m.end())
    if end < 0:
      raise ValueError(f"headline block {name!r} has no END marker")
    if name in out:
      raise ValueError(f"headline block {name!r} is given twice")
    out[name] = text[m.end():end]
  return out
