"""Lowering a HOUDINI program to a pure JAX function.

`compile_program(program, types, config, library)` gives a `CompiledProgram` whose

    init(rng) -> variables
    apply(variables, frozen, x, *, train, rng=None, mask=None, logits=False, pack=None)
        -> y   (train=False)
        -> (y, batch_stats)  (train=True)

are pure functions (neither is jitted here: the caller jits). Parameters are never closed over:

  variables  {"params": (p_0, p_1, ...), "batch_stats": (s_0, s_1, ...)}: one entry per *fresh slot*
             (`CompiledProgram.fresh_slots[i]` names the fresh function in slot i); p_i and s_i are the
             nested dicts of `hx.compile.modules.init_module`.
  frozen     ({"params": ..., "batch_stats": ...}, ...): one entry per *library slot*, in the order of
             `CompiledProgram.library_slots`; make it with `make_frozen`. Library modules always run in
             inference mode (running statistics, no dropout).

Slots are numbered in order of first occurrence (pre-order), and the lowering depends only on the
program with its names replaced by slot numbers, the module specs per slot (for library slots without
the training-only sizes, dropout and batch-norm momentum), `conv_window` and (for a program with `fix`)
`ModuleConfig.fix`: that is the `key`.
Programs with equal keys (e.g. two programs that differ in fresh names, or in which library function of
the same architecture they call) get the very same `init` and `apply` function objects, so a jitted step
keyed on `apply` is traced once for all of them.

Values (see `hx.compile.values`; shapes below: R rows, L list length, N nodes, K neighbours, E edges):
a tensor is an array (R, ...); a list a ListBatch((R, L, ...), (R, L)); a graph a
GraphBatch((R, N, ...), (R, N, K), (R, N, K), (R, N)) (a neighbour table) or an
EdgeGraphBatch((R, N, ...), (R, E), (R, E), (R, E), (R, N)) (edge lists). Outputs of map/conv carry the
input's masks (and neighbour table or edges). `mask` (R,) optionally marks padded rows of the batch itself
(default: all real).

Combinators:
  compose(f, g)   f(g(x)).
  map_l / map_g   one batched call of the function on all R*L elements (R*N nodes), flattened, with the
                  element mask as row mask (so batch-norm statistics see only real elements).
  fold_l / fold_g `lax.scan` over the L (N, in node order) axis; the state is updated with
                  where(mask, step(state, x_t), state). The step must be a single fresh or library
                  function (an MLP taking (state, element) concatenated) and the start `zeros(n)`; other
                  forms raise NotImplementedError.
  conv_l          node i gets kernel([a_i, a_{i-p}, ..., a_{i-1}, a_{i+1}, ..., a_{i+p}]) with indices
                  clamped to [0, length-1] (the paper's window, p = `conv_window`). The centre comes first
                  so that, as in conv_g, a kernel always finds its own node's value at position 0. One
                  batched kernel call on R*L windows of 2p+1.
  conv_g          node u gets kernel([u, its neighbours...]) (u first). A graph-kernel module (the
                  kernel the search builds) runs on edges: the R graphs are flattened into R*N nodes (each
                  row's indices offset by row*N, jraph's batching by concatenation) and the module gets
                  them as `Neighbourhoods`: its pair network runs per edge and per node, and its
                  aggregations are segment operations over the receivers. An EdgeGraphBatch gives its
                  edges; a GraphBatch's table gives one edge per real entry k >= 1 of each list (masked
                  reductions over the table's K axis measured slower, benchmarks/RESULTS.md). Any other
                  kernel (an LSTM reading the list in order, a composition) gets the neighbour lists
                  gathered through the table, one batched call on R*N lists with the neighbour mask; it
                  needs the table form (`hx.compile.values.table_from_edges`) and raises
                  NotImplementedError on edges. Both forms of a graph compute the same function of the
                  same parameters (tests/compile/test_graph_forms.py).
  repeat(k, e)    `lax.scan` over k iterations with shared parameters (k = 1: a single call).
  fix(e)          e applied until no real element changed by more than `ModuleConfig.fix.tolerance`, or
                  `ModuleConfig.fix.max_iterations` times: one `lax.while_loop`
                  (`hx.compile.fixpoint`), for the whole batch (it stops when every row has converged;
                  a converged row's value stays put). In training the cap is drawn per call from
                  `ModuleConfig.fix.train_horizon` (by default 16 to max_iterations) with the call's rng. Its
                  gradient (`ModuleConfig.fix.gradient`) is backpropagation through the last `window`
                  iterations, recomputed from the iterates the loop kept (exact for loops that short,
                  truncated beyond), or implicit, at the fixed point; `hx.compile.fixpoint` has both
                  schemes and where each is truncated.
                  e runs without dropout (a random map has no fixed point); its batch statistics, in
                  training, are updated once per iteration as in repeat.
  zeros(n)        a (R, n) float32 zero array (only as a fold start).

Padding: padded elements of the input are set to zero on entry (whatever they held, NaN included), and
every combinator masks them out, so padding never reaches a real output, gradient or statistic.
`apply(..., pack=k)` goes further for a list input of B lists padded to L, or a graph input of B graphs
padded to N nodes: a map over that list (map_l) or over that graph's nodes (map_g) runs its function on
the (at most k) real elements or nodes only, gathered into k rows, and the padded elements' outputs are
zeros. It holds in training and in inference alike (Tune passes the k of its fullest training batch,
`hx.compile.batching.pack_capacity`, and of its fullest evaluation chunk, `eval_pack_capacity`).

Randomness: `rng` is split into one key per batch row; a list element, a fold step, a repeat iteration
and a fresh module's call site each fold their index into the row key. A real element's dropout mask therefore
does not depend on the padding around it: outputs, gradients and batch statistics in training mode are
the same for any amount of padding, not only in inference.

Batch statistics in training: each call of a fresh module updates its running statistics once (a fold
step or repeated function once per iteration, skipped when no row is real), threaded through loops.

Logits: a module call is *terminal* when its output is (part of) the program's output: the root; f of a
compose(f, g) in output position; the function of a map and the kernel of a conv in output position;
the function of repeat(1, e) in output position. A call inside repeat(k > 1, ...), fix(...) or a fold
step is never terminal (its output feeds further calls). `apply(..., logits=True)` skips the output activation
(sigmoid / softmax) of the terminal calls only, so that the losses can be computed from logits with
exact gradients. `CompiledProgram.output_activation` says what the output then is: "sigmoid" or
"softmax" when every terminal call has that activation (the output is then its logits), "none" when no
terminal call has one (a real output), else "mixed" (also when there is no terminal call, e.g. a fold
at the root); only in the first two cases is `output_logits` True.
"""

from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, ClassVar, Hashable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hx.compile.fixpoint import FixConfig, fixed_point
from hx.compile.modules.choice import module_spec
from hx.compile.modules.config import ModuleConfig
from hx.compile.modules.graph_kernel import Neighbourhoods
from hx.compile.modules.layers import Rows
from hx.compile.modules.spec import ModuleSpec
from hx.compile.modules.templates import apply_module, init_module, linear_output
from hx.lang import program as P
from hx.lang.types import Type
from hx.lang.values import ELEMENT_BATCHES, EdgeGraphBatch, GraphBatch, ListBatch

if TYPE_CHECKING:
  import chex

  from hx.lang.infer import Typing
  from hx.lang.values import Batch

__all__ = ["CompiledProgram", "compile_program", "compile_part", "make_frozen", "lowering_cache_info"]

Variables = dict  # {"params": tuple, "batch_stats": tuple}


@dataclasses.dataclass(frozen=True, eq=False)
class CompiledProgram:
  """A program lowered to pure JAX functions (see the module docstring for the calling convention).

  Attributes:
    program: the program as given.
    structure: the program with fresh names replaced by "#i" and library names by "#j" (slot numbers).
    key: hashable; equal keys mean the very same `init` and `apply` objects.
    init: init(rng) -> {"params": tuple, "batch_stats": tuple} for the fresh slots.
    apply: `apply(variables, frozen, x, *, train, rng=None, mask=None, logits=False, pack=None) -> y`, or
      (y, new_batch_stats) when train (new_batch_stats has the structure of variables["batch_stats"]).
      With logits=True the terminal module calls skip their sigmoid / softmax (module docstring).
    output_activation: "sigmoid" | "softmax" | "none" | "mixed": the activation of every terminal module
      call, when they all share one (module docstring).
    fresh_slots: the fresh function in each parameter slot.
    library_slots: the library function (name without "lib.") in each frozen slot.
    specs: module spec per function: fresh names as they are, library names as "lib.NAME".
    config: the configuration the fresh specs were derived with.
    output_slot: the fresh slot whose module's linear output layer (a Dense with no activation after it)
      gives the program's whole output: the program is, through `compose`, that fresh module applied
      last (`compose(nn_a, map_l(...))`, `nn_1`); None otherwise (a library function, a map, fold,
      conv or repeat at the output, or an output activation). Tune can start that layer's bias at the
      targets' mean (`TuneConfig.bias_from_targets`).
  """
  program: P.Program
  structure: P.Program
  key: Hashable
  init: Callable[[jax.Array], Variables]
  apply: Callable[..., Batch | tuple[Batch, tuple]]
  fresh_slots: tuple[str, ...]
  library_slots: tuple[str, ...]
  specs: Mapping[str, ModuleSpec]
  config: ModuleConfig
  output_activation: str = "mixed"
  output_slot: int | None = None
  # `apply` takes `pack` (Tune passes it to programs that declare this).
  packs_lists: ClassVar[bool] = True

  @property
  def output_logits(self) -> bool:
    """Whether `apply(..., logits=True)` returns logits for the whole output (every terminal module call
    ends in a sigmoid, or every one in a softmax)."""
    return self.output_activation in ("sigmoid", "softmax")

  def make_frozen(self, library_params: Mapping[str, Mapping[str, chex.ArrayTree]]) -> tuple:
    """The `frozen` argument from library name (without "lib.") -> {"params", "batch_stats"}."""
    return make_frozen(self, library_params)

  def fresh_variables(self, variables: Variables) -> dict[str, dict]:
    """Fresh name -> {"params", "batch_stats"} of that function, e.g. to add it to the library."""
    return {name: {"params": variables["params"][i], "batch_stats": variables["batch_stats"][i]}
            for i, name in enumerate(self.fresh_slots)}


def make_frozen(compiled: CompiledProgram,
                library_params: Mapping[str, Mapping[str, chex.ArrayTree]]) -> tuple:
  """The pytree of frozen library parameters, ordered by `compiled.library_slots`.

  Args:
    compiled: the compiled program.
    library_params: library name (without "lib.") -> {"params": ..., "batch_stats": ...}, as
      `CompiledProgram.fresh_variables` gives them; names the program does not use are ignored.
  """
  missing = [n for n in compiled.library_slots if n not in library_params]
  if missing:
    raise KeyError(f"no parameters for library function(s) {', '.join(missing)} of {compiled.program}")
  return tuple({"params": library_params[n]["params"],
                "batch_stats": library_params[n].get("batch_stats", {})} for n in compiled.library_slots)


def _roles(program: P.Program) -> dict[str, str | None]:
  """Fresh name -> "kernel" if it is the direct kernel of a conv, else None; conflicting uses raise."""
  roles: dict[str, str | None] = {}
  for _, t in P.subterms(program):
    for c in P.children(t):
      if isinstance(c, P.Fresh):
        role = "kernel" if isinstance(t, P.Conv) and c is t.fn else None
        if roles.setdefault(c.name, role) != role:
          raise NotImplementedError(
            f"fresh function {c.name} is used both as a conv kernel and elsewhere in {program}")
  if isinstance(program, P.Fresh):
    roles.setdefault(program.name, None)
  return roles


# Sizes that only matter in training; library modules always run in inference mode, so two library
# functions that differ only in these share one lowering.
_TRAINING_ONLY = {"dropout": 0.0, "bn_momentum": 0.0}


def _inference_spec(spec: ModuleSpec) -> ModuleSpec:
  hyper = tuple((k, _TRAINING_ONLY.get(k, v)) for k, v in spec.hyper)
  return dataclasses.replace(spec, hyper=hyper)


def _slot_structure(p: P.Program, fresh: Mapping[str, int], lib: Mapping[str, int]) -> P.Program:
  if isinstance(p, P.Fresh):
    return P.Fresh(f"#{fresh[p.name]}")
  if isinstance(p, P.Lib):
    return P.Lib(f"#{lib[p.name]}")
  kids = P.children(p)
  return P.with_children(p, tuple(_slot_structure(c, fresh, lib) for c in kids)) if kids else p


def compile_program(program: P.Program, types: Typing | Mapping[str, Type],
                    config: ModuleConfig | None = None,
                    library: Mapping[str, ModuleSpec] | None = None) -> CompiledProgram:
  """Lowers a complete program to pure `init` / `apply` functions.

  Args:
    program: a complete program (no holes) whose type is a function.
    types: the `Typing` from `hx.lang.infer.infer` (its `.fresh` is used) or a mapping from each fresh
      name to its fully resolved type.
    config: module sizes for the fresh functions, and conv_l's window (default `ModuleConfig()`).
    library: library name (without "lib.") -> ModuleSpec, for each library function the program uses.

  Raises:
    ValueError: holes, a missing type or library spec.
    NoTemplateError / UnresolvedTypeError: a fresh function's type has no template / has type variables.
    NotImplementedError: a fold step or start of an unsupported form.
  """
  if not P.is_complete(program):
    raise ValueError(f"cannot compile a partial program (it has holes): {program}")
  config = ModuleConfig() if config is None else config
  fresh_types: Mapping[str, Type] = getattr(types, "fresh", types)
  library = library or {}
  fresh_slots = P.fresh_names(program)
  library_slots = P.library_names(program)
  roles = _roles(program)
  specs: dict[str, ModuleSpec] = {}
  for name in fresh_slots:
    if name not in fresh_types:
      raise ValueError(f"no type given for fresh function {name} of {program}")
    specs[name] = module_spec(fresh_types[name], config, role=roles.get(name), name=name)
  for name in library_slots:
    if name not in library:
      raise ValueError(f"no module spec given for library function lib.{name} of {program}")
    specs[f"lib.{name}"] = library[name]
  return _assemble(program, specs, config)


def compile_part(compiled: CompiledProgram, part: P.Program) -> CompiledProgram:
  """A complete subprogram of `compiled.program` (e.g. the function one of its maps applies) lowered with
  the module specs `compiled` gave its functions: the same modules, in slots numbered in `part`'s own
  order (`fresh_slots`, `library_slots` name them)."""
  if not P.is_complete(part):
    raise ValueError(f"cannot compile a partial program (it has holes): {part}")
  names = [*P.fresh_names(part), *(f"lib.{n}" for n in P.library_names(part))]
  missing = [n for n in names if n not in compiled.specs]
  if missing:
    raise ValueError(f"{part} uses {', '.join(missing)}, which {compiled.program} does not")
  return _assemble(part, {n: compiled.specs[n] for n in names}, compiled.config)


def _assemble(program: P.Program, specs: Mapping[str, ModuleSpec], config: ModuleConfig) -> CompiledProgram:
  """The CompiledProgram of `program` whose functions have the module specs `specs` (fresh names as they
  are, library names as "lib.NAME")."""
  fresh_slots = P.fresh_names(program)
  library_slots = P.library_names(program)
  structure = _slot_structure(program, {n: i for i, n in enumerate(fresh_slots)},
                              {n: j for j, n in enumerate(library_slots)})
  uses_fix = any(isinstance(t, P.Fix) for _, t in P.subterms(program))
  key = (structure, tuple(specs[n] for n in fresh_slots),
         tuple(_inference_spec(specs[f"lib.{n}"]) for n in library_slots), config.conv_window,
         config.fix if uses_fix else None)
  init, apply, output_activation = _lower(key)
  return CompiledProgram(program=program, structure=structure, key=key, init=init, apply=apply,
                         fresh_slots=fresh_slots, library_slots=library_slots,
                         specs=MappingProxyType(specs), config=config, output_activation=output_activation,
                         output_slot=_output_slot(structure, key[1]))


def _output_slot(structure: P.Program, fresh_specs: tuple[ModuleSpec, ...]) -> int | None:
  """`CompiledProgram.output_slot` of a slot structure (`_slot_structure`)."""
  node = structure
  while isinstance(node, P.Compose):
    node = node.f
  if not isinstance(node, P.Fresh):
    return None
  slot = int(node.name[1:])
  return slot if linear_output(fresh_specs[slot]) else None


def lowering_cache_info() -> functools._CacheInfo:
  """functools cache statistics of the lowering (hits mean shared init/apply objects)."""
  return _lower.cache_info()


# ---------------------------------------------------------------------------------------------------
# The lowering proper. A lowered function is f(ctx, x, mask, keys) -> y with x a value of R rows,
# mask (R,) bool real rows, keys (R,) typed PRNG keys or None (no dropout).

class _Ctx:
  """Per-call state: parameters, the fresh batch statistics threaded through the trace, and whether
  terminal module calls return logits."""

  def __init__(self, params: tuple, stats: tuple, frozen: tuple, train: bool, logits: bool = False,
               pack: tuple[jax.Array, int] | None = None, rng: jax.Array | None = None):
    self.params, self.stats, self.frozen, self.train = params, stats, frozen, train
    self.logits = logits
    # The call's typed PRNG key in training (None otherwise): what draws fix's training horizon.
    self.rng = rng
    # (the input list's or graph's mask, capacity): a map over a list or graph carrying that very mask
    # (the input, or a value mapped or convolved from it) runs on at most `capacity` real elements or
    # nodes; no other value is packed (a value inside a loop carries a new tracer, so it is not either).
    self.pack = pack
    # Set while repeat's body is traced: module calls there recompute their graph kernels' activations in
    # the backward pass (`hx.compile.modules.Rows.recompute`).
    self.recompute = False


def _fold_keys(keys: jax.Array | None, n: jax.typing.ArrayLike) -> jax.Array | None:
  """Folds the index n into each row's key: (R,) -> (R,)."""
  if keys is None:
    return None
  return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, n)


def _element_keys(keys: jax.Array | None, length: int) -> jax.Array | None:
  """One key per element: (R,) -> (R * length,), element (r, i) folds i into row r's key."""
  if keys is None:
    return None
  per = jax.vmap(lambda k: jax.vmap(lambda i: jax.random.fold_in(k, i))(jnp.arange(length)))(keys)
  return per.reshape(-1)


def _flat(a: jax.Array) -> jax.Array:
  return a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:])


def _unflat(a: jax.Array, r: int, length: int) -> jax.Array:
  return a.reshape((r, length) + a.shape[1:])


def _packed_rows(fn: Callable, values: jax.Array, rows: jax.Array, keys: jax.Array | None,
                 capacity: int) -> jax.Array:
  """fn applied to the real rows only: values (n, ...) with rows (n,) bool, of which at most `capacity`
  are True (the caller's guarantee: more would be dropped). The real rows are gathered, in order, into
  `capacity` rows (the unused ones masked out of batch statistics), each with its own dropout key, and
  fn's outputs are scattered back; padded rows get zeros, which every consumer of a list or graph ignores
  (they would otherwise hold fn of a padding value). Values, batch statistics and gradients are those of fn on
  all n rows, up to the order of the sums.
  """
  n = rows.shape[0]
  (pos,) = jnp.nonzero(rows, size=capacity, fill_value=n)
  real = pos < n
  src = jnp.minimum(pos, n - 1)
  y = fn(jnp.take(values, src, axis=0), real, None if keys is None else keys[src])
  return jnp.zeros((n,) + y.shape[1:], y.dtype).at[pos].set(y, mode="drop")


def _as_float(x: Batch) -> Batch:
  """x with float32 values (loop carries need the dtype the body produces)."""
  if isinstance(x, ELEMENT_BATCHES):
    return x._replace(values=jnp.asarray(x.values, jnp.float32))
  return jnp.asarray(x, jnp.float32)


class _Lowering:
  def __init__(self, fresh_specs: tuple, lib_specs: tuple, window: int, fix: FixConfig | None):
    self.fresh_specs, self.lib_specs, self.window, self.fix = fresh_specs, lib_specs, window, fix
    self.sites = 0
    self.terminal_activations: list[str] = []

  def module(self, node: P.Fresh | P.Lib, terminal: bool = False) -> Callable:
    """A call of the module in node's slot: call(ctx, inputs, mask, keys) -> y; a terminal call skips its
    activation when ctx.logits."""
    slot = int(node.name[1:])
    fresh = isinstance(node, P.Fresh)
    spec = (self.fresh_specs if fresh else self.lib_specs)[slot]
    # Only fresh calls are numbered (library calls draw no randomness), so a program and the same program
    # without its frozen prefix (hx.compile.memo) give every fresh call the same dropout keys.
    site = self.sites
    self.sites += fresh
    if terminal:
      self.terminal_activations.append(spec.activation)

    def call(ctx: _Ctx, inputs: tuple, mask: jax.Array, keys: jax.Array | None) -> jax.Array:
      if fresh:
        train, params, stats = ctx.train, ctx.params[slot], ctx.stats[slot]
      else:
        train, params, stats = False, ctx.frozen[slot]["params"], ctx.frozen[slot]["batch_stats"]
      k = _fold_keys(keys, site) if train else None
      y, new = apply_module(spec, params, stats, inputs, Rows(mask, k, train, ctx.recompute),
                            logits=terminal and ctx.logits)
      if fresh and train:
        ctx.stats = ctx.stats[:slot] + (new,) + ctx.stats[slot + 1:]
      return y

    call.spec = spec
    return call

  def uses_dropout(self, node: P.Program) -> bool:
    """Whether a fresh module under node has dropout (else no PRNG keys are derived for it at all)."""
    return any(isinstance(t, P.Fresh) and self.fresh_specs[int(t.name[1:])].template in ("mlp", "cnn")
               and self.fresh_specs[int(t.name[1:])]["dropout"] > 0 for _, t in P.subterms(node))

  def lower(self, node: P.Program, terminal: bool = False) -> Callable:
    """node lowered; `terminal`: node's output is (part of) the program's output."""
    fn = self._lower(node, terminal)
    if self.uses_dropout(node):
      return fn
    return lambda ctx, x, mask, keys: fn(ctx, x, mask, None)

  def _lower(self, node: P.Program, terminal: bool) -> Callable:
    if isinstance(node, (P.Fresh, P.Lib)):
      call = self.module(node, terminal)
      if len(call.spec.inputs) != 1:
        raise NotImplementedError(
          f"a {len(call.spec.inputs)}-argument function ({call.spec.type}) can only be a fold step")
      return lambda ctx, x, mask, keys: call(ctx, (x,), mask, keys)
    if isinstance(node, P.Compose):
      g = self.lower(node.g)
      f = self.lower(node.f, terminal)
      return lambda ctx, x, mask, keys: f(ctx, g(ctx, x, mask, keys), mask, keys)
    if isinstance(node, P.Map):
      return self._map(self.lower(node.fn, terminal))
    if isinstance(node, P.Fold):
      return self._fold(node)
    if isinstance(node, P.Conv) and node.adt == "g" and isinstance(node.fn, (P.Fresh, P.Lib)):
      # A single module as kernel: conv_g calls it directly, with neighbour lists or, on edge lists, with
      # Neighbourhoods (the kernel's dropout, if any, is that of `lower`: none without a rate).
      call = self.module(node.fn, terminal)
      random = self.uses_dropout(node.fn)
      return self._conv_g(lambda ctx, x, mask, keys: call(ctx, (x,), mask, keys if random else None), call)
    if isinstance(node, P.Conv):
      kernel = self.lower(node.fn, terminal)
      return self._conv_l(kernel) if node.adt == "l" else self._conv_g(kernel, None)
    if isinstance(node, P.Repeat):
      # Only a single application's output is the program's; earlier iterations feed later ones.
      return self._repeat(node.k, self.lower(node.fn, terminal and node.k == 1))
    if isinstance(node, P.Fix):
      return self._fix(self.lower(node.fn))
    if isinstance(node, P.Zeros):
      raise NotImplementedError(f"{node} is a constant, not a function; it can only start a fold")
    raise ValueError(f"cannot lower {node}")

  def _map(self, fn: Callable) -> Callable:
    def run(ctx, x, mask, keys):
      r, length = x.values.shape[:2]
      rows = (x.mask.astype(bool) & mask[:, None]).reshape(-1)
      element_keys = _element_keys(keys, length)
      if ctx.pack is not None and x.mask is ctx.pack[0]:  # the input's own mask: at most pack[1] real
        y = _packed_rows(lambda v, m, k: fn(ctx, v, m, k), _flat(x.values), rows, element_keys, ctx.pack[1])
      else:
        y = fn(ctx, _flat(x.values), rows, element_keys)
      return x._replace(values=_unflat(y, r, length))
    return run

  def _fold(self, node: P.Fold) -> Callable:
    if not isinstance(node.fn, (P.Fresh, P.Lib)):
      raise NotImplementedError(
        f"fold step {node.fn} is a {type(node.fn).__name__}; only a single fresh or library function is "
        "supported as a fold step")
    if not isinstance(node.init, P.Zeros):
      raise NotImplementedError(f"fold start {node.init} is not supported; only zeros(n) is")
    step = self.module(node.fn)
    if len(step.spec.inputs) != 2:
      raise NotImplementedError(f"fold step {node.fn} has type {step.spec.type}, not S -> A -> S")
    n = node.init.n

    def run(ctx, x, mask, keys):
      r, length = x.values.shape[:2]
      valid = x.mask.astype(bool) & mask[:, None]
      train = ctx.train

      def body(carry, inp):
        state, stats = carry
        if train:
          ctx.stats = stats
        x_t, m_t, t = inp
        new = step(ctx, (state, x_t), m_t, _fold_keys(keys, t))
        state = jnp.where(m_t.reshape((r,) + (1,) * (state.ndim - 1)), new, state)
        return (state, ctx.stats if train else ()), None

      start = (jnp.zeros((r, n), jnp.float32), ctx.stats if train else ())
      xs = (jnp.swapaxes(x.values, 0, 1), jnp.swapaxes(valid, 0, 1), jnp.arange(length))
      (state, stats), _ = lax.scan(body, start, xs)
      if train:
        ctx.stats = stats
      return state
    return run

  def _conv_l(self, kernel: Callable) -> Callable:
    p = self.window
    offsets = np.array([0] + list(range(-p, 0)) + list(range(1, p + 1)), np.int32)

    def run(ctx, x, mask, keys):
      r, length = x.values.shape[:2]
      real = x.mask.astype(bool)
      last = jnp.maximum(jnp.sum(real, 1) - 1, 0)  # clamp to the real elements, not the padding
      idx = jnp.clip(jnp.arange(length)[None, :, None] + offsets[None, None, :], 0, last[:, None, None])
      windows = jax.vmap(lambda v, i: v[i])(x.values, idx)  # (R, L, 2p+1, ...)
      rows = (real & mask[:, None]).reshape(-1)
      lb = ListBatch(_flat(windows), jnp.ones((r * length, offsets.shape[0]), bool))
      y = kernel(ctx, lb, rows, _element_keys(keys, length))
      return x._replace(values=_unflat(y, r, length))
    return run

  def _conv_g(self, kernel: Callable, module: Callable | None) -> Callable:
    """conv_g with `kernel` (a lowered function of neighbour lists); `module` is the kernel's module call
    when the kernel is a single module (a graph kernel then takes `Neighbourhoods`)."""
    segments = module is not None and module.spec.template == "graph_kernel"

    def run(ctx, x, mask, keys):
      r, n = x.values.shape[:2]
      real = x.mask.astype(bool) & mask[:, None]
      if isinstance(x, GraphBatch) and segments:
        # A graph kernel runs on edges on a neighbour table too (measured faster on 4x4 grids than masked
        # reductions over the table's K axis, benchmarks/RESULTS.md "conv_g: neighbour table against
        # edge lists"): entry k >= 1 of u's list is an edge into u, in the table's order.
        k = x.neighbours.shape[-1]
        receivers = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :, None], (r, n, k - 1))
        edges = EdgeGraphBatch(x.values, x.neighbours[:, :, 1:].reshape(r, -1), receivers.reshape(r, -1),
                               x.neighbour_mask[:, :, 1:].reshape(r, -1), x.mask)
        return x._replace(values=self._edge_conv(ctx, module, edges, real, keys))
      if isinstance(x, EdgeGraphBatch):
        if module is not None and module.spec.template == "slot_kernel":
          raise NotImplementedError(
            "conv_g over edge lists with a slot kernel: edge lists have no slot order (directions); use "
            "ModuleConfig.graph_kernel='pairs' on edge-list graphs")
        if not segments:
          what = "a composition" if module is None else f"a {module.spec.template} module"
          raise NotImplementedError(
            f"conv_g over edge lists needs a graph-kernel module as its kernel, got {what}; convert the "
            "graphs to a neighbour table (hx.compile.values.table_from_edges) for other kernels")
        return x._replace(values=self._edge_conv(ctx, module, x, real, keys))
      gathered = jax.vmap(lambda v, i: v[i])(x.values, x.neighbours)  # (R, N, K, ...)
      lb = ListBatch(_flat(gathered), _flat(x.neighbour_mask.astype(bool) & real[..., None]))
      y = kernel(ctx, lb, real.reshape(-1), _element_keys(keys, n))
      return x._replace(values=_unflat(y, r, n))
    return run

  @staticmethod
  def _edge_conv(ctx, module: Callable, x: EdgeGraphBatch, real: jax.Array,
                 keys: jax.Array | None) -> jax.Array:
    """The graph-kernel module on the R graphs of x flattened into R*N nodes: (R, N, ...) node values."""
    r, n = x.values.shape[:2]
    # jraph's batching by concatenation: row b's nodes are b*N .. b*N + N-1.
    offset = (jnp.arange(r, dtype=jnp.int32) * n)[:, None]
    senders = jnp.asarray(x.senders).astype(jnp.int32)
    receivers = jnp.asarray(x.receivers).astype(jnp.int32)
    # Padding edges are clipped into range so that no index is out of bounds, then masked out.
    senders, receivers = jnp.clip(senders, 0, n - 1), jnp.clip(receivers, 0, n - 1)
    both_real = jnp.take_along_axis(real, senders, 1) & jnp.take_along_axis(real, receivers, 1)
    edges = Neighbourhoods(_flat(x.values), (senders + offset).reshape(-1), (receivers + offset).reshape(-1),
                           (x.edge_mask.astype(bool) & both_real).reshape(-1))
    y = module(ctx, (edges,), real.reshape(-1), _element_keys(keys, n))
    return _unflat(y, r, n)

  def _repeat(self, k: int, fn: Callable) -> Callable:
    if k == 1:
      return fn

    def run(ctx, x, mask, keys):
      train = ctx.train

      def body(carry, i):
        v, stats = carry
        if train:
          ctx.stats = stats
        v = fn(ctx, v, mask, _fold_keys(keys, i))
        return (v, ctx.stats if train else ()), None

      outer, ctx.recompute = ctx.recompute, True
      (v, stats), _ = lax.scan(body, (_as_float(x), ctx.stats if train else ()), jnp.arange(k))
      ctx.recompute = outer
      if train:
        ctx.stats = stats
      return v
    return run

  def _fix(self, fn: Callable) -> Callable:
    config = self.fix

    def run(ctx, x, mask, keys):
      train = ctx.train
      x = _as_float(x)
      elements = isinstance(x, ELEMENT_BATCHES)
      values = x.values if elements else x
      # The loop body must not close over traced values (the solver differentiates it itself): the
      # value's structure (masks, neighbour tables, edges) and the row mask travel in `aux`.
      aux = (x if elements else None, mask)

      def step(theta, v, aux, stats):
        structure, row_mask = aux
        params, frozen = theta
        inner = _Ctx(params, stats, frozen, train)
        y = fn(inner, structure._replace(values=v) if structure is not None else v, row_mask, None)
        return (y.values if structure is not None else y), inner.stats

      if elements:
        real = x.mask.astype(bool) & mask[:, None]
      else:
        real = mask
      weights = real.reshape(real.shape + (1,) * (values.ndim - real.ndim))
      cap = None
      # A fix inside another fix's body has no key (the body may not close over traced values): it trains
      # to its cap. A fix inside repeat's body or a fold draws the same n each time: one horizon per call.
      if train and config.train_horizon is not None and ctx.rng is not None:
        lo, hi = config.horizon()
        cap = jax.random.randint(jax.random.fold_in(ctx.rng, _FIX_STREAM), (), lo, hi + 1)
      # The batch statistics are state, not parameters: updated per iteration in training, read (running
      # statistics) in inference; never differentiated.
      y, stats, _ = fixed_point(step, (ctx.params, ctx.frozen), values, aux, ctx.stats, weights, config, cap)
      if train:
        ctx.stats = stats
      return x._replace(values=y) if elements else y
    return run


def _zero_padding(x: Batch) -> Batch:
  """x with padded list elements / graph nodes set to 0.

  Masked computations never let padding reach a real output, but a NaN or inf there would still turn a
  gradient into NaN (0 * NaN in the backward pass of a masked-out branch); after this, padding is finite
  whatever the caller filled it with.
  """
  if not isinstance(x, ELEMENT_BATCHES) or not jnp.issubdtype(jnp.asarray(x.values).dtype, jnp.floating):
    return x
  m = jnp.asarray(x.mask).astype(bool)
  m = m.reshape(m.shape + (1,) * (jnp.ndim(x.values) - 2))
  return x._replace(values=jnp.where(m, x.values, 0.0))


def _batch_size(x: Batch) -> int:
  return (x.values if isinstance(x, ELEMENT_BATCHES) else x).shape[0]


# fix's horizon draws from fold_in(rng, _FIX_STREAM), apart from the rows' dropout keys fold_in(rng, row).
_FIX_STREAM = 2**31 - 1


def _typed_key(rng: jax.Array) -> jax.Array:
  return rng if jnp.issubdtype(jnp.asarray(rng).dtype, jax.dtypes.prng_key) else jax.random.wrap_key_data(rng)


def _row_keys(rng: jax.Array, b: int) -> jax.Array:
  return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(_typed_key(rng), jnp.arange(b))


def _output_activation(terminal_activations: list[str]) -> str:
  """The activation all terminal calls share, or "mixed" (also when there is none, e.g. a fold at the
  root: what its output is, is then not known here)."""
  kinds = set(terminal_activations)
  return kinds.pop() if len(kinds) == 1 else "mixed"


@functools.lru_cache(maxsize=4096)
def _lower(key: Hashable) -> tuple[Callable, Callable, str]:
  structure, fresh_specs, lib_specs, window, fix = key
  lowering = _Lowering(fresh_specs, lib_specs, window, fix)
  root = lowering.lower(structure, terminal=True)
  random = lowering.uses_dropout(structure)
  output_activation = _output_activation(lowering.terminal_activations)

  def init(rng: jax.Array) -> Variables:
    """{"params": tuple, "batch_stats": tuple}, one entry per fresh slot (slot i from fold_in(rng, i))."""
    pairs = [init_module(s, jax.random.fold_in(rng, i)) for i, s in enumerate(fresh_specs)]
    return {"params": tuple(p for p, _ in pairs), "batch_stats": tuple(s for _, s in pairs)}

  def apply(variables: Variables, frozen: tuple, x: Batch, *, train: bool, rng: jax.Array | None = None,
            mask: jax.Array | None = None, logits: bool = False,
            pack: int | None = None) -> Batch | tuple[Batch, tuple]:
    """Runs the program on a batch x (B rows); see `hx.compile.lower`.

    Args:
      variables: {"params", "batch_stats"} of the fresh slots.
      frozen: library slots' {"params", "batch_stats"}, from `make_frozen`.
      x: the input batch: array (B, ...), ListBatch, GraphBatch or EdgeGraphBatch.
      train: batch statistics and dropout (needs rng) if True; running statistics otherwise.
      rng: PRNG key (typed or raw), required when train.
      mask: optional (B,) bool, False for padded batch rows (excluded from batch statistics).
      logits: the terminal module calls skip their sigmoid / softmax (`CompiledProgram.output_logits`
        says whether the whole output is then logits).
      pack: for a ListBatch x (B lists padded to L) or a GraphBatch / EdgeGraphBatch x (B graphs padded
        to N nodes): the batch has at most this many real elements or nodes (the caller's guarantee,
        e.g. Tune's from the masks of its batches; more would be dropped), and maps over that list or
        graph run their function on the real ones only, gathered into `pack` rows (`_packed_rows`), in
        training and in inference: the same values, batch statistics and gradients up to rounding, with
        the padding's share of the work saved. None, or a tensor x: every element, padding included.

    Returns:
      y (B, ...) or a ListBatch / GraphBatch / EdgeGraphBatch; with train, (y, new_batch_stats).
    """
    b = _batch_size(x)
    mask = jnp.ones((b,), bool) if mask is None else jnp.asarray(mask).astype(bool)
    if train and rng is None:
      raise ValueError("apply(train=True) needs an rng for dropout")
    keys = _row_keys(rng, b) if train and random else None
    x = _zero_padding(x)
    packing = None
    if pack is not None:
      if not (isinstance(pack, int) and not isinstance(pack, bool) and pack >= 1):
        raise ValueError(f"pack must be a positive int, got {pack!r}")
      if isinstance(x, ELEMENT_BATCHES) and pack < x.mask.size:
        packing = (x.mask, pack)
    ctx = _Ctx(tuple(variables["params"]), tuple(variables["batch_stats"]), tuple(frozen), bool(train),
               bool(logits), packing, _typed_key(rng) if train else None)
    y = root(ctx, x, mask, keys)
    return (y, ctx.stats) if train else y

  return init, apply, output_activation
