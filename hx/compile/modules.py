"""Neural module templates: a fresh function's architecture follows from its type (paper, appendix C).

Templates (B below is the number of rows a module is called on; types exclude that axis):

  mlp           one or two non-image tensors -> tensor. The arguments are flattened and concatenated
                (a fold step `S -> A -> S` takes (state, element)); Dense(hidden) -> masked batch norm ->
                ReLU -> dropout -> Dense(prod(output shape)) -> output activation.
  cnn           image `Tensor<real>[C][H][W]` (channel-first) -> tensor. Per channel size c in
                `cnn_channels`: conv k x k (stride 1, no padding) -> ReLU -> 2x2 max-pool (floor); then
                spatial dropout (whole channels) after the last block; features flattened in (H, W, C)
                order. In training on a CPU each block runs hx's own kernels where they apply
                (`hx.compile.conv_pool`: the paper's 32 and 64 channels); otherwise under YNNPACK's
                convolutions the rows are run in unrolled slices (same values and gradients, much
                faster there; see `_cnn_blocks`, `CNN_TRAIN_ROWS` and `hx.cpu_convolutions`).
                The paper's CNN has no output layer: when the output type is exactly
                `Tensor<real>[F]` with F the feature size (64*4*4 = 1024 for 28x28 inputs) the features are
                the output. Otherwise a linear output layer Dense(F -> prod(output shape)) and the output
                activation are added.
  lstm          `List<T>` (T a non-image tensor, flattened) -> tensor: an LSTM (hidden `lstm_hidden`,
                forget-gate bias 1, gates i, f, g, o) run over the valid prefix of each list, then
                Dense(last valid hidden state) -> output activation. An empty list gives the zero state.
  graph_kernel  `List<T> -> U` in the kernel position of conv_g / conv_l (role="kernel"). The list's first
                element is the node itself (conv_g puts u first; conv_l puts the window's centre first).
                Per pair (self, element_j) for every valid j (self included):
                  m_j = Dense(M) . ReLU . Dense(graph_hidden) (concat(self, element_j)),
                aggregated over the valid j with masked reductions (`graph_aggregations`, default min,
                max, mean, concatenated), then
                  out = activation(Dense(U) . ReLU . Dense(graph_hidden) (concat(self, aggregates))).
                This expresses Bellman-Ford relaxation on a (cost, distance) node state exactly, in
                hx.data.grids' convention (a path costs the sum of its cells' costs, both ends
                included): m_j = d_j, agg = min_j m_j, out = (w_self, d_self - relu(d_self - w_self -
                agg)) = (w, min(d, w + min_j d_j)); see `relaxation_params` in
                tests/compile/lowering_helpers.py for the weights. No batch norm and no dropout.
                With `ModuleConfig.graph_update="residual"` (ours, not the paper's) and an output type
                equal to the element type, out = activation(self + Dense(U) . ReLU . Dense(...)(...)),
                the last Dense starting at zero: a fresh kernel is the identity, whose fixed point is
                its input (a random replacing kernel is a contraction that forgets it), and a kernel
                that leaves a settled node unchanged needs only a zero update.
                Its input comes in one of two forms, one function with the same parameters: a ListBatch
                of lists (R, K, ...) (conv_l's windows), reduced over the K axis; or `Neighbourhoods`, R
                nodes and the edges into them (conv_g, on a neighbour table or on edge lists): the pair
                network runs once per edge (receiver as self, sender as element j) and once per node for
                its self pair, and the reductions are segment operations (`jax.ops.segment_min` /
                `segment_max` / `segment_sum`) over the receivers.

  slot_kernel   `List<T> -> U` in the kernel position of conv_g / conv_l when `ModuleConfig.graph_kernel` is
                "slots": a network over the neighbour list in its slot order, as the authors' grid kernel
                (their `NetGRAPHNew`: a 3x3 convolution with its corners held at zero over the (cost,
                distance) grid, then 1x1 convolutions of 100 channels, ReLU after each, then a 1x1
                convolution to the new distance). With K = `graph_slots` slots (a grid's neighbour table:
                the node, up, down, left, right; `hx.data.grids`) and H = `graph_slot_hidden`:
                  h = ReLU(Dense(H)(concat(x_1 .. x_K, m_1 .. m_K))), then `graph_slot_layers` - 1 times
                  h = ReLU(Dense(H)(h)), out = activation(Dense(U)(h)),
                x_k the k-th entry of the list (zero where the slot is empty: the authors' zero padding)
                and m_k 1 where it is filled (ours: so that a value 0 and an empty slot differ). The slots
                are directions, so the kernel tells a cell's up neighbour from its down one and a grid's
                corners apart (the start of a shortest-path grid is the top-left one), which no
                order-invariant reduction can. With `graph_update="residual"` and U the element type,
                out = activation(x_1 + Dense(U)(h)), the last Dense starting at zero. Only on neighbour
                lists whose slots mean something (a grid's table, conv_l's windows of K elements): edge
                lists have no slot order and are refused. No batch norm, no dropout. Its layers start
                as PyTorch's do (uniform in +-1/sqrt(fan in), biases too: the authors'), except a
                residual kernel's last, which starts at zero.

  Both kernels, where their output type is their element type, pass the first `graph_keep` components
  of the node's own value through unchanged (the authors' grid kernel passes the cost through and
  predicts only the distance): their last Dense then produces the other components alone, replaced or
  added to the node's (`graph_update`).

  user          a module of the user's own, registered for one exact function type with `register_module`
                (a flax linen Module, or an init/apply pair of pure functions): it takes precedence over
                the templates above for fresh functions of exactly that type. Its parameters are the
                user's (no batch statistics: stats {}), it sees no mask, dropout keys or training flag
                (a pure function of its parameters and inputs), and hx applies the output type's
                activation to what it returns, as for the other templates.

Output activation from the output type: `Tensor<bool>[1]` sigmoid, `Tensor<bool>[k]` (k > 1) softmax
over the k entries, any other bool shape elementwise sigmoid, `real` none.

Batch norm uses masked statistics: only rows whose mask is True enter the batch mean and (biased)
variance, so padding never changes a statistic; running statistics are updated as
`momentum * old + (1 - momentum) * batch` only when at least one row is valid. Dropout draws its
randomness per row from a per-row key (see `hx.compile.lower`), so a valid row's dropout mask does not
depend on how much padding sits beside it. Frozen (library) modules always run in inference mode.

Parameters are plain nested dicts of arrays; the static structure lives in the hashable `ModuleSpec`.
Each template is written in one place, at the end of this file: its initialisation, its application
(JAX, R rows) and its float64 NumPy reference (one example, for `hx.compile.reference`), gathered in
the table `TEMPLATES` with the name of its linear output layer (`set_output_bias`); the user's modules
go through `USER_TEMPLATE`, outside that table.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pickle
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hx.compile import conv_pool, conv_pool_choice
from hx.compile.conv_pool import conv_valid
from hx.compile.fixpoint import FixConfig
from hx.cpu_convolutions import ynnpack_convolutions
from hx.defaults import OMIT_DEFAULT, omit_defaults
from hx.lang.types import (
  FunctionType,
  GraphType,
  ListType,
  TensorType,
  Type,
  function_parts,
  is_image,
  type_variables,
)

__all__ = [
  "GRAPH_KERNELS", "ModuleConfig", "ModuleSpec", "NoTemplateError", "UnresolvedTypeError", "module_spec",
  "init_module", "apply_module", "reference_module", "cnn_feature_size", "cnn_layout", "cnn_features",
  "Template", "TEMPLATES", "USER_TEMPLATE",
  "linear_output", "set_output_bias", "mlp_layers", "lstm_scan", "Neighbourhoods", "apply_dense", "activate",
  "batch_norm", "row_dropout", "PRECISION", "matmul",
  "Registration", "UnregisteredModuleError", "register_module", "registered_modules", "unregister_module",
  "registration_of",
]

MLP_ORDERS = ("bn_relu", "relu_bn")

AGGREGATIONS = ("min", "max", "mean", "sum")
GRAPH_UPDATES = ("replace", "residual")
GRAPH_KERNELS = ("pairs", "slots")


@dataclasses.dataclass(frozen=True)
class ModuleConfig:
  """Sizes of the module templates; the defaults are the paper's (appendix C) where it gives them.

  Attributes:
    mlp_hidden: width of the MLP's hidden layer (paper: 1024).
    fold_step_norm: whether a fold step's MLP (the only two-argument MLP: `S -> A -> S`) has its batch
      norm (True, the default, as every MLP and the authors' `NetMLP`). False leaves it out: one batch
      norm layer applied at every list position normalises each position by its own batch statistics in
      training but by one running average in evaluation, and on SS's sums that kept hx's folds far from
      the paper's score (benchmarks/notes/2026-11-25-ss-fold.md). Ours; not yet a preset's.
    mlp_order: where the MLP's batch norm sits: "bn_relu" (the default, hx's until now: Dense -> batch
      norm -> ReLU) or "relu_bn" (the authors' code, `NetMLP.forward` in capergroup/houdini's
      `HOUDINI/Interpreter/NeuralModules.py`: Dense -> ReLU -> batch norm). The paper says "one hidden
      layer of size 1024, followed by batch normalization and dropout", which both orders read.
    mlp_dropout: dropout rate after the MLP's batch norm (the paper gives none; 0.5, as torch's default).
    cnn_channels: output channels of the CNN's convolutions (paper: 32, 64).
    cnn_kernel: convolution kernel size (paper: 5; stride 1, no padding).
    cnn_pool: max-pooling window and stride (paper: 2).
    cnn_dropout: spatial dropout rate after the last pooling (torch's Dropout2d default 0.5).
    lstm_hidden: LSTM hidden size (paper: 100).
    graph_hidden: hidden width of the graph kernel's pair and output networks.
    graph_message: size of the graph kernel's per-pair message.
    graph_aggregations: masked reductions over the neighbour list, concatenated (min, max, mean, sum).
    graph_update: "replace" (default: the kernel's output is the node network's) or "residual": where a
      kernel's output type is its element type (as under repeat and fix), the node's own value plus the
      node network's output, whose last layer starts at zero, so that a fresh kernel starts as the
      identity (ours, not the paper's; see the graph_kernel template above). Applies to both kernels.
    graph_kernel: the kernel template of conv_g / conv_l: "pairs" (default: `graph_kernel`, an
      order-invariant pair network and reductions; ours) or "slots" (`slot_kernel`: a network over the
      neighbour list's slots in order, the authors' grid kernel; the paper does not give the kernel's
      architecture).
    graph_slots: K, the slots of the slot kernel's lists (5: a grid's node and its 4 directions,
      `hx.data.grids.K`; conv_l's window has 2 * conv_window + 1).
    graph_slot_hidden: width of the slot kernel's hidden layers (the authors': 100 channels).
    graph_slot_layers: hidden layers of the slot kernel (the authors': 5, the 3x3 and four 1x1
      convolutions before the output one).
    graph_keep: leading components of a node's value that a kernel whose output type is its element
      type passes through unchanged (default 0; the authors' grid kernel keeps 1, the cell's cost, and
      predicts the distance alone). Applies to both kernels; ignored where the kernel's output type is
      not its element type.
    conv_window: p of conv_l: the window is 2p+1 elements with clamped ends (paper: p > 0; 1).
    bn_momentum: running-statistics momentum (torch's 0.1 in flax's convention).
    bn_epsilon: batch-norm epsilon.
    fix: how `fix(e)` iterates: tolerance, cap and the adjoint's tolerance (`hx.compile.fixpoint`).
  """
  mlp_hidden: int = 1024
  mlp_dropout: float = 0.5
  cnn_channels: tuple[int, ...] = (32, 64)
  cnn_kernel: int = 5
  cnn_pool: int = 2
  cnn_dropout: float = 0.5
  lstm_hidden: int = 100
  graph_hidden: int = 32
  graph_message: int = 16
  graph_aggregations: tuple[str, ...] = ("min", "max", "mean")
  graph_update: str = "replace"
  graph_kernel: str = "pairs"
  graph_slots: int = 5
  graph_slot_hidden: int = 100
  graph_slot_layers: int = 5
  graph_keep: int = 0
  conv_window: int = 1
  bn_momentum: float = 0.9
  bn_epsilon: float = 1e-5
  fix: FixConfig = FixConfig()
  # Added after runs were saved: named in the repr and the settings only where not the defaults
  # (`hx.defaults`).
  mlp_order: str = dataclasses.field(default="bn_relu", metadata={OMIT_DEFAULT: True})
  fold_step_norm: bool = dataclasses.field(default=True, metadata={OMIT_DEFAULT: True})

  def __repr__(self) -> str:
    # The dataclass's own repr (checkpoint keys hold it), but for the fields marked OMIT_DEFAULT.
    return f"ModuleConfig({', '.join(f'{n}={v!r}' for n, v in omit_defaults(self))})"

  def __post_init__(self):
    bad = [a for a in self.graph_aggregations if a not in AGGREGATIONS]
    if bad or not self.graph_aggregations:
      raise ValueError(f"graph_aggregations must be a non-empty subset of {AGGREGATIONS}, got "
                       f"{self.graph_aggregations!r}")
    if self.graph_update not in GRAPH_UPDATES:
      raise ValueError(f"graph_update must be one of {GRAPH_UPDATES}, got {self.graph_update!r}")
    if self.mlp_order not in MLP_ORDERS:
      raise ValueError(f"mlp_order must be one of {MLP_ORDERS}, got {self.mlp_order!r}")
    if self.graph_kernel not in GRAPH_KERNELS:
      raise ValueError(f"graph_kernel must be one of {GRAPH_KERNELS}, got {self.graph_kernel!r}")
    for name in ("graph_slots", "graph_slot_hidden", "graph_slot_layers"):
      if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
        raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
    if not (isinstance(self.graph_keep, int) and self.graph_keep >= 0):
      raise ValueError(f"graph_keep must be a non-negative int, got {self.graph_keep!r}")
    if self.conv_window < 1:
      raise ValueError(f"conv_window (p) must be >= 1, got {self.conv_window}")
    for name in ("mlp_dropout", "cnn_dropout"):
      if not 0.0 <= getattr(self, name) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
    if not self.cnn_channels or not all(isinstance(c, int) and c >= 1 for c in self.cnn_channels):
      raise ValueError(f"cnn_channels must be one or more positive ints, got {self.cnn_channels!r}")
    for name in ("mlp_hidden", "cnn_kernel", "cnn_pool", "lstm_hidden", "graph_hidden", "graph_message"):
      if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
        raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")

  # Pickled, a config carries the modules registered in this process (`register_module`): a task's
  # config travels to every worker process or Ray task that trains its candidates (with the task's
  # context, `hx.synth.parallel`), and there its fresh functions and its library's entries must get
  # the modules they get here. Without registrations it pickles as any frozen dataclass. The definitions
  # travel as a pickle of their own, unpickled only after the directories they were imported from here
  # are on the receiver's path: a worker starts elsewhere (`python -m hx.synth.worker`) and would not
  # find a module beside the script that was run (the sender's sys.path[0]).
  def __reduce_ex__(self, protocol: Any) -> Any:
    registrations = tuple(_REGISTRY.values())
    if not registrations:
      return super().__reduce_ex__(protocol)
    for r in registrations:
      _check_portable(r)
    fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    return _config_with_modules, (fields, _import_roots(registrations), pickle.dumps(registrations, protocol))

  # A copy is no pickle: it needs no registrations (and must not refuse a module defined in __main__).
  def __copy__(self) -> ModuleConfig:
    return self

  def __deepcopy__(self, memo: Any) -> ModuleConfig:
    return self




class NoTemplateError(TypeError):
  """A fresh function's type has no neural module template (e.g. it takes a function)."""


class UnresolvedTypeError(NoTemplateError):
  """A fresh function's type still contains type variables, so its architecture is not determined."""


@dataclasses.dataclass(frozen=True)
class ModuleSpec:
  """Everything needed to build a module, nothing about parameter values. Frozen and hashable.

  Attributes:
    template: "mlp" | "cnn" | "lstm" | "graph_kernel" | "slot_kernel" | "user" (`register_module`; its
      hyper holds ("name", the registered name) only).
    inputs: the argument types, in order (two for a fold step `S -> A -> S`).
    output: the result type (a tensor type).
    activation: "sigmoid" | "softmax" | "none", from the output type.
    hyper: the sizes the template uses, as sorted (name, value) pairs; read with `spec[name]`.
  """
  template: str
  inputs: tuple[Type, ...]
  output: Type
  activation: str
  hyper: tuple[tuple[str, Any], ...]

  def __getitem__(self, name: str) -> Any:
    for k, v in self.hyper:
      if k == name:
        return v
    raise KeyError(f"{self.template} spec has no size {name!r}")

  def get(self, name: str, default: Any = None) -> Any:
    """`spec[name]`, or `default` where the spec has no such size."""
    try:
      return self[name]
    except KeyError:
      return default

  @property
  def type(self) -> Type:
    t = self.output
    for a in reversed(self.inputs):
      t = FunctionType(a, t)
    return t

  def __str__(self) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in self.hyper)
    return f"{self.template}[{self.type}; {sizes}]"


def _activation(t: TensorType) -> str:
  if t.atom == "real":
    return "none"
  return "softmax" if len(t.shape) == 1 and t.shape[0] > 1 else "sigmoid"


def _is_vector_like(t: Type) -> bool:
  return isinstance(t, TensorType) and not is_image(t)


def cnn_feature_size(image: TensorType, channels: tuple[int, ...], kernel: int, pool: int) -> int:
  """Length of the CNN's flattened features for a `[C][H][W]` image; 0 if the image is too small."""
  _, h, w = image.shape
  for _ in channels:
    h, w = (h - kernel + 1) // pool, (w - kernel + 1) // pool
    if h < 1 or w < 1:
      return 0
  return h * w * channels[-1]


def cnn_layout(image: TensorType, config: ModuleConfig) -> tuple[tuple[int, ...], int, int] | None:
  """(channels, kernel, feature size) of the CNN a `[C][H][W]` image gets; None if none fits.

  The configured `cnn_channels` and `cnn_kernel` where the image is large enough for them (every image
  of the paper's tasks: 28x28), else the first of these that fits: the leading blocks of `cnn_channels`
  (as many as fit, at the configured kernel), then odd kernels down to 3 with one block less each time
  none fits. An 8x8 image gets one 5x5 block of 32 channels (2x2x32 features). A user's small images
  then get a CNN rather than no program at all; the choice is ours (the paper's images are all 28x28).
  """
  c = config
  for kernel in range(c.cnn_kernel, 2, -2):
    for blocks in range(len(c.cnn_channels), 0, -1):
      channels = tuple(c.cnn_channels[:blocks])
      f = cnn_feature_size(image, channels, kernel, c.cnn_pool)
      if f:
        return channels, kernel, f
  return None


def cnn_features(image: TensorType, config: ModuleConfig) -> int:
  """The feature size of the CNN `cnn_layout` gives `image`; 0 if none fits."""
  layout = cnn_layout(image, config)
  return 0 if layout is None else layout[2]


def module_spec(fn_type: Type, config: ModuleConfig = ModuleConfig(), *, role: str | None = None,
                name: str = "<function>") -> ModuleSpec:
  """The module template a function of type `fn_type` gets (see the module docstring).

  Args:
    fn_type: the function's type, without type variables.
    config: sizes.
    role: None, or "kernel" for the direct kernel of a conv_g / conv_l (graph-kernel template instead of
      an LSTM for `List<T> -> U`).
    name: the function's name, for error messages.

  A type registered with `register_module` gets the user's module ("user" template) whatever `config`
  and `role` say.

  Raises:
    UnresolvedTypeError: the type has type variables.
    NoTemplateError: no template fits the type.
  """
  if role not in (None, "kernel"):
    raise ValueError(f"role must be None or 'kernel', got {role!r}")
  if type_variables(fn_type):
    raise UnresolvedTypeError(
      f"fresh function {name} has unresolved type {fn_type}: its architecture is not determined "
      "(resolve the type variables first)")
  registered = _registered_for(fn_type)
  if registered is not None:  # the user's own module comes before any template
    return _user_spec(registered)
  args, out = function_parts(fn_type)

  def refuse(why: str) -> NoTemplateError:
    return NoTemplateError(f"no neural module template for {name} : {fn_type} ({why})")

  if not args:
    raise refuse("not a function")
  if not isinstance(out, TensorType):
    raise refuse("the result must be a tensor")
  if is_image(out):
    raise refuse("no template produces an image")
  act = _activation(out)
  c = config
  if len(args) == 1 and is_image(args[0]):
    a = args[0]
    layout = cnn_layout(a, c)
    if layout is None:
      raise refuse(f"image {a} too small for one 3x3 convolution with {c.cnn_pool}x{c.cnn_pool} pooling")
    channels, kernel, f = layout
    head = out != TensorType("real", (f,))
    hyper = dict(channels=channels, kernel=kernel, pool=c.cnn_pool,
                 dropout=c.cnn_dropout, features=f, output_layer=head)
    return ModuleSpec("cnn", (a,), out, act if head else "none", tuple(sorted(hyper.items())))
  if 1 <= len(args) <= 2 and all(_is_vector_like(a) for a in args):
    hyper = dict(hidden=c.mlp_hidden, dropout=c.mlp_dropout, bn_momentum=c.bn_momentum,
                 bn_epsilon=c.bn_epsilon)
    if c.mlp_order != "bn_relu":  # named only where it differs: earlier specs and libraries keep their keys
      hyper["order"] = c.mlp_order
    if len(args) == 2 and not c.fold_step_norm:  # two arguments: a fold step (`hx.compile.lower`)
      hyper["batch_norm"] = False
    return ModuleSpec("mlp", tuple(args), out, act, tuple(sorted(hyper.items())))
  if len(args) == 1 and isinstance(args[0], ListType) and _is_vector_like(args[0].elem):
    if role == "kernel":
      return _graph_kernel_spec(args[0], out, act, c, refuse)
    return ModuleSpec("lstm", (args[0],), out, act, (("hidden", c.lstm_hidden),))
  if any(isinstance(a, FunctionType) for a in args):
    raise refuse("it takes a function")
  if any(isinstance(a, GraphType) for a in args):
    raise refuse("a graph argument needs a combinator (map_g, fold_g, conv_g)")
  if len(args) > 2:
    raise refuse("more than two arguments")
  raise refuse("unsupported argument types")


def _graph_kernel_spec(arg: ListType, out: TensorType, act: str, c: ModuleConfig,
                       refuse: Callable[[str], NoTemplateError]) -> ModuleSpec:
  """The direct kernel of a conv_g / conv_l over neighbours `arg` (`List<T> -> U`): the slot kernel or
  the pair kernel of `c.graph_kernel`."""
  if c.graph_kernel == "slots":
    hyper: dict[str, Any] = dict(hidden=c.graph_slot_hidden, layers=c.graph_slot_layers, slots=c.graph_slots)
    template = "slot_kernel"
  else:
    hyper = dict(hidden=c.graph_hidden, message=c.graph_message, aggregations=tuple(c.graph_aggregations))
    template = "graph_kernel"
  # Recorded only where they apply, so that the default's specs (and library entries) are unchanged.
  if c.graph_update == "residual" and out == arg.elem:
    hyper["update"] = "residual"
  if c.graph_keep and out == arg.elem:
    if c.graph_keep >= _size(out):
      raise refuse(f"ModuleConfig.graph_keep={c.graph_keep} keeps every component of {out}: nothing "
                   "is left to learn")
    hyper["keep"] = c.graph_keep
  return ModuleSpec(template, (arg,), out, act, tuple(sorted(hyper.items())))


# ---------------------------------------------------------------------------------------------------
# Modules of the user's own: a registry of this process, name -> Registration. A fresh function whose
# type is exactly a registered one gets the registered module (`module_spec`); the spec records only the
# name, so a library entry built by one is saved as any other and needs the same registration where it
# is loaded (`hx.synth.library`). Pickled `ModuleConfig`s carry the registrations to other processes.

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
  module: Any = None
  init: Callable[[jax.Array], Any] | None = None
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

  def init_params(self, key: jax.Array) -> Any:
    """Fresh parameters: a tree of dicts (string keys), tuples, lists and float arrays."""
    import flax.core

    return flax.core.unfreeze(self.variables(key).get("params", {}))

  def apply_params(self, params: Any, *xs: jax.Array) -> jax.Array:
    """The module on R rows: xs `(R, *arg shape)` float32 each -> `(R, *output shape)` pre-activation."""
    if self.module is None:
      return self.apply(params, *xs)
    return self.module.apply({"params": params}, *xs)

  def describe(self) -> str:
    """The definition in words, for messages: "flax module pkg.Encoder" or "init/apply pkg.f, pkg.g"."""
    if self.module is not None:
      return f"flax module {_qualified(type(self.module))}"
    return f"init/apply {_qualified(self.init)}, {_qualified(self.apply)}"


def _qualified(obj: Any) -> str:
  return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def register_module(name: str, fn_type: str | Type, *, module: Any = None,
                    init: Callable[[jax.Array], Any] | None = None,
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
  worker processes or on Ray (`executor="processes"` / `"ray"`) the module's class, or the init and
  apply functions, must be importable there by name: defined at the top level of a module on the
  workers' path, not in the script run as `__main__` (else the executor refuses before training).

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


def _check_params(where: str, node: Any, path: str = "params") -> None:
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
        "train with executor='processes' or 'ray', or train with executor='local'")


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


def _config_with_modules(fields: Mapping[str, Any], roots: Sequence[str], blob: bytes) -> ModuleConfig:
  """A pickled `ModuleConfig`, its sender's registrations installed here first. The sender's definition
  replaces another of the same name (a worker builds what the process that sent the task registered).
  `roots` (`_import_roots`) go at the end of sys.path, after this process's own entries, so that they
  add what is missing here and shadow nothing.

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
  return ModuleConfig(**fields)


# ---------------------------------------------------------------------------------------------------
# Initialisation. Weights: LeCun normal (flax's Dense/Conv default), biases zero (Tune may then start
# the output layer of a regression's last module at the targets' mean: TuneConfig.bias_from_targets),
# LSTM recurrent weights orthogonal per gate. Never jit(vmap(...)) the LSTM init (DESIGN.md: QR
# deadlock on 2 CPUs).

def _size(t: Type) -> int:
  return math.prod(t.shape)


def _dense(rng: jax.Array, n_in: int, n_out: int, zero: bool = False) -> dict:
  w = jnp.zeros((n_in, n_out), jnp.float32) if zero else jax.nn.initializers.lecun_normal()(
      rng, (n_in, n_out), jnp.float32)
  return {"w": w, "b": jnp.zeros((n_out,), jnp.float32)}


def _uniform_dense(rng: jax.Array, n_in: int, n_out: int) -> dict:
  """A dense layer as PyTorch starts one (`nn.Linear`, `nn.Conv2d`): weights and biases uniform in
  +-1/sqrt(n_in). The slot kernel's layers start so, as the authors' grid kernel does: with its inputs'
  large distances (the bound, ~64) and ten applications in a row, a replacing kernel started from
  `_dense`'s LeCun-normal weights stayed far from the authors' RMSE after an epoch of GS2 task 2, where
  this start reached it (benchmarks/notes/2026-11-24-gs2-slot-kernel.md)."""
  bound = 1.0 / math.sqrt(n_in)
  kw, kb = jax.random.split(rng)
  return {"w": jax.random.uniform(kw, (n_in, n_out), jnp.float32, -bound, bound),
          "b": jax.random.uniform(kb, (n_out,), jnp.float32, -bound, bound)}


def _residual(spec: ModuleSpec) -> bool:
  """Whether a graph kernel adds its node network's output to the node's own value."""
  return dict(spec.hyper).get("update") == "residual"


def _kept(spec: ModuleSpec) -> int:
  """The leading components of the node's value a graph kernel passes through (ModuleConfig.graph_keep)."""
  return dict(spec.hyper).get("keep", 0)


def _update(spec: ModuleSpec, x: jax.Array, y: jax.Array) -> jax.Array:
  """A graph kernel's output from the node's own value x (M, elem) and its last layer's y (M, elem -
  keep): the kept components of x, then y, or x's others plus y under the residual update."""
  k = _kept(spec)
  rest = x[:, k:] + y if _residual(spec) else y
  return jnp.concatenate([x[:, :k], rest], -1) if k else rest


# ---------------------------------------------------------------------------------------------------
# Application.

# Float32 products on every backend. XLA's default precision on NVIDIA GPUs rounds the operands of
# float32 matmuls and convolutions to TF32 (a 10-bit mantissa): on an H100 that moved the reference
# tests' outputs by ~1e-3 and broke the graph kernel's exact Bellman-Ford distances
# (benchmarks/RESULTS.md, "On a GPU"). XLA:CPU computes float32 either way, so CPU results are unchanged.
PRECISION = lax.Precision.HIGHEST


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
  """a @ b in float32 on every backend (`PRECISION`)."""
  return jnp.matmul(a, b, precision=PRECISION)


def apply_dense(p: dict, x: jax.Array) -> jax.Array:
  """x (R, n_in) @ w + b -> (R, n_out), p = {"w": (n_in, n_out), "b": (n_out,)}.

  Not `flax.linen.Dense`, although `Dense(precision=PRECISION)` compiles to the very same program (the
  same optimised HLO in a training step): the templates are functions of plain parameter dicts, whose
  names ("w", "b") the saved libraries and checkpoints, the baselines and the hand-set weights of the
  tests use; a flax Module would name them "kernel" and "bias", or need its own dict built per call.
  """
  return matmul(x, p["w"]) + p["b"]


def activate(y: jax.Array, activation: str) -> jax.Array:
  """The templates' output activations: "sigmoid", "softmax" (last axis) or "none"."""
  if activation == "sigmoid":
    return jax.nn.sigmoid(y)
  if activation == "softmax":
    return jax.nn.softmax(y, axis=-1)
  return y


def row_dropout(x: jax.Array, keys: jax.Array, rate: float, keep_shape: tuple[int, ...],
                 spatial: bool = False) -> jax.Array:
  """Inverted dropout with one PRNG key per row of x (R, ...).

  The keep mask has shape (R, *keep_shape): x's trailing axes, or with `spatial` one entry per channel
  of an NHWC x, broadcast over height and width (spatial dropout drops whole feature maps).
  """
  keep = jax.vmap(lambda k: jax.random.bernoulli(k, 1.0 - rate, keep_shape))(keys)
  if spatial:
    keep = keep[:, None, None, :]
  return jnp.where(keep, x / (1.0 - rate), 0.0)


def batch_norm(h: jax.Array, p: dict, s: dict, mask: jax.Array, train: bool, momentum: float,
                eps: float) -> tuple[jax.Array, dict]:
  """Batch norm over rows of h (R, F); in training, statistics over the rows where mask (R,) is True.

  Not `flax.linen.BatchNorm(mask=...)`: on a call whose rows are all padding (mask all False) flax sets
  the running statistics to NaN (a mean over no rows), where this keeps them; and its default variance
  is E[h^2] - E[h]^2, not the two-pass mean of squared deviations computed here.
  """
  if train:
    w = mask.astype(h.dtype)[:, None]
    n = jnp.sum(w)
    denom = jnp.maximum(n, 1.0)
    mean = jnp.sum(h * w, 0) / denom
    var = jnp.sum(jnp.square(h - mean) * w, 0) / denom
    upd = lambda old, new: jnp.where(n > 0, momentum * old + (1.0 - momentum) * lax.stop_gradient(new), old)
    s = {"mean": upd(s["mean"], mean), "var": upd(s["var"], var)}
  else:
    mean, var = s["mean"], s["var"]
  return (h - mean) * lax.rsqrt(var + eps) * p["scale"] + p["bias"], s


# The CNN. On XLA:CPU its cost is decided less by arithmetic than by how the convolutions are run
# (benchmarks/RESULTS.md, "Training throughput"): XLA hands each convolution to YNNPACK, which runs one over
# a few dozen images fast but one over a whole training step's images (150 lists x 5) several times
# slower, single-threaded, through an unfused im2col copy into a fresh buffer (~40,000 page faults per
# call). In training, the CNN therefore runs on slices of CNN_TRAIN_ROWS images, unrolled (never a rolled
# loop: DESIGN.md), whose forward and backward passes XLA schedules independently. In inference nothing
# is sliced: without residuals to keep, YNNPACK fuses convolution and pooling and stays fast. Under XLA's
# own convolution kernels, which `import hx` requests (`hx.cpu_convolutions`), nothing is sliced: they take
# a whole step's images at once, and slices would only add compile time. Nor are hx's own kernels
# (`hx.compile.conv_pool`), which run each block in training on a CPU where they apply.

CNN_TRAIN_ROWS = 25  # images per slice in training mode, for the paper's CNN on 28x28 images
CNN_MAX_SLICES = 32  # at most this many slices (bounds compilation time); larger slices beyond
# What a slice bounds is the largest convolution's window buffer: the paper's CNN (second convolution:
# 8x8 outputs, 5x5x32 windows) on CNN_TRAIN_ROWS images. A smaller CNN gets more images per slice for the
# same buffer, so fewer slices to compile (the small CNNs of tests and quick runs).
CNN_SLICE_WINDOW_FLOATS = CNN_TRAIN_ROWS * 8 * 8 * 5 * 5 * 32


def _cnn_slice_rows(shape: tuple[int, ...], convs: tuple, pool: int) -> int:
  """Images per training slice for NHWC images of `shape` through `convs` (at least CNN_TRAIN_ROWS)."""
  _, height, width, _ = shape
  per_image = 1
  for p in convs:
    k, _, channels, _ = p["w"].shape
    height, width = height - k + 1, width - k + 1
    per_image = max(per_image, height * width * k * k * channels)
    height, width = height // pool, width // pool
  return max(CNN_TRAIN_ROWS, CNN_SLICE_WINDOW_FLOATS // per_image)


def _cnn_slices(r: int, rows: int = CNN_TRAIN_ROWS) -> list[tuple[int, int]]:
  """[start, stop) row ranges of the training-mode slices of a CNN call on r rows, about `rows` each
  (near-equal sizes, at most CNN_MAX_SLICES of them)."""
  n = max(1, min(CNN_MAX_SLICES, math.ceil(r / rows)))
  size = math.ceil(r / n)
  return [(i, min(i + size, r)) for i in range(0, r, size)]




def _cnn_blocks(convs: tuple, x: jax.Array, pool: int, train: bool = True) -> jax.Array:
  """The CNN's blocks on NHWC images x (R, H, W, C): per block conv -> ReLU -> max-pool.

  In training computed as relu(max_pool(conv(x)) + b), which equals max_pool(relu(conv(x) + b)) exactly
  (adding a bias and ReLU are monotone, also in floating point, so they commute with the max) and does
  the bias and ReLU on a quarter of the values; gradients agree too, except where rounding makes two
  values of a window tie after the bias but not before. In training on a CPU, where
  `conv_pool_choice.chosen` says so (the kernels can run the block and were timed faster on this CPU),
  the whole block runs as hx's own kernels (`hx.compile.conv_pool`: the same values and window positions
  to float32 rounding); elsewhere through XLA (`conv_pool.xla_block`). In inference the blocks are
  written the plain way, which XLA fuses into one pass (6% less time than the other order there).
  """
  h = x
  for i, p in enumerate(convs):
    if train and conv_pool_choice.chosen(h.shape, p["w"].shape, pool, h.dtype, input_gradient=i > 0):
      h = conv_pool.conv_pool(h, p["w"], p["b"])
    elif train:
      h = conv_pool.xla_block(h, p["w"], p["b"], pool)
    else:
      h = conv_pool.reduce_window_max(jax.nn.relu(conv_valid(h, p["w"]) + p["b"]), pool)
  return h


def _cnn_kernels(convs: tuple, shape: tuple[int, ...], pool: int) -> bool:
  """Whether every block of a training-mode CNN on NHWC images of `shape` runs hx's CPU kernels
  (`hx.compile.conv_pool`, where `conv_pool_choice.chosen`), which take a whole step's images at once."""
  for i, p in enumerate(convs):
    k, _, _, c_out = p["w"].shape
    if not conv_pool_choice.chosen(shape, p["w"].shape, pool, jnp.float32, input_gradient=i > 0):
      return False
    shape = (shape[0], (shape[1] - k + 1) // pool, (shape[2] - k + 1) // pool, c_out)
  return True


def _masked_aggregate(m: jax.Array, valid: jax.Array, how: str) -> jax.Array:
  """Reduces m (R, K, M) over K where valid (R, K); rows with no valid entry give 0."""
  v = valid[..., None]
  count = jnp.sum(valid, 1)[:, None]
  if how == "min":
    r = jnp.min(jnp.where(v, m, jnp.inf), 1)
  elif how == "max":
    r = jnp.max(jnp.where(v, m, -jnp.inf), 1)
  elif how == "sum":
    return jnp.sum(jnp.where(v, m, 0.0), 1)
  else:
    return jnp.sum(jnp.where(v, m, 0.0), 1) / jnp.maximum(count, 1).astype(m.dtype)
  return jnp.where(count > 0, r, 0.0)


class Neighbourhoods(NamedTuple):
  """The neighbour lists of M nodes given by edges: a graph kernel's input under conv_g over an
  `hx.compile.values.EdgeGraphBatch` (flattened: M = rows * N nodes, indices offset by row * N).

  Node u's list is u itself, then the sender of every counted edge into u, in edge order: the same list
  the neighbour-table form gives the kernel, without a K axis. A node outside the module's row mask has an
  empty list (its output is never read).

  Attributes:
    nodes: (M, *elem) node values.
    senders: (E,) int32 indices into nodes.
    receivers: (E,) int32 indices into nodes.
    edge_mask: (E,) bool, the edges that count (False for padding edges).
  """
  nodes: Any
  senders: Any
  receivers: Any
  edge_mask: Any


def _segment_aggregate(m: jax.Array, segments: jax.Array, valid: jax.Array, count: jax.Array,
                       num_segments: int, how: str) -> jax.Array:
  """Reduces the messages m (P, M) into num_segments segments by segment id (P,) where valid (P,);
  count (num_segments, 1) is the valid messages per segment; a segment with none gives 0.

  Invalid messages go to an extra last segment that is dropped (as jraph routes padding edges to a padding
  node), and are replaced by the reduction's identity too, so they reach no gradient either.
  """
  ids = jnp.where(valid, segments, num_segments)
  v = valid[:, None]
  n = num_segments + 1
  if how == "min":
    r = jax.ops.segment_min(jnp.where(v, m, jnp.inf), ids, n)[:num_segments]
  elif how == "max":
    r = jax.ops.segment_max(jnp.where(v, m, -jnp.inf), ids, n)[:num_segments]
  else:
    total = jax.ops.segment_sum(jnp.where(v, m, 0.0), ids, n)[:num_segments]
    return total if how == "sum" else total / jnp.maximum(count, 1.0)
  return jnp.where(count > 0, r, 0.0)


# Inside a loop (`recompute=True`, what the lowering passes in repeat's body) the graph kernel is
# rematerialised (`jax.checkpoint`): its backward pass recomputes the pair network from the kernel's inputs
# instead of keeping its residuals. Those are per pair (the pair network's input, hidden activations and
# ReLU masks, the messages, ~300 bytes a pair) against a node state of a few floats, so under
# repeat(10, conv_g(k)) on 150 4x4 grids they came to ~45 MB of stacked scan buffers per training step,
# and filling fresh buffers of that size (page faults, copies) cost more on XLA:CPU than computing the pair
# network again: the step measured faster rematerialised (benchmarks/notes/2026-11-22-graph-conv.md).
# A single call keeps its residuals (rematerialised it measured slower), and so does fix's body,
# whose backward pass already recomputes one application at a time (hx.compile.fixpoint). Values and
# gradients are the same either way.


def _graph_kernel_lists(spec: ModuleSpec, params: dict, values: jax.Array, valid: jax.Array) -> jax.Array:
  """The graph kernel on R lists values (R, K, *elem) with mask (R, K), element 0 the node itself:
  (R, prod(output)) pre-activation; reductions over the K axis."""
  r, k = values.shape[:2]
  x = values.reshape(r, k, -1).astype(jnp.float32)
  own = x[:, 0]
  msg = _pair_messages(params, jnp.concatenate([jnp.broadcast_to(own[:, None], x.shape), x], -1))
  valid = valid.astype(bool)
  return _node_output(spec, params, own, [_masked_aggregate(msg, valid, how) for how in spec["aggregations"]])


def _graph_kernel_edges(spec: ModuleSpec, params: dict, nb: Neighbourhoods, mask: jax.Array) -> jax.Array:
  """The graph kernel on neighbour lists given by edges (`Neighbourhoods`): (M, *output) pre-activation."""
  r = nb.nodes.shape[0]
  x = nb.nodes.reshape(r, -1).astype(jnp.float32)
  senders, receivers = nb.senders.astype(jnp.int32), nb.receivers.astype(jnp.int32)
  # One pair per node (itself, itself), then one per edge (receiver, sender): the dense form's K entries.
  pairs = jnp.concatenate([jnp.concatenate([x, x], -1), jnp.concatenate([x[receivers], x[senders]], -1)], 0)
  msg = _pair_messages(params, pairs)
  segments = jnp.concatenate([jnp.arange(r, dtype=jnp.int32), receivers])
  valid = jnp.concatenate([mask.astype(bool), nb.edge_mask.astype(bool)])
  count = jax.ops.segment_sum(valid.astype(jnp.float32), jnp.where(valid, segments, r), r + 1)[:r, None]
  agg = [_segment_aggregate(msg, segments, valid, count, r, how) for how in spec["aggregations"]]
  return _node_output(spec, params, x, agg)


def _pair_messages(params: dict, pairs: jax.Array) -> jax.Array:
  """The graph kernel's pair network: (..., 2 * elem) (node, neighbour) pairs -> (..., message)."""
  return apply_dense(params["pair_out"], jax.nn.relu(apply_dense(params["pair_hidden"], pairs)))


def _node_output(spec: ModuleSpec, params: dict, x: jax.Array, agg: list) -> jax.Array:
  """The graph kernel's node network on a node's value x (M, elem) and its aggregated messages (each
  (M, message)): (M, prod(output)) pre-activation (`_update`)."""
  h = jax.nn.relu(apply_dense(params["node_hidden"], jnp.concatenate([x] + agg, -1)))
  return _update(spec, x, apply_dense(params["node_out"], h))


def _slot_kernel(spec: ModuleSpec, params: dict, values: jax.Array, valid: jax.Array) -> jax.Array:
  """The slot kernel on R lists values (R, K, *elem) with mask (R, K), slot 0 the node itself:
  (R, prod(output)) pre-activation (see the slot_kernel template)."""
  r, k = values.shape[:2]
  if k != spec["slots"]:
    raise ValueError(f"a slot kernel built for lists of {spec['slots']} slots (ModuleConfig.graph_slots) got "
                     f"lists of {k}: conv_g on a grid's neighbour table has 5 (hx.data.grids.K), conv_l's "
                     "window 2 * conv_window + 1")
  valid = valid.astype(bool)
  x = jnp.where(valid[..., None], values.reshape(r, k, -1).astype(jnp.float32), 0.0)
  h = jnp.concatenate([x.reshape(r, -1), valid.astype(jnp.float32)], -1)
  for layer in params["hidden"]:
    h = jax.nn.relu(apply_dense(layer, h))
  return _update(spec, x[:, 0], apply_dense(params["out"], h))


# The kernels as called inside a loop (`recompute=True`): rematerialised, see above.
_RECOMPUTED = {f: jax.checkpoint(f, static_argnums=(0,)) for f in (_graph_kernel_lists, _graph_kernel_edges)}


# ---------------------------------------------------------------------------------------------------
# The float64 NumPy layers of the reference interpreter (`hx.compile.reference`: one example at a time,
# inference mode). They share no code with the JAX layers above, so that the tests comparing the two
# check the JAX side against the definitions.

def _ref_dense(p: dict, x: np.ndarray) -> np.ndarray:
  return x @ p["w"] + p["b"]


def _ref_relu(x: np.ndarray) -> np.ndarray:
  return np.maximum(x, 0.0)


def _ref_sigmoid(x: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-x))


def _ref_activate(y: np.ndarray, activation: str) -> np.ndarray:
  if activation == "sigmoid":
    return _ref_sigmoid(y)
  if activation == "softmax":
    e = np.exp(y - y.max())
    return e / e.sum()
  return y


def _ref_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Valid convolution of one HWC image with an HWIO kernel, by loops over output positions."""
  k = w.shape[0]
  h_out, w_out = x.shape[0] - k + 1, x.shape[1] - k + 1
  out = np.empty((h_out, w_out, w.shape[3]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = np.tensordot(x[i:i + k, j:j + k], w, axes=3) + b
  return out


def _ref_max_pool(x: np.ndarray, k: int) -> np.ndarray:
  h_out, w_out = x.shape[0] // k, x.shape[1] // k
  out = np.empty((h_out, w_out, x.shape[2]))
  for i in range(h_out):
    for j in range(w_out):
      out[i, j] = x[i * k:(i + 1) * k, j * k:(j + 1) * k].max(axis=(0, 1))
  return out


def _ref_vector(a: Any) -> np.ndarray:
  return np.asarray(a, np.float64).reshape(-1)


# ---------------------------------------------------------------------------------------------------
# The templates, each in one place: `_init_T` (fresh parameters), `_apply_T` (R rows, JAX) and
# `_reference_T` (one example, float64 NumPy), gathered in `TEMPLATES`.
#
# Every `_init_T(spec, keys)` takes the 4 keys `init_module` splits its key into and returns (params,
# batch_stats). Every `_apply_T(spec, params, stats, inputs, *, mask, keys, train, activation,
# recompute)` returns (y (R, *output shape), new_stats), as `apply_module` documents. Every
# `_reference_T(spec, params, stats, args)` takes float64 parameters and one example's arguments and
# returns the output (output shape, float64).

def _init_mlp(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  n_in = sum(_size(a) for a in spec.inputs)
  h = spec["hidden"]
  params = {"hidden": _dense(keys[0], n_in, h), "out": _dense(keys[1], h, _size(spec.output))}
  if not spec.get("batch_norm", True):
    return params, {}
  params["bn"] = {"scale": jnp.ones((h,), jnp.float32), "bias": jnp.zeros((h,), jnp.float32)}
  stats = {"bn": {"mean": jnp.zeros((h,), jnp.float32), "var": jnp.ones((h,), jnp.float32)}}
  return params, stats


def mlp_layers(spec: ModuleSpec, params: dict, stats: dict, x: jax.Array, *, mask: jax.Array,
               keys: jax.Array | None, train: bool, hidden_extra: jax.Array | None = None,
               out_extra: jax.Array | None = None) -> tuple[jax.Array, jax.Array, dict]:
  """The `mlp` template's layers on x (R, n_in) float32, its arguments flattened and concatenated:
  Dense -> masked batch norm -> ReLU (or ReLU -> batch norm under the spec's "order" "relu_bn",
  `ModuleConfig.mlp_order`) -> dropout (training, with keys) -> Dense, with optional additions to the two
  pre-activations (a progressive network's lateral inputs, `hx.baselines.layers.mlp`).

  Args:
    hidden_extra: (R, hidden) added to the hidden layer's pre-activation (before batch norm), or None.
    out_extra: (R, n_out) added to the output layer's pre-activation, or None.

  Returns:
    (y, hidden, new_stats): y (R, n_out), the output layer's pre-activation; hidden (R, hidden), the
    hidden activations after batch norm and ReLU, in the spec's order (before dropout); the updated batch
    statistics.
  """
  h = apply_dense(params["hidden"], x)
  if hidden_extra is not None:
    h = h + hidden_extra
  new_stats = {}
  if not spec.get("batch_norm", True):
    h = jax.nn.relu(h)
  elif spec.get("order", "bn_relu") == "relu_bn":
    h, new_stats["bn"] = batch_norm(jax.nn.relu(h), params["bn"], stats["bn"], mask, train,
                                    spec["bn_momentum"], spec["bn_epsilon"])
  else:
    h, new_stats["bn"] = batch_norm(h, params["bn"], stats["bn"], mask, train, spec["bn_momentum"],
                                    spec["bn_epsilon"])
    h = jax.nn.relu(h)
  hidden = h
  if train and keys is not None and spec["dropout"] > 0:
    h = row_dropout(h, keys, spec["dropout"], h.shape[1:])
  y = apply_dense(params["out"], h)
  if out_extra is not None:
    y = y + out_extra
  return y, hidden, new_stats


def _apply_mlp(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
               keys: jax.Array | None, train: bool, activation: str,
               recompute: bool) -> tuple[jax.Array, dict]:
  r = inputs[0].shape[0]
  x = jnp.concatenate([a.reshape(r, -1).astype(jnp.float32) for a in inputs], -1)
  y, _, new_stats = mlp_layers(spec, params, stats, x, mask=mask, keys=keys, train=train)
  return activate(y.reshape((r,) + spec.output.shape), activation), new_stats


def _reference_mlp(spec: ModuleSpec, p: dict, s: dict, args: Sequence[Any]) -> np.ndarray:
  h = _ref_dense(p["hidden"], np.concatenate([_ref_vector(a) for a in args]))
  if not spec.get("batch_norm", True):
    return _ref_activate(_ref_dense(p["out"], _ref_relu(h)), spec.activation).reshape(spec.output.shape)
  bn, stats_bn = p["bn"], s["bn"]
  relu_first = spec.get("order", "bn_relu") == "relu_bn"
  if relu_first:
    h = _ref_relu(h)
  h = (h - stats_bn["mean"]) / np.sqrt(stats_bn["var"] + spec["bn_epsilon"]) * bn["scale"] + bn["bias"]
  if not relu_first:
    h = _ref_relu(h)
  return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)


def _init_cnn(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  c_in = spec.inputs[0].shape[0]
  k = spec["kernel"]
  convs = []
  for i, c_out in enumerate(spec["channels"]):
    w = jax.nn.initializers.lecun_normal(in_axis=(0, 1, 2), out_axis=3)(
      jax.random.fold_in(keys[0], i), (k, k, c_in, c_out), jnp.float32)
    convs.append({"w": w, "b": jnp.zeros((c_out,), jnp.float32)})
    c_in = c_out
  params = {"convs": tuple(convs)}
  if spec["output_layer"]:
    params["out"] = _dense(keys[1], spec["features"], _size(spec.output))
  return params, {}


def _apply_cnn(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
               keys: jax.Array | None, train: bool, activation: str,
               recompute: bool) -> tuple[jax.Array, dict]:
  (x,) = inputs
  r = x.shape[0]
  h = jnp.transpose(x.astype(jnp.float32), (0, 2, 3, 1))  # channel-first types, NHWC convolutions
  # XLA's own convolutions and hx's kernels take a whole step at once; YNNPACK's want slices.
  sliced = train and ynnpack_convolutions() and not _cnn_kernels(params["convs"], h.shape, spec["pool"])
  slices = _cnn_slices(r, _cnn_slice_rows(h.shape, params["convs"], spec["pool"])) if sliced else [(0, r)]
  parts = [_cnn_blocks(params["convs"], h[i:j], spec["pool"], train) for i, j in slices]
  h = parts[0] if len(parts) == 1 else jnp.concatenate(parts, 0)
  if train and keys is not None and spec["dropout"] > 0:
    h = row_dropout(h, keys, spec["dropout"], (h.shape[-1],), spatial=True)
  h = h.reshape(r, -1)
  out_shape = (r,) + spec.output.shape
  if spec["output_layer"]:
    return activate(apply_dense(params["out"], h).reshape(out_shape), activation), stats
  return h.reshape(out_shape), stats


def _reference_cnn(spec: ModuleSpec, p: dict, s: dict, args: Sequence[Any]) -> np.ndarray:
  h = np.transpose(np.asarray(args[0], np.float64), (1, 2, 0))
  for conv in p["convs"]:
    h = _ref_max_pool(_ref_relu(_ref_conv2d(h, conv["w"], conv["b"])), spec["pool"])
  h = h.reshape(-1)
  if spec["output_layer"]:
    return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)
  return h.reshape(spec.output.shape)


def _init_lstm(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  h = spec["hidden"]
  n_in = _size(spec.inputs[0].elem)
  w_i = jax.nn.initializers.lecun_normal()(keys[0], (n_in, 4 * h), jnp.float32)
  orth = jax.nn.initializers.orthogonal()
  w_h = jnp.concatenate([orth(jax.random.fold_in(keys[1], g), (h, h), jnp.float32) for g in range(4)], 1)
  b = jnp.zeros((4 * h,), jnp.float32).at[h:2 * h].set(1.0)  # forget gate starts open
  return {"w_i": w_i, "w_h": w_h, "b": b, "out": _dense(keys[2], h, _size(spec.output))}, {}


def lstm_scan(params: dict, values: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The `lstm` template's recurrence (gates i, f, g, o), without its output layer; the graph baseline
  (`hx.baselines.graph`) reads its every step. (Steps nobody reads cost nothing: XLA drops them.)

  Not flax's `OptimizedLSTMCell` under `nn.RNN` (not timed): its parameters are one kernel per gate for
  the input and the recurrent state, where saved modules hold one (D, 4H) and one (H, 4H) matrix, and
  the cell projects the input inside every step, where this projects all steps' at once before the scan.

  Args:
    params: the template's parameters (w_i, w_h, b; "out" is not used here).
    values: (R, L, *elem) inputs.
    mask: (R, L) bool; a row's real steps are a prefix, and the state does not change on padded steps.

  Returns:
    (states, last): states (R, L, H), the hidden state after each step (the last real state repeated
    on padded steps); last (R, H), the state after the last real step (zeros for an empty list).
  """
  r, length = values.shape[:2]
  x = values.reshape(r, length, -1).astype(jnp.float32)
  hsz = params["w_h"].shape[0]
  # The input projection for all steps at once.
  xw = jnp.einsum("rld,dg->lrg", x, params["w_i"], precision=PRECISION) + params["b"]

  def step(carry, inp):
    hh, cc = carry
    g_in, m = inp
    g = g_in + matmul(hh, params["w_h"])
    i, f, gg, o = jnp.split(g, 4, axis=-1)
    c_new = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(gg)
    h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
    m = m[:, None]
    h_keep = jnp.where(m, h_new, hh)
    return (h_keep, jnp.where(m, c_new, cc)), h_keep

  zero = jnp.zeros((r, hsz), jnp.float32)
  (last, _), states = lax.scan(step, (zero, zero), (xw, jnp.swapaxes(mask.astype(bool), 0, 1)))
  return jnp.swapaxes(states, 0, 1), last


def _apply_lstm(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
                keys: jax.Array | None, train: bool, activation: str,
                recompute: bool) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  _, last = lstm_scan(params, lb.values, lb.mask)
  y = apply_dense(params["out"], last).reshape((lb.values.shape[0],) + spec.output.shape)
  return activate(y, activation), stats


def _reference_lstm(spec: ModuleSpec, p: dict, s: dict, args: Sequence[Any]) -> np.ndarray:
  n = spec["hidden"]
  h, c = np.zeros(n), np.zeros(n)
  for a in args[0]:
    g = _ref_vector(a) @ p["w_i"] + h @ p["w_h"] + p["b"]
    i, f, gg, o = g[:n], g[n:2 * n], g[2 * n:3 * n], g[3 * n:]
    c = _ref_sigmoid(f) * c + _ref_sigmoid(i) * np.tanh(gg)
    h = _ref_sigmoid(o) * np.tanh(c)
  return _ref_activate(_ref_dense(p["out"], h), spec.activation).reshape(spec.output.shape)


def _init_graph_kernel(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  d = _size(spec.inputs[0].elem)
  h, m = spec["hidden"], spec["message"]
  n_agg = len(spec["aggregations"])
  return {"pair_hidden": _dense(keys[0], 2 * d, h), "pair_out": _dense(keys[1], h, m),
          "node_hidden": _dense(keys[2], d + n_agg * m, h),
          "node_out": _dense(keys[3], h, _size(spec.output) - _kept(spec), zero=_residual(spec))}, {}


def _apply_graph_kernel(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
                        keys: jax.Array | None, train: bool, activation: str,
                        recompute: bool) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  if isinstance(lb, Neighbourhoods):
    kernel = _RECOMPUTED[_graph_kernel_edges] if recompute else _graph_kernel_edges
    y = kernel(spec, params, lb, mask)
    return activate(y.reshape((lb.nodes.shape[0],) + spec.output.shape), activation), stats
  kernel = _RECOMPUTED[_graph_kernel_lists] if recompute else _graph_kernel_lists
  y = kernel(spec, params, lb.values, lb.mask)
  return activate(y.reshape((lb.values.shape[0],) + spec.output.shape), activation), stats


def _reference_graph_kernel(spec: ModuleSpec, p: dict, s: dict, args: Sequence[Any]) -> np.ndarray:
  elems = [_ref_vector(a) for a in args[0]]
  own = elems[0] if elems else np.zeros(_size(spec.inputs[0].elem))
  msgs = [_ref_dense(p["pair_out"], _ref_relu(_ref_dense(p["pair_hidden"], np.concatenate([own, e]))))
          for e in elems]
  reduce = {"min": np.min, "max": np.max, "sum": np.sum, "mean": np.mean}
  aggs = [reduce[how](msgs, axis=0) if msgs else np.zeros(spec["message"]) for how in spec["aggregations"]]
  y = _ref_dense(p["node_out"], _ref_relu(_ref_dense(p["node_hidden"], np.concatenate([own] + aggs))))
  keep = _kept(spec)
  if _residual(spec):
    y = own[keep:] + y
  y = np.concatenate([own[:keep], y])
  return _ref_activate(y, spec.activation).reshape(spec.output.shape)


def _init_slot_kernel(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  d, h = _size(spec.inputs[0].elem), spec["hidden"]
  sizes = [spec["slots"] * (d + 1)] + [h] * spec["layers"]
  hidden = tuple(_uniform_dense(jax.random.fold_in(keys[0], i), a, b)
                 for i, (a, b) in enumerate(zip(sizes, sizes[1:])))
  n_out = _size(spec.output) - _kept(spec)
  out = _dense(keys[1], h, n_out, zero=True) if _residual(spec) else _uniform_dense(keys[1], h, n_out)
  return {"hidden": hidden, "out": out}, {}


def _apply_slot_kernel(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
                       keys: jax.Array | None, train: bool, activation: str,
                       recompute: bool) -> tuple[jax.Array, dict]:
  (lb,) = inputs
  if isinstance(lb, Neighbourhoods):
    raise NotImplementedError("a slot kernel reads its neighbour list by slot (direction); edge lists have "
                              "no slot order: use ModuleConfig.graph_kernel='pairs' on edge-list graphs")
  y = _slot_kernel(spec, params, lb.values, lb.mask)
  return activate(y.reshape((lb.values.shape[0],) + spec.output.shape), activation), stats


def _init_user(spec: ModuleSpec, keys: jax.Array) -> tuple[dict, dict]:
  return registration_of(spec).init_params(keys[0]), {}


def _apply_user(spec: ModuleSpec, params: Any, stats: dict, inputs: tuple, *, mask: jax.Array,
                keys: jax.Array | None, train: bool, activation: str,
                recompute: bool) -> tuple[jax.Array, dict]:
  # No mask, keys or train: a user module is a pure function of its parameters (`register_module`).
  r = registration_of(spec)
  xs = tuple(jnp.asarray(x).astype(jnp.float32) for x in inputs)
  y = r.apply_params(params, *xs)
  want = (xs[0].shape[0],) + spec.output.shape
  if tuple(jnp.shape(y)) != want:
    raise ValueError(f"module {r.name!r} ({r.describe()}) for {r.type} gave shape {tuple(jnp.shape(y))} "
                     f"on inputs of shape {', '.join(str(x.shape) for x in xs)}; the type needs {want}")
  return activate(jnp.asarray(y).astype(jnp.float32), activation), stats


def _reference_user(spec: ModuleSpec, p: Any, s: dict, args: Sequence[Any]) -> np.ndarray:
  # The user's function is the module's definition: run it (in float32, as it trains) on one row.
  r = registration_of(spec)
  params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), p)
  y = r.apply_params(params, *(jnp.asarray(np.asarray(a), jnp.float32)[None] for a in args))
  return _ref_activate(np.asarray(y, np.float64)[0], spec.activation).reshape(spec.output.shape)


class Template(NamedTuple):
  """One module template (see the module docstring): how it starts, runs and is defined.

  Attributes:
    init: (spec, keys (4,)) -> (params, batch_stats), fresh parameters.
    apply: (spec, params, stats, inputs, *, mask, keys, train, activation, recompute) -> (y, new_stats),
      the module on R rows (`apply_module`).
    reference: (spec, params, stats, args) -> y, the module on one example in inference mode in float64
      NumPy (`reference_module`); None for the slot kernel, whose slots are positions (a grid cell's
      directions) that the reference interpreter's neighbour lists do not keep. A user module's reference
      runs the user's own function (in float32) on the one example: it is the module's definition.
    output_layer: spec -> the params entry of the module's linear output layer (a Dense {"w", "b"} whose
      output, before the output activation, is the module's whole output), or None: a CNN whose output
      is its features, and the graph kernels (their output passes kept components through, or adds the
      node's value), and a user module (its layers are the user's).
  """
  init: Callable[..., tuple[dict, dict]]
  apply: Callable[..., tuple[jax.Array, dict]]
  reference: Callable[..., np.ndarray] | None
  output_layer: Callable[[ModuleSpec], str | None]


TEMPLATES: Mapping[str, Template] = MappingProxyType({
  "mlp": Template(_init_mlp, _apply_mlp, _reference_mlp, lambda spec: "out"),
  "cnn": Template(_init_cnn, _apply_cnn, _reference_cnn,
                  lambda spec: "out" if spec["output_layer"] else None),
  "lstm": Template(_init_lstm, _apply_lstm, _reference_lstm, lambda spec: "out"),
  "graph_kernel": Template(_init_graph_kernel, _apply_graph_kernel, _reference_graph_kernel,
                           lambda spec: None),
  "slot_kernel": Template(_init_slot_kernel, _apply_slot_kernel, None, lambda spec: None),
})
"""hx's own templates, by name. A user's module (`register_module`) is the template "user", outside this
table: its architecture is the registration's, not a function of the type."""

USER_TEMPLATE = Template(_init_user, _apply_user, _reference_user, lambda spec: None)
"""The "user" template: whatever module `registration_of(spec)` names, initialised and applied."""


def _template(spec: ModuleSpec) -> Template:
  if spec.template == "user":
    return USER_TEMPLATE
  if spec.template not in TEMPLATES:
    raise ValueError(f"unknown template {spec.template!r}")
  return TEMPLATES[spec.template]


def init_module(spec: ModuleSpec, rng: jax.Array) -> tuple[dict, dict]:
  """Fresh parameters and batch statistics for `spec`: (params, batch_stats), nested dicts of arrays."""
  return _template(spec).init(spec, jax.random.split(rng, 4))


def apply_module(spec: ModuleSpec, params: dict, stats: dict, inputs: tuple, *, mask: jax.Array,
                 keys: jax.Array | None, train: bool, logits: bool = False,
                 recompute: bool = False) -> tuple[jax.Array, dict]:
  """Runs the module on R rows.

  Args:
    spec: the module's spec.
    params, stats: its parameters and batch statistics (from `init_module`).
    inputs: one array `(R, *arg shape)` per argument, or one ListBatch (`(R, L, *elem)`, (R, L)) for the
      lstm and graph_kernel templates, or (graph_kernel only) one `Neighbourhoods` of R nodes.
    mask: (R,) bool, the rows that are real (only they enter batch-norm statistics).
    keys: (R,) per-row PRNG keys for dropout, or None for no dropout.
    train: batch statistics (and, with keys, dropout) if True; running statistics if False.
    logits: skip the output activation (sigmoid / softmax): y is then the pre-activation, for losses
      computed from logits (`hx.compile.losses`, exact gradients for confident mistakes).
    recompute: the call runs inside a loop (repeat's body): a graph kernel then recomputes its pair
      network in the backward pass instead of keeping it (the same values and gradients; faster there).

  Returns:
    (y, new_stats): y of shape `(R, *output shape)`; new_stats equal to stats unless training with BN.
  """
  return _template(spec).apply(spec, params, stats, inputs, mask=mask, keys=keys, train=train,
                               activation="none" if logits else spec.activation, recompute=recompute)


def reference_module(spec: ModuleSpec, params: dict, stats: dict, args: Sequence[Any]) -> np.ndarray:
  """One module on one example in inference mode, in float64 NumPy (`hx.compile.reference`).

  Args:
    spec: the module's spec.
    params, stats: its parameters and running statistics (any arrays; computed in float64).
    args: one value per argument: arrays of the argument shapes, or (lstm, graph_kernel) a list of arrays.

  Returns:
    the output, of the spec's output shape (float64).
  """
  reference = _template(spec).reference
  if reference is None:
    raise NotImplementedError(f"no float64 reference for the {spec.template} template (Template.reference)")
  as_float64 = lambda tree: jax.tree.map(lambda a: np.asarray(a, np.float64), tree)
  return reference(spec, as_float64(params), as_float64(stats), args)


def linear_output(spec: ModuleSpec) -> bool:
  """Whether the module's whole output is its linear output layer's: a layer with no activation after
  it (`Template.output_layer`, and the output activation "none")."""
  return _template(spec).output_layer(spec) is not None and spec.activation == "none"


def set_output_bias(spec: ModuleSpec, params: dict, bias: Any) -> dict:
  """`params` with the bias of the module's linear output layer (`Template.output_layer`) set to `bias`,
  (prod(output shape),) values in any float dtype (cast to the bias's); the other entries shared.

  Raises:
    ValueError: the module has no linear output layer, or `bias` is not of its size.
  """
  layer = _template(spec).output_layer(spec)
  if layer is None:
    raise ValueError(f"module {spec} has no linear output layer")
  old = params[layer]["b"]
  if np.size(bias) != old.size:
    raise ValueError(f"an output bias of {np.size(bias)} values for module {spec}, whose bias has {old.size}")
  return dict(params, **{layer: dict(params[layer], b=jnp.asarray(bias, old.dtype).reshape(old.shape))})
