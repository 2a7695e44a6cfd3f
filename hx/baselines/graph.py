"""The graph tasks' baseline network: an LSTM over the row-wise flattened grid of a regressor's outputs.

The paper, appendix C: "In the RNN baseline for the other tasks in the graph sequences, we map a learned
MLP ∘ CNN regression module to each image in the grid. Afterwards, we linearize the grid row-wise,
converting it into a list, and then we process it using an LSTM (RNN) with hidden state of size 100."

    node states   s_u = (nn_mlp ∘ E)(x_u)                    the regressor, on every node (map_g); E the
                                                              encoder: nn_cnn for images, nn_enc (an
                                                              MLP) for vectors (ours)
    LSTM          h_1..h_N = LSTM(s_1, ..., s_N)              nodes in row-major order (hx.data.grids
                                                              numbers them so; padding nodes come last)
    output        y_u = Dense(h_u)                            one output per node, of the node type

The language cannot say "flatten a graph into a list", so this is a small `Tunable` module, trained by
the same Tune as everything else. The LSTM reads the nodes in order and emits node u's output from the
state after it (the authors' code, `Baselines/GS1_sa.py`, runs a sequence-output LSTM the same way), so
a node's output depends on the nodes before it only: that is the baseline's handicap, not an accident.

Whether the regressor trains with the LSTM is the caller's choice (`trainable_regressor`): the
standalone baseline keeps the regressor learned on the sequence's first task frozen ("shared the
regressors learned for the first tasks across the competing methods"), low-level transfer fine-tunes it.
Where no earlier task learned a regressor of the node type (a user's sequence that starts with a graph
task), the standalone network trains its own along with the LSTM (ours).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import jax.numpy as jnp

from hx.baselines import layers
from hx.baselines.networks import MLP, RNN, Architecture
from hx.compile.modules.layers import Rows
from hx.compile.modules.templates import apply_module
from hx.lang.values import GraphBatch

if TYPE_CHECKING:
  import chex
  import jax

__all__ = ["GraphRNN"]


class GraphRNN:
  """The graph baseline as a `hx.compile.tuning.Tunable`.

  variables: {"params": {role: ...}, "batch_stats": {role: ...}} of the trained modules (nn_rnn, and the
  encoder, nn_cnn or nn_enc, and nn_mlp when the regressor trains); frozen: {encoder: {"params",
  "batch_stats"}, nn_mlp: ...} when it does not (else {}). apply(variables, frozen, x, *, train,
  rng=None, logits=False) takes a GraphBatch of node values x.values (B, N, *node input: (C, H, W) images
  or (n,) vectors) and returns the GraphBatch of node outputs (B, N, *node), and with train also
  {"batch_stats": ...}.
  """

  def __init__(self, arch: Architecture, trainable_regressor: bool):
    if arch.kind != "graph":
      raise ValueError(f"GraphRNN needs a graph architecture, got {arch.kind}")
    self.arch = arch
    self.trainable_regressor = bool(trainable_regressor)
    self.regressor_roles = (arch.encoder, MLP)
    self.trainable = (arch.encoder, MLP, RNN) if trainable_regressor else (RNN,)
    self.key = ("hx.baselines.graph.GraphRNN", arch.specs, self.trainable_regressor)
    self.output_activation = arch.spec(RNN).activation

  def init(self, rng: jax.Array) -> dict:
    modules = self.arch.init(rng)
    return {"params": {r: modules[r]["params"] for r in self.trainable},
            "batch_stats": {r: modules[r]["batch_stats"] for r in self.trainable}}

  def frozen(self, regressor: Mapping[str, Mapping[str, chex.ArrayTree]]) -> dict:
    """The `frozen` argument: the regressor's modules (role -> {"params", "batch_stats"}) when it does
    not train, else {}."""
    if self.trainable_regressor:
      return {}
    return {r: {"params": regressor[r]["params"], "batch_stats": regressor[r]["batch_stats"]}
            for r in self.regressor_roles}

  def apply(self, variables: Mapping[str, Mapping[str, chex.ArrayTree]],
            frozen: Mapping[str, Mapping[str, chex.ArrayTree]], x: GraphBatch, *, train: bool,
            rng: jax.Array | None = None, logits: bool = False) -> GraphBatch | tuple[GraphBatch, dict]:
    if train and rng is None:
      raise ValueError("apply(train=True) needs an rng for dropout")
    b, n = x.values.shape[:2]
    node_mask = x.mask.astype(bool)
    images = jnp.where(node_mask.reshape((b, n) + (1,) * (x.values.ndim - 2)), x.values, 0.0)
    images = images.reshape((b * n,) + x.values.shape[2:])
    rows = node_mask.reshape(-1)
    params, stats = variables["params"], variables["batch_stats"]
    new_stats = dict(stats)
    h = images
    for site, role in enumerate(self.regressor_roles):
      trains = train and self.trainable_regressor
      source = (params[role], stats[role]) if self.trainable_regressor else (
          frozen[role]["params"], frozen[role]["batch_stats"])
      keys = layers.row_keys(rng, b * n, site) if trains else None
      h, st = apply_module(self.arch.spec(role), source[0], source[1], (h,), Rows(rows, keys, trains))
      if trains:
        new_stats[role] = st
    states = h.reshape((b, n, -1))
    hidden, _ = layers.lstm(params[RNN], states, node_mask)
    spec = self.arch.spec(RNN)
    y = layers.dense(params[RNN]["out"], hidden).reshape((b, n) + spec.output.shape)
    y = layers.activate(y, "none" if logits else spec.activation)
    out = x._replace(values=y)
    return (out, {"batch_stats": new_stats}) if train else out
