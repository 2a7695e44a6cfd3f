"""The programs the HOUDINI paper prints, its task types, and the library they are typed against.

The paper (Valkov et al., NeurIPS 2018) lists the top three programs of every task of every task
sequence, for the top-down and the evolutionary synthesizer (appendix tables), and the GS2 programs
in the main text. They ship with hx in `paper_programs.tsv` (columns: table, sequence, algorithm,
task number, task, rank, score, program), extracted from the paper's LaTeX by `programs_from_latex`;
the program text is the paper's notation turned into plain text (`∘`, `conv_g^10`, `fold_l e z` kept).

`paper_library(table)` types the neural functions each table's programs use: walking the tasks in order,
each program is typed against its task's type and the library built so far, and the fresh functions of
the task's best program (rank 1) are then added to the library, as the paper does; every `lib.`
reference the paper prints points at one of those. Where nothing constrains a fresh function's type, the
paper's conventions decide (see `default_type_variables`): the value a function computes from an image
is the CNN's feature vector, `FEATURES`, and any other unconstrained value is `Tensor<bool>[1]`, the
recognizer output that the paper's counting programs pass from the map to the LSTM.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import re

from hx.lang.infer import infer
from hx.lang.parser import parse
from hx.lang.program import Program, fresh_names
from hx.lang.types import Type, TypeVar, function_parts, is_image, parse_type, substitute, type_variables

__all__ = [
    "FEATURES", "TASK_TYPES", "PaperProgram", "task_type", "paper_programs", "paper_tables",
    "paper_library", "paper_library_before", "default_type_variables", "programs_from_latex",
]

FEATURES = parse_type("Tensor<real>[1024]")
"""The paper's CNN features: two 5x5 convolutions (no padding) and 2x2 poolings take a 28x28 image
to 64 channels of 4x4, flattened."""

TASK_TYPES: dict[str, Type] = {
    "recognize_digit": parse_type("Tensor<real>[1][28][28] -> Tensor<bool>[1]"),
    "recognize_toy": parse_type("Tensor<real>[1][28][28] -> Tensor<bool>[1]"),
    "classify_digit": parse_type("Tensor<real>[1][28][28] -> Tensor<bool>[10]"),
    "count_digit": parse_type("List<Tensor<real>[1][28][28]> -> Tensor<real>[1]"),
    "count_toy": parse_type("List<Tensor<real>[1][28][28]> -> Tensor<real>[1]"),
    "sum_digits": parse_type("List<Tensor<real>[1][28][28]> -> Tensor<real>[1]"),
    "regress_speed": parse_type("Tensor<real>[3][28][28] -> Tensor<real>[2]"),
    "regress_mnist": parse_type("Tensor<real>[3][28][28] -> Tensor<real>[2]"),
    "shortest_path_street": parse_type("Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>"),
    "shortest_path_mnist": parse_type("Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>"),
    "shortest_path_graph_mnist": parse_type("Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>"),
    "shortest_path_geometric_mnist": parse_type("Graph<Tensor<real>[3][28][28]> -> Graph<Tensor<real>[2]>"),
}
"""The type of each task, by task kind: the paper's ten, then two of ours, shortest paths on random graphs
beyond grids (`hx.data.tasks.GRAPH_FAMILIES`), typed as the paper's shortest-path tasks. The graph
sequences' images are 28x28x3 (MNIST made 3-channel, traffic signs resized), as in the paper's appendix C.
A regression predicts a cell's initial Bellman-Ford state (cost, initial distance: 1 for the start, 65 for
every other cell); a shortest-path program maps every node to its state (cost, least distance), the fixed
point of the relaxation the paper's conv_g kernels learn (hx.data.grids gives the convention)."""


def task_type(task: str) -> Type:
  """The type of a task given by name, e.g. 'count_digit(3)' or 'count_digit'."""
  kind = task.split("(")[0]
  if kind not in TASK_TYPES:
    raise KeyError(f"unknown task {task!r}; the tasks are {', '.join(TASK_TYPES)}")
  return TASK_TYPES[kind]


@dataclasses.dataclass(frozen=True)
class PaperProgram:
  """One program the paper prints.

  Attributes:
    table: the LaTeX label of the table or figure, e.g. 'tab:CS1Progs', 'fig:GS2Progs-main'.
    sequence: 'cs1', 'cs2', 'cs3', 'ss', 'gs1', 'gs2', or 'ls1'..'ls5' (the five LS instantiations).
    algorithm: 'top-down' or 'evolutionary'.
    task_number: 1-based position of the task in its sequence.
    task: the task, e.g. 'recognize_digit(d1)', 'count_digit(7)'.
    rank: 1, 2 or 3.
    score: the test score as printed, e.g. '0.38 RMSE', '1% CE'.
    text: the program in plain text, as the paper writes it.
  """
  table: str
  sequence: str
  algorithm: str
  task_number: int
  task: str
  rank: int
  score: str
  text: str

  @property
  def program(self) -> Program:
    return parse(self.text)

  @property
  def type(self) -> Type:
    return task_type(self.task)

  @property
  def library_table(self) -> str:
    """The table whose library types this program: its own, or for a program quoted in the main
    text, its sequence's top-down table."""
    return self.table.replace("text:", "tab:") if self.table.startswith("text:") else self.table


_TSV_COLUMNS = ("table", "sequence", "algorithm", "task_number", "task", "rank", "score", "text")


@functools.cache
def paper_programs() -> tuple[PaperProgram, ...]:
  """Every program the paper prints, in the paper's order (tables, tasks, ranks)."""
  text = importlib.resources.files("hx.lang").joinpath("paper_programs.tsv").read_text("utf-8")
  rows = []
  for line in text.splitlines()[1:]:
    fields = dict(zip(_TSV_COLUMNS, line.split("\t")))
    rows.append(PaperProgram(**{**fields, "task_number": int(fields["task_number"]),
                                "rank": int(fields["rank"])}))
  return tuple(rows)


def paper_tables() -> tuple[str, ...]:
  """The labels of the tables (and the main-text figure) that print programs, in order."""
  return tuple(dict.fromkeys(p.table for p in paper_programs()))


def default_type_variables(types: dict[str, Type]) -> dict[str, Type]:
  """Fixes the type variables left in fresh functions' types by the paper's conventions.

  A variable that is the result of a function from an image is `FEATURES`; any other is
  `Tensor<bool>[1]`. Args and result: fresh function name -> type.
  """
  mapping: dict[str, Type] = {}
  for t in types.values():
    args, result = function_parts(t)
    if len(args) == 1 and is_image(args[0]) and isinstance(result, TypeVar):
      mapping.setdefault(result.name, FEATURES)
  flag = parse_type("Tensor<bool>[1]")
  out = {}
  for name, t in types.items():
    t = substitute(t, mapping)
    out[name] = substitute(t, {v: flag for v in type_variables(t)})
  return out


@functools.cache
def paper_library(table: str) -> dict[str, Type]:
  """The type of every neural function the programs of `table` define or use, by name.

  Raises HxTypeError if a program of the table does not type-check (none does not).
  """
  library: dict[str, Type] = {}
  by_task: dict[int, list[PaperProgram]] = {}
  for p in paper_programs():
    if p.table == table and not table.startswith("text:"):
      by_task.setdefault(p.task_number, []).append(p)
  if not by_task:
    raise KeyError(f"no paper table {table!r}; the tables are {', '.join(paper_tables())}")
  for number in sorted(by_task):
    learned: dict[str, Type] = {}
    for p in by_task[number]:
      typing = infer(p.program, library, p.type)
      if p.rank == 1:
        learned = default_type_variables(typing.fresh)
    library.update(learned)
  return library


def paper_library_before(table: str, task_number: int) -> dict[str, Type]:
  """The library when task `task_number` of `table` starts, if each earlier task of the table kept the
  functions of its rank-1 program: name -> type (from `paper_library`), in the order they were added.

  A task's functions are added in pre-order of the program (outermost first), as hx's `Library.add` and
  the authors' code (capergroup/houdini, `TaskSeq.update_library`) add them; the top-down search tries
  library functions in this order."""
  full = paper_library(table)
  library: dict[str, Type] = {}
  for p in paper_programs():
    if p.table == table and p.rank == 1 and p.task_number < task_number:
      library.update({n: full[n] for n in fresh_names(p.program)})
  return library


# --- Extraction from the paper's LaTeX ---------------------------------------------------------

_MACROS = {
    r"\composec": "compose", r"\mapc": "map", r"\foldc": "fold", r"\convc": "conv",
    r"\mapl": "map_l", r"\mapg": "map_g", r"\foldl": "fold_l", r"\foldg": "fold_g",
    r"\convl": "conv_l", r"\convg": "conv_g", r"\circ": "∘",
}
_TASKS = {
    "recogdigit": "recognize_digit", "isdigit": "recognize_digit", "countdigit": "count_digit",
    "counttoy": "count_toy", "istoy": "recognize_toy", "classifydigit": "classify_digit",
    "sumdigits": "sum_digits", "regressspeed": "regress_speed", "regressmnist": "regress_mnist",
    "shortestpathstreet": "shortest_path_street", "shortestpathmnist": "shortest_path_mnist",
}


def latex_program_to_text(cell: str) -> str:
  """The paper's LaTeX for a program, e.g. `$\\composec$(nn\\_cs1\\_1, ...)`, as plain text."""
  s = cell.replace(r"\_", "_")
  s = re.sub(r"\\mathrm\{([^{}]*)\}", r"\1", s)
  for macro, text in sorted(_MACROS.items(), key=lambda kv: -len(kv[0])):
    s = re.sub(re.escape(macro) + r"(?![A-Za-z])", text, s)
  s = s.replace("$", "").replace("~", " ")
  return " ".join(s.split())


def _task_from_latex(cell: str) -> str | None:
  m = re.search(r"\\(" + "|".join(_TASKS) + r")(?:\{([^{}]*)\})?", cell)
  if m is None:
    return None
  name = _TASKS[m.group(1)]
  return f"{name}({m.group(2).replace('_', '')})" if m.group(2) is not None else name


def _sequence_from_label(label: str) -> tuple[str, str]:
  m = re.match(r"(?:tab|fig):([A-Z]+[0-9]?)Progs(Evo)?", label)
  if m is None:
    raise ValueError(f"not a program table label: {label!r}")
  return m.group(1).lower(), "evolutionary" if m.group(2) else "top-down"


def programs_from_latex(tex: str) -> list[PaperProgram]:
  """Extracts the programs of every program table (and the GS2 figure) of the paper's LaTeX."""
  out = []
  for env in re.finditer(r"\\begin\{(table\*|figure\*)\}(.*?)\\end\{\1\}", tex, re.S):
    body = env.group(2)
    label = re.search(r"\\label\{((?:tab|fig):[A-Z0-9]+Progs[^}]*)\}", body)
    if label is None:
      continue
    sequence, algorithm = _sequence_from_label(label.group(1))
    tabular = body[body.index(r"\begin{tabular}"):]
    rows = tabular.split(r"\tabularnewline")[1:]  # the first row is the header
    task_number, task = 0, None
    for row in rows:
      row = row.replace(r"\hline", " ")
      cells = row.split("&")
      if len(cells) < 3:
        continue
      m = re.search(r"Task\s*(\d+):", cells[0])
      if m:
        task_number, task = int(m.group(1)), _task_from_latex(cells[0])
      ranked = re.match(r"\s*(\d)\.\s*(.*)", cells[1], re.S)
      if ranked is None:  # "No Solution"
        continue
      out.append(PaperProgram(
          table=label.group(1), sequence=sequence, algorithm=algorithm, task_number=task_number,
          task=_as_defined(sequence, task_number, task), rank=int(ranked.group(1)),
          score=_score_from_latex(cells[2]),
          text=latex_program_to_text(ranked.group(2))))
  out.extend(_programs_in_text(tex, out))
  return out


LS_TOY_COUNTS = (2, 5, 7)
"""The LS tasks that count toys: the paper's definition of LS (and the authors' code, capergroup/houdini,
`HOUDINI/Eval/CS_LS.py`) make tasks 2, 5 and 7 count_toy, while its LS program tables label them
count_digit (LS1 task 7's program reuses task 3's toy recognizer). The tables' tasks follow the
definition; both kinds have the same type, so no program's typing changes."""


def _as_defined(sequence: str, task_number: int, task: str) -> str:
  """`task` as the sequence's definition names it (see `LS_TOY_COUNTS`)."""
  if sequence.startswith("ls") and task_number in LS_TOY_COUNTS and task.startswith("count_digit"):
    return "count_toy" + task[len("count_digit"):]
  return task


def _score_from_latex(cell: str) -> str:
  s = re.sub(r"\\error\{([^{}]*)\}", r"\1% CE", cell)
  s = re.sub(r"\\rmse\{([^{}]*)\}", r"\1 RMSE", s)
  return " ".join(s.replace("{", "").replace("}", "").split())


def _programs_in_text(tex: str, tables: list[PaperProgram]) -> list[PaperProgram]:
  """The programs the main text quotes ("the top program for Task 3: $...$. Here, ..."); each
  belongs to the sequence named last before it, and its task is that sequence's top-down task."""
  out = []
  for m in re.finditer(r"top program for Task (\d+)(?: is)?:\s*(.*?)\.\s+Here", tex, re.S):
    sequence = re.findall(r"\b(CS[123]|SS|GS[12]|LS)\b", tex[:m.start()])[-1].lower()
    number = int(m.group(1))
    task = next(p.task for p in tables if p.sequence == sequence and p.task_number == number)
    out.append(PaperProgram(
        table=f"text:{sequence.upper()}Progs", sequence=sequence, algorithm="top-down",
        task_number=number, task=task, rank=1, score="", text=latex_program_to_text(m.group(2))))
  return out


def write_tsv(programs: list[PaperProgram], path: str) -> None:
  """Writes `programs` in the format `paper_programs` reads."""
  with open(path, "w", encoding="utf-8") as f:
    f.write("\t".join(_TSV_COLUMNS) + "\n")
    for p in programs:
      f.write("\t".join(str(getattr(p, c)) for c in _TSV_COLUMNS) + "\n")

