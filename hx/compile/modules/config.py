"""`ModuleConfig`: the sizes of the module templates, the paper's defaults (appendix C) where it gives
them; a frozen dataclass whose fields (as canonical JSON, `hx.canonical_json`) name the checkpoints' keys and
whose pickle carries the user modules registered in this process (`hx.compile.modules.registry`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from hx.compile.fixpoint import FixConfig
from hx.compile.modules.registry import install_registrations, pickled_registrations

__all__ = ["GRAPH_KERNELS", "ModuleConfig"]


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
      identity (ours, not the paper's; see the graph_kernel template in `hx.compile.modules`). Applies to
      both kernels.
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
  mlp_order: str = "bn_relu"
  fold_step_norm: bool = True

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
  def __reduce_ex__(self, protocol: int) -> str | tuple[object, ...]:
    sent = pickled_registrations(protocol)
    if sent is None:
      return super().__reduce_ex__(protocol)
    fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    return _config_with_modules, (fields, *sent)

  # A copy is no pickle: it needs no registrations (and must not refuse a module defined in __main__).
  def __copy__(self) -> ModuleConfig:
    return self

  def __deepcopy__(self, memo: dict[int, object]) -> ModuleConfig:
    return self


def _config_with_modules(fields: Mapping[str, object], roots: Sequence[str], blob: bytes) -> ModuleConfig:
  """A pickled `ModuleConfig` (`fields`: its field values by name), its sender's registrations installed
  here first (`install_registrations`; `roots` and `blob` from `pickled_registrations`). Pickles name it
  by its path: `hx.compile.modules` re-exports it for those written when it was defined there.

  Raises:
    ImportError: a definition's module cannot be imported here (named, with what to do).
  """
  install_registrations(roots, blob)
  return ModuleConfig(**fields)
