"""Modules of the user's own: a registry of this process, name -> `Registration`.

A fresh function whose type is exactly a registered one gets the registered module
(`hx.compile.modules.choice.module_spec`); the spec records only the name, so a library entry built by
one is saved as any other and needs the same registration where it is loaded (`hx.synth.library`).
Pickled `ModuleConfig`s carry the registrations to other processes (`pickled_registrations`,
`install_registrations`).
"""

from __future__ import annotations

import os
import pickle
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

from hx.compile.modules.spec import ModuleSpec, _activation
from hx.lang.types import FunctionType, TensorType, Type, function_parts, is_image, type_variables

if TYPE_CHECKING:
  import chex
  import flax.linen

__all__ = [
  "Registration", "UnregisteredModuleError", "install_registrations", "pickled_registrations",
  "register_module", "registered_modules", "registration_of", "unregister_module",
]


_REGISTRY: dict[str, Registration] = {}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_CHECK_ROWS = 2  # rows of the batch a registration's shapes are checked on


class UnregisteredModuleError(ValueError):
  """A module spec names a user module (`register_module`) that this process has not registered."""


class Registration(NamedTuple):
  """A module of the user's own for fresh functions of one exact type (`register_module`).

  Attributes:
    name: its name (a library entry built by it records this name).
    type: the function type it is for: a `FunctionType` of one or two tensor arguments to a tensor, no
      type variables.
    module: the flax linen Module, or None.
    init: the user's `init(key) -> params`, or None (a flax module initialises itself).
    apply: the user's `apply(params, *xs) -> y`, or None.
  """
  name: str
  type: Type
  module: flax.linen.Module | None = None
  init: Callable[[jax.Array], chex.ArrayTree] | None = None
  apply: Callable[..., jax.Array] | None = None

  @property
  def args(self) -> tuple[TensorType, ...]:
    return tuple(function_parts(self.type)[0])

  @property
  def output(self) -> TensorType:
    return function_parts(self.type)[1]

  def variables(self, key: jax.Array) -> dict:
    """The module's variable collections from `key`: {"params": params} for an init/apply pair, a flax
    module's `init` on zeros of `(2, *arg shape)` per argument otherwise (all its collections)."""
    if self.module is None:
      return {"params": self.init(key)}
    xs = [jnp.zeros((_CHECK_ROWS,) + a.shape, jnp.float32) for a in self.args]
    return dict(self.module.init(key, *xs))

  def init_params(self, key: jax.Array) -> chex.ArrayTree:
    """Fresh parameters: a tree of dicts (string keys), tuples, lists and float arrays."""
    import flax.core

    return flax.core.unfreeze(self.variables(key).get("params", {}))

  def apply_params(self, params: chex.ArrayTree, *xs: jax.Array) -> jax.Array:
    """The module on R rows: xs `(R, *arg shape)` float32 each -> `(R, *output shape)` pre-activation."""
    if self.module is None:
      return self.apply(params, *xs)
    return self.module.apply({"params": params}, *xs)

  def describe(self) -> str:
    """The definition in words, for messages: "flax module pkg.Encoder" or "init/apply pkg.f, pkg.g"."""
    if self.module is not None:
      return f"flax module {_qualified(type(self.module))}"
    return f"init/apply {_qualified(self.init)}, {_qualified(self.apply)}"


def _qualified(obj: object) -> str:
  return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def register_module(name: str, fn_type: str | Type, *, module: flax.linen.Module | None = None,
                    init: Callable[[jax.Array], chex.ArrayTree] | None = None,
                    apply: Callable[..., jax.Array] | None = None) -> ModuleSpec:
  """Registers a neural module of one's own for fresh functions of type `fn_type` (e.g. an image encoder
  in place of the paper's CNN).

  From then on in this process every fresh function of exactly that type gets this module (template
  "user"): `module_spec` gives it, the search offers its output type for a fresh function from such an
  argument (before the CNN's features, `hx.synth.space`), Tune trains its parameters, and a library
  entry built by it is saved and loaded as any other (the entry records the module's name: loading it
  needs the same name registered first).

  Give either `module`, a flax linen Module called as `module(x)` on x `(B, *arg shape)` (or `module(x1,
  x2)` for a function of two arguments), whose only variable collection is "params" (no batch norm
  statistics), or `init(key) -> params` and `apply(params, *xs) -> y`, pure JAX functions, params a tree
  of dicts (string keys), tuples, lists and float arrays. Inputs arrive as float32 `(B, *arg shape)`
  arrays. The module returns pre-activation values `(B, *output shape)`: hx applies the output type's
  activation (`Tensor<bool>[1]` sigmoid, `Tensor<bool>[k]` softmax, real none) unless the caller asks
  for logits, as for its own templates. The module sees no mask, dropout key or training flag: it is
  a pure function of its parameters and inputs, the same in training and in evaluation.

  Choices where the call leaves them open (ours): the type is exact (no type variables, a type that is
  not registered is not matched up to shapes); one module per type (a second name for a registered type
  is refused: which would a fresh function take?); a name registered again with an equal definition
  (the same type and flax module, or the same init and apply functions) is a no-op, with another one is
  refused (`unregister_module` first); a flax module is initialised on zeros of 2 rows. To train in
  worker processes or on Ray (`executor=hx.synth.Processes()` / `hx.synth.Ray()`) the module's class, or
  the init and apply functions, must be importable there by name: defined at the top level of a module
  on the workers' path, not in the script run as `__main__` (else the executor refuses before training).

  Args:
    name: the module's name: letters, digits, "_", "." and "-", not starting with a digit.
    fn_type: the function type, as text ("Tensor<real>[1][8][8] -> Tensor<real>[32]") or a `Type`: one
      or two tensor arguments (images or vectors), a tensor result that is not an image.
    module: a flax linen Module instance; or None with `init` and `apply`.
    init, apply: the pair of pure functions; or None with `module`.

  Returns:
    the `ModuleSpec` fresh functions of `fn_type` now get: template "user", hyper (("name", name),).

  Raises:
    TypeError: neither or both of `module` and (`init`, `apply`), or a `module` that is not a flax linen
      Module, or functions that are not callable.
    ValueError: a bad name or type; the name registered with another definition, or the type under
      another name; or the module's shapes do not fit the type: checked with `jax.eval_shape` on a batch
      of 2 rows, its output must be a float array of shape `(2, *output shape)`, and its parameters a tree
      of float arrays (the message names the module, the declared type and the shape it gave).
  """
  if not isinstance(name, str) or not _NAME.match(name):
    raise ValueError(f"a module name is letters, digits, '_', '.' and '-', not starting with a digit; "
                     f"got {name!r}")
  t = _registrable_type(name, fn_type)
  if module is not None:
    import flax.linen

    if init is not None or apply is not None:
      raise TypeError(f"register_module({name!r}): give a flax module or an init/apply pair, not both")
    if not isinstance(module, flax.linen.Module):
      raise TypeError(f"register_module({name!r}): module must be a flax.linen.Module instance, got "
                      f"{type(module).__name__}")
  elif init is None or apply is None:
    raise TypeError(f"register_module({name!r}): give module=<a flax linen Module>, or both init= and "
                    "apply=")
  elif not (callable(init) and callable(apply)):
    raise TypeError(f"register_module({name!r}): init and apply must be callable")
  registration = Registration(name, t, module, init, apply)
  if name in _REGISTRY:
    if _same(_REGISTRY[name], registration):
      return _user_spec(_REGISTRY[name])
    raise ValueError(f"module {name!r} is registered already ({_REGISTRY[name].describe()} for "
                     f"{_REGISTRY[name].type}); refusing another definition ({registration.describe()} for "
                     f"{t}): call unregister_module({name!r}) first")
  other = _registered_for(t)
  if other is not None:
    raise ValueError(f"type {t} has module {other.name!r} registered already; one module per type "
                     f"(unregister_module({other.name!r}) first)")
  _check_shapes(registration)
  _REGISTRY[name] = registration
  return _user_spec(registration)


def registered_modules() -> Mapping[str, Registration]:
  """The modules registered in this process: name -> `Registration` (a read-only view)."""
  return MappingProxyType(_REGISTRY)


def unregister_module(name: str) -> None:
  """Forgets the module registered as `name` (for tests: a library or a compiled program that uses it
  then fails with `UnregisteredModuleError`). Also forgets the compiled programs and executables of this
  process, which may hold the old definition under the same spec.

  Raises:
    KeyError: no module of that name is registered.
  """
  if name not in _REGISTRY:
    raise KeyError(f"no module {name!r} is registered; the registered ones are "
                   f"{', '.join(sorted(_REGISTRY)) or 'none'}")
  del _REGISTRY[name]
  _forget_compiled()


def _same(a: Registration, b: Registration) -> bool:
  # Functions by identity, a flax module by its dataclass fields (equal modules compute the same thing).
  if a.type != b.type or (a.module is None) != (b.module is None):
    return False
  if a.module is not None:
    return type(a.module) is type(b.module) and a.module == b.module
  return a.init is b.init and a.apply is b.apply


def _forget_compiled() -> None:
  """Clears the caches that key compiled code by module spec (a user spec is only its name)."""
  lower = sys.modules.get("hx.compile.lower")
  if lower is not None:
    lower._lower.cache_clear()
  executables = sys.modules.get("hx.compile.executables")
  if executables is not None:
    executables.clear_tune_caches()


def _registrable_type(name: str, fn_type: str | Type) -> FunctionType:
  from hx.lang.types import parse_type

  try:
    t = parse_type(fn_type) if isinstance(fn_type, str) else fn_type
  except Exception as err:  # noqa: BLE001 -- the parser's error, said with the module's name
    raise ValueError(f"register_module({name!r}): cannot parse type {fn_type!r} ({err})") from None
  if not isinstance(t, FunctionType):
    raise ValueError(f"register_module({name!r}): {t} is not a function type")
  if type_variables(t):
    raise ValueError(f"register_module({name!r}): type {t} has type variables; a module is registered "
                     "for an exact type")
  args, out = function_parts(t)
  if not 1 <= len(args) <= 2 or not all(isinstance(a, TensorType) for a in args):
    raise ValueError(f"register_module({name!r}): type {t} must take one or two tensors")
  if not isinstance(out, TensorType) or is_image(out):
    raise ValueError(f"register_module({name!r}): type {t} must return a tensor that is not an image")
  return t


def _check_shapes(r: Registration) -> None:
  """ValueError unless `r`'s parameters are float arrays of the "params" collection and its output on
  (2, *arg shape) float32 rows is a float array (2, *output shape); traced with `jax.eval_shape`."""
  where = f"module {r.name!r} ({r.describe()}) registered for {r.type}"
  try:
    variables = jax.eval_shape(r.variables, jax.random.key(0))
  except Exception as err:  # noqa: BLE001 -- the user's code: any error, said with the module's name
    raise ValueError(f"{where}: its initialisation fails: {type(err).__name__}: {err}") from None
  if not isinstance(variables, Mapping) or set(variables) - {"params"}:
    got = sorted(variables) if isinstance(variables, Mapping) else type(variables).__name__
    raise ValueError(f"{where}: its variables must be the 'params' collection only (hx keeps no batch "
                     f"statistics of a user module), got {got}")
  params = variables.get("params", {})
  _check_params(where, params)
  xs = [jax.ShapeDtypeStruct((_CHECK_ROWS,) + a.shape, jnp.float32) for a in r.args]
  shapes = ", ".join(str(x.shape) for x in xs)
  try:
    y = jax.eval_shape(r.apply_params, params, *xs)
  except Exception as err:  # noqa: BLE001 -- as above
    raise ValueError(f"{where}: it fails on inputs of shape {shapes}: {type(err).__name__}: {err}") from None
  want = (_CHECK_ROWS,) + r.output.shape
  if not hasattr(y, "shape") or not hasattr(y, "dtype"):
    raise ValueError(f"{where}: on inputs of shape {shapes} it gave {type(y).__name__}, not an array of "
                     f"shape {want}")
  if tuple(y.shape) != want:
    raise ValueError(f"{where}: on inputs of shape {shapes} it gave shape {tuple(y.shape)}; the type needs "
                     f"{want} (rows, then the output shape {list(r.output.shape)})")
  if not jnp.issubdtype(y.dtype, jnp.floating):
    raise ValueError(f"{where}: it gave {y.dtype} values; a module returns floats (pre-activation)")


def _check_params(where: str, node: object, path: str = "params") -> None:
  """ValueError unless `node` is a tree of dicts (string keys), tuples, lists and float arrays (what the
  optimiser trains and a library saves)."""
  if isinstance(node, Mapping):
    for k, v in node.items():
      if not isinstance(k, str):
        raise ValueError(f"{where}: {path} has a key {k!r} that is not a string")
      _check_params(where, v, f"{path}[{k!r}]")
  elif isinstance(node, (tuple, list)):
    for i, v in enumerate(node):
      _check_params(where, v, f"{path}[{i}]")
  elif hasattr(node, "shape") and hasattr(node, "dtype"):
    if not jnp.issubdtype(node.dtype, jnp.floating):
      raise ValueError(f"{where}: {path} is a {node.dtype} array; parameters are float arrays")
  else:
    raise ValueError(f"{where}: {path} is a {type(node).__name__}; parameters are dicts, tuples, lists "
                     "and float arrays")


def _registered_for(fn_type: Type) -> Registration | None:
  for r in _REGISTRY.values():
    if r.type == fn_type:
      return r
  return None


def _user_spec(r: Registration) -> ModuleSpec:
  return ModuleSpec("user", r.args, r.output, _activation(r.output), (("name", r.name),))


def registration_of(spec: ModuleSpec) -> Registration:
  """The registration a "user" spec names.

  Raises:
    UnregisteredModuleError: no module of its name is registered in this process, or one for another type.
  """
  name = spec["name"]
  r = _REGISTRY.get(name)
  if r is None:
    raise UnregisteredModuleError(
      f"module {name!r} ({spec.type}) is not registered in this process: call "
      f"hx.compile.register_module({name!r}, {str(spec.type)!r}, ...) first")
  if r.type != spec.type:
    raise UnregisteredModuleError(f"module {name!r} is registered for {r.type}, not for {spec.type}")
  return r


def _check_portable(r: Registration) -> None:
  """pickle.PicklingError unless another process can import `r`'s definition by name (pickle's way with
  classes and functions): a worker that cannot would die unpickling its task."""
  for obj in ([type(r.module)] if r.module is not None else [r.init, r.apply]):
    target = obj if hasattr(obj, "__qualname__") else type(obj)
    module, qualname = getattr(target, "__module__", None), target.__qualname__
    found = sys.modules.get(module) if module and module != "__main__" and "<" not in qualname else None
    for part in qualname.split(".") if found is not None else ():
      found = getattr(found, part, None)
    if found is not target:
      where = ("the script run as __main__" if module == "__main__" else
               "a function's body" if "<locals>" in qualname else f"{module} (not found there by name)")
      raise pickle.PicklingError(
        f"module {r.name!r} ({r.describe()}) cannot be sent to another process: {qualname} is defined in "
        f"{where}, which a worker cannot import. Define it at the top level of an importable module to "
        "train with executor=hx.synth.Processes() or hx.synth.Ray(), or train with executor=hx.synth.Local()")


def _import_roots(registrations: Sequence[Registration]) -> tuple[str, ...]:
  """The directories this process imported the registrations' definitions from: for a definition in
  module `a.b` loaded from /x/a/b.py, /x (the sys.path entry that holds it)."""
  roots = []
  for r in registrations:
    for obj in [type(r.module)] if r.module is not None else [r.init, r.apply]:
      name = getattr(obj, "__module__", None) or ""
      file = getattr(sys.modules.get(name), "__file__", None)
      if not file:
        continue
      root = os.path.dirname(os.path.abspath(file))
      package = os.path.basename(file).startswith("__init__.")  # a package: its directory is one more
      for _ in range(name.count(".") + package):
        root = os.path.dirname(root)
      if root not in roots:
        roots.append(root)
  return tuple(roots)


def pickled_registrations(protocol: int) -> tuple[tuple[str, ...], bytes] | None:
  """What a pickled `ModuleConfig` carries of this process's registrations: None where none is registered,
  else (the directories their definitions were imported from (`_import_roots`), the registrations
  pickled with `protocol`).

  Raises:
    pickle.PicklingError: a definition another process cannot import by name (`_check_portable`).
  """
  registrations = tuple(_REGISTRY.values())
  if not registrations:
    return None
  for r in registrations:
    _check_portable(r)
  return _import_roots(registrations), pickle.dumps(registrations, protocol)


def install_registrations(roots: Sequence[str], blob: bytes) -> None:
  """Installs a sender's registrations here (`pickled_registrations`'s `roots` and `blob`). The sender's
  definition replaces another of the same name (a worker builds what the process that sent the task
  registered). `roots` go at the end of sys.path, after this process's own entries, so that they add
  what is missing here and shadow nothing.

  Raises:
    ImportError: a definition's module cannot be imported here (named, with what to do).
  """
  for root in roots:
    if root not in sys.path:
      sys.path.append(root)
  try:
    registrations = pickle.loads(blob)
  except (ImportError, AttributeError) as err:
    raise ImportError(f"the modules registered with hx.compile.register_module in the process that sent "
                      f"this task cannot be built here ({type(err).__name__}: {err}; tried the path "
                      f"{list(roots)} too): define them in a module this process can import (installed, "
                      "or on its PYTHONPATH)") from err
  changed = False
  for r in registrations:
    old = _REGISTRY.get(r.name)
    if old is not None and _same(old, r):
      continue
    for other in [o for o in _REGISTRY.values() if o.name != r.name and o.type == r.type]:
      del _REGISTRY[other.name]
    _REGISTRY[r.name] = r
    changed = changed or old is not None
  if changed:
    _forget_compiled()
