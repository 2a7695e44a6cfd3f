"""What was learned, used: a trained program applied to new arrays (`Predictor`), from a synthesis or from
a run directory loaded later (`load_run`).

    result = hx.synthesize(task)
    predict = result.predictor()                  # the winner; rank=2 for the runner-up
    y = predict(x_new)                            # the inputs' layout is hx.Task.from_arrays'

    run = hx.load_run("runs/squares")             # a run_sequence directory, or an evaluation's
    print(run)                                    # each task's winning program over the run's library
    y = run.predictor("count_top")(lists)

A `Predictor` takes inputs in the layout `hx.Task.from_arrays` takes for its type's argument (images
(n, C, H, W), vectors (n, d), lists as n arrays (L_i, ...), graphs as n dicts), checked as a task's are
(a wrong shape is a `ValueError` naming the layout the type needs), and returns the program's outputs in
inference mode (batch norm's running statistics, no dropout), as the validation and test splits are
scored: a `Tensor<bool>[1]` output gives probabilities (n, 1) (a label is `y > 0.5`), a `Tensor<bool>[k]`
one class probabilities (n, k) (a class is `y.argmax(1)`), a real one its values (n, m..), and a list or
graph output one array (L_i, ...) per example, its real elements or nodes only. Examples go through one
jitted function in batches of `batch_size` (the last one padded with the first example, so that a few
batch shapes serve every call).

A run directory (`hx.synth.run_directory`) holds the records of every task, the library after each task
and the run's settings: `load_run` reads the last library saved, each task's winning program as the
library names its functions (every function of the program frozen in the library: `lib.nn_<seq>_<k>`),
and the module settings the run compiled with. Its programs need nothing else: no task, no data.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from hx.lang import program as P
from hx.lang.infer import infer
from hx.lang.parser import parse
from hx.lang.types import GraphType, ListType, Type, function_parts, parse_type

if TYPE_CHECKING:
  import os

  import chex
  import jax

  from hx.compile.lower import CompiledProgram
  from hx.compile.modules import ModuleConfig
  from hx.jsonread import JsonValue
  from hx.lang.values import Batch
  from hx.synth.library import Library

__all__ = ["Predictor", "RunProgram", "SavedRun", "predictor", "result_predictor", "load_run"]

DEFAULT_BATCH = 1024
"""Examples per jitted call of a predictor."""


@dataclasses.dataclass(frozen=True, eq=False)
class Predictor:
  """A trained program as a function of new inputs (module docstring): `predictor(inputs)`.

  Attributes:
    program: the program, as its library or ranking names it.
    type: its type `A -> B`; `inputs` take `hx.Task.from_arrays`' layout for A.
    compiled: the `hx.compile.CompiledProgram`.
    variables: the trained variables of its fresh functions ({"params": tuple, "batch_stats": tuple};
      empty tuples where every function is the library's).
    frozen: its library functions' variables (`hx.compile.lower.make_frozen`).
    batch_size: examples per jitted call.
  """
  program: P.Program
  type: Type
  compiled: CompiledProgram = dataclasses.field(repr=False)
  variables: chex.ArrayTree = dataclasses.field(repr=False)
  frozen: chex.ArrayTree = dataclasses.field(repr=False)
  batch_size: int = DEFAULT_BATCH

  def __post_init__(self):
    import jax

    from hx.lang.values import ELEMENT_BATCHES, gather

    if not isinstance(self.batch_size, int) or isinstance(self.batch_size, bool) or self.batch_size < 1:
      raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}")
    apply = self.compiled.apply

    def run(variables: chex.ArrayTree, frozen: chex.ArrayTree, table: jax.Array, inputs: Batch) -> jax.Array:
      y = apply(variables, frozen, gather(table, inputs), train=False)
      return y.values if isinstance(y, ELEMENT_BATCHES) else y

    object.__setattr__(self, "_run", jax.jit(run))

  @property
  def input_type(self) -> Type:
    return function_parts(self.type)[0][0]

  @property
  def output_type(self) -> Type:
    return function_parts(self.type)[1]

  def __call__(self, inputs: Any) -> np.ndarray | list[np.ndarray]:
    """The program's outputs on `inputs` (n examples in `hx.Task.from_arrays`' layout for the input type).

    Returns:
      float32 (n, *output shape) for a tensor output; for a list or graph output a list of n arrays
      (L_i, *element shape), one row per real element or node of the example's input.

    Raises:
      ValueError: inputs that do not fit the input type (the message names the layout it needs).
    """
    import jax

    from hx.data.task import inputs_from_arrays
    from hx.lang.values import ELEMENT_BATCHES, num_examples, size_bucket, take

    table, index = inputs_from_arrays(f"predicting ({self.type})", self.input_type, inputs)
    n = num_examples(index)
    chunk = min(self.batch_size, size_bucket(n, minimum=1))
    device_table = jax.device_put(table)
    out = []
    for start in range(0, n, chunk):
      idx = np.arange(start, start + chunk)
      idx[idx >= n] = 0  # padding: the first example again, dropped below
      y = self._run(self.variables, self.frozen, device_table, take(index, idx))
      out.append(np.asarray(y)[:min(chunk, n - start)])
    values = np.concatenate(out)
    if not isinstance(self.output_type, (ListType, GraphType)):
      return values
    counts = np.asarray(index.mask).sum(axis=1) if isinstance(index, ELEMENT_BATCHES) else None
    return [values[i, :int(counts[i])] for i in range(n)]

  def __repr__(self) -> str:
    return f"Predictor({self.program} : {self.type})"


def predictor(program: P.Program, library: Library, *, fresh_types: Mapping[str, Type] | None = None,
              variables: chex.ArrayTree | None = None, module_config: ModuleConfig | None = None,
              batch_size: int = DEFAULT_BATCH) -> Predictor:
  """A `Predictor` of `program` over `library` (an `hx.Library`), with its fresh functions' trained
  `variables` and types if it has any; `module_config` the `hx.compile.ModuleConfig` it was trained with
  (default the paper's: the combinators' settings, e.g. conv_l's window, and the fresh functions' sizes).

  Raises:
    ValueError: fresh functions without types or variables, or a library function `library` lacks.
  """
  from hx.compile.lower import compile_program, make_frozen
  from hx.compile.modules.config import ModuleConfig

  fresh_types = dict(fresh_types or {})
  missing = [n for n in P.library_names(program) if n not in library]
  if missing:
    raise ValueError(f"{program} calls {', '.join(missing)}, which the library does not hold")
  if P.fresh_names(program) and variables is None:
    raise ValueError(f"{program} has fresh functions ({', '.join(P.fresh_names(program))}): give their "
                     "trained variables")
  t = infer(program, library.types(), fresh_types=fresh_types).type
  compiled = compile_program(program, fresh_types, module_config or ModuleConfig(), library.specs())
  if variables is None:
    variables = {"params": (), "batch_stats": ()}
  return Predictor(program, t, compiled, variables, make_frozen(compiled, library.variables()), batch_size)


def result_predictor(result: Any, rank: int = 1, batch_size: int = DEFAULT_BATCH) -> Predictor:
  """The `Predictor` of the candidate ranked `rank` (1: the winner) of a `SynthesisResult`.

  Raises:
    ValueError: no such rank, or one that did not train or kept no variables (beyond the synthesis's
      `keep`).
  """
  ranked = result.ranked
  if not 1 <= rank <= len(ranked):
    raise ValueError(f"{result.task} ranked {len(ranked)} candidates; there is no rank {rank}")
  r = ranked[rank - 1]
  if r.status != "trained":
    raise ValueError(f"rank {rank} of {result.task}, {r.program}, did not train ({r.status}: {r.reason})")
  if r.variables is None:
    raise ValueError(f"rank {rank} of {result.task}, {r.program}, kept no variables: a synthesis keeps "
                     "those of its `keep` best candidates only")
  return predictor(r.program, result.library, fresh_types=r.fresh_types, variables=r.variables,
                   module_config=result.module_config, batch_size=batch_size)


# ---------------------------------------------------------------------------------------------------
# A run directory, loaded.

@dataclasses.dataclass(frozen=True)
class RunProgram:
  """One task's winning program in a saved run.

  Attributes:
    index: the task's place in the sequence (1-based).
    task: the task's name.
    type: the task's type.
    program: the winner as its library names its functions, each one frozen (`lib.nn_<seq>_<k>`).
    metric: the task's metric ("error", % of examples, or "rmse").
    validation, test: its recorded scores at the fraction the library was extended from.
    fraction: that fraction.
  """
  index: int
  task: str
  type: Type
  program: P.Program
  metric: str
  validation: float
  test: float | None
  fraction: float

  def __str__(self) -> str:
    test = "-" if self.test is None else f"{self.test:.4g}"
    return (f"{self.index:2d}. {self.task}: {self.program}  ({self.metric}: val {self.validation:.4g}, "
            f"test {test})")


@dataclasses.dataclass(frozen=True, eq=False)
class SavedRun:
  """A HOUDINI run directory loaded (`load_run`): its library and each task's winning program over it.

  Attributes:
    directory: the run directory (DIR/records, DIR/libraries, DIR/settings.json).
    sequence: the sequence's name.
    library: the library after the last task saved.
    programs: each finished task's winning program, in task order (a task whose search trained nothing
      has none).
    records: every record read (one per task and fraction), as JSON values.
    module_config: the module settings the run compiled its programs with.
  """
  directory: Path
  sequence: str
  library: Library
  programs: tuple[RunProgram, ...]
  records: tuple[dict, ...] = dataclasses.field(repr=False)
  module_config: ModuleConfig = dataclasses.field(repr=False)

  def program(self, task: str | int) -> RunProgram:
    """The winning program of `task`: its name, or its place in the sequence (1-based).

    Raises:
      KeyError: no finished task of that name or number (the message lists them).
    """
    for p in self.programs:
      if task in (p.task, p.index) and not isinstance(task, bool):
        return p
    known = ", ".join(f"{p.index} ({p.task})" for p in self.programs) or "none"
    raise KeyError(f"run {self.directory} has no program for task {task!r}; its tasks with one: {known}")

  def predictor(self, task: str | int, batch_size: int = DEFAULT_BATCH) -> Predictor:
    """The `Predictor` of `task`'s winning program (`program`)."""
    p = self.program(task)
    return predictor(p.program, self.library, module_config=self.module_config, batch_size=batch_size)

  def __str__(self) -> str:
    lines = [f"run {self.directory} ({self.sequence}): {len(self.library)} library functions"]
    return "\n".join(lines + [f"  {p}" for p in self.programs])


def load_run(directory: os.PathLike | str) -> SavedRun:
  """The HOUDINI run in `directory`, loaded: its last saved library, each finished task's winning program
  over it, its records and module settings (module docstring).

  Args:
    directory: a `run_sequence` directory (DIR/settings.json, DIR/records, DIR/libraries), or an
      evaluation's (`hx.evaluate`) holding exactly one HOUDINI run (DIR/houdini_<strategy>/seed_<s>);
      with several, name one of them.

  Raises:
    ValueError: no run there, or several (naming them), or no library saved yet.
    hx.synth.LibraryError / hx.synth.jsonfiles.JsonFileError: a library or record that cannot be read.
    hx.compile.UnregisteredModuleError: the library holds a user's module not registered in this process
      (`hx.compile.register_module` it first).
  """
  from hx.compile.modules.config import ModuleConfig
  from hx.synth.jsonfiles import from_jsonable, read_record, read_settings
  from hx.synth.library import Library
  from hx.synth.run_directory import SETTINGS_FILE

  root = _run_directory(Path(directory))
  settings, _ = read_settings(root / SETTINGS_FILE)
  config = from_jsonable(ModuleConfig, settings.get("module_config", {}),
                         f"{root / SETTINGS_FILE}: settings.module_config")
  libraries = sorted((root / "libraries").glob("after_*"))
  if not libraries:
    raise ValueError(f"run {root} has no library saved yet: it finishes its first task first")
  library = Library.load(libraries[-1])
  done = int(libraries[-1].name.split("_")[-1])
  records = [read_record(f) for f in sorted((root / "records").glob("*/fraction_*.json"))]
  programs = []
  for index in range(1, done + 1):
    mine = [r for r in records if r["task_index"] == index]
    if not mine:
      raise ValueError(f"run {root} saved a library after task {index} but holds no record of it")
    rec = max(mine, key=lambda r: r["fraction"])  # the library is extended from the largest fraction's
    best = rec["ranked"][0] if rec["ranked"] else None
    if best is None or best["status"] != "trained":
      continue
    programs.append(RunProgram(index, rec["task"], parse_type(rec["type"]),
                               P.as_library(parse(best["named"] or best["program"])), rec["metric"],
                               float(best["val"]), _score(best["test"]), float(rec["fraction"])))
  name = settings.get("sequence", records[0]["sequence"] if records else root.name)
  return SavedRun(root, name, library, tuple(programs), tuple(records), config)


def _score(x: JsonValue) -> float | None:
  return None if x is None else float(x)


def _run_directory(path: Path) -> Path:
  """`path` if it holds a HOUDINI run, else its one HOUDINI run (DIR/houdini_*/seed_*)."""
  if (path / "libraries").is_dir() or (path / "records").is_dir():
    return path
  runs = sorted(p for p in path.glob("houdini_*/seed_*") if (p / "records").is_dir())
  if len(runs) == 1:
    return runs[0]
  if not runs:
    raise ValueError(f"{path} holds no HOUDINI run (no records/ there, nor under houdini_*/seed_*/)")
  raise ValueError(f"{path} holds {len(runs)} HOUDINI runs; load one of them: "
                   f"{', '.join(str(r) for r in runs)}")

