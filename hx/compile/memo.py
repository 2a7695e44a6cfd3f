"""Frozen prefixes: library functions applied first to every input image, computed once per table.

A library function always runs in inference mode (running batch-norm statistics, no dropout), so its
output on an image never changes. When a program applies library functions to its input images before
anything else,

    compose(nn_a, map_l(compose(nn_b, lib.cnn)))         lib.cnn on every image of every list
    compose(conv_g^10(nn_k), map_g(lib.f ∘ lib.g))       lib.f ∘ lib.g on every cell of every grid
    compose(nn_a, lib.cnn)                               lib.cnn on every image

those functions can be applied once to the task's image table (the rows its splits point at:
`referenced_rows`), and the rest of the program
(`compose(nn_a, map_l(nn_b))`, `conv_g^10(nn_k)`, `nn_a`) trained on the new table: the same indices
select the same values, the fresh functions and their parameters are the same (slot for slot), and so are
the losses, gradients and scores, up to rounding. A transfer candidate then runs its frozen CNN once per
task instead of once per image per step, and a shortest-path candidate runs its regressor over the cell
images once instead of over 16 million cells per epoch.

`frozen_prefix` splits a program; `PrefixTables` computes and memoises the new tables, keyed by the
versions of the library entries in the prefix (`hx.Library.versions()`: a retrained or replaced function
has another version) and a digest of the table's bytes, so candidates share them and nothing stale is
ever reused.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.modules.spec import ModuleSpec
from hx.lang import program as P

if TYPE_CHECKING:
  import chex

  from hx.compile.lower import CompiledProgram
  from hx.compile.tune_inputs import TuneData
  from hx.lang.values import Array, Inputs

__all__ = ["frozen_prefix", "prefix_program", "PrefixTables", "apply_prefix", "table_digest",
           "referenced_rows"]


def _split_libs(chain: list[P.Program]) -> tuple[list[P.Program], tuple[str, ...]]:
  """(chain without its trailing library functions, their names outermost first)."""
  k = len(chain)
  while k > 0 and isinstance(chain[k - 1], P.Lib):
    k -= 1
  return chain[:k], tuple(c.name for c in chain[k:])


def frozen_prefix(program: P.Program) -> tuple[tuple[str, ...], P.Program]:
  """The library functions `program` applies first to each input value, and the program without them.

  Returns:
    (names, rest): `names` the prefix's library functions, outermost first; `rest` the program that,
    applied to the prefix's outputs, computes what `program` computes on the inputs. When there is no
    prefix, or the program is one library function (or a map of one), `names` is empty and `rest` is
    `program` itself.

  The prefix is the longest run of library functions at the input end of the program's composition
  chain, or, when the chain starts with a map (`map_l`, `map_g`), at the input end of the map's function.
  When that run is the whole program (`compose(lib.f, lib.g)`, `map_g(compose(lib.f, lib.g))`: a
  candidate without parameters, which is only scored), its outermost function stays in `rest`
  (`lib.f`, `map_g(lib.f)`), so the scoring, validation and test, runs lib.f on the table instead of
  lib.f after lib.g on every image. Ours: on GS2 task 2 the regressor's CNN over every cell of the
  validation and test grids was a visible share of a synthesis
  (benchmarks/notes/2026-11-24-gs2-reference-and-lending.md).
  """
  chain = P.chain(program)
  first = chain[-1]
  if isinstance(first, P.Map):
    inner, names = _split_libs(P.chain(first.fn))
    if not inner and not chain[:-1]:
      inner, names = [P.Lib(names[0])], names[1:]
    if not names:
      return (), program
    rest = chain[:-1] + ([P.Map(first.adt, P.compose_chain(inner))] if inner else [])
  else:
    rest, names = _split_libs(chain)
    if not rest:
      rest, names = [P.Lib(names[0])], names[1:]
  if not names:
    return (), program
  return names, P.compose_chain(rest)


def prefix_program(names: tuple[str, ...]) -> P.Program:
  """The prefix as a program of its own: lib.a ∘ lib.b ∘ ... (outermost first)."""
  return P.compose_chain([P.Lib(n) for n in names])


def referenced_rows(*splits_inputs: Inputs | None) -> np.ndarray | None:
  """The image-table rows the splits' inputs point at (`hx.compile.distinct.image_indices`: an array of
  indices, or a ListBatch or graph batch of them, padding included), sorted and distinct, int64; None
  when an input holds values instead of indices (then nothing can be left out). Pass each split's
  `inputs` (None for an absent split)."""
  from hx.compile.distinct import image_indices

  found = []
  for inputs in splits_inputs:
    if inputs is None:
      continue
    idx = image_indices(inputs)
    if idx is None:
      return None
    found.append(np.asarray(idx, np.int64).reshape(-1))
  return np.unique(np.concatenate(found)) if found else np.zeros((0,), np.int64)


def table_digest(table: Array) -> str:
  """sha256 of a table's dtype, shape and bytes (identifies its contents, whatever object holds it)."""
  a = np.ascontiguousarray(np.asarray(table))
  h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
  h.update(a.tobytes())
  return h.hexdigest()


def apply_prefix(names: tuple[str, ...], specs: Mapping[str, ModuleSpec],
                 variables: Mapping[str, Mapping[str, chex.ArrayTree]], table: Array, *,
                 rows: jax.typing.ArrayLike | None = None, chunk: int = 2048) -> jax.Array:
  """The prefix applied to the rows of `table` (m, *in) in inference mode: (m, *out) float32.

  Args:
    rows: None: every row; else the indices of the rows to compute (any int array; duplicates and order
      do not matter), and every other row of the result is 0. A task's splits point at a part of the
      image table (2% of CS1's count_digit: about 8,000 of MNIST's 70,000 images), and only that part is
      ever read.
    chunk: rows are processed `chunk` at a time by one jitted call (a last short chunk is padded and cut
      off), so memory stays bounded and the call compiles once.
  """
  from hx.compile.lower import make_frozen

  canonical, compiled, run = _prefix_run(names, specs)
  frozen = make_frozen(compiled, {c: variables[n] for c, n in zip(canonical, names)})
  # A host (NumPy) table is gathered, padded and placed in NumPy, so that the jitted prefix is the only
  # compiled call: each eager JAX operation is an executable of its own, compiled again once
  # `hx.compile.release` has cleared JAX's caches. A device table stays on the device. Same values.
  xp = np if isinstance(table, np.ndarray) else jnp
  table = xp.asarray(table)
  m = table.shape[0]
  wanted = None if rows is None else np.unique(np.asarray(rows, np.int64).reshape(-1))
  if wanted is not None and wanted.size and (wanted[0] < 0 or wanted[-1] >= m):
    raise ValueError(f"apply_prefix: rows must index the table's {m} rows, got {wanted[0]}..{wanted[-1]}")
  n = m if wanted is None else int(wanted.size)
  chunk = max(1, min(chunk, n))
  parts = []
  for start in range(0, n, chunk):
    x = table[start:start + chunk] if wanted is None else table[wanted[start:start + chunk]]
    real = x.shape[0]
    if real < chunk:
      x = xp.concatenate([x, xp.zeros((chunk - real,) + x.shape[1:], x.dtype)])
    parts.append(xp.asarray(run(frozen, x))[:real])
  if not parts:  # no row wanted: the output's shape from the prefix applied to one image
    out = run(frozen, table[:1])
    return jnp.zeros((m,) + out.shape[1:], jnp.float32)
  out = xp.concatenate(parts).astype(np.float32)
  if wanted is None:
    return jnp.asarray(out)
  if xp is np:
    full = np.zeros((m,) + out.shape[1:], np.float32)
    full[wanted] = out
    return jnp.asarray(full)
  return jnp.zeros((m,) + out.shape[1:], jnp.float32).at[wanted].set(out)


_RUNS: dict[tuple, tuple[CompiledProgram, Callable[[tuple, Array], jax.Array]]] = {}
"""Prefix structures -> (compiled prefix, its jitted inference apply), the most recently used last."""
_MAX_RUNS = 64


def _prefix_run(names: tuple[str, ...], specs: Mapping[str, ModuleSpec]
                ) -> tuple[tuple[str, ...], CompiledProgram, Callable[[tuple, Array], jax.Array]]:
  """(canonical names, compiled program, jitted apply(frozen, x)) of the prefix `names`, shared by every
  prefix of the same structure (the same module specs in the same places): a long library holds many
  CNNs of one architecture, and each would otherwise trace and compile the same executable. The
  canonical names keep the originals' sorted order, so the frozen variables flatten in the same order
  as under the library's names."""
  from hx.compile.lower import compile_program

  rank = {n: r for r, n in enumerate(sorted(set(names)))}
  canonical = tuple(f"p{rank[n]:04d}" for n in names)
  key = (canonical, tuple(repr(specs[n]) for n in names))
  got = _RUNS.pop(key, None)
  if got is None:
    compiled = compile_program(prefix_program(canonical), {},
                               library={c: specs[n] for c, n in zip(canonical, names)})
    empty = {"params": (), "batch_stats": ()}
    got = (compiled, jax.jit(lambda f, x: compiled.apply(empty, f, x, train=False)))
  _RUNS[key] = got
  while len(_RUNS) > _MAX_RUNS:
    _RUNS.pop(next(iter(_RUNS)))
  return (canonical, *got)


class PrefixLibrary(Protocol):
  """What `PrefixTables` reads of a library (an `hx.Library` has it): its functions' versions, module specs
  and variables ({"params", "batch_stats"} per name), each by name."""

  def versions(self) -> Mapping[str, str]: ...

  def specs(self) -> Mapping[str, ModuleSpec]: ...

  def variables(self) -> Mapping[str, Mapping[str, chex.ArrayTree]]: ...


class PrefixTables:
  """Memoised prefix tables (see the module docstring), for any libraries and image tables.

  Args:
    max_entries: tables kept at most (the least recently used is dropped first).
  """

  def __init__(self, max_entries: int = 16):
    self.max_entries = max_entries
    self._tables: dict[tuple, jax.Array] = {}
    self._digests: dict[int, tuple[Array, str]] = {}
    self._rows: dict[int, tuple[TuneData, np.ndarray | None]] = {}
    self.hits = self.misses = 0

  def _digest(self, table: Array) -> str:
    # Digest each table object once; keep the object so its id cannot be reused while cached.
    got = self._digests.get(id(table))
    if got is None or got[0] is not table:
      got = (table, table_digest(table))
      self._digests[id(table)] = got
    return got[1]

  def table_for(self, library: PrefixLibrary, names: tuple[str, ...], data: TuneData) -> jax.Array:
    """`table` of `data`'s image table (an `hx.compile.TuneData`) on the rows its splits read
    (`referenced_rows`), found once per data object: every candidate of a task shares its data."""
    got = self._rows.get(id(data))
    if got is None or got[0] is not data:
      test = None if data.test is None else data.test.inputs
      got = (data, referenced_rows(data.train.inputs, data.val.inputs, test))
      # Kept with the data (so its id cannot be reused while cached); a few tasks' worth at most.
      self._rows[id(data)] = got
      while len(self._rows) > 4:
        self._rows.pop(next(iter(self._rows)))
    return self.table(library, names, data.table, got[1])

  def table(self, library: PrefixLibrary, names: tuple[str, ...], table: Array,
            rows: jax.typing.ArrayLike | None = None) -> jax.Array:
    """The prefix `names` of `library` (an `hx.Library`: its `versions()`, `specs()` and `variables()`)
    applied to every row of `table`, or only to `rows` (the others 0: `apply_prefix`), computed on first
    use. A table computed for some rows is never given for others."""
    versions = library.versions()
    wanted = None if rows is None else np.unique(np.asarray(rows, np.int64).reshape(-1))
    key = (tuple(versions[n] for n in names), self._digest(table),
           None if wanted is None else hashlib.sha256(wanted.tobytes()).hexdigest())
    out = self._tables.pop(key, None)
    if out is None:
      self.misses += 1
      # Computed here, not when the first training step needs it: JAX dispatches asynchronously, and a
      # schedule that prices candidates by their training seconds (hx.synth.schedules.cheap_first) must
      # not charge the first candidate that uses a prefix for the table every later one shares.
      out = jax.block_until_ready(apply_prefix(names, library.specs(), library.variables(), table,
                                               rows=wanted))
    else:
      self.hits += 1
    self._tables[key] = out  # most recently used last
    while len(self._tables) > self.max_entries:
      self._tables.pop(next(iter(self._tables)))
    return out
