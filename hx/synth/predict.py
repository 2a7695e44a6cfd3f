"""What was learned, used: a trained program applied to new arrays (`Predictor`), from a synthesis
(`hx.synth.frontier.Frontier.predictor`) or from a run directory loaded later (`hx.synth.saved_run`:
`hx.load_run`).

    frontier = hx.synthesize(task)
    predict = frontier.predictor()                # the winner; rank=2 for the runner-up
    y = predict(x_new)                            # the inputs' layout is hx.Task.from_arrays'

A `Predictor` takes inputs in the layout `hx.Task.from_arrays` takes for its type's argument (images
(n, C, H, W), vectors (n, d), lists as n arrays (L_i, ...), graphs as n dicts), checked as a task's are
(a wrong shape is a `ValueError` naming the layout the type needs), and returns the program's outputs in
inference mode (batch norm's running statistics, no dropout), as the validation and test splits are
scored: a `Tensor<bool>[1]` output gives probabilities (n, 1) (a label is `y > 0.5`), a `Tensor<bool>[k]`
one class probabilities (n, k) (a class is `y.argmax(1)`), a real one its values (n, m..), and a list or
graph output one array (L_i, ...) per example, its real elements or nodes only. Examples go through one
jitted function in batches of `batch_size` (the last one padded with the first example, so that a few
batch shapes serve every call).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from hx.lang import program as P
from hx.lang.infer import infer
from hx.lang.types import GraphType, ListType, Type, function_parts

if TYPE_CHECKING:
  import chex
  import jax

  from hx.compile.lower import CompiledProgram
  from hx.compile.modules import ModuleConfig
  from hx.lang.values import Batch
  from hx.synth.library import Library

__all__ = ["Predictor", "predictor", "DEFAULT_BATCH"]

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
