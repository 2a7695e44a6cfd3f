"""The task: a program type with its data (`Task`), and a task from a user's own arrays
(`Task.from_arrays`, `task_from_arrays`), which checks them against the program type and lays them out as
the paper's tasks (`hx.data.tasks`) are laid out, so that they run everywhere a built-in task does
(`hx.synthesize`, `hx.run_sequence`, the baselines, the evaluation and its report).

Each split is a pair `(inputs, targets)` of n examples. By the task's type `A -> B`:

  inputs, A = Tensor<a>[m1]...[mk]   an array (n, m1, ..., mk); images are channel first (n, C, H, W).
          A = List<Tensor<..>[m..]>   a sequence of n arrays (L_i, m..) of any lengths L_i >= 1 (ragged),
                                      an array (n, L, m..) (every list of length L), or an
                                      `hx.lang.values.ListBatch` (values (n, L, m..), mask (n, L) whose
                                      True entries are a prefix of each row).
          A = Graph<Tensor<..>[m..]>  a sequence of n graphs, each a dict with "nodes" (N_i, m..) and either
                                      "edges" (E_i, 2) integer (sender, receiver) pairs, directed (give
                                      both directions for an undirected edge), or "neighbours", per node
                                      the list of its neighbours (node u then receives from each of them).
  targets, B = Tensor<real>[m..]     float (n, m..); (n,) where B is Tensor<real>[1] is read as (n, 1).
          B = Tensor<bool>[1]         0/1 labels, (n, 1) or (n,).
          B = Tensor<bool>[k], k > 1  class indices (n,) in 0..k-1 (not one-hot).
          B = List<T> / Graph<T>      per example an array (L_i, ...) of T's targets as above, one per list
                                      element / node of the input (or an array (n, L, ...) padded to the
                                      input's longest length).

The loss and metric follow from B (`hx.lang.objectives.objective_for_type`); a `loss` or `metric` given
must agree with it. Inputs are used as given (hx does not normalise them); every array must be finite.

Layout (as `hx.data.tasks`): the elements of every split (tensor inputs, list elements, graph nodes) are
concatenated once into the task's float32 `table` (m, m1, ..., mk), the only copy of the user's data hx
makes, and each split's inputs index it: int32 (n,) for tensors, a `ListBatch` of int32 (n, L) indices
(L the split's longest list) for lists, an `EdgeGraphBatch` padded to size buckets
(`hx.lang.values.size_bucket`) for graphs. Targets are float32 (int32 class indices), padded per
element where B is a list or graph.

Every check runs before anything is compiled, and a failure is one `ValueError` naming the task, the
split, the array and the problem.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

import numpy as np

from hx.lang.objectives import objective_for_type
from hx.lang.types import GraphType, ListType, TensorType, Type, function_parts, parse_type, type_variables
from hx.lang.values import EdgeGraphBatch, ListBatch, Split, check_graphs, index_dtype, rows, size_bucket

if TYPE_CHECKING:
  import numpy.typing as npt

  from hx.lang.objectives import Objective
  from hx.lang.values import Array, Inputs

__all__ = ["Task", "ArrayTaskSpec", "task_from_arrays", "inputs_from_arrays", "SPLITS"]

SPLITS = ("train", "val", "test")

ArrayInputs = Union["npt.ArrayLike", ListBatch, Sequence[Mapping[str, "npt.ArrayLike"]]]
"""A split's inputs as a user gives them (module docstring): an array (n, m1, ..., mk), a sequence of n
arrays (L_i, m..) or a ListBatch for lists, a sequence of n graphs (dicts of "nodes" and "edges" or
"neighbours") for graphs."""


@dataclasses.dataclass(frozen=True, eq=False)
class Task:
  """A task with its data.

  Attributes:
    spec: what task it is: a paper task's `hx.data.TaskSpec`, a user's `ArrayTaskSpec`.
    name: the task's name; tasks on a rendered stand-in say so, e.g.
      "count_toy(2) [synthetic: smallnorb-synthetic]".
    type: its program type.
    loss, metric, metric_component: see `KINDS`; `objective` combines them for training.
    table: float32 (m, *element shape) the splits' inputs index: a paper task's normalized images
      (m, C, H, W), a user's task its elements as given.
    train, val, test: the splits (`hx.lang.values.Split`), whose integer inputs index `table`'s rows
      (checked when the task is made: a gather would clamp an index past the table's end).
    datasets: names of the image sets used, e.g. ("mnist-5k",) or ("gtsrb-synthetic",).
    synthetic: True if any image comes from a rendered stand-in.
    fraction: the share of the full training split this task trains on.
  """
  spec: Any
  name: str
  type: Type
  loss: str
  metric: str
  metric_component: int | None
  table: np.ndarray
  train: Split
  val: Split
  test: Split
  datasets: tuple[str, ...]
  synthetic: bool
  fraction: float = 1.0

  def __post_init__(self):
    # A task made by hand (not through `from_arrays`) is held to the same layout: what Tune would
    # otherwise broadcast, clamp or fail on deep inside a trace.
    args, output = function_parts(self.type)
    arg = args[0] if len(args) == 1 else None
    elem = arg.elem if isinstance(arg, (ListType, GraphType)) else arg
    if isinstance(elem, TensorType) and tuple(self.table.shape[1:]) != elem.shape:
      raise ValueError(f"task {self.name!r}: its table holds elements of shape "
                       f"{tuple(self.table.shape[1:])}, but its type {self.type} takes {elem}")
    for split in SPLITS:
      at = f"task {self.name!r}, {split} split"
      inputs = getattr(self, split).inputs
      if arg is not None:
        _check_input_kind(at, arg, inputs)
      _check_indices(at, inputs, len(self.table))
      if isinstance(output, TensorType):
        _check_tensor_targets(at, output, getattr(self, split).targets, _count(inputs))

  @classmethod
  def from_arrays(cls, name: str, type: str | Type, train: tuple[ArrayInputs, npt.ArrayLike],
                  val: tuple[ArrayInputs, npt.ArrayLike], test: tuple[ArrayInputs, npt.ArrayLike],
                  **options: Any) -> Task:
    """A task on a user's own arrays: `task_from_arrays`, whose docstring gives the `options`
    (metric_component, loss, metric, training, dataset); this module's, the layout in full.

    Each split is (inputs, targets) of n examples; by the type `A -> B`: inputs (n, m1, ..., mk) for a
    tensor A (images channel first, (n, C, H, W)); n arrays (L_i, m..) of any lengths for a `List<...>`;
    n dicts {"nodes": (N_i, m..), "edges": (E_i, 2) or "neighbours": lists} for a `Graph<...>`. Targets
    float (n, m..) for `Tensor<real>[m..]` ((n,) read as (n, 1) for `Tensor<real>[1]`); 0/1 labels (n,)
    or (n, 1) for `Tensor<bool>[1]`; class indices (n,) for `Tensor<bool>[k]`; per element / node arrays
    for a list or graph output.

        task = hx.Task.from_arrays("is_three", "Tensor<real>[1][8][8] -> Tensor<bool>[1]",
                                   (x_train, y_train), (x_val, y_val), (x_test, y_test))

    Raises:
      ValueError: an array that does not fit the type (naming the split, the array and the problem).
    """
    return task_from_arrays(name, type, train, val, test, **options)

  def __repr__(self) -> str:
    return f"Task({self.summary()})"

  @property
  def objective(self) -> Objective:
    """The `hx.lang.objectives.Objective` to train and score this task with: the loss and metric of its
    output type, scored on the metric component, per element (masked) for list and graph outputs."""
    _, output = function_parts(self.type)
    objective = objective_for_type(output, metric_component=self.metric_component)
    if (objective.loss, objective.metric) != (self.loss, self.metric):
      raise AssertionError(f"{self.name}: KINDS says {self.loss}/{self.metric}, its type "
                           f"{objective.loss}/{objective.metric}")
    return objective

  def with_fraction(self, fraction: float) -> Task:
    """This task on the first `fraction` of its (randomly ordered) training examples; nested: the
    examples of a smaller fraction are among those of a larger one."""
    if not 0 < fraction <= 1:
      raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    n_full = _num_examples(self.train)
    if self.fraction != 1.0:
      raise ValueError("take fractions of the full task, not of a fraction")
    k = max(1, int(round(fraction * n_full)))
    train = _take(self.train, k)
    return dataclasses.replace(self, train=train, fraction=fraction)

  def summary(self) -> str:
    sizes = "/".join(str(_num_examples(s)) for s in (self.train, self.val, self.test))
    return (f"{self.name} : {self.type}; loss {self.loss}, metric {self.metric}; train/val/test {sizes}; "
            f"table {tuple(self.table.shape)} from {', '.join(self.datasets)}")


def _check_input_kind(at: str, arg: Type, inputs: Inputs) -> None:
  """Refuses inputs of another kind than the argument type `arg` takes: (n,) row indices for a tensor, a
  `ListBatch` for a list, a graph batch for a graph."""
  if isinstance(arg, ListType) and not isinstance(inputs, ListBatch):
    raise ValueError(f"{at}: a {arg} argument takes a hx.lang.values.ListBatch of row indices (values (n, "
                     f"L), mask (n, L)), got {_describe(inputs)}")
  if isinstance(arg, GraphType) and isinstance(inputs, (np.ndarray, ListBatch)):
    raise ValueError(f"{at}: a {arg} argument takes a graph batch of row indices, got {_describe(inputs)}")
  if isinstance(arg, TensorType) and (not isinstance(inputs, np.ndarray) or inputs.ndim != 1):
    raise ValueError(f"{at}: a {arg} argument takes (n,) row indices into the table, got {_describe(inputs)}")


def _check_tensor_targets(at: str, output: TensorType, targets: Array, n: int) -> None:
  """Refuses targets that are not one per example in the layout Tune scores `output` with: float (n,
  *shape) for real and Tensor<bool>[1] outputs (0/1 labels), integer class indices (n,) for
  Tensor<bool>[k]."""
  t = np.asarray(targets)
  classes = output.atom == "bool" and output.shape != (1,)
  want = (n,) if classes else (n, *output.shape)
  if t.shape != want:
    raise ValueError(f"{at}: targets have shape {t.shape}, not {want} as {output} needs for {n} examples"
                     + ("; (n,) targets of a Tensor<...>[1] are read as (n, 1) by Task.from_arrays"
                        if t.shape == (n,) and output.shape == (1,) else ""))
  if classes and not np.issubdtype(t.dtype, np.integer):
    raise ValueError(f"{at}: targets of {output} are class indices (integers in 0..{output.shape[-1] - 1}), "
                     f"got {t.dtype}")


def _check_indices(at: str, inputs: Inputs, size: int) -> None:
  """Refuses integer inputs (or a batch's `values`) outside 0..size-1: the table's rows."""
  index = np.asarray(getattr(inputs, "values", inputs))
  if not np.issubdtype(index.dtype, np.integer):
    raise ValueError(f"{at}: inputs must be integer row indices into the task's table, got {index.dtype}")
  if index.size and (index.min() < 0 or index.max() >= size):
    raise ValueError(f"{at}: inputs index rows {index.min()}..{index.max()} of a table of {size} rows "
                     f"(0..{size - 1})")


def _num_examples(split: Split) -> int:
  return len(split.targets)


def _take(split: Split, k: int) -> Split:
  """The first k examples (graphs keep sharing their layouts)."""
  return Split(rows(split.inputs, slice(0, k)), split.targets[:k])


@dataclasses.dataclass(frozen=True)
class ArrayTaskSpec:
  """A task declared from a user's arrays, without its data (the counterpart of `TaskSpec`).

  Attributes:
    name: the task's name, e.g. "is_three".
    type: its program type.
    loss, metric, metric_component: as `hx.data.KINDS` gives them for the paper's tasks; from the output
      type.
    training: (TuneConfig field, value) pairs this task trains with, e.g. (("epochs", 5),); the other
      fields are `hx.compile.TuneConfig`'s defaults (`hx.presets.task_tune_config` builds it and checks
      the fields).
  """
  name: str
  type: Type
  loss: str
  metric: str
  metric_component: int | None = None
  training: tuple[tuple[str, object], ...] = ()

  cls = None  # takes no class argument, as the paper's classify_digit

  @property
  def kind(self) -> str:
    """The key records, training settings and library names use: the name as an identifier (lower case,
    other characters as "_"), e.g. "is_three"."""
    return _identifier(self.name)

  def __str__(self) -> str:
    return f"{self.name} : {self.type}"


def _identifier(name: str) -> str:
  out = re.sub(r"[^0-9a-z_]", "_", name.lower()).strip("_") or "task"
  return out if not out[0].isdigit() else f"t_{out}"


def task_from_arrays(name: str, type: str | Type, train: tuple[ArrayInputs, npt.ArrayLike],
                     val: tuple[ArrayInputs, npt.ArrayLike], test: tuple[ArrayInputs, npt.ArrayLike], *,
                     metric_component: int | None = None, loss: str | None = None,
                     metric: str | None = None, training: Mapping[str, object] | None = None,
                     dataset: str = "user") -> Task:
  """A task on the user's arrays (the module docstring gives their layout per type).

  Args:
    name: the task's name (records and reports show it; library functions are named after its `kind`).
    type: the program type, as text ("Tensor<real>[1][8][8] -> Tensor<bool>[1]") or an `hx.Type`: one
      argument, a tensor, `List<tensor>` or `Graph<tensor>`, and a result of the same kinds.
    train, val, test: (inputs, targets) of each split; each split needs at least one example.
    metric_component: score the metric on this component of the output's last axis only (as the
      shortest-path tasks score the distance); the loss still uses every component.
    loss, metric: if given, checked against the output type's ("mse"/"rmse" for real outputs, "bce" or
      "ce" with "error" for bool ones).
    training: `hx.compile.TuneConfig` fields this task trains with (epochs, batch_size, learning_rate,
      patience, ...); the rest are TuneConfig's defaults. They are checked where the task's TuneConfig
      is built (`hx.presets.task_tune_config`: `hx.synthesize`, `EvalConfig.make`), before any training.
    dataset: the name the task's records give its data.

  Returns:
    An `hx.data.Task` whose `spec` is an `ArrayTaskSpec`, at fraction 1.

  Raises:
    hx.ParseError: the type's text does not parse (with line and column).
    ValueError: anything else that cannot work, in one line naming the split, the array and the problem.
  """
  where = f"task {name!r}"
  if not isinstance(name, str) or not name.strip():
    raise ValueError(f"a task needs a non-empty name, got {name!r}")
  t, arg, output = _task_type(where, type)
  objective = _objective(where, output, metric_component, loss, metric)
  training = _training(where, training)

  pairs = {"train": train, "val": val, "test": test}
  encoded, offset = [], 0
  for split, pair in pairs.items():
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
      raise ValueError(f"{where}: the {split} split must be an (inputs, targets) pair, got "
                       f"{_describe(pair)}")
    inputs, targets = pair
    at = f"{where}, {split} split"
    pieces, index, lengths = _inputs(at, arg, inputs, offset)
    offset += sum(len(p) for p in pieces)
    encoded.append((pieces, index, _targets(at, output, targets, lengths, _count(index))))
  # The one copy of the user's data: every split's elements, written once into a float32 table.
  elem = arg.elem if isinstance(arg, (ListType, GraphType)) else arg
  table = np.empty((offset, *elem.shape), np.float32)
  row = 0
  for piece in (p for pieces, _, _ in encoded for p in pieces):
    table[row:row + len(piece)] = piece
    row += len(piece)
  splits = [Split(index, targets) for _, index, targets in encoded]
  component = objective.metric_component  # an int, however the caller gave it
  spec = ArrayTaskSpec(name, t, objective.loss, objective.metric, component, tuple(sorted(training.items())))
  return Task(spec, name, t, objective.loss, objective.metric, component, table, *splits,
              datasets=(dataset,), synthetic=False)


def _task_type(where: str, type: str | Type) -> tuple[Type, Type, Type]:
  """(the task's type, its argument, its result), checked to be one a task of arrays can have."""
  if not isinstance(type, (str, *Type.__args__)):
    raise ValueError(f"{where}: the type must be text or an hx.Type, got {_describe(type)}")
  t = parse_type(type) if isinstance(type, str) else type
  args, output = function_parts(t)
  if type_variables(t):
    raise ValueError(f"{where}: the type {t} has type variables; give a concrete type")
  if len(args) != 1:
    raise ValueError(f"{where}: the type {t} must take exactly one argument (an example's input), not "
                     f"{len(args)}")
  (arg,) = args
  for role, x in (("input", arg), ("output", output)):
    elem = x.elem if isinstance(x, (ListType, GraphType)) else x
    if not isinstance(elem, TensorType):
      raise ValueError(f"{where}: the {role} type {x} is not a tensor, a List of tensors or a Graph of "
                       "tensors")
  if isinstance(output, (ListType, GraphType)) and output.__class__ is not arg.__class__:
    raise ValueError(f"{where}: a {output} output needs a {output.__class__.__name__[:-4]} input (one "
                     f"target per element), got {arg}")
  return t, arg, output


def _objective(where: str, output: Type, metric_component: int | np.integer | None, loss: str | None,
               metric: str | None) -> Objective:
  """The output type's objective, checked against the `loss`, `metric` and `metric_component` given."""
  elem_out = output.elem if isinstance(output, (ListType, GraphType)) else output
  if metric_component is not None:
    if not isinstance(metric_component, (int, np.integer)) or isinstance(metric_component, bool):
      raise ValueError(f"{where}: metric_component must be an integer (a component of {elem_out}), got "
                       f"{metric_component!r}")
    if not 0 <= metric_component < elem_out.shape[-1]:
      raise ValueError(f"{where}: metric_component {metric_component} is not a component of {elem_out}")
    metric_component = int(metric_component)
  objective = objective_for_type(output, metric_component=metric_component)
  for what, given, derived in (("loss", loss, objective.loss), ("metric", metric, objective.metric)):
    if given is not None and given != derived:
      raise ValueError(f"{where}: {what} {given!r} does not fit the output type {output} (its {what} is "
                       f"{derived!r})")
  return objective


def _training(where: str, training: Mapping[str, object] | None) -> dict[str, object]:
  """The training settings as a dict of TuneConfig field names (their values are checked where the
  TuneConfig is built, `hx.presets.task_tune_config`)."""
  try:
    out = dict(training or {})
  except (TypeError, ValueError):
    raise ValueError(f"{where}: training settings must be a mapping of TuneConfig fields, e.g. "
                     f"{{'epochs': 5}}, got {_describe(training)}") from None
  if not all(isinstance(k, str) for k in out):
    raise ValueError(f"{where}: training settings are named by text (TuneConfig fields), got "
                     f"{sorted(map(str, out))}")
  return out


def _describe(x: object) -> str:
  if isinstance(x, np.ndarray):
    return f"an array {x.shape} of {x.dtype}"
  return f"a {type(x).__name__}" + (f" of {len(x)}" if hasattr(x, "__len__") else "")


def _count(index: Inputs) -> int:
  return len(index.mask) if isinstance(index, (ListBatch, EdgeGraphBatch)) else len(index)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _array(at: str, what: str, x: npt.ArrayLike) -> np.ndarray:
  """x as a numeric array whose every value is finite in float32 (the precision hx trains in)."""
  try:
    a = np.asarray(x)
  except ValueError as err:  # ragged nested sequences
    raise ValueError(f"{at}: {what} is not an array ({err})") from None
  if np.iscomplexobj(a):
    raise ValueError(f"{at}: {what} has dtype {a.dtype}; give real numbers (float, int or bool)")
  if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
    raise ValueError(f"{at}: {what} has dtype {a.dtype}; give numbers (float, int or bool)")
  # min and max: NaN propagates through both and they make no temporary array the size of the data.
  floats = np.issubdtype(a.dtype, np.floating) and a.size
  if floats and not -_FLOAT32_MAX <= a.min() <= a.max() <= _FLOAT32_MAX:
    bad = np.argwhere(~(np.abs(a) <= _FLOAT32_MAX))[0]
    value = a[tuple(bad)]
    why = "every value must be finite" if not np.isfinite(value) else (
        f"every value must be finite in float32 (|x| <= {_FLOAT32_MAX:.3g}), the precision hx trains in")
    raise ValueError(f"{at}: {what} holds {value} at index {tuple(int(i) for i in bad)}; {why}")
  return a


def _examples(at: str, what: str, a: np.ndarray, per: str = "example") -> np.ndarray:
  """`a`, refused if it is a single value rather than one row per example (or `per` element)."""
  if a.ndim == 0:
    raise ValueError(f"{at}: {what} is a single value ({a.item()!r}); give one per {per}")
  return a


def _element_shape(at: str, what: str, a: np.ndarray, elem: TensorType, lead: str) -> None:
  if a.shape[a.ndim - len(elem.shape):] != elem.shape or a.ndim != len(elem.shape) + len(lead.split(", ")):
    want = f"({lead}, {', '.join(map(str, elem.shape))})"
    hint = ""
    if len(elem.shape) == 3 and a.ndim == len(lead.split(", ")) + 3 and a.shape[-1] == elem.shape[0]:
      hint = "; images are channel first: move the channel axis, x.transpose(0, 3, 1, 2)"
    elif len(elem.shape) == 3 and elem.shape[0] == 1 and a.shape[-2:] == elem.shape[1:]:
      hint = "; add the channel axis, x[:, None]"
    raise ValueError(f"{at}: {what} has shape {a.shape}, not {want} as the type's {elem} needs{hint}")


def inputs_from_arrays(at: str, arg: Type,
                       inputs: ArrayInputs) -> tuple[np.ndarray, np.ndarray | ListBatch | EdgeGraphBatch]:
  """A user's inputs for a program taking `arg`, in `Task.from_arrays`' layout (the module docstring),
  checked as a split's inputs are and laid out as a task's: (a float32 table (m, *element shape) of
  their elements, the index inputs into it: int32 (n,) for tensors, a `ListBatch` of int32 (n, L) for
  lists, an `EdgeGraphBatch` for graphs). What a trained program applies to new data
  (`hx.synth.predict`).

  Raises:
    ValueError: inputs that do not fit `arg`, the message starting with `at`.
  """
  pieces, index, _ = _inputs(at, arg, inputs, 0)
  return np.concatenate(pieces).astype(np.float32, copy=False), index


def _inputs(at: str, arg: Type, inputs: ArrayInputs, offset: int
            ) -> tuple[list[np.ndarray], np.ndarray | ListBatch | EdgeGraphBatch, np.ndarray | None]:
  """(the split's elements, as arrays (k_i, *elem) to be laid end to end in the table at `offset`, the
  split's index inputs, per example lengths or None)."""
  if isinstance(arg, TensorType):
    a = _array(at, "inputs", inputs)
    _element_shape(at, "inputs", a, arg, "n")
    if len(a) == 0:
      raise ValueError(f"{at}: inputs hold no example; every split needs one at least")
    return [a], np.arange(offset, offset + len(a), dtype=np.int32), None
  elem = arg.elem
  if isinstance(arg, ListType):
    items = _list_items(at, elem, inputs)
    lengths = np.asarray([len(v) for v in items], np.int64)
    longest = int(lengths.max())
    starts = offset + np.concatenate([[0], np.cumsum(lengths)[:-1]])
    positions = np.arange(longest)[None, :]
    mask = positions < lengths[:, None]
    index = np.where(mask, starts[:, None] + positions, 0).astype(np.int32)
    return items, ListBatch(index, mask), lengths
  graphs = _graph_items(at, elem, inputs)
  nodes = [g[0] for g in graphs]
  lengths = np.asarray([len(v) for v in nodes], np.int64)
  n_pad = size_bucket(int(lengths.max()))
  e_pad = size_bucket(max(len(g[1]) for g in graphs))
  count = len(graphs)
  values = np.zeros((count, n_pad), np.int64)
  senders = np.zeros((count, e_pad), index_dtype(n_pad))
  receivers = np.zeros((count, e_pad), index_dtype(n_pad))
  edge_mask = np.zeros((count, e_pad), bool)
  start = offset
  for b, (v, edges) in enumerate(graphs):
    values[b, :len(v)] = start + np.arange(len(v))
    start += len(v)
    senders[b, :len(edges)], receivers[b, :len(edges)] = edges[:, 0], edges[:, 1]
    edge_mask[b, :len(edges)] = True
  mask = np.arange(n_pad)[None, :] < lengths[:, None]
  total = offset + int(lengths.sum())
  batch = EdgeGraphBatch(values.astype(index_dtype(max(total, 1))), senders, receivers, edge_mask, mask)
  check_graphs(batch, name=f"{at}: graph")
  return nodes, batch, lengths


def _list_items(at: str, elem: TensorType, inputs: ArrayInputs) -> list[np.ndarray]:
  """The real elements of each list example, checked."""
  if isinstance(inputs, ListBatch):
    values = _array(at, "inputs' values", inputs.values)
    mask = np.asarray(inputs.mask)
    _element_shape(at, "inputs' values", values, elem, "n, L")
    if mask.dtype != bool or mask.shape != values.shape[:2]:
      raise ValueError(f"{at}: inputs' mask must be bool {values.shape[:2]}, got {mask.dtype} {mask.shape}")
    lengths = mask.sum(axis=1)
    prefix = np.arange(mask.shape[1])[None, :] < lengths[:, None]
    bad = np.flatnonzero(np.any(mask != prefix, axis=1))
    if bad.size:
      row = mask[bad[0]].astype(int).tolist()
      raise ValueError(f"{at}: inputs' mask of list {bad[0]} is {row}: the real elements of a list must come "
                       "first (its mask a prefix of True)")
    items = [values[i, :k] for i, k in enumerate(lengths)]
  elif isinstance(inputs, np.ndarray) and inputs.dtype != object:
    values = _array(at, "inputs", inputs)
    _element_shape(at, "inputs", values, elem, "n, L")
    items = list(values)
  elif isinstance(inputs, (list, tuple, np.ndarray)):
    items = []
    for i, v in enumerate(inputs):
      a = _array(at, f"list {i} of the inputs", v)
      _element_shape(at, f"list {i} of the inputs", a, elem, "L")
      items.append(a)
  else:
    raise ValueError(f"{at}: inputs of a List type must be a sequence of arrays (L_i, ...), an array "
                     f"(n, L, ...) or a ListBatch, got {_describe(inputs)}")
  if not items:
    raise ValueError(f"{at}: inputs hold no example; every split needs one at least")
  empty = [i for i, v in enumerate(items) if len(v) == 0]
  if empty:
    raise ValueError(f"{at}: list {empty[0]} of the inputs is empty; every list needs one element at least")
  return items


def _graph_items(at: str, elem: TensorType, inputs: ArrayInputs) -> list[tuple[np.ndarray, np.ndarray]]:
  """(node values (N_i, *elem), edges (E_i, 2) as (sender, receiver)) of each graph, checked."""
  if isinstance(inputs, (dict, np.ndarray)) or not isinstance(inputs, (list, tuple)):
    raise ValueError(f"{at}: inputs of a Graph type must be a sequence of graphs, each a dict with \"nodes\" "
                     f"and \"edges\" or \"neighbours\", got {_describe(inputs)}")
  if not inputs:
    raise ValueError(f"{at}: inputs hold no example; every split needs one at least")
  out = []
  for i, g in enumerate(inputs):
    what = f"graph {i} of the inputs"
    if not isinstance(g, Mapping) or "nodes" not in g or ("edges" in g) == ("neighbours" in g):
      raise ValueError(f"{at}: {what} must be a dict with \"nodes\" and one of \"edges\" or \"neighbours\", "
                       f"got {_describe(g) if not isinstance(g, Mapping) else sorted(g)}")
    nodes = _array(at, f"{what}'s nodes", g["nodes"])
    _element_shape(at, f"{what}'s nodes", nodes, elem, "N")
    if len(nodes) == 0:
      raise ValueError(f"{at}: {what} has no node")
    edges = _edges(at, what, g, len(nodes))
    bad = np.flatnonzero((edges < 0).any(axis=1) | (edges >= len(nodes)).any(axis=1))
    if bad.size:
      raise ValueError(f"{at}: {what}'s edge {bad[0]} {tuple(int(x) for x in edges[bad[0]])} names a node "
                       f"outside 0..{len(nodes) - 1}")
    out.append((nodes, edges))
  return out


def _edges(at: str, what: str, graph: Mapping, n: int) -> np.ndarray:
  """A graph's (E, 2) int64 (sender, receiver) pairs from its "edges" or its "neighbours" lists (not yet
  checked against its `n` nodes)."""
  if "edges" in graph:
    edges = _array(at, f"{what}'s edges", graph["edges"])
    if edges.size == 0:  # no edge: `[]` is a float array to NumPy
      return np.zeros((0, 2), np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype, np.integer):
      raise ValueError(f"{at}: {what}'s edges must be integer (E, 2) (sender, receiver) pairs, got "
                       f"{edges.dtype} {edges.shape}")
    return edges.astype(np.int64)
  neighbours = graph["neighbours"]
  if isinstance(neighbours, (str, Mapping)) or not hasattr(neighbours, "__len__"):
    raise ValueError(f"{at}: {what}'s neighbours must be one list per node, got {_describe(neighbours)}")
  if len(neighbours) != n:
    raise ValueError(f"{at}: {what} has {n} nodes but {len(neighbours)} neighbour lists")
  pairs = []
  for u, vs in enumerate(neighbours):
    v = _array(at, f"{what}'s neighbours of node {u}", vs)
    if v.size and (v.ndim != 1 or not np.issubdtype(v.dtype, np.integer)):
      raise ValueError(f"{at}: {what}'s neighbours of node {u} must be a list of node numbers (integers), "
                       f"got {v.dtype} {v.shape}")
    pairs += [(int(x), u) for x in v.reshape(-1)]
  return np.asarray(pairs, np.int64).reshape(-1, 2)


def _targets(at: str, output: Type, targets: npt.ArrayLike, lengths: np.ndarray | None, n: int) -> np.ndarray:
  """The split's targets, checked against the output type and laid out for Tune."""
  if isinstance(output, (ListType, GraphType)):
    elem = output.elem
    what = "lists" if isinstance(output, ListType) else "graphs"
    if isinstance(targets, np.ndarray) and targets.dtype != object:
      a = _examples(at, "targets", _array(at, "targets", targets))
      if len(a) != n:
        raise ValueError(f"{at}: {len(a)} targets for {n} inputs; give one per example")
      if a.ndim < 2 or a.shape[1] < lengths.max():
        raise ValueError(f"{at}: targets as one array must be (n, L, ...) with L >= the longest input "
                         f"({int(lengths.max())}), got shape {a.shape}; or give one array per example")
      items = [a[i, :k] for i, k in enumerate(lengths)]
    elif isinstance(targets, (list, tuple, np.ndarray)):
      per = "list element" if isinstance(output, ListType) else "node"
      items = [_examples(at, f"targets of example {i}", _array(at, f"targets of example {i}", v), per)
               for i, v in enumerate(targets)]
    else:
      raise ValueError(f"{at}: targets of a {output} output must be one array per example, got "
                       f"{_describe(targets)}")
    if len(items) != n:
      raise ValueError(f"{at}: {len(items)} targets for {n} inputs; give one per example")
    longest = max(int(lengths.max()), 1)
    pad = longest if isinstance(output, ListType) else size_bucket(longest)
    out = None
    for i, (v, k) in enumerate(zip(items, lengths)):
      if len(v) != k:
        raise ValueError(f"{at}: targets of example {i} give {len(v)} values for its {k} {what[:-1]} "
                         "elements; give one per element")
      y = _element_targets(at, f"targets of example {i}", elem, v)
      if out is None:
        out = np.zeros((n, pad) + y.shape[1:], y.dtype)
      out[i, :k] = y
    return out
  a = _examples(at, "targets", _array(at, "targets", targets))
  if len(a) != n:
    raise ValueError(f"{at}: {len(a)} targets for {n} inputs; give one per example")
  return _element_targets(at, "targets", output, a)


def _element_targets(at: str, what: str, t: TensorType, a: np.ndarray) -> np.ndarray:
  """(k, ...) targets of tensor type `t`: float32 (k, *shape), or int32 (k, *shape[:-1]) class indices."""
  classes = t.atom == "bool" and t.shape != (1,)
  if classes:
    want = a.shape[1:] == t.shape[:-1]
    if not want:
      onehot = " (one-hot? give the class indices, y.argmax(-1))" if a.shape[1:] == t.shape else ""
      raise ValueError(f"{at}: {what} has shape {a.shape}; {t} takes class indices of shape "
                       f"({', '.join(['n', *map(str, t.shape[:-1])])}){onehot}")
    k = t.shape[-1]
    if not (np.issubdtype(a.dtype, np.integer) or np.all(a == np.round(a))):
      raise ValueError(f"{at}: {what} are not whole numbers; {t} takes class indices 0..{k - 1}")
    if a.size and (a.min() < 0 or a.max() >= k):
      raise ValueError(f"{at}: {what} range over {a.min():g}..{a.max():g}; {t} takes class indices "
                       f"0..{k - 1}")
    return a.astype(np.int32)
  if t.shape == (1,) and a.ndim == 1:
    a = a[:, None]  # (n,) for a one-component output: the common layout of labels and scalar targets
  if a.shape[1:] != t.shape:
    raise ValueError(f"{at}: {what} has shape {a.shape}, not (n, {', '.join(map(str, t.shape))}) as {t} "
                     "needs")
  if t.atom == "bool":
    bad = np.flatnonzero((a != 0) & (a != 1))
    if bad.size:
      values = sorted({float(v) for v in np.unique(a)})[:6]
      raise ValueError(f"{at}: {what} hold {', '.join(f'{v:g}' for v in values)}; {t} takes 0/1 labels "
                       "(class indices need Tensor<bool>[k], k the number of classes)")
  return a.astype(np.float32)
