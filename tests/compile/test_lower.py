"""Lowering: padding invariance (outputs, gradients, batch statistics), sharing, loop structure, errors."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hx.compile.lower import compile_program, lowering_cache_info, make_frozen
from hx.compile.modules import (
  ModuleConfig,
  NoTemplateError,
  Rows,
  UnresolvedTypeError,
  apply_module,
  init_module,
  module_spec,
)
from hx.compile.reference import RefGraph, to_batch
from hx.compile.values import GraphBatch, ListBatch
from hx.lang import program as P
from hx.lang.infer import infer
from hx.lang.paper import paper_library, paper_programs, paper_tables, task_type
from hx.lang.parser import parse
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import (
  CFG,
  IMG,
  build,
  rand_graph,
  rand_list,
  rand_tensor,
  spec,
)

F, L = P.Fresh, P.Lib
R2, R3 = "Tensor<real>[2]", "Tensor<real>[3]"

PADDING_CASES = {
  "list_fold_conv": (
    P.Compose(P.Fold("l", F("nn_s"), P.Zeros(3)), P.Compose(P.Conv("l", F("nn_k")), P.Map("l", F("nn_e")))),
    {"nn_e": f"{R3} -> Tensor<real>[4]", "nn_k": f"List<Tensor<real>[4]> -> {R2}",
     "nn_s": f"{R3} -> {R2} -> {R3}"}, "list"),
  # An LSTM (not the direct kernel, so not a graph kernel) on conv_l's windows: list output.
  "list_out_lstm": (P.Compose(P.Conv("l", P.Compose(F("nn_a"), F("nn_l"))), P.Map("l", F("nn_e"))),
                    {"nn_e": f"{R3} -> Tensor<real>[4]", "nn_l": f"List<Tensor<real>[4]> -> {R3}",
                     "nn_a": f"{R3} -> {R2}"}, "list"),
  "graph_fold": (
    P.Compose(P.Fold("g", F("nn_s"), P.Zeros(2)), P.Compose(P.Repeat(2, P.Conv("g", F("nn_k"))),
                                                             P.Map("g", F("nn_e")))),
    {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}", "nn_s": f"{R2} -> {R2} -> {R2}"}, "graph"),
  "graph_out": (P.Compose(P.Repeat(3, P.Conv("g", F("nn_k"))), P.Map("g", F("nn_e"))),
                {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}"}, "graph"),
}


def _masked_loss_fn(cp, frozen, x, rng, weights):
  """A loss over the real outputs only, and the train-mode outputs and batch statistics."""
  def loss(params, stats):
    y, new_stats = cp.apply({"params": params, "batch_stats": stats}, frozen, x, train=True, rng=rng)
    if isinstance(y, (ListBatch, GraphBatch)):
      w = weights[:, :y.values.shape[1]]
      m = y.mask.reshape(y.mask.shape + (1,) * (y.values.ndim - 2))
      total = jnp.sum(jnp.where(m, y.values * w, 0.0))
    else:
      total = jnp.sum(y * weights)
    return total, (y, new_stats)
  return loss


def _real(y):
  if isinstance(y, (ListBatch, GraphBatch)):
    return [np.asarray(y.values[b])[np.asarray(y.mask[b])] for b in range(y.values.shape[0])]
  return [np.asarray(y)]


# The fast suite keeps the cases that compile quickly; every case runs in the full suite.
@pytest.mark.parametrize("name", [
    n if n not in ("graph_fold", "list_fold_conv", "graph_out", "list_out_lstm")
    else pytest.param(n, marks=pytest.mark.slow) for n in sorted(PADDING_CASES)])
def test_padding_changes_nothing_in_training(name):
  """Outputs, gradients and batch statistics (train mode, dropout on) for two paddings of one batch."""
  program, fresh, kind = PADDING_CASES[name]
  cp, variables, frozen = build(program, fresh, seed=3)
  assert cp.config.mlp_dropout > 0
  rng = np.random.default_rng(4)
  if kind == "list":
    examples = [rand_list(rng, (3,), 0, 5) for _ in range(4)] + [rand_list(rng, (3,), 5, 5)]
    batches = [to_batch(examples, length=5, fill=7.0), to_batch(examples, length=9, fill=np.nan)]
  else:
    examples = [rand_graph(rng, (3,), 1, 5) for _ in range(4)]
    batches = [to_batch(examples, fill=-3.0), to_batch(examples, length=8, neighbours=6, fill=np.inf)]
  out_dim = 3 if name == "list_fold_conv" else 2
  weights = jnp.asarray(rng.normal(size=(len(examples), 9, out_dim)).astype(np.float32))
  if name in ("list_fold_conv", "graph_fold"):
    weights = weights[:, 0]
  key = jax.random.key(7)
  results = []
  for x in batches:
    loss = _masked_loss_fn(cp, frozen, x, key, weights)

    @jax.jit
    def train_and_infer(variables, x=x, loss=loss):
      out = jax.value_and_grad(loss, has_aux=True)(variables["params"], variables["batch_stats"])
      return out, cp.apply(variables, frozen, x, train=False)

    ((total, (y, stats)), grads), y_infer = train_and_infer(variables)
    results.append((total, _real(y), stats, grads, _real(y_infer)))
  (t0, y0, s0, g0, i0), (t1, y1, s1, g1, i1) = results
  np.testing.assert_allclose(t0, t1, rtol=1e-5, atol=1e-5)
  for a, b in zip(y0, y1):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), s0, s1)
  # Some gradients are zero up to rounding (a hidden bias just before batch norm): absolute tolerance
  # relative to the largest gradient.
  scale = max(float(jnp.abs(g).max()) for g in jax.tree.leaves(g0))
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * scale), g0, g1)
  # The statistics moved and the gradients are not all zero: the comparison is not vacuous.
  old = variables["batch_stats"]
  bn = [i for i, s in enumerate(s0) if "bn" in s]
  assert bn and all(not np.allclose(s0[i]["bn"]["mean"], old[i]["bn"]["mean"]) for i in bn)
  assert scale > 1e-3
  # Inference agrees too.
  for a, b in zip(i0, i1):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_map_batch_statistics_are_masked():
  """Training statistics of a mapped MLP are those of the real elements alone, not of the padding."""
  cp, variables, frozen = build(P.Map("l", F("nn_e")), {"nn_e": f"{R3} -> {R2}"})
  rng = np.random.default_rng(0)
  examples = [rand_list(rng, (3,), 1, 4) for _ in range(3)]
  x = to_batch(examples, length=6, fill=100.0)
  _, stats = cp.apply(variables, frozen, x, train=True, rng=jax.random.key(0))
  flat = np.stack([a for e in examples for a in e])
  _, want = apply_module(cp.specs["nn_e"], variables["params"][0], variables["batch_stats"][0],
                         (jnp.asarray(flat),), Rows(jnp.ones(len(flat), bool), train=True))
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), stats[0], want)
  w, b = (np.asarray(variables["params"][0]["hidden"][k]) for k in ("w", "b"))
  m = CFG.bn_momentum
  h = flat @ w + b
  np.testing.assert_allclose(stats[0]["bn"]["mean"],
                             m * np.asarray(variables["batch_stats"][0]["bn"]["mean"]) + (1 - m) * h.mean(0),
                             rtol=1e-4, atol=1e-5)


def test_batch_row_mask_excludes_rows():
  cp, variables, frozen = build(F("nn_a"), {"nn_a": f"{R3} -> {R2}"})
  x = rand_tensor(np.random.default_rng(1), (5, 3))
  key = jax.random.key(2)
  y_all, s_part = cp.apply(variables, frozen, x, train=True, rng=key, mask=jnp.array([1, 1, 1, 0, 0], bool))
  y_sub, s_sub = cp.apply(variables, frozen, x[:3], train=True, rng=key)
  np.testing.assert_allclose(y_all[:3], y_sub, rtol=1e-5, atol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), s_part, s_sub)


def test_dropout_in_training_only():
  cp, variables, frozen = build(F("nn_a"), {"nn_a": f"{R3} -> {R2}"})
  x = rand_tensor(np.random.default_rng(1), (6, 3))
  infer_a = cp.apply(variables, frozen, x, train=False)
  infer_b = cp.apply(variables, frozen, x, train=False)
  np.testing.assert_array_equal(infer_a, infer_b)
  t1, _ = cp.apply(variables, frozen, x, train=True, rng=jax.random.key(1))
  t1b, _ = cp.apply(variables, frozen, x, train=True, rng=jax.random.key(1))
  t2, _ = cp.apply(variables, frozen, x, train=True, rng=jax.random.PRNGKey(2))  # raw keys work too
  np.testing.assert_array_equal(t1, t1b)
  assert not np.allclose(t1, t2)
  no_drop = ModuleConfig(mlp_hidden=16, mlp_dropout=0.0)
  cp0, v0, f0 = build(F("nn_a"), {"nn_a": f"{R3} -> {R2}"}, config=no_drop)
  a, _ = cp0.apply(v0, f0, x, train=True, rng=jax.random.key(1))
  b, _ = cp0.apply(v0, f0, x, train=True, rng=jax.random.key(2))
  np.testing.assert_allclose(a, b, rtol=1e-6)
  with pytest.raises(ValueError, match="rng"):
    cp.apply(variables, frozen, x, train=True)


def test_library_modules_are_frozen_and_in_inference_mode():
  """A library MLP's statistics are never updated and it has no dropout, even in training."""
  cp, variables, frozen = build(P.Compose(F("nn_a"), L("m")), {"nn_a": f"{R2} -> {R2}"},
                                {"m": (f"{R3} -> {R2}", None)})
  x = rand_tensor(np.random.default_rng(1), (4, 3))
  lib_only, _, _ = build(L("m"), {}, {"m": (f"{R3} -> {R2}", None)})
  inner = lib_only.apply({"params": (), "batch_stats": ()}, frozen, x, train=False)
  a, _ = lib_only.apply({"params": (), "batch_stats": ()}, frozen, x, train=True, rng=jax.random.key(0))
  np.testing.assert_allclose(a, inner, rtol=1e-6)
  _, stats = cp.apply(variables, frozen, x, train=True, rng=jax.random.key(0))
  assert len(stats) == 1  # only the fresh slot has statistics to update
  grads = jax.grad(lambda fz: jnp.sum(cp.apply(variables, fz, x, train=False)))(frozen)
  assert any(float(jnp.abs(g).max()) > 0 for g in jax.tree.leaves(grads))  # differentiable, just not trained


def test_trained_module_moves_into_the_library():
  cp, variables, frozen = build(F("nn_a"), {"nn_a": f"{R3} -> Tensor<bool>[1]"})
  lib_cp = compile_program(L("old"), {}, CFG, {"old": cp.specs["nn_a"]})
  frozen2 = make_frozen(lib_cp, {"old": cp.fresh_variables(variables)["nn_a"], "unused": {}})
  x = rand_tensor(np.random.default_rng(1), (4, 3))
  np.testing.assert_allclose(lib_cp.apply({"params": (), "batch_stats": ()}, frozen2, x, train=False),
                             cp.apply(variables, frozen, x, train=False), rtol=1e-6)
  with pytest.raises(KeyError, match="old"):
    make_frozen(lib_cp, {})


def test_same_structure_shares_one_lowering_and_one_trace():
  typ = {"nn_a": parse_type(f"{R2} -> {R2}")}
  lib = {n: spec(f"{R3} -> {R2}") for n in ("u", "v")}
  p1 = P.Compose(F("nn_a"), L("u"))
  p2 = P.Compose(F("nn_b"), L("v"))
  c1 = compile_program(p1, typ, CFG, lib)
  before = lowering_cache_info().hits
  c2 = compile_program(p2, {"nn_b": typ["nn_a"]}, CFG, lib)
  assert lowering_cache_info().hits == before + 1
  assert c1.key == c2.key and hash(c1.key) == hash(c2.key)
  assert c1.apply is c2.apply and c1.init is c2.init
  assert c2.fresh_slots == ("nn_b",) and c2.library_slots == ("v",)
  # Swapped library functions of one architecture: the same key, frozen parameters ordered by slot.
  same = {"u": spec(f"{R2} -> {R2}"), "v": spec(f"{R2} -> {R2}")}
  c3 = compile_program(P.Compose(L("u"), L("v")), {}, CFG, same)
  c4 = compile_program(P.Compose(L("v"), L("u")), {}, CFG, same)
  assert c3.apply is c4.apply and c3.library_slots == ("u", "v") and c4.library_slots == ("v", "u")
  # Library functions trained with other dropout rates: training-only sizes do not split the key.
  other = {"u": spec(f"{R3} -> {R2}", config=ModuleConfig(mlp_hidden=16, mlp_dropout=0.1, bn_momentum=0.5))}
  assert compile_program(p1, typ, CFG, other).apply is c1.apply
  # Another architecture, another key.
  c5 = compile_program(p1, typ, ModuleConfig(mlp_hidden=8), lib)
  assert c5.key != c1.key and c5.apply is not c1.apply
  # A step jitted once per apply function is traced once for both programs: chex counts the traces of
  # `run` over every closure `jitted` makes, so a second apply function would trace it again and fail.
  chex.clear_trace_counter()

  @functools.cache
  def jitted(apply):
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(variables, frozen, x):
      return apply(variables, frozen, x, train=False)
    return run

  x = jnp.ones((3, 3))
  outs = []
  for cp, seed in ((c1, 0), (c2, 1)):
    variables = cp.init(jax.random.key(seed))
    frozen = cp.make_frozen({n: _lib_params(lib[n], seed + 5) for n in cp.library_slots})
    outs.append(jitted(cp.apply)(variables, frozen, x))
  assert not np.allclose(outs[0], outs[1])


def _lib_params(s, seed):
  p, st = init_module(s, jax.random.key(seed))
  return {"params": p, "batch_stats": st}


def test_shared_fresh_name_is_one_slot():
  cp = compile_program(P.Compose(F("nn_a"), P.Compose(F("nn_b"), F("nn_a"))),
                       {"nn_a": parse_type(f"{R2} -> {R2}"), "nn_b": parse_type(f"{R2} -> {R2}")}, CFG)
  assert cp.fresh_slots == ("nn_a", "nn_b")
  assert len(cp.init(jax.random.key(0))["params"]) == 2


def _count(jaxpr, prim: str, inside_loop: bool = False, depth: int = 0) -> int:
  """Occurrences of a primitive in a closed jaxpr (with inside_loop, only those inside scan/while)."""
  n = 0
  for eqn in jaxpr.eqns:
    looping = eqn.primitive.name in ("scan", "while")
    if eqn.primitive.name == prim and (depth > 0 or not inside_loop):
      n += 1
    for v in eqn.params.values():
      for sub in (v if isinstance(v, (tuple, list)) else (v,)):
        inner = getattr(sub, "jaxpr", None)
        if inner is not None:
          inner = inner if hasattr(inner, "eqns") else getattr(inner, "jaxpr", None)
        if inner is not None and hasattr(inner, "eqns"):
          n += _count(inner, prim, inside_loop, depth + (1 if looping else 0))
  return n


def _jaxpr(cp, variables, frozen, x, train=False):
  if train:
    fn = lambda v, f, x: cp.apply(v, f, x, train=True, rng=jax.random.key(0))
  else:
    fn = lambda v, f, x: cp.apply(v, f, x, train=False)
  return jax.make_jaxpr(fn)(variables, frozen, x).jaxpr


def test_repeat_is_a_loop_not_unrolled():
  counts = []
  for k in (2, 7):
    cp, variables, frozen = build(P.Repeat(k, P.Conv("g", F("nn_k"))), {"nn_k": f"List<{R2}> -> {R2}"})
    x = to_batch([rand_graph(np.random.default_rng(0), (2,), 3, 3)])
    jaxpr = _jaxpr(cp, variables, frozen, x, train=True)
    counts.append((_count(jaxpr, "dot_general"), _count(jaxpr, "scan")))
  assert counts[0] == counts[1] and counts[0][1] >= 1


def test_map_is_one_batched_call_and_cnn_never_in_a_loop():
  program = P.Compose(P.Repeat(3, P.Conv("g", F("nn_k"))), P.Map("g", P.Compose(F("nn_a"), F("nn_c"))))
  cp, variables, frozen = build(program, {"nn_c": f"{IMG} -> Tensor<real>[8]",
                                          "nn_a": f"Tensor<real>[8] -> {R2}", "nn_k": f"List<{R2}> -> {R2}"})
  x = to_batch([rand_graph(np.random.default_rng(0), (1, 12, 12), 4, 4)])
  for train in (False, True):
    jaxpr = _jaxpr(cp, variables, frozen, x, train=train)
    assert _count(jaxpr, "conv_general_dilated") == 2  # the CNN's two convolutions, once each
    assert _count(jaxpr, "conv_general_dilated", inside_loop=True) == 0
    assert _count(jaxpr, "scan") >= 1
  cp, variables, frozen = build(P.Map("l", F("nn_e")), {"nn_e": f"{R3} -> {R2}"})
  x = to_batch([rand_list(np.random.default_rng(0), (3,), 3, 3)])
  jaxpr = _jaxpr(cp, variables, frozen, x)
  assert _count(jaxpr, "scan") == 0 and _count(jaxpr, "while") == 0
  assert _count(jaxpr, "dot_general") == 2


def test_fold_is_a_scan():
  program = P.Fold("l", F("nn_s"), P.Zeros(2))
  cp, variables, frozen = build(program, {"nn_s": f"{R2} -> {R3} -> {R2}"})
  x = to_batch([rand_list(np.random.default_rng(0), (3,), 4, 4)])
  jaxpr = _jaxpr(cp, variables, frozen, x)
  assert _count(jaxpr, "scan") == 1 and _count(jaxpr, "dot_general", inside_loop=True) == 2


def test_output_containers_carry_the_input_masks():
  cp, variables, frozen = build(P.Conv("g", F("nn_k")), {"nn_k": f"List<{R3}> -> {R2}"})
  x = to_batch([rand_graph(np.random.default_rng(0), (3,), 2, 5) for _ in range(3)], length=6)
  y = cp.apply(variables, frozen, x, train=False)
  assert isinstance(y, GraphBatch) and y.values.shape == (3, 6, 2)
  for a, b in zip(y[1:], x[1:]):
    np.testing.assert_array_equal(a, b)
  cp, variables, frozen = build(P.Map("l", F("nn_e")), {"nn_e": f"{R3} -> Tensor<bool>[4]"})
  x = to_batch([rand_list(np.random.default_rng(0), (3,), 1, 5) for _ in range(3)], length=7)
  y = cp.apply(variables, frozen, x, train=False)
  assert isinstance(y, ListBatch) and y.values.shape == (3, 7, 4)
  np.testing.assert_array_equal(y.mask, x.mask)
  np.testing.assert_allclose(np.asarray(y.values).sum(-1)[x.mask], 1.0, rtol=1e-5)  # softmax


def test_zeros_start_and_empty_lists():
  cp, variables, frozen = build(P.Fold("l", F("nn_s"), P.Zeros(2)), {"nn_s": f"{R2} -> {R3} -> {R2}"})
  x = ListBatch(np.ones((2, 3, 3), np.float32), np.array([[0, 0, 0], [1, 0, 0]], bool))
  y = cp.apply(variables, frozen, x, train=False)
  assert y.shape == (2, 2)
  np.testing.assert_array_equal(y[0], 0.0)
  assert not np.allclose(y[1], 0.0)


# --- errors -------------------------------------------------------------------------------------


def test_function_argument_is_refused_with_name_and_type():
  with pytest.raises(NoTemplateError, match=r"nn_f.*\(Tensor<real>\[2\] -> Tensor<real>\[2\]\) -> Tensor"):
    compile_program(F("nn_f"), {"nn_f": parse_type(f"({R2} -> {R2}) -> {R2}")}, CFG)


def test_type_variables_are_refused_with_name():
  typing = infer(parse("compose(nn_a, nn_b)"), {}, parse_type(f"{R3} -> {R2}"))
  with pytest.raises(UnresolvedTypeError, match="nn_(a|b)"):
    compile_program(parse("compose(nn_a, nn_b)"), typing, CFG)


def test_typing_from_infer_is_accepted():
  program = parse("compose(fold_l(nn_s, zeros(2)), map_l(nn_a))")
  typing = infer(program, {}, parse_type(f"List<{R3}> -> {R2}"))
  fixed = {n: t for n, t in typing.fresh.items()}
  if any("'" in str(t) for t in fixed.values()):
    fixed["nn_a"] = parse_type(f"{R3} -> Tensor<real>[4]")
    fixed["nn_s"] = parse_type(f"{R2} -> Tensor<real>[4] -> {R2}")
  cp = compile_program(program, fixed, CFG)
  assert cp.specs["nn_s"].template == "mlp" and len(cp.specs["nn_s"].inputs) == 2
  typing_fixed = type(typing)(typing.type, fixed, typing.subterms)
  assert compile_program(program, typing_fixed, CFG).key == cp.key


def test_unsupported_forms_are_refused():
  step = {"nn_a": f"{R2} -> {R3} -> {R2}", "nn_b": f"{R2} -> {R2}"}
  with pytest.raises(NotImplementedError, match="Compose"):
    compile_program(P.Fold("l", P.Compose(F("nn_b"), F("nn_a")), P.Zeros(2)),
                    {n: parse_type(t) for n, t in step.items()}, CFG)
  with pytest.raises(NotImplementedError, match="start"):
    compile_program(P.Fold("l", F("nn_a"), L("z")), {"nn_a": parse_type(step["nn_a"])}, CFG,
                    {"z": spec(f"{R2} -> {R2}")})
  with pytest.raises(ValueError, match="holes"):
    compile_program(P.Compose(F("nn_b"), P.Hole(parse_type(f"{R2} -> {R2}"))),
                    {"nn_b": parse_type(step["nn_b"])}, CFG)
  with pytest.raises(ValueError, match="nn_b"):
    compile_program(F("nn_b"), {}, CFG)
  with pytest.raises(ValueError, match="lib.q"):
    compile_program(L("q"), {}, CFG)


# --- the paper's programs -----------------------------------------------------------------------


def _paper_cases():
  for table in paper_tables():
    if table.startswith("text:"):
      continue
    library = paper_library(table)
    for p in paper_programs():
      if p.table == table:
        yield table, p, library


def test_every_paper_program_compiles_at_paper_sizes():
  from hx.lang.paper import default_type_variables
  n = 0
  for _, p, library in _paper_cases():
    typing = infer(p.program, library, task_type(p.task))
    kernels = {t.fn.name for _, t in P.subterms(p.program)
               if isinstance(t, P.Conv) and isinstance(t.fn, P.Lib)}
    lib_specs = {name: module_spec(library[name], role="kernel" if name in kernels else None, name=name)
                 for name in P.library_names(p.program)}
    cp = compile_program(p.program, default_type_variables(typing.fresh), ModuleConfig(), lib_specs)
    assert set(cp.fresh_slots) == set(P.fresh_names(p.program))
    n += 1
  assert n > 50


@pytest.mark.slow
def test_paper_shortest_path_program_runs_at_paper_sizes():
  program = parse("(conv_g^{10} (nn_gs2_3)) ∘ (map_g (lib.nn_gs2_1 ∘ lib.nn_gs2_2))")
  library = paper_library("fig:GS2Progs-main")
  typing = infer(program, library, task_type("shortest_path_mnist"))
  lib_specs = {n: module_spec(library[n]) for n in P.library_names(program)}
  cp = compile_program(program, typing, ModuleConfig(), lib_specs)
  assert cp.specs["nn_gs2_3"].template == "graph_kernel"
  assert lib_specs["nn_gs2_2"].template == "cnn" and lib_specs["nn_gs2_2"]["features"] == 1024
  variables = cp.init(jax.random.key(0))
  frozen = cp.make_frozen({n: _lib_params(s, i) for i, (n, s) in enumerate(lib_specs.items())})
  g = RefGraph([np.zeros((3, 28, 28), np.float32)] * 4, [[0, 1], [1, 0, 2], [2, 1, 3], [3, 2]])
  x = to_batch([g], length=5)
  y = jax.jit(cp.apply, static_argnames="train")(variables, frozen, x, train=False)
  assert isinstance(y, GraphBatch) and y.values.shape == (1, 5, 2)
  assert np.all(np.isfinite(np.asarray(y.values)[0, :4]))


@pytest.mark.slow
def test_candidates_stack_under_vmap():
  """Candidates of one structure, initialised separately and stacked, run as one vmapped call."""
  program = P.Compose(P.Fold("l", F("nn_s"), P.Zeros(2)), P.Map("l", F("nn_e")))
  cp, _, frozen = build(program, {"nn_e": f"{R3} -> {R2}", "nn_s": f"{R2} -> {R2} -> {R2}"})
  candidates = [cp.init(jax.random.key(s)) for s in range(3)]
  stacked = jax.tree.map(lambda *a: jnp.stack(a), *candidates)
  x = to_batch([rand_list(np.random.default_rng(s), (3,), 1, 4) for s in range(4)], length=5)
  key = jax.random.key(9)
  run = jax.jit(jax.vmap(lambda v: cp.apply(v, frozen, x, train=True, rng=key)))
  ys, stats = run(stacked)
  assert ys.shape == (3, 4, 2)
  for i, v in enumerate(candidates):
    y, s = cp.apply(v, frozen, x, train=True, rng=key)
    np.testing.assert_allclose(ys[i], y, rtol=1e-5, atol=1e-6)
    jax.tree.map(lambda a, b, i=i: np.testing.assert_allclose(a[i], b, rtol=1e-5, atol=1e-6), stats, s)
  assert not np.allclose(ys[0], ys[1])
