"""Progressive neural networks (Rusu et al. 2016, "Progressive Neural Networks", arXiv:1606.04671).

One column per task. Column k is the standalone network of task k (`hx.baselines.networks`: MLP ∘ E,
or RNN(map(MLP ∘ E)) for list tasks, E the encoder: a CNN for images, an MLP for vectors); columns
0..k-1 are the earlier tasks' columns, frozen; column k also reads their activations through lateral
connections, which it learns. Rusu et al. add to layer i of column k the output of an *adapter* on
layer i-1 of every earlier column,

    h_i^(k) = f(W_i^(k) h_{i-1}^(k) + U_i^(k) relu(V_i^(k) (alpha_i^(k) * [h_{i-1}^(0), ..., h_{i-1}^(k-1)])))

(`hx.baselines.layers.adapter`), and so does this version, at these layers of the new column:

  site       added to                                  reads, from every earlier column
  "enc_out"  the encoder MLP's output layer            its encoder MLP's hidden activations (vector
             (pre-activation)                          inputs only: a CNN has no such site)
  "hidden"   the MLP's hidden layer (pre-activation)   its encoder's features
  "out"      the MLP's output layer (pre-activation)   its MLP hidden activations
  "rnn_in"   the LSTM's input, concatenated            its MLP outputs, the per-image predictions
             (as the authors' code does: no U)
  "rnn_out"  the list output layer (pre-activation)    its LSTM's last state (earlier list columns only)

The paper calls its PNN baseline "a version of" PNNs and gives no detail. Where it is silent this
version follows the authors' code (`Baselines/PNN/EvaluatorBaselinePNN.py`): adapters at the same
layers, each V mapping the earlier columns' concatenated activations to the width of one column's, and
alpha starting at 1. Two differences, both ours: the columns are the standalone baselines' networks at
the `ModuleConfig` sizes (the authors' PNN columns had their own, smaller sizes), and there is no lateral
connection into the second convolution (each column's CNN is the template CNN, untouched; the first
convolution has none in either, its input being the image every column shares). For vector inputs
(ours; the paper's baselines take images) the encoder is an MLP, and every layer of a column but the
first, whose input every column shares, has its lateral connection, as in Rusu et al.

Earlier columns run in inference mode (batch-norm running statistics, no dropout) and are passed to
Tune as `frozen`, which Tune never updates: their parameters after training column k are the ones
before it, bit for bit. The paper does not compare PNNs on the graph sequences ("it is nontrivial to
extend them to work with graphs"); neither does hx: a graph task is refused (`refusal`), as is a column
whose input is not the first column's (an image of another shape, a vector of another width): the
lateral connections read the earlier columns on the new task's input.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Mapping, Sequence

import jax
import jax.numpy as jnp

from hx.baselines import layers
from hx.baselines.networks import ENC, MLP, RNN, Architecture
from hx.compile.modules.choice import module_spec
from hx.compile.modules.config import ModuleConfig
from hx.compile.modules.layers import Rows
from hx.compile.modules.templates import apply_module, init_module
from hx.lang.types import FunctionType, ListType, TensorType

if TYPE_CHECKING:
  import chex

  from hx.compile.modules.spec import ModuleSpec
  from hx.lang.types import Type
  from hx.lang.values import Batch

__all__ = ["PNN", "Column", "refusal"]


def _size(t: TensorType) -> int:
  n = 1
  for d in t.shape:
    n *= d
  return n


@dataclasses.dataclass(frozen=True)
class Column:
  """The static layout of one column: its task's standalone architecture, with the LSTM widened to
  take the "rnn_in" adapter's output, and its adapters as (site, (n_in, width, n_out or None)) pairs."""
  index: int
  arch: Architecture
  rnn_spec: ModuleSpec | None
  adapters: tuple[tuple[str, tuple[int, int, int | None]], ...]

  def adapter_shape(self, site: str) -> tuple[int, int, int | None] | None:
    return dict(self.adapters).get(site)


def _input(arch: Architecture) -> Type:
  """What a column's encoder reads: the task's input tensor, or a list's or graph's element."""
  return arch.spec(arch.encoder).inputs[0]


def refusal(archs: Sequence[Architecture]) -> tuple[int, str] | None:
  """The first column (its position in `archs`, and why) that a progressive network of these columns
  cannot have, or None: a graph task, or an input other than the first column's.

  Args:
    archs: each task's standalone architecture (`hx.baselines.networks.architecture`), in order.
  """
  for k, a in enumerate(archs):
    if a.kind not in ("image", "vector", "list"):
      return k, ("progressive networks are not defined for graph tasks (the paper does not compare "
                 "against them there)")
    for role, spec in a.specs:
      if spec.template == "user":  # `hx.compile.register_module` of exactly this role's type
        return k, (f"its {role} : {spec.type} is the registered module {spec['name']!r}, where a progressive "
                   "column needs hx's own templates to add its lateral connections")
    if _input(a) != _input(archs[0]):
      return k, (f"its input {_input(a)} is not the first column's {_input(archs[0])}: the columns of a "
                 "progressive network all read one input")
  return None


def _columns(archs: Sequence[Architecture], config: ModuleConfig) -> tuple[Column, ...]:
  out = []
  for k, arch in enumerate(archs):
    earlier = archs[:k]
    adapters = []
    rnn_spec = arch.spec(RNN) if arch.kind == "list" else None
    if earlier:
      feats = [_size(a.spec(a.encoder).output) for a in earlier]
      hidden = [a.spec(MLP)["hidden"] for a in earlier]
      mlp = arch.spec(MLP)
      enc = arch.spec(arch.encoder)
      if arch.encoder == ENC:  # columns share their input, so every earlier encoder is an MLP too
        enc_hidden = [a.spec(ENC)["hidden"] for a in earlier]
        adapters.append(("enc_out", (sum(enc_hidden), enc["hidden"], _size(enc.output))))
      adapters.append(("hidden", (sum(feats), _size(enc.output), mlp["hidden"])))
      adapters.append(("out", (sum(hidden), mlp["hidden"], _size(mlp.output))))
      if arch.kind == "list":
        outs = [_size(a.spec(MLP).output) for a in earlier]
        width = _size(arch.element)
        adapters.append(("rnn_in", (sum(outs), width, None)))
        # The LSTM reads its own column's prediction and the adapter's summary of the earlier ones'.
        rnn_type = FunctionType(ListType(TensorType("real", (_size(arch.element) + width,))),
                                arch.spec(RNN).output)
        rnn_spec = module_spec(rnn_type, config, name=f"column {k} nn_rnn")
        lists = [a.spec(RNN)["hidden"] for a in earlier if a.kind == "list"]
        if lists:
          adapters.append(("rnn_out", (sum(lists), arch.spec(RNN)["hidden"], _size(arch.spec(RNN).output))))
    out.append(Column(k, arch, rnn_spec, tuple(adapters)))
  return tuple(out)


def _element_rows(x: Batch, is_list: bool) -> tuple[int, int, jax.Array | None, jax.Array, jax.Array]:
  """A batch's elements as the columns' rows: (b, length, element_mask, elements, rows). For lists x (a
  masked batch of values (b, L, ...) and mask (b, L)): the elements (b * L, ...), masked ones zeroed, and
  the mask flattened (b * L,) as `rows`; for single inputs x (b, ...): length 1, no element mask, x itself
  and every row valid."""
  if not is_list:
    return x.shape[0], 1, None, x, jnp.ones((x.shape[0],), bool)
  b, length = x.values.shape[:2]
  element_mask = x.mask.astype(bool)
  elements = jnp.where(element_mask.reshape((b, length) + (1,) * (x.values.ndim - 2)), x.values, 0.0)
  elements = elements.reshape((b * length,) + x.values.shape[2:])
  return b, length, element_mask, elements, element_mask.reshape(-1)


class PNN:
  """A progressive network whose last column trains (a `hx.compile.tuning.Tunable`).

  Args:
    archs: each column's standalone architecture (`hx.baselines.networks.architecture`), the earlier
      tasks' first; every one an image, vector or list architecture on inputs of one type (`refusal`).
    config: the module sizes they were built with.

  variables: {"params": {nn_cnn or nn_enc, nn_mlp[, nn_rnn], "lateral": {site: adapter}}, "batch_stats":
  {role: ...}} of the last column; frozen: a tuple with each earlier column's modules, role -> {"params",
  "batch_stats"} and "lateral" -> {"params": adapters, "batch_stats": {}}. apply(variables, frozen, x,
  *, train, rng=None, logits=False): x (B, C, H, W) images, (B, n) vectors (any other tensor shape) or a
  ListBatch of either, as the last column's task takes; returns its output (B, *output), and with train
  also {"batch_stats": ...}.
  """

  def __init__(self, archs: Sequence[Architecture], config: ModuleConfig):
    archs = tuple(archs)
    if not archs:
      raise ValueError("a progressive network needs at least one column")
    refused = refusal(archs)
    if refused is not None:
      k, why = refused
      raise ValueError(f"column {k + 1} ({archs[k].task_type}): {why}")
    self.archs = archs
    self.columns = _columns(archs, config)
    self.last = self.columns[-1]
    self.key = ("hx.baselines.pnn.PNN", tuple(c.arch.specs for c in self.columns),
                tuple((c.rnn_spec, c.adapters) for c in self.columns))
    self.output_activation = (self.last.rnn_spec.activation if self.last.arch.kind == "list"
                              else self.last.arch.spec(MLP).activation)

  def init_column(self, rng: jax.Array, k: int | None = None) -> dict:
    """Fresh modules of column k (default the last): role -> {"params", "batch_stats"}, plus "lateral"."""
    col = self.columns[-1 if k is None else k]
    keys = jax.random.split(rng, 5)
    modules = {}
    for i, role in enumerate((col.arch.encoder, MLP)):
      p, s = init_module(col.arch.spec(role), jax.random.fold_in(keys[0], i))
      modules[role] = {"params": p, "batch_stats": s}
    if col.rnn_spec is not None:
      p, s = init_module(col.rnn_spec, keys[1])
      modules[RNN] = {"params": p, "batch_stats": s}
    lateral = {site: layers.init_adapter(jax.random.fold_in(keys[2], i), *shape)
               for i, (site, shape) in enumerate(col.adapters)}
    modules["lateral"] = {"params": lateral, "batch_stats": {}}
    return modules

  def init(self, rng: jax.Array) -> dict:
    modules = self.init_column(rng)
    return {"params": {r: m["params"] for r, m in modules.items()},
            "batch_stats": {r: m["batch_stats"] for r, m in modules.items() if r != "lateral"}}

  def apply(self, variables: Mapping[str, Mapping[str, chex.ArrayTree]],
            frozen: Sequence[Mapping[str, Mapping[str, chex.ArrayTree]]], x: Batch, *, train: bool,
            rng: jax.Array | None = None, logits: bool = False) -> jax.Array | tuple[jax.Array, dict]:
    if train and rng is None:
      raise ValueError("apply(train=True) needs an rng for dropout")
    if len(frozen) != len(self.columns) - 1:
      raise ValueError(f"{len(self.columns) - 1} earlier columns expected, got {len(frozen)}")
    is_list = self.last.arch.kind == "list"
    b, length, element_mask, images, rows = _element_rows(x, is_list)
    r = images.shape[0]
    params = [{role: m["params"] for role, m in col.items()} for col in frozen] + [variables["params"]]
    stats = ([{role: m["batch_stats"] for role, m in col.items()} for col in frozen]
             + [variables["batch_stats"]])
    feats, enc_hiddens, hiddens, outs, lstm_last = [], [], [], [], []
    new_stats = dict(variables["batch_stats"])
    y = None
    for col in self.columns:
      k = col.index
      final = col is self.last
      trains = train and final
      p, s = params[k], stats[k]
      lat = p.get("lateral", {})
      keys = (lambda site: layers.row_keys(rng, r, site)) if trains else (lambda site: None)
      enc = col.arch.encoder
      if enc == ENC:
        enc_extra = layers.adapter(lat["enc_out"], jnp.concatenate(enc_hiddens, -1)) if k else None
        f, enc_hidden, enc_stats = layers.mlp(col.arch.spec(ENC), p[ENC], s[ENC], images,
                                              Rows(rows, keys(0), trains), out_extra=enc_extra)
        f = f.reshape(r, -1)
        enc_hiddens.append(enc_hidden)
        if trains:
          new_stats[ENC] = enc_stats
      else:  # the CNN keeps no batch statistics
        f, _ = apply_module(col.arch.spec(enc), p[enc], s[enc], (images,), Rows(rows, keys(0), trains))
      hidden_extra = layers.adapter(lat["hidden"], jnp.concatenate(feats, -1)) if k else None
      out_extra = layers.adapter(lat["out"], jnp.concatenate(hiddens, -1)) if k else None
      o, h, mlp_stats = layers.mlp(col.arch.spec(MLP), p[MLP], s[MLP], f, Rows(rows, keys(1), trains),
                                   logits=logits and final and not is_list, hidden_extra=hidden_extra,
                                   out_extra=out_extra)
      if trains:
        new_stats[MLP] = mlp_stats
      o_flat = o.reshape(r, -1)
      if final and not is_list:
        y = o
      if is_list and col.arch.kind == "list":
        inputs = o_flat
        if "rnn_in" in lat:
          inputs = jnp.concatenate([o_flat, layers.adapter(lat["rnn_in"], jnp.concatenate(outs, -1))], -1)
        _, last_state = layers.lstm(p[RNN], inputs.reshape(b, length, -1), element_mask)
        if final:
          z = layers.dense(p[RNN]["out"], last_state)
          if "rnn_out" in lat:
            z = z + layers.adapter(lat["rnn_out"], jnp.concatenate(lstm_last, -1))
          y = layers.activate(z.reshape((b,) + col.rnn_spec.output.shape),
                              "none" if logits else col.rnn_spec.activation)
        lstm_last.append(last_state)
      feats.append(f)
      hiddens.append(h)
      outs.append(o_flat)
    return (y, {"batch_stats": new_stats}) if train else y

  def frozen(self, columns: Sequence[Mapping[str, Mapping[str, chex.ArrayTree]]]) -> tuple:
    """The `frozen` argument from the earlier columns' modules (each `Network.modules`)."""
    if len(columns) != len(self.columns) - 1:
      raise ValueError(f"{len(self.columns) - 1} earlier columns expected, got {len(columns)}")
    return tuple({role: {"params": m["params"], "batch_stats": m["batch_stats"]} for role, m in col.items()}
                 for col in columns)
