"""The library of trained neural functions that lifelong learning grows task by task.

A `Library` is an immutable value: a set of `Entry`s (trained, frozen neural functions) and, per task
sequence, the last number it gave a function. The combinators (compose, map, fold, conv, repeat) are
the grammar of programs, not entries.

    library = hx.Library()                                     # empty
    added = library.add(Trained(compiled, variables, validation=0.01, test=0.012),
                        sequence="cs1", task="recognize_digit(d1)", runners_up=[second, third])
    added.library           # a new Library with the best program's fresh functions frozen in it
    added.programs          # the ranked programs, fresh functions renamed nn_cs1_1, nn_cs1_2, ...
    added.frozen            # the best program calling them as lib.nn_cs1_1, lib.nn_cs1_2, ...
    hx.infer(p, library.types(), task_type)                    # name -> Type
    hx.compile_program(p, typing, config, library=library.specs())   # name -> ModuleSpec
    compiled.make_frozen(library.variables())                  # name -> {"params", "batch_stats"}
    library.save(path); hx.Library.load(path)

Naming follows the paper's tables (`hx/lang/paper_programs.tsv`): the functions of a sequence are
numbered nn_<sequence>_1, nn_<sequence>_2, ... across its tasks; within a task the counter runs over
the fresh functions of every *reported* program (the top three), in rank order and, within a program,
in order of first occurrence in its printed form; only the best program's functions join the library.
In CS1, task 1's best program is compose(nn_cs1_1, nn_cs1_2); task 2 reports compose(nn_cs1_3,
nn_cs1_4), compose(nn_cs1_5, lib.nn_cs1_2) and compose(lib.nn_cs1_1, nn_cs1_6), adds nn_cs1_3 and
nn_cs1_4, and task 3 starts at nn_cs1_7.

Versions. Every entry has a `version`: the sha256 of its module spec (exact JSON form), the structure of
its variables (containers, dtypes, shapes) and the bytes of its arrays. It identifies the function an
entry computes, so a frozen function's outputs may be memoised under it: a function retrained or
replaced gets another version and never reuses stale outputs. Provenance is not part of it. The
library's `version` digests its entries' names and versions and the counters.

Parameters are stored as read-only NumPy arrays on the host. `variables()` hands them out as such;
`jit` transfers them to the device on every call, so a caller that applies library functions many
times should `jax.device_put` the result once.

A function built by a user's own module (`hx.compile.register_module`, template "user") is saved as any
other: its spec records the module's name, not its code, so loading it needs that name registered (for
the same type) first; `Library.load` says so where it is not.

The on-disk format is described at `Library.save`.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math
import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterator, Mapping, NamedTuple, Sequence, Union

import flax.serialization
import jax
import numpy as np

from hx import atomic
from hx.compile.lower import CompiledProgram
from hx.compile.modules.spec import ModuleSpec
from hx.compile.modules.templates import init_module
from hx.jsonread import JsonValue
from hx.lang import program as P
from hx.lang.types import Type, parse_type, type_variables
from hx.synth.jsonfiles import JsonFileError, read_json

if TYPE_CHECKING:
  import chex
  import numpy.typing as npt

__all__ = [
  "FORMAT", "FORMAT_VERSION", "Added", "Entry", "Library", "LibraryError", "Provenance", "Trained",
]

FORMAT = "hx-library"
"""The marker in `library.json` that says a directory is an hx library."""
FORMAT_VERSION = 1
"""The on-disk format version this code writes and reads (no other is read)."""
MANIFEST = "library.json"
ARRAYS = "arrays"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # what the parser accepts after 'lib.'
_SEQUENCE = re.compile(r"[A-Za-z0-9_]+\Z")  # so that nn_<sequence>_<k> is a fresh and a library name
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class LibraryError(ValueError):
  """A library directory that cannot be loaded, or a path a library cannot be saved to.

  Attributes:
    path: the library directory (or the file in it) concerned.
    problem: what is wrong, in words.
  """

  def __init__(self, path: os.PathLike | str, problem: str, action: str = "cannot load library"):
    self.path = os.fspath(path)
    self.problem = problem
    super().__init__(f"{action} {self.path}: {problem}")


# ---------------------------------------------------------------------------------------------------
# Entries.

@dataclasses.dataclass(frozen=True)
class Provenance:
  """Where a library function came from.

  Attributes:
    sequence: the task sequence, e.g. "cs1".
    task: the task, e.g. "recognize_digit(d1)".
    program: the task's best program as text, with its fresh functions under their library names
      (as the paper prints it: "compose(nn_cs1_1, nn_cs1_2)").
    validation: the program's validation score (the metric of its task), or None.
    test: its test score, or None.
    when: when the function was added, ISO 8601 (UTC by default).
  """
  sequence: str
  task: str
  program: str
  validation: float | None
  test: float | None
  when: str

  def __post_init__(self):
    for field in ("sequence", "task", "program", "when"):
      if not isinstance(getattr(self, field), str):
        raise TypeError(f"provenance {field} must be a string, got {getattr(self, field)!r:.80}")
    for field in ("validation", "test"):
      v = getattr(self, field)
      # JSON has no NaN or infinity, and a failed candidate is never added.
      if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
        raise ValueError(f"provenance {field} score must be a finite number or None, got {v!r}")
      if v is not None:
        object.__setattr__(self, field, float(v))


@dataclasses.dataclass(frozen=True, eq=False)
class Entry:
  """One trained, frozen neural function of the library.

  Build one with `Entry.of(name, spec, variables, provenance)`; the fields are its immutable form.

  Attributes:
    name: the name programs call it by, without "lib." (e.g. "nn_cs1_2").
    spec: its module: architecture and sizes (`hx.compile.modules.ModuleSpec`).
    provenance: where it came from.
    structure: the containers of its variables as canonical JSON: {"dict": {key: node}},
      {"tuple": [node, ...]}, {"list": [node, ...]} or {"array": {"dtype": "float32", "shape": [...]}},
      dict keys sorted; the leaves are numbered in this order.
    leaves: the arrays, read-only NumPy, in structure order.
    version: sha256 (hex) of the spec, the structure and the array bytes (see the module docstring).
  """
  name: str
  spec: ModuleSpec
  provenance: Provenance
  structure: str
  leaves: tuple[np.ndarray, ...]
  version: str = dataclasses.field(init=False)

  @classmethod
  def of(cls, name: str, spec: ModuleSpec, variables: Mapping[str, chex.ArrayTree],
         provenance: Provenance) -> Entry:
    """An entry holding a read-only copy of `variables`.

    Args:
      variables: {"params": ..., "batch_stats": ...} of the function, nested dicts and tuples of arrays
        (NumPy or JAX) as `CompiledProgram.fresh_variables` gives them; they must have the structure,
        shapes and dtypes `init_module(spec)` gives.
    """
    structure, leaves = _flatten(variables)
    return cls(name, spec, provenance, _canonical_json(structure), leaves)

  def __post_init__(self):
    if not isinstance(self.name, str) or not _NAME.match(self.name):
      raise ValueError(f"library function name must be an identifier (A-Z, a-z, 0-9, _), got {self.name!r}")
    if not isinstance(self.spec, ModuleSpec):
      raise TypeError(f"spec of {self.name} must be a ModuleSpec, got {type(self.spec).__name__}")
    if type_variables(self.spec.type):
      raise ValueError(f"library function {self.name} has an unresolved type {self.spec.type}")
    leaves = tuple(self.leaves)
    if any(not isinstance(a, np.ndarray) or a.flags.writeable for a in leaves):
      # Someone built an Entry from raw fields: take a private read-only copy all the same.
      leaves = tuple(_frozen_array(a) for a in leaves)
    structure = _canonical_json(json.loads(self.structure))
    object.__setattr__(self, "leaves", leaves)
    object.__setattr__(self, "structure", structure)
    _check_leaves(json.loads(structure), leaves, self.name)
    _check_fits_spec(self.name, self.spec, structure)
    digest = hashlib.sha256()
    digest.update(_canonical_json({"spec": _encode_spec(self.spec), "structure": json.loads(self.structure)})
                  .encode())
    for a in leaves:
      digest.update(a.tobytes())
    object.__setattr__(self, "version", digest.hexdigest())

  @property
  def type(self) -> Type:
    """The function's type (that of its module spec)."""
    return self.spec.type

  @property
  def variables(self) -> dict:
    """{"params": ..., "batch_stats": ...}: new containers on every call, the read-only arrays shared."""
    return _unflatten(json.loads(self.structure), iter(self.leaves))

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, Entry):
      return NotImplemented
    return (self.name, self.version, self.spec, self.provenance) == (
      other.name, other.version, other.spec, other.provenance)

  def __hash__(self) -> int:
    return hash((self.name, self.version))

  def __repr__(self) -> str:
    return f"Entry({self.name} : {self.type}, {self.spec.template}, version {self.version[:12]})"


def _frozen_array(a: npt.ArrayLike) -> np.ndarray:
  """A private (the caller may reuse or donate its buffer), read-only, C-ordered copy in native byte
  order (the files and versions record a dtype's name, which does not say the byte order)."""
  a = np.asarray(a)
  out = np.array(a, dtype=a.dtype.newbyteorder("="), copy=True, order="C")
  out.setflags(write=False)
  return out


def _flatten(tree: chex.ArrayTree) -> tuple[JsonValue, tuple[np.ndarray, ...]]:
  """(JSON structure, leaves) of a tree of dicts (string keys), tuples, lists and arrays."""
  leaves: list[np.ndarray] = []

  def walk(node: chex.ArrayTree) -> JsonValue:
    if isinstance(node, dict):
      if any(not isinstance(k, str) for k in node):
        raise TypeError(f"variable dict keys must be strings, got {sorted(map(repr, node))}")
      return {"dict": {k: walk(node[k]) for k in sorted(node)}}
    if isinstance(node, tuple):
      return {"tuple": [walk(v) for v in node]}
    if isinstance(node, list):
      return {"list": [walk(v) for v in node]}
    if isinstance(node, (np.ndarray, np.generic, jax.Array)):
      a = _frozen_array(node)
      if a.dtype.hasobject or a.dtype.fields is not None:
        raise TypeError(f"variables must be numeric arrays, got dtype {a.dtype}")
      leaves.append(a)
      return {"array": {"dtype": a.dtype.name, "shape": list(a.shape)}}
    raise TypeError(f"variables must be dicts, tuples, lists and arrays, got {type(node).__name__}")

  return walk(tree), tuple(leaves)


def _array_nodes(structure: JsonValue) -> Iterator[dict]:
  """The {"dtype", "shape"} of each leaf of a JSON structure, in leaf order; ValueError if malformed."""
  if not isinstance(structure, dict) or len(structure) != 1:
    raise ValueError(f"a structure node must be a one-key object, got {structure!r:.80}")
  (kind, body), = structure.items()
  if kind == "dict" and isinstance(body, dict):
    for k in sorted(body):
      yield from _array_nodes(body[k])
  elif kind in ("tuple", "list") and isinstance(body, list):
    for v in body:
      yield from _array_nodes(v)
  elif (kind == "array" and isinstance(body, dict) and set(body) == {"dtype", "shape"}
        and isinstance(body["dtype"], str) and isinstance(body["shape"], list)
        and all(isinstance(m, int) and not isinstance(m, bool) and m >= 0 for m in body["shape"])):
    yield body
  else:
    raise ValueError(f"unknown structure node {structure!r:.80}")


def _check_leaves(structure: JsonValue, leaves: tuple[np.ndarray, ...], name: str) -> None:
  nodes = list(_array_nodes(structure))
  if len(nodes) != len(leaves):
    raise ValueError(f"{name}: the structure has {len(nodes)} arrays, {len(leaves)} given")
  for i, (node, a) in enumerate(zip(nodes, leaves)):
    if a.dtype.name != node["dtype"] or list(a.shape) != node["shape"]:
      raise ValueError(f"{name}: array {i} is {a.dtype.name}{list(a.shape)}, the structure says "
                       f"{node['dtype']}{node['shape']}")


def _unflatten(structure: JsonValue, leaves: Iterator[np.ndarray]) -> chex.ArrayTree:
  (kind, body), = structure.items()
  if kind == "dict":
    return {k: _unflatten(body[k], leaves) for k in sorted(body)}
  if kind == "tuple":
    return tuple(_unflatten(v, leaves) for v in body)
  if kind == "list":
    return [_unflatten(v, leaves) for v in body]
  return next(leaves)


def _structure_of(node: Any) -> JsonValue:
  """The JSON structure of a tree of arrays or shape-dtype structs (no copies; `node` is any such pytree)."""
  if isinstance(node, dict):
    return {"dict": {k: _structure_of(node[k]) for k in sorted(node)}}
  if isinstance(node, (tuple, list)):
    return {type(node).__name__: [_structure_of(v) for v in node]}
  return {"array": {"dtype": np.dtype(node.dtype).name, "shape": list(node.shape)}}


_SPEC_STRUCTURES: dict[ModuleSpec, str] = {}


def _check_fits_spec(name: str, spec: ModuleSpec, structure: str) -> None:
  """ValueError unless `structure` (canonical JSON) is that of `init_module(spec)`'s variables."""
  expected = _SPEC_STRUCTURES.get(spec)
  if expected is None:  # eval_shape traces init_module without computing it
    params, stats = jax.eval_shape(lambda k: init_module(spec, k), jax.random.key(0))
    expected = _canonical_json(_structure_of({"params": params, "batch_stats": stats}))
    if spec.template != "user":  # a user spec is only a name, whose definition a test may change
      _SPEC_STRUCTURES[spec] = expected
  if structure != expected:
    raise ValueError(f"the variables of {name} do not fit its module {spec}: they are {structure}, "
                     f"the module's are {expected}")


# ---------------------------------------------------------------------------------------------------
# Module specs as exact JSON. `ModuleSpec.hyper` holds ints, floats, bools, strings and (nested) tuples
# of them; JSON keeps int / float / bool apart, and the only JSON arrays in `hyper` are tuples, so every
# array decodes to a tuple. The result is checked to equal the spec (and hash alike) before saving.

_Hyper = Union[None, bool, int, float, str, dict[str, JsonValue], tuple["_Hyper", ...]]
"""A module size as read back from JSON: the JSON value, its arrays as tuples."""


def _encode_hyper(v: object) -> JsonValue:
  if isinstance(v, tuple):
    return [_encode_hyper(x) for x in v]
  if isinstance(v, (bool, str)) or v is None:
    return v
  if isinstance(v, (int, np.integer)):
    return int(v)
  if isinstance(v, (float, np.floating)):
    if not math.isfinite(v):
      raise ValueError(f"module size {v!r} is not finite")
    return float(v)
  raise TypeError(f"cannot store module size {v!r} of type {type(v).__name__}")


def _decode_hyper(v: JsonValue) -> _Hyper:
  return tuple(_decode_hyper(x) for x in v) if isinstance(v, list) else v


def _encode_spec(spec: ModuleSpec) -> dict:
  return {"template": spec.template, "inputs": [str(t) for t in spec.inputs], "output": str(spec.output),
          "activation": spec.activation, "hyper": [[k, _encode_hyper(v)] for k, v in spec.hyper]}


def _decode_spec(d: JsonValue) -> ModuleSpec:
  if not isinstance(d, dict) or set(d) != {"template", "inputs", "output", "activation", "hyper"}:
    raise ValueError(f"a module spec needs exactly template, inputs, output, activation, hyper; "
                     f"got {d!r:.120}")
  if not isinstance(d["inputs"], list) or not isinstance(d["hyper"], list):
    raise ValueError("module spec inputs and hyper must be lists")
  hyper = []
  for pair in d["hyper"]:
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
      raise ValueError(f"module size must be a [name, value] pair, got {pair!r:.80}")
    hyper.append((pair[0], _decode_hyper(pair[1])))
  return ModuleSpec(template=_str(d["template"]), inputs=tuple(parse_type(_str(t)) for t in d["inputs"]),
                    output=parse_type(_str(d["output"])), activation=_str(d["activation"]),
                    hyper=tuple(hyper))


def _str(v: JsonValue) -> str:
  if not isinstance(v, str):
    raise ValueError(f"expected a string, got {v!r:.80}")
  return v


def _canonical_json(obj: JsonValue) -> str:
  return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------------
# Adding a task's functions.

@dataclasses.dataclass(frozen=True, eq=False)
class Trained:
  """A task's best program, trained: what `Library.add` freezes.

  Attributes:
    compiled: the program compiled with `hx.compile_program` (its `.program`, `.fresh_slots`, `.specs`).
    variables: its trained {"params": tuple, "batch_stats": tuple}, one entry per fresh slot (what
      `compiled.init` and `hx.compile.tune` give).
    validation: its validation score, or None.
    test: its test score, or None.
  """
  compiled: CompiledProgram
  variables: Mapping[str, chex.ArrayTree] = dataclasses.field(repr=False)
  validation: float | None = None
  test: float | None = None

  @property
  def program(self) -> P.Program:
    return self.compiled.program


class Added(NamedTuple):
  """What `Library.add` returns.

  Attributes:
    library: the new library, with the best program's fresh functions added.
    programs: the reported programs in rank order (the best first), each fresh function renamed
      nn_<sequence>_<k>, as the paper's tables print them.
    frozen: the best program with its fresh functions as library functions (lib.nn_<sequence>_<k>):
      no fresh functions left; with `library` it computes what the trained best program computes.
    renamings: per reported program, its fresh names -> their new names.
  """
  library: Library
  programs: tuple[P.Program, ...]
  frozen: P.Program
  renamings: tuple[Mapping[str, str], ...]


def _fresh_to_library(p: P.Program, mapping: Mapping[str, str]) -> P.Program:
  if isinstance(p, P.Fresh):
    return P.Lib(mapping[p.name])
  kids = P.children(p)
  return P.with_children(p, tuple(_fresh_to_library(c, mapping) for c in kids)) if kids else p


# ---------------------------------------------------------------------------------------------------
# The library.

@dataclasses.dataclass(frozen=True, eq=False)
class Library:
  """An immutable library of trained neural functions (see the module docstring).

  `Library()` is the empty library. Libraries are equal when they hold equal entries (name, spec,
  arrays, provenance) under the same names and the same counters; the order of entries does not
  matter. `hash(library)` is that of its `version`.

  Attributes:
    entries: the entries, in the order they were added.
    counters: per sequence, the last number given to a function (sorted (sequence, k) pairs).
    version: sha256 (hex) of the entries' names and versions and the counters (not provenance).
  """
  entries: tuple[Entry, ...] = ()
  counters: tuple[tuple[str, int], ...] = ()
  version: str = dataclasses.field(init=False)
  _by_name: Mapping[str, Entry] = dataclasses.field(init=False, repr=False)

  def __post_init__(self):
    entries = tuple(self.entries)
    if any(not isinstance(e, Entry) for e in entries):
      raise TypeError("library entries must be Entry values")
    by_name: dict[str, Entry] = {}
    for e in entries:
      if e.name in by_name:
        raise ValueError(f"two library entries are named {e.name}")
      by_name[e.name] = e
    counters = dict(self.counters)
    if len(counters) != len(tuple(self.counters)):
      raise ValueError("a sequence has two counters")
    for seq, k in counters.items():
      if (not isinstance(seq, str) or not _SEQUENCE.match(seq) or not isinstance(k, int)
          or isinstance(k, bool) or k < 0):
        raise ValueError(f"bad counter {seq!r}: {k!r} (a sequence name and an integer >= 0)")
    object.__setattr__(self, "entries", entries)
    object.__setattr__(self, "counters", tuple(sorted(counters.items())))
    object.__setattr__(self, "_by_name", MappingProxyType(by_name))
    digest = _canonical_json({"entries": sorted([e.name, e.version] for e in entries),
                              "counters": dict(self.counters)})
    object.__setattr__(self, "version", hashlib.sha256(digest.encode()).hexdigest())

  # --- reading ---------------------------------------------------------------------------------

  @property
  def names(self) -> tuple[str, ...]:
    """The function names (without "lib."), in the order they were added."""
    return tuple(self._by_name)

  def __len__(self) -> int:
    return len(self.entries)

  def __iter__(self) -> Iterator[str]:
    return iter(self.names)

  def __contains__(self, name: object) -> bool:
    return name in self._by_name

  def __getitem__(self, name: str) -> Entry:
    try:
      return self._by_name[name]
    except KeyError:
      raise KeyError(f"no library function {name!r}; the library has {', '.join(self.names) or 'none'}") \
        from None

  def types(self) -> Mapping[str, Type]:
    """Name -> function type: the `library_types` of `hx.infer`."""
    return MappingProxyType({e.name: e.type for e in self.entries})

  def specs(self) -> Mapping[str, ModuleSpec]:
    """Name -> ModuleSpec: the `library=` of `hx.compile_program`."""
    return MappingProxyType({e.name: e.spec for e in self.entries})

  def variables(self) -> dict[str, dict]:
    """Name -> {"params", "batch_stats"} (read-only NumPy arrays): the argument of `make_frozen`."""
    return {e.name: e.variables for e in self.entries}

  def versions(self) -> Mapping[str, str]:
    """Name -> the entry's version (a memoisation key for its outputs)."""
    return MappingProxyType({e.name: e.version for e in self.entries})

  def counter(self, sequence: str) -> int:
    """The last number given to a function of `sequence` (0 if none)."""
    return dict(self.counters).get(sequence, 0)

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, Library):
      return NotImplemented
    return dict(self._by_name) == dict(other._by_name) and self.counters == other.counters

  def __hash__(self) -> int:
    return hash(self.version)

  def __repr__(self) -> str:
    names = ", ".join(self.names)
    return f"Library({len(self)} functions: {names or '-'}; version {self.version[:12]})"

  # --- adding ----------------------------------------------------------------------------------

  def add(self, best: Trained, *, sequence: str, task: str,
          runners_up: Sequence[P.Program | Trained] = (), when: str | datetime.datetime | None = None
          ) -> Added:
    """Freezes the fresh functions of a task's best program into a new library.

    Args:
      best: the task's best program, compiled, with its trained variables and scores.
      sequence: the task sequence; names are nn_<sequence>_<k> (letters, digits and _ only).
      task: the task, for provenance (e.g. "count_digit(d1)").
      runners_up: the other programs the task reports (the paper: ranks 2 and 3), best first. They
        only advance the numbering, as in the paper's tables; their functions are not added.
      when: time of the provenance record (a datetime or ISO text); default now, UTC. Pass it to make a
        run reproducible: provenance takes part in library equality.

    Returns:
      `Added(library, programs, frozen, renamings)`; `self` is unchanged.

    Raises:
      ValueError: a bad sequence name, a new name already in the library, or variables that do not fit
        the compiled program.
    """
    if not isinstance(sequence, str) or not _SEQUENCE.match(sequence):
      raise ValueError(f"sequence name must be letters, digits and _, got {sequence!r}")
    compiled = best.compiled
    n = len(compiled.fresh_slots)
    for part in ("params", "batch_stats"):
      if part not in best.variables or len(best.variables[part]) != n:
        raise ValueError(f"best.variables[{part!r}] must hold one entry per fresh slot of {compiled.program} "
                         f"({n}: {', '.join(compiled.fresh_slots)})")
    if isinstance(when, datetime.datetime):
      when = when.isoformat()
    when = when or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    programs = [best.program] + [r.program if isinstance(r, Trained) else r for r in runners_up]
    k = self.counter(sequence)
    renamings = []
    for p in programs:
      mapping = {}
      for name in P.fresh_names(p):
        k += 1
        mapping[name] = f"nn_{sequence}_{k}"
      renamings.append(MappingProxyType(mapping))
    named = tuple(P.rename_fresh(p, m) for p, m in zip(programs, renamings))
    clash = [new for new in renamings[0].values() if new in self]
    if clash:
      raise ValueError(f"the library already has {', '.join(clash)} (its counter for {sequence} is "
                       f"{self.counter(sequence)})")
    provenance = Provenance(sequence=sequence, task=task, program=str(named[0]), validation=best.validation,
                            test=best.test, when=when)
    fresh = compiled.fresh_variables(best.variables)
    new = tuple(Entry.of(renamings[0][old], compiled.specs[old], fresh[old], provenance)
                for old in compiled.fresh_slots)
    library = Library(self.entries + new, tuple({**dict(self.counters), sequence: k}.items()))
    return Added(library, named, _fresh_to_library(best.program, renamings[0]), tuple(renamings))

  # --- disk --------------------------------------------------------------------------------------

  def save(self, path: os.PathLike | str) -> None:
    """Writes the library to the directory `path`, atomically.

    Layout (format version 1):

      path/library.json            {"format": "hx-library", "format_version": 1, "version": library
                                    version, "counters": {sequence: k}, "entries": [{"name", "type"
                                    (text), "spec" (exact JSON, see _encode_spec), "structure", "version",
                                    "provenance", "file", "bytes", "sha256"}, ...]} (UTF-8, entries in
                                    the order they were added)
      path/arrays/NAME.msgpack     the entry's arrays: `flax.serialization.msgpack_serialize` of
                                    {"0": leaf 0, "1": leaf 1, ...} (NumPy arrays, leaf order of
                                    "structure"); "bytes" and "sha256" in library.json describe it

    Why flax msgpack rather than orbax-checkpoint: a library entry is a few small host arrays, and
    msgpack gives one self-contained byte string per entry, which is what a per-file checksum and an
    atomic directory rename need, and restores exact dtypes and shapes without a device (each array is
    a msgpack extension holding its shape, dtype name and raw C-order bytes).
    Orbax brings its own directory layout, asynchronous commit protocol and
    tensorstore files, made for sharded multi-host checkpoints, none of which a library needs.
    The containers (dicts, tuples, lists) are recorded in "structure" rather than in msgpack, which
    would turn tuples into lists.

    Atomicity: `hx.atomic.write_directory_atomically`: everything is written into a new temporary
    directory beside `path` (`.NAME.tmp-*`) and fsynced, then renamed into place; an existing library at
    `path` is exchanged with it atomically (Linux renameat2), or where that is unavailable moved aside
    first, so a crash between the two renames leaves it as a `.NAME.old-*` sibling (`load` points at it).
    If anything fails before the rename, `path` is untouched and the temporary directory is removed; the
    temporaries of a save that was killed are removed by the next save to `path`.

    Raises:
      LibraryError: `path` exists and is neither an hx library nor an empty directory (it is never
        replaced), or the library cannot be written.
    """
    # Through symbolic links: replace the library a link points at, not the link.
    path = Path(os.path.realpath(os.fspath(path)))
    if path.exists() and not (path.is_dir() and (_is_library_dir(path) or not any(path.iterdir()))):
      raise LibraryError(path, "it exists and is not an hx library; refusing to replace it",
                         action="cannot save library to")
    def fill(tmp: Path) -> None:
      (tmp / ARRAYS).mkdir()
      records = []
      for e in self.entries:
        data = flax.serialization.msgpack_serialize({str(i): a for i, a in enumerate(e.leaves)})
        rel = f"{ARRAYS}/{e.name}.msgpack"
        atomic.write_new_file(tmp / rel, data)
        spec = _encode_spec(e.spec)
        if _decode_spec(json.loads(_canonical_json(spec))) != e.spec:
          raise LibraryError(path, f"the module spec of {e.name} does not survive JSON: {e.spec}",
                             action="cannot save library to")
        records.append({
          "name": e.name, "type": str(e.type), "spec": spec, "structure": json.loads(e.structure),
          "version": e.version, "provenance": dataclasses.asdict(e.provenance),
          "file": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
      manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "version": self.version,
                  "counters": dict(self.counters), "entries": records}
      atomic.write_new_file(tmp / MANIFEST, (json.dumps(manifest, indent=1, allow_nan=False,
                                                        ensure_ascii=False) + "\n").encode("utf-8"))

    try:
      atomic.write_directory_atomically(path, fill)
    except OSError as err:  # a read-only or full disk, a parent that is a file: said in one line
      raise LibraryError(path, atomic.WriteFailed.of(err, path).reason(),
                         action="cannot save library to") from None

  @classmethod
  def load(cls, path: os.PathLike | str) -> Library:
    """Reads a library that `save` wrote; all or nothing.

    Raises:
      LibraryError: the path is missing or not a directory, is not an hx library, has another format
        version, a malformed or inconsistent library.json, or an array file missing, truncated or
        altered (checked by size and sha256 before it is decoded); or an entry built by a user's module
        (`hx.compile.register_module`) whose name this process has not registered for its type (the
        definition is code, not data: the library records the module's name only).
    """
    path = Path(os.path.abspath(os.fspath(path)))
    if not path.exists():
      aside = sorted(path.parent.glob(f".{path.name}.old-*")) if path.parent.is_dir() else []
      hint = f"; an interrupted save left the previous library at {aside[-1]}" if aside else ""
      raise LibraryError(path, f"it does not exist{hint}")
    if not path.is_dir():
      raise LibraryError(path, "it is not a directory (a library is a directory holding library.json)")
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
      raise LibraryError(path, f"not an hx library: it has no {MANIFEST}")
    try:
      manifest = read_json(manifest_path)
    except JsonFileError as err:
      raise LibraryError(manifest_path, f"{MANIFEST} {err.problem}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
      raise LibraryError(path, f"not an hx library: {MANIFEST} has no \"format\": \"{FORMAT}\" marker")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
      raise LibraryError(path, f"{MANIFEST} has format version {version!r}; this hx reads version "
                               f"{FORMAT_VERSION} only")
    try:
      return _load_entries(path, manifest)
    except LibraryError:
      raise
    except (KeyError, TypeError, ValueError) as err:
      detail = f"missing key {err}" if isinstance(err, KeyError) else str(err)
      # One line, whatever the file holds: a character that breaks lines is shown escaped.
      detail = "".join(c if c.isprintable() else repr(c)[1:-1] for c in detail)
      raise LibraryError(path, f"{MANIFEST} is malformed or inconsistent: {detail}") from None
    except RecursionError:  # a "structure" nested deeper than its walks go
      raise LibraryError(path, f"{MANIFEST} is malformed: an entry's structure nests too deep") from None


def _load_entries(path: Path, manifest: dict) -> Library:
  """The library a manifest describes; KeyError / TypeError / ValueError when it is malformed."""
  if set(manifest) != {"format", "format_version", "version", "counters", "entries"}:
    raise ValueError(f"top-level keys are {sorted(manifest)}")
  if not isinstance(manifest["entries"], list) or not isinstance(manifest["counters"], dict):
    raise TypeError("\"entries\" must be a list and \"counters\" an object")
  entries = []
  for record in manifest["entries"]:
    if not isinstance(record, dict):
      raise TypeError(f"an entry must be an object, got {record!r:.80}")
    name = _str(record["name"])
    if not _NAME.match(name):
      raise ValueError(f"bad entry name {name!r}")
    rel = f"{ARRAYS}/{name}.msgpack"
    if record["file"] != rel:  # never read a file outside the library
      raise ValueError(f"entry {name} names file {record['file']!r}, expected {rel!r}")
    file = path / rel
    if not file.is_file():
      raise LibraryError(file, f"the array file {rel} of {name} is missing")
    data = file.read_bytes()
    if len(data) != record["bytes"]:
      how = "truncated" if len(data) < record["bytes"] else "longer than recorded"
      raise LibraryError(file, f"the array file {rel} of {name} is {how}: {len(data)} bytes, "
                               f"{MANIFEST} records {record['bytes']}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != record["sha256"]:
      raise LibraryError(file, f"the array file {rel} of {name} is altered: its sha256 is {digest}, "
                               f"{MANIFEST} records {record['sha256']}")
    try:
      arrays = flax.serialization.msgpack_restore(data)
    except Exception as err:  # noqa: BLE001 -- msgpack raises many kinds; the checksum matched anyway
      raise LibraryError(file, f"the array file {rel} of {name} cannot be decoded ({err})") from None
    if not isinstance(arrays, dict) or set(arrays) != {str(i) for i in range(len(arrays))}:
      raise ValueError(f"the array file of {name} does not hold numbered arrays")
    leaves = tuple(_frozen_array(np.asarray(arrays[str(i)])) for i in range(len(arrays)))
    spec = _decode_spec(record["spec"])
    if spec.template == "user":
      _check_registered(path / MANIFEST, name, spec)
    if _str(record["type"]) != str(spec.type):
      raise ValueError(f"entry {name} has type {record['type']} but its module has type {spec.type}")
    p = record["provenance"]
    if not isinstance(p, dict):
      raise TypeError(f"the provenance of {name} must be an object")
    unknown = sorted(set(p) - {f.name for f in dataclasses.fields(Provenance)})
    if unknown:
      raise ValueError(f"the provenance of {name} has no field {unknown[0]!r}")
    provenance = Provenance(**p)
    entry = Entry(name, spec, provenance, _canonical_json(record["structure"]), leaves)
    if entry.version != record["version"]:
      raise ValueError(f"entry {name} has version {entry.version}, {MANIFEST} records {record['version']}")
    entries.append(entry)
  library = Library(tuple(entries), tuple(manifest["counters"].items()))
  if library.version != manifest["version"]:
    raise ValueError(f"the library has version {library.version}, {MANIFEST} records {manifest['version']}")
  return library


def _check_registered(manifest: Path, name: str, spec: ModuleSpec) -> None:
  """LibraryError unless the user module `spec` names is registered in this process for its type."""
  from hx.compile.modules.registry import registered_modules

  module = spec["name"]
  registration = registered_modules().get(module)
  if registration is not None and registration.type == spec.type:
    return
  why = ("which is not registered in this process" if registration is None else
         f"which this process has registered for another type, {registration.type}")
  raise LibraryError(manifest, f"function {name} was built by the user module {module!r} ({spec.type}), "
                               f"{why}: call hx.compile.register_module({module!r}, {str(spec.type)!r}, "
                               "...) with the module's definition first, then load the library")


def _is_library_dir(path: Path) -> bool:
  """Whether `path` holds a library.json with the hx-library marker (any format version)."""
  try:
    manifest = read_json(path / MANIFEST)
  except JsonFileError:
    return False
  return isinstance(manifest, dict) and manifest.get("format") == FORMAT
