"""Shared fixtures for the lowering tests: a small configuration, random parameters and random examples."""

from __future__ import annotations

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np

from hx.compile.lower import CompiledProgram, compile_program
from hx.compile.modules import ModuleConfig, ModuleSpec, apply_module, init_module, module_spec
from hx.compile.reference import RefGraph
from hx.compile.tuning import tune
from hx.lang.types import parse_type

# Small sizes keep the tests fast; the structure is the paper's.
CFG = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), cnn_kernel=3, lstm_hidden=8, graph_hidden=8,
                   graph_message=4)
IMG = "Tensor<real>[1][12][12]"  # 12 -> conv 10 -> pool 5 -> conv 3 -> pool 1: 8 features


def spec(text: str, role: str | None = None, config: ModuleConfig = CFG) -> ModuleSpec:
  return module_spec(parse_type(text), config, role=role)


def randomize(tree: dict, seed: int) -> dict:
  """Perturbs batch-norm scales, biases and running statistics so that inference mode depends on them."""
  rng = np.random.default_rng(seed)

  def walk(node):
    if isinstance(node, dict):
      out = {}
      for k, v in node.items():
        if k in ("scale", "var"):
          out[k] = jnp.asarray(rng.uniform(0.5, 2.0, np.shape(v)), jnp.float32)
        elif k in ("bias", "mean") and not isinstance(v, dict):
          out[k] = jnp.asarray(rng.normal(0.0, 0.5, np.shape(v)), jnp.float32)
        elif k == "b":
          out[k] = jnp.asarray(rng.normal(0.0, 0.1, np.shape(v)), jnp.float32)
        else:
          out[k] = walk(v)
      return out
    if isinstance(node, tuple):
      return tuple(walk(v) for v in node)
    return node

  return walk(tree)


# Initialisation stays eager (its primitives' compilations are shared by all tests); module application
# is jitted: one compilation instead of one per primitive.
jit_apply_module = jax.jit(apply_module, static_argnums=0)  # a Rows' train flag is static (its structure)


def library_entry(s: ModuleSpec, seed: int) -> dict:
  params, stats = init_module(s, jax.random.key(seed))
  return randomize({"params": params, "batch_stats": stats}, seed)


def build(program, fresh: dict[str, str], library: dict[str, tuple[str, str | None]] | None = None,
          config: ModuleConfig = CFG, seed: int = 0) -> tuple[CompiledProgram, dict, tuple]:
  """Compiles `program` (fresh name -> type text; library name -> (type text, role)) with random params."""
  library = library or {}
  lib_specs = {n: spec(t, role, config) for n, (t, role) in library.items()}
  cp = compile_program(program, {n: parse_type(t) for n, t in fresh.items()}, config, lib_specs)
  variables = randomize(cp.init(jax.random.key(seed)), seed + 1)
  frozen = cp.make_frozen({n: library_entry(s, seed + 10 + i) for i, (n, s) in enumerate(lib_specs.items())})
  return cp, variables, frozen


def rand_tensor(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
  return rng.normal(size=shape).astype(np.float32)


def rand_list(rng: np.random.Generator, shape: tuple[int, ...], lo: int, hi: int) -> list:
  return [rand_tensor(rng, shape) for _ in range(int(rng.integers(lo, hi + 1)))]


def rand_graph(rng: np.random.Generator, shape: tuple[int, ...], lo: int, hi: int,
               degree: int = 3) -> RefGraph:
  """A random directed graph of lo..hi nodes; each node lists itself, then up to `degree` other nodes."""
  n = int(rng.integers(lo, hi + 1))
  neighbours = []
  for u in range(n):
    others = [v for v in range(n) if v != u]
    k = int(rng.integers(0, min(degree, len(others)) + 1))
    neighbours.append([u] + [int(v) for v in rng.choice(others, size=k, replace=False)] if k else [u])
  return RefGraph([rand_tensor(rng, shape) for _ in range(n)], neighbours)


def relaxation_params(spec: ModuleSpec) -> dict:
  """Graph-kernel weights computing one round of Bellman-Ford relaxation exactly, in hx.data.grids'
  convention: a node state (w, d) (cost, distance so far) becomes (w, min(d, w + min_j d_j)) over its
  neighbour list (itself included: harmless, w >= 0).

  Pair input [w_u, d_u, w_j, d_j]; hidden unit 0 = relu(d_j) = d_j (distances are >= 0); message 0 = that;
  the min aggregate of message 0 is min_j d_j. Node input [w_u, d_u, aggregates...]; hidden u0 = relu(w_u),
  u1 = relu(d_u - w_u - min_j d_j), u2 = relu(d_u); output (u0, u2 - u1) = (w_u, min(d_u, w_u + min_j d_j)).
  Needs graph_hidden >= 3, graph_message >= 1 and "min" among the aggregations; costs >= 0. For a residual
  kernel (`ModuleConfig.graph_update="residual"`, out = (w_u, d_u) + node network) the output is the
  update (0, -u1).
  """
  h, m, aggregations = spec["hidden"], spec["message"], spec["aggregations"]
  if h < 3 or m < 1 or "min" not in aggregations:
    raise ValueError(f"the relaxation needs hidden >= 3, message >= 1 and a min aggregate: {spec}")
  n_agg = len(aggregations)
  z = lambda *s: np.zeros(s, np.float32)
  pair_hidden = {"w": z(4, h), "b": z(h)}
  pair_hidden["w"][3, 0] = 1.0
  pair_out = {"w": z(h, m), "b": z(m)}
  pair_out["w"][0, 0] = 1.0
  agg_min = 2 + aggregations.index("min") * m
  node_hidden = {"w": z(2 + n_agg * m, h), "b": z(h)}
  node_hidden["w"][0, 0] = 1.0
  node_hidden["w"][1, 1], node_hidden["w"][0, 1], node_hidden["w"][agg_min, 1] = 1.0, -1.0, -1.0
  node_hidden["w"][1, 2] = 1.0
  node_out = {"w": z(h, 2), "b": z(2)}
  if dict(spec.hyper).get("update") == "residual":
    node_out["w"][1, 1] = -1.0
  else:
    node_out["w"][0, 0] = 1.0
    node_out["w"][2, 1], node_out["w"][1, 1] = 1.0, -1.0
  return jax.tree.map(jnp.asarray, {"pair_hidden": pair_hidden, "pair_out": pair_out,
                                    "node_hidden": node_hidden, "node_out": node_out})


def assert_resumes_bit_for_bit(compiled, data, objective, config) -> None:
  """Tune straight through `config.epochs`, and paused at 1.5 epochs then resumed: the same losses, score
  and parameters, bit for bit."""
  straight = tune(compiled, (), data, objective, config)
  first = tune(compiled, (), data, objective, config, until=1.5)
  rest = tune(compiled, (), data, objective, config, resume=first.state)
  assert [h.train_loss for h in rest.history] == [h.train_loss for h in straight.history]
  assert rest.val_score == straight.val_score
  chex.assert_trees_all_equal(rest.variables, straight.variables)


_PRODUCT = re.compile(r"(dot_general|conv_general_dilated)\[\n(.*?)\n\s*\] ", re.S)


def products_and_precisions(fn, *args) -> list[tuple[str, str | None]]:
  """(primitive, precision) of every matmul and convolution in `fn`'s jaxpr on `args`, nested jaxprs
  (scan bodies, gradients) included; precision as the jaxpr prints it, None where it names none."""
  text = str(jax.make_jaxpr(fn)(*args))
  found = []
  for name, params in _PRODUCT.findall(text):
    m = re.search(r"precision=(\(Precision\.\w+, Precision\.\w+\)|Precision\.\w+|None)", params)
    found.append((name, m.group(1) if m and m.group(1) != "None" else None))
  return found
