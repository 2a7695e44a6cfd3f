"""The baselines' networks: their architecture per task type, trained networks, and saving them.

Every baseline network is built from the module templates HOUDINI's programs use
(`hx.compile.modules`: the same CNN, MLP and LSTM at the same `ModuleConfig` sizes), under fixed role
names, so a later task can find the layers an earlier one trained:

  nn_cnn   image -> Tensor<real>[F]       the CNN (F its feature size; the paper's CNN has no output layer)
  nn_enc   vector -> Tensor<real>[H]      for vector inputs, an MLP in the CNN's place (H = mlp_hidden)
  nn_mlp   Tensor<real>[F] -> element     the MLP on each input's features
  nn_rnn   List<element> -> output        the LSTM over a list (over a grid's nodes for graph tasks)

The encoder (`Architecture.encoder`) is nn_cnn for images and nn_enc for every other tensor (a vector,
or a tensor of any other rank, which the MLP flattens). The paper's standalone architectures (section
4, appendix C) follow from the task's type, with E the encoder:

  image task  Tensor<image> -> T        MLP ∘ CNN            compose(nn_mlp, nn_cnn)
  vector task Tensor<vector> -> T       MLP ∘ MLP            compose(nn_mlp, nn_enc)
  list task   List<x> -> T              RNN(map(MLP ∘ E))    compose(nn_rnn, map_l(compose(nn_mlp, E)))
  graph task  Graph<x> -> Graph<T>      an LSTM over the row-wise flattened nodes of a learned MLP ∘ E
                                        regressor's outputs (`hx.baselines.graph`; the language has
                                        no combinator that flattens a graph into a list)

The paper's baselines take images only; for vectors (ours) the encoder is an MLP where the paper has a
CNN, with as many output features as the MLP's hidden layer (the paper's CNN gives 1,024 features on
MNIST, its MLP's hidden width), so that a vector network is the image network with its CNN swapped.

The image, vector and list architectures are hx programs, compiled by `hx.compile.compile_program` and
trained by Tune like any HOUDINI candidate. What a list task's MLP passes to the LSTM (`element`) is a
choice the paper leaves open; `element_type` makes the authors' (their `Baselines/CountingSeqLongSeq.py`
and `Baselines/SummingSequence.py`): one sigmoid unit per element for counting, which is also the type
the paper's counting programs pass on, and a 10-way softmax per digit for summing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np

from hx import atomic
from hx.compile.modules.choice import module_spec
from hx.compile.modules.cnn import cnn_features
from hx.compile.modules.config import ModuleConfig
from hx.compile.modules.spec import ModuleSpec, NoTemplateError
from hx.compile.modules.templates import init_module
from hx.jsonread import Invalid, JsonFileError, array, integer, nullable, obj, read_json, text
from hx.lang import program as P
from hx.lang.parser import parse
from hx.lang.types import (
  FunctionType,
  GraphType,
  ListType,
  TensorType,
  Type,
  function_parts,
  is_image,
  parse_type,
)

if TYPE_CHECKING:
  import chex
  import jax

  from hx.jsonread import JsonValue

__all__ = ["CNN", "ENC", "MLP", "RNN", "ARCHITECTURE_KINDS", "ENCODERS", "Architecture", "Network",
           "architecture", "element_type", "save_network", "load_network", "NetworkError", "count_parameters"]

CNN, ENC, MLP, RNN = "nn_cnn", "nn_enc", "nn_mlp", "nn_rnn"
ENCODERS = (CNN, ENC)
"""The encoder roles: the CNN of an image, the MLP of any other tensor."""
ARCHITECTURE_KINDS = ("image", "vector", "list", "graph")
"""What a task takes: an image, another tensor (a vector), a list or a graph (of either)."""

_PROGRAMS = {
    "image": "compose(nn_mlp, {e})",
    "vector": "compose(nn_mlp, {e})",
    "list": "compose(nn_rnn, map_l(compose(nn_mlp, {e})))",
}
_GRAPH_DESCRIPTION = "lstm_rows(map_g(compose(nn_mlp, {e})))"


def element_type(task_kind: str | None) -> Type:
  """What a list task's standalone MLP gives the LSTM per image: `Tensor<bool>[10]` (a softmax over the
  digits) for sum_digits, `Tensor<bool>[1]` (a sigmoid) otherwise -- the authors' baselines' choices."""
  return parse_type("Tensor<bool>[10]" if task_kind == "sum_digits" else "Tensor<bool>[1]")


@dataclasses.dataclass(frozen=True)
class Architecture:
  """A baseline network's layout for one task type.

  Attributes:
    kind: "image", "vector", "list" or "graph" (`ARCHITECTURE_KINDS`; see the module docstring).
    task_type: the task's type.
    element: the MLP's output type: the task's output (image and vector tasks), what the LSTM reads per
      element (list tasks), or a node's state (graph tasks: the regressor's output, the graph output's
      node type).
    specs: (role, ModuleSpec) per module, in the order encoder (nn_cnn or nn_enc), nn_mlp[, nn_rnn].
    output_role: the module whose last layer is the network's output layer.
  """
  kind: str
  task_type: Type
  element: Type
  specs: tuple[tuple[str, ModuleSpec], ...]
  output_role: str

  @property
  def roles(self) -> tuple[str, ...]:
    return tuple(r for r, _ in self.specs)

  @property
  def encoder(self) -> str:
    """The encoder's role: nn_cnn (an image's CNN) or nn_enc (another tensor's MLP)."""
    return self.specs[0][0]

  def spec(self, role: str) -> ModuleSpec:
    for r, s in self.specs:
      if r == role:
        return s
    raise KeyError(f"{self.kind} architecture has no module {role}")

  @property
  def fresh_types(self) -> dict[str, Type]:
    return {r: s.type for r, s in self.specs}

  @property
  def program(self) -> P.Program | None:
    """The hx program (image and list kinds); None for graphs, which the language cannot say."""
    return parse(self.description) if self.kind in _PROGRAMS else None

  @property
  def description(self) -> str:
    """The program's text, or for graphs a description in the same style (`lstm_rows`: the LSTM over
    the grid's nodes in row-major order, one output per node)."""
    return _PROGRAMS.get(self.kind, _GRAPH_DESCRIPTION).format(e=self.encoder)

  def init(self, rng: jax.Array) -> dict[str, dict]:
    """Fresh variables of every module: role -> {"params", "batch_stats"} (role i from fold_in(rng, i),
    as `compile_program`'s init numbers its slots)."""
    import jax

    out = {}
    for i, (role, spec) in enumerate(self.specs):
      params, stats = init_module(spec, jax.random.fold_in(rng, i))
      out[role] = {"params": params, "batch_stats": stats}
    return out


def architecture(task_type: Type, config: ModuleConfig = ModuleConfig(), element: Type | None = None
                 ) -> Architecture:
  """The standalone architecture of a task of type `task_type` (see the module docstring).

  Args:
    task_type: the task's type; its input must be a tensor (an image or a vector), a list of tensors or
      a graph of tensors, its output a tensor (a graph of tensors for a graph input).
    config: module sizes (the same as HOUDINI's, so that every method trains the same modules).
    element: a list task's per-element output type (default `Tensor<bool>[1]`; see `element_type`).

  Raises:
    ValueError: a type no baseline handles, naming the type and why.
  """
  args, out = function_parts(task_type)
  if len(args) != 1:
    raise ValueError(f"no baseline network for {task_type}: a task takes one input")
  (x,) = args

  def spec(role: str, text: Type) -> tuple[str, ModuleSpec]:
    try:
      return role, module_spec(text, config, name=role)
    except NoTemplateError as err:  # an output no template gives (an image), a type variable
      raise ValueError(f"no baseline network for {task_type}: {err}") from None

  def encoder(t: Type) -> tuple[str, ModuleSpec]:
    """The encoder of one input tensor `t` (an image's CNN, any other tensor's MLP)."""
    if is_image(t):
      f = cnn_features(t, config)
      if f == 0:
        raise ValueError(f"no baseline network for {task_type}: image {t} is too small for one 3x3 "
                         f"convolution with {config.cnn_pool}x{config.cnn_pool} pooling")
      return spec(CNN, FunctionType(t, TensorType("real", (f,))))
    return spec(ENC, FunctionType(t, TensorType("real", (config.mlp_hidden,))))

  def features(enc: tuple[str, ModuleSpec]) -> TensorType:
    return enc[1].output

  if isinstance(x, TensorType) and isinstance(out, TensorType):
    enc = encoder(x)
    return Architecture("image" if enc[0] == CNN else "vector", task_type, out,
                        (enc, spec(MLP, FunctionType(features(enc), out))), MLP)
  if isinstance(x, ListType) and isinstance(x.elem, TensorType) and isinstance(out, TensorType):
    element = element or element_type(None)
    enc = encoder(x.elem)
    return Architecture("list", task_type, element,
                        (enc, spec(MLP, FunctionType(features(enc), element)),
                         spec(RNN, FunctionType(ListType(element), out))), RNN)
  if (isinstance(x, GraphType) and isinstance(x.elem, TensorType) and isinstance(out, GraphType)
      and isinstance(out.elem, TensorType)):
    node = out.elem
    enc = encoder(x.elem)
    return Architecture("graph", task_type, node,
                        (enc, spec(MLP, FunctionType(features(enc), node)),
                         spec(RNN, FunctionType(ListType(node), node))), RNN)
  raise ValueError(f"no baseline network for {task_type}: the baselines take a tensor, a list of tensors "
                   "or a graph of tensors to a tensor (a graph of tensors for a graph), the output one "
                   "value per example (per node for a graph)")


@dataclasses.dataclass(frozen=True, eq=False)
class Network:
  """A trained baseline network.

  Attributes:
    method: the baseline that trained it ("standalone", "llt", "pnn", ...).
    task: the task it was trained on.
    architecture: its layout.
    modules: role -> {"params", "batch_stats"} as host NumPy arrays; a progressive column also has
      "lateral" (its adapters, `hx.baselines.pnn`).
    column: for progressive networks, the column's position (0 for the first task's); None otherwise.
  """
  method: str
  task: str
  architecture: Architecture
  # Arrays: a network prints as what it is.
  modules: Mapping[str, Mapping[str, chex.ArrayTree]] = dataclasses.field(repr=False)
  column: int | None = None


def count_parameters(tree: chex.ArrayTree) -> int:
  """The number of scalars in a pytree of arrays."""
  import jax

  return int(sum(np.size(x) for x in jax.tree.leaves(tree)))


# ---------------------------------------------------------------------------------------------------
# Saving: a directory with network.json (what it is, and the size and sha256 of the variables' file) and
# variables.msgpack (flax serialization of the modules), written as libraries are
# (`hx.atomic.write_directory_atomically`: synced, then renamed into place), so a crash never leaves half
# of one, and checked when loaded, so a damaged file is refused rather than changing results.

_FORMAT = "hx-baseline-network"
_FORMAT_VERSION = 2  # 2: network.json records the variables file's size and sha256
_VARIABLES = "variables.msgpack"
_META = "network.json"


class NetworkError(ValueError):
  """A saved network that cannot be loaded (missing, damaged, saved for another architecture), or a path
  one cannot be saved to.

  Attributes:
    path: the network's directory (or the file in it) concerned.
    problem: what is wrong, in words.
  """

  def __init__(self, path: os.PathLike | str, problem: str, action: str = "cannot load baseline network"):
    self.path = os.fspath(path)
    self.problem = problem
    super().__init__(f"{action} {self.path}: {problem}")


def _architecture_json(a: Architecture) -> dict:
  return {"kind": a.kind, "task_type": str(a.task_type), "element": str(a.element)}


def save_network(network: Network, path: os.PathLike | str) -> None:
  """Saves `network` as a directory at `path` (replacing one that is there), atomically.

  Raises:
    NetworkError: it cannot be written there (the message says why).
  """
  import flax.serialization

  data = flax.serialization.to_bytes(dict(network.modules))
  meta = {"format": _FORMAT, "format_version": _FORMAT_VERSION, "method": network.method,
          "task": network.task, "column": network.column,
          "architecture": _architecture_json(network.architecture), "roles": sorted(network.modules),
          "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

  def fill(tmp: Path) -> None:
    atomic.write_new_file(tmp / _VARIABLES, data)
    atomic.write_new_file(tmp / _META, json.dumps(meta, indent=1, sort_keys=True).encode("utf-8"))

  try:
    atomic.write_directory_atomically(path, fill)
  except OSError as err:
    raise NetworkError(path, f"{err.strerror or err} ({err.filename or path})",
                       action="cannot save baseline network to") from None


def load_network(path: os.PathLike | str, config: ModuleConfig,
                 template: Mapping[str, Mapping[str, chex.ArrayTree]] | None = None) -> Network:
  """Loads a network saved by `save_network`; `config` must be the one it was built with.

  Args:
    path: the network's directory.
    config: module sizes.
    template: the variables' structure when it is not the architecture's plain modules (a progressive
      column with adapters: `hx.baselines.pnn.column_template`); default `architecture.init`'s.

  Raises:
    NetworkError: the directory or a file in it is missing, is not a saved network, is truncated or
      altered (the variables' size and sha256 are checked before they are decoded), or does not fit the
      architecture (every array's shape and dtype are checked). Its `path` is the file concerned (the
      directory for a file of another format or version), and its message names the field of network.json
      that is wrong ("architecture.kind: expected one of 'image', 'list', 'graph', got 3").
  """
  import jax

  path = Path(path)
  meta = _read_meta(path)
  data = _read_variables(path, meta)
  arch = _rebuilt_architecture(path / _META, meta["architecture"], config)
  if template is None:
    # Shapes only: the arrays come from the file, and a network.json whose architecture is damaged into
    # an enormous one is refused by the comparison below rather than allocated.
    template = jax.eval_shape(arch.init, jax.random.key(0))
  if sorted(meta["roles"]) != sorted(template):
    raise NetworkError(path / _META, f"roles: {sorted(meta['roles'])} where the {arch.kind} architecture "
                                     f"has {sorted(template)}")
  modules = _decoded(path / _VARIABLES, data, dict(template), arch)
  return Network(meta["method"], meta["task"], arch, modules, meta.get("column"))


def _sha256(value: JsonValue, where: str) -> None:
  if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
    raise Invalid(where, f"expected a sha256 (64 lowercase hex digits), got {value!r:.70}")


_META_SCHEMA = obj({
    "format": text(), "format_version": integer(), "method": text(nonempty=True), "task": text(nonempty=True),
    "architecture": obj({"kind": text(ARCHITECTURE_KINDS), "task_type": text(nonempty=True),
                         "element": text(nonempty=True)}),
    "roles": array(text(nonempty=True), min_size=1), "bytes": integer(minimum=0), "sha256": _sha256,
}, optional={"column": nullable(integer(minimum=0))})
"""What network.json holds (`save_network`), as `load_network` reads it."""


def _read_meta(path: Path) -> dict:
  """network.json of the network at `path`, checked: its format, its version, then every field."""
  try:
    meta = read_json(path / _META)
  except JsonFileError as err:
    raise NetworkError(err.path, err.problem) from None
  try:
    obj({"format": text((_FORMAT,))})(meta, "")
  except Invalid as err:
    raise NetworkError(path, f"{_META} is not a saved baseline network's ({err})") from None
  version = meta.get("format_version")
  if type(version) is not int or version != _FORMAT_VERSION:  # type: 2.0 and true are not versions
    raise NetworkError(path, f"{_META} has format version {version!r:.40}; this hx reads version "
                             f"{_FORMAT_VERSION} (with checksums) only")
  try:
    _META_SCHEMA(meta, "")
  except Invalid as err:
    raise NetworkError(path / _META, str(err)) from None
  return meta


def _read_variables(path: Path, meta: dict) -> bytes:
  """The variables file's bytes, refused unless their size and sha256 are those network.json records."""
  try:
    data = (path / _VARIABLES).read_bytes()
  except OSError as err:
    raise NetworkError(err.filename or path / _VARIABLES, err.strerror or str(err)) from None
  if len(data) != meta["bytes"]:
    raise NetworkError(path / _VARIABLES, f"{len(data)} bytes where {_META} records {meta['bytes']}: "
                                          "truncated or altered")
  digest = hashlib.sha256(data).hexdigest()
  if digest != meta["sha256"]:
    raise NetworkError(path / _VARIABLES, f"altered: its sha256 is {digest}, {_META} records "
                                          f"{meta['sha256']}")
  return data


def _rebuilt_architecture(meta_path: Path, saved: dict, config: ModuleConfig) -> Architecture:
  """The architecture network.json's "architecture" ({"kind", "task_type", "element"}) describes, rebuilt
  from its types; NetworkError naming the field that does not describe it."""
  types = {}
  for field in ("task_type", "element"):
    try:
      types[field] = parse_type(saved[field])
    except ValueError as err:  # hx.ParseError, with an excerpt on further lines
      raise NetworkError(meta_path, f"architecture.{field}: {str(err).splitlines()[0]}") from None
  try:
    arch = architecture(types["task_type"], config, types["element"])
  except (ValueError, TypeError) as err:  # a type no baseline handles, an element no module takes
    raise NetworkError(meta_path, f"architecture.task_type: {str(err).splitlines()[0]}") from None
  if arch.kind != saved["kind"]:
    raise NetworkError(meta_path, f"architecture.kind: {saved['kind']!r}, but its task type "
                                  f"{types['task_type']} makes the {arch.kind!r} kind")
  if arch.element != types["element"]:
    raise NetworkError(meta_path, f"architecture.element: {types['element']}, where the {arch.kind} "
                                  f"architecture of type {types['task_type']} has {arch.element}")
  return arch


def _decoded(path: Path, data: bytes, template: dict, arch: Architecture) -> dict:
  """The variables in `data` (flax msgpack) as host arrays in `template`'s structure; NetworkError (naming
  the variables file and the array) unless every array of `template` is there with its shape and dtype, and
  nothing else."""
  import flax.serialization
  import jax
  from flax.traverse_util import flatten_dict

  try:
    state = flax.serialization.msgpack_restore(data)
    want = flatten_dict(flax.serialization.to_state_dict(template), sep="/")
    got = flatten_dict(state, sep="/") if isinstance(state, dict) else {}
  except Exception as err:  # noqa: BLE001 -- msgpack raises many kinds; the checksum matched anyway
    raise NetworkError(path, f"does not fit the architecture ({type(err).__name__}: {err})") from None
  for name in sorted(set(want) | set(got)):
    if name not in got or name not in want:
      where = "missing" if name not in got else "not in the architecture"
      raise NetworkError(path, f"{name}: {where}: {_META}'s {arch.kind} architecture has {len(want)} "
                               f"arrays, this file {len(got)}")
    a, b = np.asarray(got[name]), want[name]
    if a.shape != tuple(b.shape) or a.dtype != np.dtype(b.dtype):
      raise NetworkError(path, f"{name}: {a.dtype}{list(a.shape)} where {_META}'s {arch.kind} architecture "
                               f"has {np.dtype(b.dtype)}{list(b.shape)}: saved with other module sizes, or "
                               "altered")
  return jax.tree.map(np.asarray, flax.serialization.from_state_dict(template, state))
