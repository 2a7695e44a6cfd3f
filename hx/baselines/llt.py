"""Low-level transfer (LLT): the new task's network starts from the earlier tasks' weights.

The paper (section 4): "a traditional neural approach to low-level transfer (LLT) that transfers all
weights learned in the previous task, except for the output layer that is kept task-specific". The new
network has the new task's standalone architecture (`hx.baselines.networks`); its layers start as
follows, and then every weight is fine-tuned:

  layer                          starts from
  nn_cnn or nn_enc (all of it)   the previous task's network
  nn_mlp's hidden layer          the previous task's network (batch-norm statistics included)
  nn_mlp's output layer          the previous task's network, unless it was that network's output layer
  nn_rnn's recurrence            the most recent earlier network of the same kind (list / graph) with one
  the new output layer           fresh: never transferred

and a layer whose shapes differ from its source's (a 10-way output after a 1-way one) is fresh, and so
is the MLP after a network with another encoder (a vector task's after an image task's: it read other
features; ours, as the vector networks are, `hx.baselines.networks`). The
paper is silent on what "the previous task's network" means when the architectures differ (a counting
network after a recognizer): the table is the authors' code's answer (`Baselines/CountingSeqLongSeq.py`,
`get_model`: the image stack from the most recent task, the RNN from the most recent counting task,
neither output layer).

One exception, from the paper's appendix C: "In GS2 - Task3, the low-level transfer baseline reuses the
regression function learned in GS2 - Task1". A graph network maps a regressor of the node state to every
cell, the very quantity the regression task predicted, so after a regression task (an image network, or
a vector network for a graph of vectors) the
graph network takes the whole regressor, its output layer included; the authors' graph baselines
(`Baselines/GS1_sa.py`) initialise it so too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import jax
import numpy as np

from hx.baselines.networks import CNN, ENC, MLP, RNN, Architecture, Network

if TYPE_CHECKING:
  import chex

__all__ = ["transfer"]

# role -> layer -> (params keys, batch_stats keys)
_LAYERS = {
    CNN: {"": (None, None)},  # None: all of the module's keys
    ENC: {"": (None, None)},
    MLP: {"hidden": (("hidden", "bn"), ("bn",)), "out": (("out",), ())},
    RNN: {"recurrence": (("w_i", "w_h", "b"), ()), "out": (("out",), ())},
}


def _part(variables: Mapping[str, chex.ArrayTree], keys: tuple | None) -> dict:
  return dict(variables) if keys is None else {k: variables[k] for k in keys if k in variables}


def _shapes(tree: chex.ArrayTree) -> object:
  return jax.tree.map(np.shape, tree)


def transfer(arch: Architecture, fresh: Mapping[str, Mapping[str, chex.ArrayTree]], history: Sequence[Network]
             ) -> tuple[dict[str, dict], tuple[tuple[str, str], ...]]:
  """The LLT starting point of a network of architecture `arch`.

  Args:
    arch: the new task's architecture.
    fresh: its freshly initialised modules, role -> {"params", "batch_stats"}.
    history: the earlier tasks' LLT networks, oldest first (empty for a sequence's first task).

  Returns:
    (modules, sources): the starting modules (role -> {"params", "batch_stats"}), and for every layer
    where it came from: ("nn_cnn", "recognize_digit(3)"), ("nn_mlp.out", "fresh: the output layer of
    recognize_digit(3)"), ...
  """
  modules = {r: {"params": dict(m["params"]), "batch_stats": dict(m["batch_stats"])}
             for r, m in fresh.items()}
  sources: list[tuple[str, str]] = []
  previous = history[-1] if history else None
  for role in arch.roles:
    for layer, (pkeys, skeys) in _LAYERS[role].items():
      name = role + (f".{layer}" if layer else "")
      new_output = role == arch.output_role and layer in ("out", "")
      source = previous
      if role == RNN:
        source = next((n for n in reversed(history) if n.architecture.kind == arch.kind and RNN in n.modules),
                      None)
      if new_output:
        sources.append((name, "fresh: the new network's output layer"))
        continue
      if source is None or role not in source.modules:
        sources.append((name, "fresh: no earlier network has this layer"))
        continue
      src_arch = source.architecture
      if (role == src_arch.output_role and layer in ("out", "")
          and not (arch.kind == "graph" and src_arch.kind in ("image", "vector"))):
        sources.append((name, f"fresh: the output layer of {source.task}"))
        continue
      if role == MLP and src_arch.encoder != arch.encoder:
        sources.append((name, f"fresh: {source.task}'s MLP read its {src_arch.encoder}'s features"))
        continue
      src, dst = source.modules[role], modules[role]
      got_p, got_s = _part(src["params"], pkeys), _part(src["batch_stats"], skeys)
      want_p, want_s = _part(dst["params"], pkeys), _part(dst["batch_stats"], skeys)
      if _shapes((got_p, got_s)) != _shapes((want_p, want_s)):
        sources.append((name, f"fresh: its shapes differ from {source.task}'s"))
        continue
      dst["params"].update(jax.tree.map(np.array, got_p))
      dst["batch_stats"].update(jax.tree.map(np.array, got_s))
      sources.append((name, source.task))
  return modules, tuple(sources)
