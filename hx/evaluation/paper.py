"""What the paper reports, for comparing a run with it: its top programs and their test scores per task
(its appendix tables, `hx.lang.paper.paper_programs`), and the one table where it prints baseline
numbers (the graph sequences' table; every other baseline result of the paper is a plot)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterator, NamedTuple, Sequence

from hx.lang.paper import paper_programs

if TYPE_CHECKING:
  from hx.evaluation.config import EvalConfig
  from hx.lang.paper import PaperProgram
  from hx.lang.types import Type
  from hx.synth.space import SearchSpace

__all__ = ["PaperTop", "paper_top", "PAPER_GRAPH_TABLE", "PAPER_GRAPH_ROWS", "Position", "Rank1Task",
           "rank1_tasks", "rank1_positions"]


@dataclasses.dataclass(frozen=True)
class PaperTop:
  """The paper's best program for a task: its table, the task as printed, the program and the score as
  printed ("0.38 RMSE", "1% CE")."""
  table: str
  task: str
  program: str
  score: str


def paper_top(sequence: str, task_number: int, algorithm: str = "top-down") -> list[PaperTop]:
  """The paper's rank-1 program(s) for task `task_number` (1-based) of `sequence` and `algorithm`.

  LS has five tables (LS1-LS5: the paper's five instantiations, each with its own classes), so its tasks
  get up to five; the others one, or none where the paper prints "No Solution".
  """
  key = sequence.lower()
  out = []
  for p in paper_programs():
    if p.algorithm != algorithm or p.rank != 1 or p.task_number != task_number:
      continue
    if not p.table.startswith("tab:"):
      continue  # the main text's copies of the tables' programs
    if p.sequence == key or (key == "ls" and p.sequence.startswith("ls")):
      out.append(PaperTop(p.table, p.task, p.text, p.score))
  return out


PAPER_GRAPH_TABLE = {
    "gs1": {"standalone": (0.75, 4.96), "RNN w llt": (0.75, 5.58), "HOUDINI": (0.75, 1.77),
            "HOUDINI EA": (0.75, 8.32), "low-level-transfer": (0.75, 1.98)},
    "gs2": {"standalone": (1.44, 6.49, 7.0), "RNN w llt": (1.44, 5.00, 6.05), "HOUDINI": (1.44, 1.50, 3.31),
            "HOUDINI EA": (1.44, 6.67, 7.88), "low-level-transfer": (1.44, 1.76, 2.08)},
}
"""The paper's table "Lifelong learning on graphs" (RMSE per task), row by row as printed (GS2's
standalone task 3 is printed "7."). Which of our baselines a row is, the paper does not say in so many
words: its appendix C describes one RNN baseline, the LSTM over the regressor's grid, which is our
standalone (regressor frozen) and our llt (regressor fine-tuned, the "RNN w llt" row); its
"low-level-transfer" row has no description in the paper (the authors' code, `Baselines/GS*_wt.py`,
trains HOUDINI's graph-convolution program with the regressor transferred), and hx does not run it."""

PAPER_GRAPH_ROWS = {"standalone": "standalone", "llt": "RNN w llt", "houdini_topdown": "HOUDINI",
                    "houdini_evolutionary": "HOUDINI EA"}
"""Our method -> the row of `PAPER_GRAPH_TABLE` it compares with."""


@dataclasses.dataclass(frozen=True)
class Position:
  """Where the paper's rank-1 program of a task comes in a top-down search.

  Attributes:
    table: the paper's table (or figure) label, e.g. 'tab:LS1Progs'.
    task_number: the task, 1-based.
    program: the program as the paper prints it.
    position: its place among the candidates the search trains (1-based), or None if it does not come
      within `limit`.
    budget: the candidates the search trains on that task.
  """
  table: str
  task_number: int
  program: str
  position: int | None
  budget: int

  @property
  def within(self) -> bool:
    return self.position is not None and self.position <= self.budget


class Rank1Task(NamedTuple):
  """One task whose rank-1 top-down program the paper prints, with what a search of it starts from.

  Attributes:
    table: the paper's table (or figure) label.
    program: the paper's rank-1 program (`hx.lang.paper.PaperProgram`).
    config: the `hx.evaluation.EvalConfig` of the task's sequence under the preset (its search space,
      module sizes and budgets).
    library: the library the paper's earlier rank-1 programs of the table leave
      (`hx.lang.paper.paper_library_before`).
    budget: the candidates the preset trains on the task.
  """
  table: str
  program: PaperProgram
  config: EvalConfig
  library: dict[str, Type]
  budget: int


def rank1_tasks(preset: str = "paper", tables: Sequence[str] | None = None) -> Iterator[Rank1Task]:
  """The tasks of the paper's top-down tables (default every top-down table and figure) whose rank-1
  program it prints, in table order, each with its preset's search settings and the paper's library."""
  from hx.evaluation.config import EvalConfig
  from hx.lang.paper import paper_library_before, paper_tables

  configs: dict[str, EvalConfig] = {}
  for table in tables or paper_tables():
    for p in paper_programs():
      if p.table != table or p.rank != 1 or p.algorithm != "top-down" or table.startswith("text:"):
        continue
      sequence = "ls" if p.sequence.startswith("ls") else p.sequence
      if sequence not in configs:
        configs[sequence] = EvalConfig.make(sequence, preset=preset)
      config = configs[sequence]
      yield Rank1Task(table, p, config, paper_library_before(table, p.task_number),
                      config.budgets[p.task_number - 1].candidates)


def rank1_positions(preset: str = "paper", *, space: SearchSpace | None = None,
                    tables: Sequence[str] | None = None,
                    limit: int = 300) -> Iterator[Position]:
  """The position of each rank-1 program of the paper's top-down tables in the search `preset` runs.

  Each task's library is the one the paper's earlier rank-1 programs of its table leave
  (`hx.lang.paper.paper_library_before`); the search is the preset's for the table's sequence
  (`EvalConfig.space`), or `space`; a candidate is the paper's program when it computes the same function
  with the same types (`hx.synth.equivalence_key`; the paper's open types as `default_type_variables`
  fixes them). Nothing is trained.

  Args:
    preset: whose search and budgets ("paper" or "quick").
    space: a `hx.synth.SearchSpace` to use instead of the preset's.
    tables: the table labels to walk (default every top-down table and figure of the paper).
    limit: candidates to enumerate per task before giving up.
  """
  from hx.lang import infer
  from hx.lang.paper import default_type_variables
  from hx.synth.space import equivalence_key
  from hx.synth.topdown import enumerate_programs

  for t in rank1_tasks(preset, tables):
    p = t.program
    key = equivalence_key(p.program, default_type_variables(infer(p.program, t.library, p.type).fresh))
    candidates = enumerate_programs(p.type, t.library, space=space or t.config.space,
                                    config=t.config.module_config, limit=limit)
    found = next((i for i, c in enumerate(candidates, 1) if c.key == key), None)
    yield Position(t.table, p.task_number, p.text, found, t.budget)
