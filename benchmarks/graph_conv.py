"""Times one training step of the GS shortest-path program with conv_g over a dense neighbour table and over
edge lists (segment operations), and the fixed-point loop fix(conv_g(k)) against repeat(10, conv_g(k)).

    python benchmarks/graph_conv.py [--batch 150] [--repeats 10] [--json out.json]

All figures come from one run, so their ratios are fair on a shared machine. A step is one jitted call of
value_and_grad + Adam (as Tune's), batch `--batch` graphs, median wall time of `--repeats` calls after a
compiled one. Graphs:

  grid    4x4 grids (16 nodes, degree 2-4): neighbour table K = 5, or 48 edges padded to 64
          (`hx.compile.values.size_bucket`).
  random  Erdős–Rényi graphs of 16 nodes (`hx.data.graphs`, degree 1-10): neighbour table K = the
          batch's largest degree + 1, or its edges padded to a power of two.

Programs (ModuleConfig defaults: graph kernel hidden 32, message 16, min/max/mean):

  GS       compose(repeat(10, conv_g(nn_k)), map_g(compose(nn_r, nn_c))) at the paper's sizes: nn_c the
           CNN 3x28x28 -> 1024 features on every node (random images), nn_r an MLP (hidden 1024) -> R2.
  kernel   repeat(10, conv_g(nn_k)) alone on (cost, distance) node states: the graph part of GS, where the
           forms differ. Four ways: "dense", the graph kernel's masked reductions over the table's K axis
           (how the lowering ran conv_g on a table until this benchmark measured it slower; rebuilt here
           from `apply_module` on gathered neighbour lists, in a `lax.scan`); "dense_remat", the same
           recomputed in the backward pass (`jax.checkpoint`, as the lowering's kernel is inside repeat);
           "table", the lowering on a
           neighbour table (since then: one edge per table entry, segment operations); "edges", the
           lowering on edge lists.
  fix      fix(conv_g(nn_k)) on the same states, nn_k starting at the hand-set Bellman-Ford weights
           (tests/compile/lowering_helpers.relaxation_params: it converges in as many iterations as the
           longest shortest path has edges, plus one) or at its random initialisation.

Targets are the states' least costs (hx.data.grids' convention); the numbers are timings only.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from hx.compile import modules
from hx.compile.fixpoint import fixed_point
from hx.compile.lower import compile_program
from hx.compile.modules import ModuleConfig, Neighbourhoods, Rows, apply_module
from hx.compile.values import (
  GraphBatch,
  ListBatch,
  edges_from_table,
  pack_graphs,
  size_bucket,
  table_from_edges,
)
from hx.data.graphs import least_costs_batch, random_graph
from hx.data.grids import neighbour_table
from hx.lang.parser import parse
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import relaxation_params

R2 = "Tensor<real>[2]"
IMAGE = "Tensor<real>[3][28][28]"
BOUND = 100.0


def grid_batch(rng: np.random.Generator, batch: int) -> GraphBatch:
  nb, nm, m = neighbour_table(4)
  tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (batch,) + a.shape))
  return GraphBatch(np.zeros((batch, 16), np.int32), tile(nb), tile(nm), tile(m))


def random_batch(rng: np.random.Generator, batch: int) -> GraphBatch:
  graphs = [random_graph(rng, 16, "erdos_renyi") for _ in range(batch)]
  edges = pack_graphs([np.zeros(16, np.int32)] * batch, [s for s, _ in graphs], [r for _, r in graphs])
  return table_from_edges(edges)


def states(rng: np.random.Generator, table: GraphBatch) -> tuple[GraphBatch, np.ndarray]:
  """The graphs with (cost, initial distance) node states, and targets (cost, least cost)."""
  b, n = table.mask.shape
  costs = rng.integers(1, 10, size=(b, n)).astype(np.float32)
  costs[:, 0] = 1
  d0 = np.full((b, n), BOUND, np.float32)
  d0[:, 0] = 1
  edges = edges_from_table(table)
  least = least_costs_batch(costs, edges.senders, edges.receivers, edges.edge_mask, table.mask)
  return table._replace(values=np.stack([costs, d0], -1)), np.stack([costs, least], -1)


def as_edges(table: GraphBatch) -> object:
  return edges_from_table(table, edges=size_bucket(int(edges_from_table(table).edge_mask.sum(1).max())))


class DenseRepeat:
  """repeat(10, conv_g(nn_k)) with the graph kernel's masked reductions over the neighbour table's K axis
  (`apply_module` on a ListBatch of gathered neighbour lists): the dense form, for comparison."""

  def __init__(self, spec, remat: bool = False):
    self.spec = spec
    self.remat = remat  # recompute the kernel in the backward pass, as the lowering does inside repeat

  def apply(self, variables, frozen, x, *, train, rng):
    r, n, k = x.neighbours.shape
    params = variables["params"][0]
    real = x.mask.astype(bool)
    lists = (x.neighbour_mask.astype(bool) & real[..., None]).reshape(r * n, k)

    def kernel(params, gathered):
      y, _ = apply_module(self.spec, params, {}, (ListBatch(gathered, lists),),
                          Rows(real.reshape(-1), train=True))
      return y

    kernel = jax.checkpoint(kernel) if self.remat else kernel

    def body(v, _):
      gathered = jax.vmap(lambda a, i: a[i])(v, x.neighbours).reshape(r * n, k, -1)
      return kernel(params, gathered).reshape(r, n, -1), None

    v, _ = lax.scan(body, jnp.asarray(x.values, jnp.float32), None, length=10)
    return x._replace(values=v), variables["batch_stats"]


def train_step(compiled, table: jax.Array | None):
  tx = optax.adam(1e-3)

  def loss_fn(params, stats, x, targets, key):
    if table is not None:
      x = x._replace(values=table[x.values])
    y, _ = compiled.apply({"params": params, "batch_stats": stats}, (), x, train=True, rng=key)
    m = y.mask[..., None].astype(jnp.float32)
    return jnp.sum(jnp.square(y.values - targets) * m) / jnp.sum(m)

  @jax.jit
  def step(params, stats, opt_state, x, targets, key):
    loss, grads = jax.value_and_grad(loss_fn)(params, stats, x, targets, key)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

  return step, tx


def time_step(compiled, variables, x, targets, table, repeats: int) -> dict:
  step, tx = train_step(compiled, table)
  params, stats = variables["params"], variables["batch_stats"]
  opt_state = tx.init(params)
  key = jax.random.key(0)
  jax.block_until_ready(step(params, stats, opt_state, x, targets, key))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(step(params, stats, opt_state, x, targets, key))
    times.append(time.perf_counter() - start)
  return {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times)}


def fix_iterations(spec, params, x: GraphBatch) -> int:
  """How many applications of the kernel fix(conv_g(k)) makes on x before it converges (or its cap)."""
  e = as_edges(x)
  r, n = e.mask.shape
  offset = (np.arange(r) * n)[:, None]
  nb = Neighbourhoods(e.values.reshape(r * n, -1), (e.senders + offset).reshape(-1),
                      (e.receivers + offset).reshape(-1), e.edge_mask.reshape(-1))
  mask = np.asarray(e.mask).reshape(-1)

  def f(theta, v, aux, state):
    y, _ = apply_module(spec, theta, {}, (aux._replace(nodes=v),), Rows(mask))
    return y, state

  run = jax.jit(lambda p, v, nb: fixed_point(f, p, v, nb, (), mask[:, None], ModuleConfig().fix))
  _, _, count = run(params, nb.nodes, nb)
  return int(count)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--batch", type=int, default=150)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--skip_gs", action="store_true", help="skip the full GS program (its CNN dominates)")
  parser.add_argument("--recompute_ab", action="store_true",
                      help="also time the kernel step with its graph kernel rematerialised inside repeat "
                           "(the default) against keeping its activations, interleaved over --rounds")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--json", type=str, default=None)
  args = parser.parse_args()
  rng = np.random.default_rng(0)
  config = ModuleConfig()
  kernel_type = parse_type(f"List<{R2}> -> {R2}")
  results: dict = {"args": vars(args)}
  graphs = {"grid": grid_batch(rng, args.batch), "random": random_batch(rng, args.batch)}
  for name, table in graphs.items():
    degree = np.asarray(table.neighbour_mask).sum(-1).max() - 1
    results[f"{name}_shape"] = {"nodes": 16, "table_K": int(table.neighbours.shape[-1]),
                                "edges_padded": int(as_edges(table).senders.shape[-1]),
                                "max_degree": int(degree)}

  # The graph part alone, dense table against edge lists.
  kernel = compile_program(parse("repeat(10, conv_g(nn_k))"), {"nn_k": kernel_type}, config)
  variables = kernel.init(jax.random.key(1))
  dense = DenseRepeat(kernel.specs["nn_k"])
  for name, table in graphs.items():
    x, targets = states(rng, table)
    forms = (("dense", dense, x), ("dense_remat", DenseRepeat(kernel.specs["nn_k"], remat=True), x),
             ("table", kernel, x), ("edges", kernel, as_edges(x)))
    for form, cp, value in forms:
      results[f"kernel/{name}/{form}"] = time_step(cp, variables, value, targets, None, args.repeats)
      print(f"kernel {name:6s} {form:6s} {results[f'kernel/{name}/{form}']}", flush=True)

  if args.recompute_ab:
    # The same step with the kernel's activations kept (modules._RECOMPUTED mapped to the plain kernels;
    # each time_step call traces anew, so the mapping in force at its trace is the one it times).
    recomputed = dict(modules._RECOMPUTED)
    for name, table in graphs.items():
      x, targets = states(rng, table)
      for form, value in (("table", x), ("edges", as_edges(x))):
        runs = {"kept": [], "recomputed": []}
        for _ in range(args.rounds):
          for variant in runs:  # interleaved, so that a change of load hits both alike
            plain = variant == "kept"
            modules._RECOMPUTED.update({f: (f if plain else g) for f, g in recomputed.items()})
            step = time_step(kernel, variables, value, targets, None, args.repeats)
            runs[variant].append(step["median_ms"])
        modules._RECOMPUTED.update(recomputed)
        kept, rec = statistics.median(runs["kept"]), statistics.median(runs["recomputed"])
        results[f"recompute/{name}/{form}"] = {"kept_ms": runs["kept"], "recomputed_ms": runs["recomputed"]}
        print(f"recompute {name:6s} {form:6s} kept {kept:.1f} ms, recomputed {rec:.1f} ms: "
              f"kept / recomputed {kept / rec:.2f} (rounds {runs})", flush=True)

  # fix against repeat(10), on edge lists and tables, from the hand-set relaxation and from random weights.
  fix = compile_program(parse("fix(conv_g(nn_k))"), {"nn_k": kernel_type}, config)
  spec = fix.specs["nn_k"]
  starts = {"bellman_ford": {"params": (relaxation_params(spec),), "batch_stats": ({},)},
            "random_init": fix.init(jax.random.key(2))}
  for name, table in graphs.items():
    x, targets = states(rng, table)
    for start, v in starts.items():
      results[f"fix/{name}/{start}/iterations"] = fix_iterations(spec, v["params"][0], x)
      for form, value in (("table", x), ("edges", as_edges(x))):
        for prog, cp in (("fix", fix), ("repeat10", kernel)):
          key = f"fix/{name}/{start}/{form}/{prog}"
          results[key] = time_step(cp, v, value, targets, None, args.repeats)
          print(f"{key} {results[key]}", flush=True)
      print(f"fix/{name}/{start}: {results[f'fix/{name}/{start}/iterations']} iterations", flush=True)

  if not args.skip_gs:
    gs = compile_program(parse("compose(repeat(10, conv_g(nn_k)), map_g(compose(nn_r, nn_c)))"),
                         {"nn_k": kernel_type, "nn_r": parse_type(f"Tensor<real>[1024] -> {R2}"),
                          "nn_c": parse_type(f"{IMAGE} -> Tensor<real>[1024]")}, config)
    gs_vars = gs.init(jax.random.key(3))
    images = jax.random.normal(jax.random.key(4), (256, 3, 28, 28))
    for name, table in graphs.items():
      x, targets = states(rng, table)
      idx = table._replace(values=rng.integers(0, 256, size=table.mask.shape).astype(np.int32))
      for form, value in (("table", idx), ("edges", as_edges(idx))):
        results[f"gs/{name}/{form}"] = time_step(gs, gs_vars, value, targets, images, args.repeats)
        print(f"gs {name:6s} {form:6s} {results[f'gs/{name}/{form}']}", flush=True)

  print()
  print("| step | graphs | dense (ms) | table (ms) | edge lists (ms) | table / dense | edges / dense |")
  print("|---|---|---|---|---|---|---|")
  for part in ("kernel", "gs"):
    for name in graphs:
      if f"{part}/{name}/table" in results:
        t, e = results[f"{part}/{name}/table"]["median_ms"], results[f"{part}/{name}/edges"]["median_ms"]
        d = results.get(f"{part}/{name}/dense", {}).get("median_ms")
        ratios = f"{t / d:.2f} | {e / d:.2f}" if d else "- | -"
        print(f"| {part} | {name} | {d or float('nan'):.1f} | {t:.1f} | {e:.1f} | {ratios} |")
  print()
  print("| graphs | start | form | fix iterations | fix (ms) | repeat(10) (ms) | fix / repeat(10) |")
  print("|---|---|---|---|---|---|---|")
  for name in graphs:
    for start in starts:
      for form in ("table", "edges"):
        f = results[f"fix/{name}/{start}/{form}/fix"]["median_ms"]
        r = results[f"fix/{name}/{start}/{form}/repeat10"]["median_ms"]
        count = results[f"fix/{name}/{start}/iterations"]
        print(f"| {name} | {start} | {form} | {count} | {f:.1f} | {r:.1f} | {f / r:.2f} |")
  results["versions"] = {"jax": jax.__version__, "python": platform.python_version(),
                         "device": jax.devices()[0].platform}
  print(f"\nshapes: { {n: results[f'{n}_shape'] for n in graphs} }")
  print(f"jax {jax.__version__}, python {platform.python_version()}, device {jax.devices()[0].platform}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
