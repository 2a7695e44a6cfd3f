"""Which library functions a task's search is offered when the library has grown long: a data-driven prior.

The top-down search's cost grows with the library: every hole a library function's type fits is filled
with each of them, so at a hundred tasks a size-ordered enumeration reaches the useful programs later and
later, and expands more and more partial programs first. `offered_library` keeps the search's library
to the functions of a bounded number of earlier tasks, chosen on the new task's own data, after the
data-driven prior of MNTDP (Veniat, Denoyer and Ranzato, ICLR 2021), which picks the earlier modules
whose features serve the new task best:

  1. Each earlier task that added functions (a *source*: the library entries of one provenance task)
     is known by its winning program (`Provenance.program`). The per-image part of that program
     (`hx.compile.distinct.element_split`: the mapped function of a program that maps its input list
     or graph, else the whole program) is a chain of library functions; each input-end run of it (the
     CNN alone, the CNN and the layer after it, ...) is a *probe* when its input is the new task's image
     type, whether the new task takes one image or a list or graph of them: a recognizer's features
     may serve a count, a count's mapped function a recognizer.
  2. Each probe is applied, frozen, to the images of at most `sample` training and `sample` validation
     examples of the new task, and a ridge regression (`hx.synth.schedules.estimate.ridge_fit`) from
     its outputs to the new task's targets is fitted on the training ones and scored on the validation
     ones: the mean squared error relative to predicting the training mean (0 perfect, 1 no better than
     the mean). A list example's features are the sum and the mean of its elements' (a count or a sum
     is then linear in them); a task with one target per list element or graph node regresses those
     node by node. Class targets are regressed as one-hot vectors.
  3. A source scores the best of its probes; the `tasks` best sources (ties: the later first) are
     offered, with every library function their winning programs call (so each of their programs can be
     built again).
  4. The offered functions are listed best first: a function in a probe by the error of the best probe
     it is in (a CNN and the layer after it both by their run's), the others after every scored one, in
     the library's order. The search fills a hole with library functions in that order, so a small
     budget of candidates reuses the functions whose features predicted the task best, not the oldest
     ones of the hole's type.
  5. With `SearchSpace.reused_programs`, the top-down search first scores the winning programs of the
     best offered sources of the task's type as they are (`reused_programs`: every function frozen,
     nothing trained), then trains the best-scoring one with its outermost function fresh and with its
     input-end function fresh (`one_fresh`, after MNTDP's paths: an earlier task's modules, one of them
     new), and then its enumeration's candidates.

Each probe costs a forward pass and a ridge fit, so probing every earlier task makes the choice itself
grow with the library. With `probed` only that many sources are probed: half of them those of the new
task's type a winner used most recently, the others those of any type a winner used most recently
(`probed_sources`, read from the library's provenance); the others are offered last, after every probed
one, and come back into the probed set as soon as a later winner calls one of their functions.

A source whose program has no probe of the new task's image type (another image size, a graph
convolution at the input end) scores nothing and is offered only after every scored source; when the
task's inputs are not images (values, not indices into an image table) no source can be probed and the
latest `tasks` sources are offered. The functions not offered stay in the library: later tasks may be
offered them, and the library that the task's winner extends, saves and reports is the whole one.

Why a probe of the earlier task's own program: its functions were trained together, and a later task
that repeats it (less data, new data of the same distribution, a relabelling) is predicted best by the
very features its earlier instance learned; a task of another domain by none of them. The probe costs
one frozen forward pass of a few hundred images per distinct function at a probe's input end (a CNN that
several sources' programs reuse runs once, and each longer probe applies only its outermost function to
the shorter one's outputs), a ridge fit per distinct probe, and it never trains.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hx.lang import parse
from hx.lang import program as P
from hx.lang import values as V
from hx.lang.types import FunctionType, GraphType, ListType, TensorType, Type

if TYPE_CHECKING:
  from hx.data.task import Task
  from hx.synth.library import Library
  from hx.synth.space import Candidate, Completer

__all__ = ["Offer", "offer", "offered_library", "reused_programs", "one_fresh", "probed_sources",
           "source_scores", "probe_errors", "probe_error"]

_ELEMENTS = (*V.ELEMENT_BATCHES, V.SharedGraphs)


class Offer(NamedTuple):
  """What the prior offers a task's search.

  Attributes:
    library: the offered part of the library (`offered_library`), best first.
    sources: the keys ("sequence/task") of the earlier tasks whose functions it holds, best first (the
      order `reused_programs` takes their programs in); () when the whole library is offered unranked.
  """
  library: Library
  sources: tuple[str, ...]


def offered_library(library: Library, task: Task, tasks: int | None, *, probed: int | None = None,
                    sample: int = 256, ridge: float = 1e-2) -> Library:
  """The part of `library` (an `hx.Library`) a search for `task` is offered: the functions of the
  `tasks` earlier tasks whose programs' per-image functions best predict `task`'s targets (see the
  module docstring), and the library functions those programs call, best first; `library` itself when
  `tasks` is None. `offer(...).library`.

  Args:
    task: an `hx.Task` (or any value with `type`, `train`, `val`, `table` and `objective`).
    tasks: how many earlier tasks' functions to offer (>= 1), or None: all.
    probed: how many earlier tasks to probe at most (>= `tasks`), the most recently reused, half of
      them of the task's type (`probed_sources`); None: every one.
    sample: examples of each split probed at most (the first ones: a split's examples are drawn at
      random already).
    ridge: the ridge regression's penalty, relative to the features' mean squared norm.

  Returns:
    An `hx.Library` of the offered entries (their names, specs, variables and provenance unchanged),
    best first (module docstring), and the library's counters, so that names given after it continue
    the whole library's numbering. A library of `tasks` earlier tasks or fewer is offered whole, in
    that order.
  """
  return offer(library, task, tasks, probed=probed, sample=sample, ridge=ridge).library


def offer(library: Library, task: Task, tasks: int | None, *, probed: int | None = None, sample: int = 256,
          ridge: float = 1e-2) -> Offer:
  """The offered library (`offered_library`, the same arguments) and its sources, best first."""
  if tasks is None:
    return Offer(library, ())
  if tasks < 1:
    raise ValueError(f"the search must be offered the functions of at least 1 earlier task, got {tasks}")
  if probed is not None and probed < tasks:
    raise ValueError(f"the prior must probe at least the {tasks} earlier tasks it offers, got {probed}")
  sources = _sources(library)
  probe = probed_sources(library, probed, task.type)
  scores, errors = _probed(library, task, sample, ridge, probe)
  # Unprobed sources last: retired until a winner reuses them.
  order = sorted(range(len(sources)), key=lambda i: (sources[i][0] not in probe,
                                                     _rank_key(scores[sources[i][0]]), -i))
  keep: set[str] = set()
  for i in order[:tasks]:
    key, names = sources[i]
    keep.update(names)
    keep.update(_called(library[names[0]].provenance.program))
  best: dict[str, float] = {}
  for run, e in errors.items():
    for name in run:
      best[name] = min(e, best.get(name, math.inf))
  position = {e.name: i for i, e in enumerate(library.entries)}
  kept = sorted((e for e in library.entries if e.name in keep),
                key=lambda e: (_rank_key(best.get(e.name)), position[e.name]))
  return Offer(type(library)(tuple(kept), library.counters), tuple(sources[i][0] for i in order[:tasks]))


def reused_programs(offered: Offer, task_type: Type, count: int, completer: Completer) -> list[Candidate]:
  """The winning programs of the `count` best offered sources whose program has `task_type`, each as it
  is (every function frozen: nothing to train, an evaluation each), those the search space admits and
  the compiler builds, as `hx.synth.space.Candidate`s, best source first.

  Why: a task that repeats an earlier one (less data, new data of its distribution) is best served by
  that task's own program, and the size-ordered enumeration over a library of many tasks reaches the
  program with every one of its functions reused late, or never within a budget of a few candidates.
  The probes rank sources by their per-image features, which several sources share (a count and a sum
  over one digit CNN probe alike); the program as it is tells their heads apart.

  Args:
    offered: the prior's `Offer` (its library holds every function the sources' programs call).
    task_type: the new task's type.
    count: how many sources' programs at most (the best first; sources of another type are skipped).
    completer: the search's `hx.synth.space.Completer` over `offered.library` (space and module sizes).
  """
  library, out = offered.library, []
  types, names = library.types(), dict(_sources(library))
  for key in offered.sources:
    if len(out) >= count:
      break
    text = library[names[key][0]].provenance.program
    if _program_type(text, types) == task_type:
      out += _buildable(P.as_library(parse(text)), {}, task_type, completer, {c.key for c in out})
  return out


def one_fresh(program: P.Program, task_type: Type, completer: Completer) -> list[Candidate]:
  """`program` (every function a library one) with its outermost library function trained afresh (a new
  head over the earlier features), then with its input-end one trained afresh (new features under the
  earlier head), after MNTDP's paths (an earlier task's modules, one of them new): those the search
  space admits and the compiler builds, as `hx.synth.space.Candidate`s (one for a program of one
  function)."""
  types = completer.library_types
  called = [(pos, t.name) for pos, t in P.subterms(program) if isinstance(t, P.Lib)]
  out: list[Candidate] = []
  for pos, name in dict.fromkeys(called[:1] + called[-1:]):
    out += _buildable(P.replace(program, pos, P.Fresh("nn_1")), {"nn_1": types[name]}, task_type, completer,
                      {c.key for c in out})
  return out


def _buildable(program: P.Program, fresh: dict[str, Type], task_type: Type, completer: Completer,
               seen: set[tuple]) -> list[Candidate]:
  """The candidate of `program` with these fresh types, if it has `task_type`, the completer builds it
  and its equivalence class is not in `seen`; else none."""
  from hx.synth.space import check_candidate, program_cost

  if not check_candidate(program, fresh, completer.library_types, task_type):
    return []
  return [c for c in completer.complete(program, fresh, program_cost(program, completer.space.costs))
          if c.key not in seen]


def _rank_key(score: float | None) -> tuple[int, float]:
  """Scored sources first (lower error first), then unscored ones."""
  return (1, 0.0) if score is None or not math.isfinite(score) else (0, score)


def _sources(library: Library) -> list[tuple[str, tuple[str, ...]]]:
  """(source key, its entries' names) per earlier task that added functions, in the library's order."""
  out: dict[str, list[str]] = {}
  for e in library.entries:
    out.setdefault(f"{e.provenance.sequence}/{e.provenance.task}", []).append(e.name)
  return [(k, tuple(v)) for k, v in out.items()]


def probed_sources(library: Library, limit: int | None, task_type: Type | None = None) -> frozenset[str]:
  """The keys of the at most `limit` sources (every one when None) of `library` that were used most
  recently: a source is used by its own task and by every later task whose winning program calls one of
  its functions, and sources of equal last use are taken the later first. With `task_type` (the new
  task's), half of them (rounded up) are the most recently used of the sources whose winning program has
  that type, the rest the most recently used of the others.

  Why: probing every earlier task costs a forward pass and a ridge fit each, so the choice of what to
  offer grows with the library even when the search it bounds does not. A source no winner has reused
  for `limit` sources is retired from probing: it stays in the library (saved, and offered by the paper's
  whole-library search), and becomes probed again as soon as a winner calls one of its functions. The
  choice reads the library's provenance only, so a resumed run makes the same one. Why half by type: a
  task that repeats an earlier one (less data, new data, a relabelling, a new input domain of the same
  shape) has that task's type, and may come long after any winner last used it; the other half keeps the
  functions of other kinds that recent winners reuse (a recognizer's CNN for a count).
  """
  sources = _sources(library)
  if limit is None or len(sources) <= limit:
    return frozenset(k for k, _ in sources)
  owner = {name: i for i, (_, names) in enumerate(sources) for name in names}
  last = list(range(len(sources)))
  for i, (_, names) in enumerate(sources):
    for name in _called(library[names[0]].provenance.program):
      if name in owner:
        last[owner[name]] = max(last[owner[name]], i)
  order = sorted(range(len(sources)), key=lambda i: (last[i], i), reverse=True)
  if task_type is None:
    return frozenset(sources[i][0] for i in order[:limit])
  types = library.types()
  same = [i for i in order if _program_type(library[sources[i][1][0]].provenance.program, types) == task_type]
  chosen = same[:(limit + 1) // 2]
  chosen += [i for i in order if i not in chosen][:limit - len(chosen)]
  return frozenset(sources[i][0] for i in chosen)


def _program_type(program_text: str, types: dict[str, Type]) -> Type | None:
  """The type of a provenance program over the library's `types`; None where it does not type there (a
  library whose entries were edited by hand)."""
  from hx.lang.errors import HxTypeError
  from hx.lang.infer import infer

  try:
    return infer(P.as_library(parse(program_text)), types).type
  except HxTypeError:
    return None


def _called(program_text: str) -> tuple[str, ...]:
  """Every library function a provenance program names (its own, written bare, and earlier ones')."""
  p = parse(program_text)
  return tuple(P.fresh_names(p)) + tuple(P.library_names(p))


def _image_type(task_type: Type) -> TensorType | None:
  """The image type of a task's input elements (the input itself, or a list's or graph's element)."""
  arg = task_type.arg if isinstance(task_type, FunctionType) else None
  if isinstance(arg, (ListType, GraphType)):
    arg = arg.elem
  return arg if isinstance(arg, TensorType) and len(arg.shape) == 3 else None


def _probes(library: Library, program_text: str, image: TensorType) -> list[tuple[str, ...]]:
  """The input-end runs of a provenance program's per-image chain (its mapped function where its input
  end maps a list or graph, else the whole program) whose input is `image`, as library names outermost
  first (`hx.compile.memo.apply_prefix`'s order), shortest first."""
  from hx.compile.distinct import element_split

  program = P.as_library(parse(program_text))
  split = element_split(program, True) or (program, None)
  chain = P.chain(split[0])
  run: list[str] = []
  for f in reversed(chain):  # from the input end
    if not isinstance(f, P.Lib) or f.name not in library:
      break
    run.insert(0, f.name)
  if not run or library[run[-1]].type.arg != image:
    return []
  return [tuple(run[-k:]) for k in range(1, len(run) + 1)]


def source_scores(library: Library, task: Task, *, sample: int = 256, ridge: float = 1e-2,
                  only: frozenset[str] | None = None) -> dict[str, float | None]:
  """Per source of `library` (its key, "sequence/task"), its probes' best error on `task`
  (`probe_error`), or None where it has no probe of the task's image type, the task's inputs are not
  image indices, or the source is not among `only` (None: every source is probed)."""
  return _probed(library, task, sample, ridge, only)[0]


def probe_errors(library: Library, task: Task, *, sample: int = 256, ridge: float = 1e-2,
                 only: frozenset[str] | None = None) -> dict[tuple[str, ...], float]:
  """Every probe of the sources of `library` among `only` (None: every one) on `task`: the probe (its
  library names, outermost first) -> its error (`probe_error`); empty where the task's inputs are not
  indices into an image table of a type some probe takes."""
  return _probed(library, task, sample, ridge, only)[1]


def _probed(library: Library, task: Task, sample: int, ridge: float, only: frozenset[str] | None
            ) -> tuple[dict[str, float | None], dict[tuple[str, ...], float]]:
  """(`source_scores`, `probe_errors`) of one pass over the probes."""
  sources = _sources(library)
  image = _image_type(task.type)
  train, val = _head(task.train, sample), _head(task.val, sample)
  if image is None or task.table is None or not _indexed(train.inputs) or not _indexed(val.inputs):
    return {key: None for key, _ in sources}, {}
  per_element = bool(getattr(task.objective, "per_element", False))
  rows = np.unique(np.concatenate([_indices(train.inputs).reshape(-1), _indices(val.inputs).reshape(-1)]))
  errors: dict[tuple[str, ...], float] = {}
  outputs: dict[tuple[str, ...], np.ndarray] = {}
  out: dict[str, float | None] = {}
  for key, names in sources:
    best = None
    unprobed = only is not None and key not in only
    for probe in () if unprobed else _probes(library, library[names[0]].provenance.program, image):
      if probe not in errors:
        h = _outputs(library, probe, np.asarray(task.table), rows, outputs)
        errors[probe] = probe_error(h.reshape(h.shape[0], -1).astype(np.float64), train, val,
                                    per_element=per_element, ridge=ridge)
      e = errors[probe]
      best = e if best is None or e < best else best
    out[key] = best
  return out, errors


def _head(split: V.Split, n: int) -> V.Split:
  """The first `n` examples of a split (inputs and targets cut alike)."""
  import jax

  return jax.tree.map(lambda a: np.asarray(a)[:n], split)


def _indexed(inputs: V.Inputs) -> bool:
  return np.issubdtype(_indices(inputs).dtype, np.integer)


def _indices(inputs: V.Inputs) -> np.ndarray:
  return np.asarray(inputs.values if isinstance(inputs, _ELEMENTS) else inputs)


def _mask(inputs: V.Inputs) -> np.ndarray:
  """(n, L or N) bool: the real elements of a list or graph batch."""
  if isinstance(inputs, V.SharedGraphs):
    return np.asarray(inputs.layouts.mask, bool)[np.asarray(inputs.layout)]
  return np.asarray(inputs.mask, bool)


def _outputs(library: Library, probe: tuple[str, ...], table: np.ndarray, rows: np.ndarray,
             done: dict[tuple[str, ...], np.ndarray]) -> np.ndarray:
  """(table rows, *out) float32: the probe applied, frozen, to the table's `rows` (other rows 0), kept in
  `done`. A probe's input-end run (its tail: `_probes` lists the shorter first) is taken from `done` and
  only its outermost function applied: sources that reuse one CNN share its forward pass."""
  from hx.compile.memo import apply_prefix

  if probe not in done:
    head, tail = probe[:1], probe[1:]
    inputs = _outputs(library, tail, table, rows, done) if tail else table
    # The probe's own function only: the whole library's variables would cost a pass over every entry.
    done[probe] = np.asarray(apply_prefix(head, {head[0]: library[head[0]].spec},
                                          {head[0]: library[head[0]].variables}, inputs, rows=rows))
  return done[probe]


def probe_error(outputs: np.ndarray, train: V.Split, val: V.Split, *, per_element: bool,
                ridge: float) -> float:
  """The validation error of a ridge regression from a probe's outputs to a task's targets, relative to
  predicting the training targets' mean: mean((prediction - y)^2) / mean((train mean - y)^2) over `val`
  (0 perfect, 1 no better than the mean; inf where the validation targets do not vary).

  Args:
    outputs: (table rows, d) the probe's output per table row.
    train, val: `hx.compile.Split`s whose inputs index the table (an index array, a ListBatch, a graph
      batch); targets as `hx.compile.Split` holds them.
    per_element: the targets are per list element or graph node (regressed element by element).
  """
  from hx.synth.schedules.estimate import ridge_fit

  classes = _classes(train.targets, val.targets)
  h_train, y_train = _design(outputs, train, per_element, classes)
  h_val, y_val = _design(outputs, val, per_element, classes)
  w, b = ridge_fit(h_train, y_train, ridge)
  base = float(np.mean((y_train.mean(0) - y_val) ** 2))
  if not base > 0:
    return math.inf
  return float(np.mean((h_val @ w + b - y_val) ** 2)) / base


def _classes(*targets: V.Array) -> int | None:
  """The number of classes when the targets are class indices ((n,) integers), else None."""
  arrays = [np.asarray(t) for t in targets]
  if all(a.ndim == 1 and np.issubdtype(a.dtype, np.integer) for a in arrays):
    return int(max(a.max(initial=0) for a in arrays)) + 1
  return None


def _design(outputs: np.ndarray, split: V.Split, per_element: bool, classes: int | None
            ) -> tuple[np.ndarray, np.ndarray]:
  """(features (m, d'), targets (m, k)) of a split: one row per example, or per real element."""
  idx = _indices(split.inputs).astype(np.int64)
  targets = np.asarray(split.targets)
  y = np.eye(classes)[targets] if classes is not None else targets.astype(np.float64)
  if not isinstance(split.inputs, _ELEMENTS):
    return outputs[idx], y.reshape(len(idx), -1)
  mask = _mask(split.inputs)
  if per_element:
    return outputs[idx[mask]], y[mask].reshape(int(mask.sum()), -1)
  h = outputs[idx] * mask[..., None]
  count = np.maximum(mask.sum(1, keepdims=True), 1)
  return np.concatenate([h.sum(1), h.sum(1) / count], axis=1), y.reshape(len(idx), -1)

