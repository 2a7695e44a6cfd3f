"""The lowered apply (inference mode, padded batches) against the NumPy reference interpreter."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from hx.compile.modules import ModuleConfig
from hx.compile.reference import RefGraph, reference_apply, to_batch, unbatch
from hx.compile.values import GraphBatch, ListBatch
from hx.lang import program as P
from hx.lang.types import parse_type
from tests.compile.lowering_helpers import CFG, IMG, build, rand_graph, rand_list, rand_tensor

F, L = P.Fresh, P.Lib
R3, R2 = "Tensor<real>[3]", "Tensor<real>[2]"

# name -> (program, fresh types, library (type, role), input kind, element shape, config)
CASES = {
  "mlp_softmax": (F("nn_a"), {"nn_a": "Tensor<real>[4] -> Tensor<bool>[3]"}, {}, "tensor", (4,), CFG),
  "compose_sigmoid": (P.Compose(F("nn_a"), F("nn_b")),
                      {"nn_b": "Tensor<real>[4] -> Tensor<real>[6]",
                       "nn_a": "Tensor<real>[6] -> Tensor<bool>[1]"},
                      {}, "tensor", (4,), CFG),
  "shared_weights": (P.Compose(F("nn_a"), F("nn_a")), {"nn_a": f"{R3} -> {R3}"}, {}, "tensor", (3,), CFG),
  "cnn_lib_then_mlp": (P.Compose(F("nn_a"), L("cnn")), {"nn_a": "Tensor<real>[8] -> Tensor<real>[2]"},
                       {"cnn": (f"{IMG} -> Tensor<real>[8]", None)}, "tensor", (1, 12, 12), CFG),
  "cnn_with_output_layer": (F("nn_c"), {"nn_c": f"{IMG} -> Tensor<bool>[5]"}, {}, "tensor", (1, 12, 12), CFG),
  "map_l_cnn": (P.Map("l", P.Compose(F("nn_a"), F("nn_c"))),
                {"nn_c": f"{IMG} -> Tensor<real>[8]", "nn_a": "Tensor<real>[8] -> Tensor<bool>[1]"},
                {}, "list", (1, 12, 12), CFG),
  "map_g": (P.Map("g", F("nn_a")), {"nn_a": f"{R3} -> Tensor<bool>[2]"}, {}, "graph", (3,), CFG),
  "fold_l": (P.Compose(P.Fold("l", F("nn_s"), P.Zeros(3)), P.Map("l", F("nn_a"))),
             {"nn_a": "Tensor<real>[2] -> Tensor<real>[4]",
              "nn_s": "Tensor<real>[3] -> Tensor<real>[4] -> Tensor<real>[3]"}, {}, "list", (2,), CFG),
  "fold_g_lib": (P.Fold("g", L("step"), P.Zeros(2)), {},
                 {"step": (f"{R2} -> {R3} -> {R2}", None)}, "graph", (3,), CFG),
  "conv_l_kernel": (P.Conv("l", F("nn_k")), {"nn_k": f"List<{R3}> -> {R2}"}, {}, "list", (3,), CFG),
  "conv_l_kernel_p2": (P.Conv("l", F("nn_k")), {"nn_k": f"List<{R3}> -> {R2}"}, {}, "list", (3,),
                       ModuleConfig(mlp_hidden=16, graph_hidden=8, graph_message=4, conv_window=2,
                                    graph_aggregations=("sum", "min"))),
  "conv_l_lstm_lib": (P.Conv("l", L("lstm")), {}, {"lstm": (f"List<{R3}> -> Tensor<bool>[1]", None)},
                      "list", (3,), CFG),
  "conv_g": (P.Conv("g", F("nn_k")), {"nn_k": f"List<{R3}> -> {R3}"}, {}, "graph", (3,), CFG),
  "conv_g_lstm_lib": (P.Conv("g", L("lstm")), {}, {"lstm": (f"List<{R3}> -> {R2}", None)}, "graph", (3,),
                      CFG),
  "gs_program": (P.Compose(P.Repeat(3, P.Conv("g", F("nn_k"))), P.Map("g", P.Compose(F("nn_a"), L("cnn")))),
                 {"nn_a": f"Tensor<real>[8] -> {R2}", "nn_k": f"List<{R2}> -> {R2}"},
                 {"cnn": (f"{IMG} -> Tensor<real>[8]", None)}, "graph", (1, 12, 12), CFG),
  "lstm": (P.Compose(F("nn_a"), F("nn_l")),
           {"nn_l": f"List<{R3}> -> Tensor<real>[5]", "nn_a": "Tensor<real>[5] -> Tensor<bool>[4]"},
           {}, "list", (3,), CFG),
  "repeat_tensor": (P.Repeat(4, F("nn_a")), {"nn_a": f"{R3} -> {R3}"}, {}, "tensor", (3,), CFG),
  "nested_list": (
    P.Compose(F("nn_o"), P.Compose(P.Fold("l", F("nn_s"), P.Zeros(2)),
                                   P.Compose(P.Repeat(2, P.Conv("l", L("kern"))), P.Map("l", F("nn_e"))))),
    {"nn_e": "Tensor<real>[3] -> Tensor<real>[4]", "nn_s": f"{R2} -> Tensor<real>[4] -> {R2}",
     "nn_o": f"{R2} -> Tensor<bool>[1]"},
    {"kern": ("List<Tensor<real>[4]> -> Tensor<real>[4]", "kernel")}, "list", (3,), CFG),
  "nested_graph": (
    P.Compose(P.Fold("g", F("nn_s"), P.Zeros(2)), P.Compose(P.Repeat(2, P.Conv("g", F("nn_k"))),
                                                             P.Map("g", F("nn_e")))),
    {"nn_e": f"{R3} -> {R2}", "nn_k": f"List<{R2}> -> {R2}", "nn_s": f"{R2} -> {R2} -> {R2}"},
    {}, "graph", (3,), CFG),
}


def _examples(kind: str, shape: tuple[int, ...], rng: np.random.Generator, n: int = 5) -> list:
  if kind == "tensor":
    return [rand_tensor(rng, shape) for _ in range(n)]
  if kind == "list":
    ex = [rand_list(rng, shape, 0, 5) for _ in range(n - 1)]
    return ex + [rand_list(rng, shape, 1, 1)]  # always a one-element list; often an empty one
  return [rand_graph(rng, shape, 1, 6) for _ in range(n)]


def _assert_close(got, want, rtol, atol):
  if isinstance(want, RefGraph):
    assert isinstance(got, RefGraph) and got.neighbours == want.neighbours
    got, want = got.values, want.values
  if isinstance(want, list):
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
  else:
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_matches_reference(name):
  program, fresh, library, kind, shape, config = CASES[name]
  cp, variables, frozen = build(program, fresh, library, config, seed=len(name))
  rng = np.random.default_rng(len(name))
  examples = _examples(kind, shape, rng)
  # Padding beyond the longest example, filled with NaN: it must not reach any real output.
  if kind == "tensor":
    x = to_batch(examples)
  else:
    longest = max(len(e.values if isinstance(e, RefGraph) else e) for e in examples)
    x = to_batch(examples, length=longest + 2, fill=np.nan)
  y = jax.jit(cp.apply, static_argnames="train")(variables, frozen, x, train=False)
  want = [reference_apply(cp, variables, frozen, e) for e in examples]
  if kind == "list" and isinstance(want[0], list):
    assert isinstance(y, ListBatch)
    np.testing.assert_array_equal(y.mask, x.mask)
  if kind == "graph" and isinstance(want[0], RefGraph):
    assert isinstance(y, GraphBatch)
    np.testing.assert_array_equal(y.neighbours, x.neighbours)
  got = unbatch(y) if isinstance(y, (ListBatch, GraphBatch)) else list(np.asarray(y))
  tol = dict(rtol=2e-4, atol=2e-5) if "cnn" in name or name == "gs_program" else dict(rtol=1e-4, atol=1e-5)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    if isinstance(w, np.ndarray):
      assert np.all(np.isfinite(g))
    _assert_close(g, w, **tol)


def test_reference_is_not_trivially_equal():
  """The comparison can fail: other parameters give other outputs."""
  program, fresh, library, kind, shape, config = CASES["nested_list"]
  cp, variables, frozen = build(program, fresh, library, config, seed=1)
  _, other, _ = build(program, fresh, library, config, seed=2)
  ex = rand_list(np.random.default_rng(0), shape, 3, 3)
  a = reference_apply(cp, variables, frozen, ex)
  b = reference_apply(cp, other, frozen, ex)
  assert not np.allclose(a, b, rtol=1e-3, atol=1e-4)


def test_unbatch_to_batch_round_trip():
  rng = np.random.default_rng(0)
  graphs = [rand_graph(rng, (2,), 1, 5) for _ in range(3)]
  back = unbatch(to_batch(graphs, length=7, neighbours=5))
  for g, h in zip(graphs, back):
    assert g.neighbours == h.neighbours
    np.testing.assert_array_equal(np.array(g.values), np.array(h.values))
  lists = [rand_list(rng, (2,), 0, 4) for _ in range(3)] + [rand_list(rng, (2,), 1, 1)]
  back = unbatch(to_batch(lists, length=6))
  assert [len(a) for a in back] == [len(a) for a in lists]


# --- random nested programs ---------------------------------------------------------------------


def _random_program(rng: np.random.Generator, adt: str):
  """A random well-typed program over List/Graph<Tensor<real>[d]>: 1-3 list/graph stages (map, conv with a
  graph kernel, conv with an LSTM kernel, repeat of either), then optionally a fold or an LSTM. Each
  module is fresh or, one time in four, a library function. Returns (program, fresh types, library)."""
  fresh, library = {}, {}

  def module(text: str, role: str | None = None):
    name = f"nn_{len(fresh) + len(library)}"
    if rng.random() < 0.25:
      library[name] = (text, role)
      return L(name)
    fresh[name] = text
    return F(name)

  def real(n: int) -> str:
    return f"Tensor<real>[{n}]"

  d = int(rng.integers(1, 4))
  program = None
  for _ in range(int(rng.integers(1, 4))):
    kind = rng.choice(["map", "conv", "conv_lstm", "repeat_map", "repeat_conv"])
    out = d if kind.startswith("repeat") else int(rng.integers(1, 4))
    if kind == "map":
      stage = P.Map(adt, module(f"{real(d)} -> {real(out)}"))
    elif kind == "conv":
      stage = P.Conv(adt, module(f"List<{real(d)}> -> {real(out)}", "kernel"))
    elif kind == "conv_lstm":
      lstm = module(f"List<{real(d)}> -> {real(3)}")
      stage = P.Conv(adt, P.Compose(module(f"{real(3)} -> {real(out)}"), lstm))
    elif kind == "repeat_map":
      stage = P.Repeat(int(rng.integers(2, 4)), P.Map(adt, module(f"{real(d)} -> {real(d)}")))
    else:
      kernel = module(f"List<{real(d)}> -> {real(d)}", "kernel")
      stage = P.Repeat(int(rng.integers(2, 4)), P.Conv(adt, kernel))
    program = stage if program is None else P.Compose(stage, program)
    d = out
  finish = rng.choice(["none", "fold", "fold_mlp"] + (["lstm"] if adt == "l" else []))
  if finish.startswith("fold"):
    s = int(rng.integers(1, 4))
    program = P.Compose(P.Fold(adt, module(f"{real(s)} -> {real(d)} -> {real(s)}"), P.Zeros(s)), program)
    if finish == "fold_mlp":
      program = P.Compose(module(f"{real(s)} -> Tensor<bool>[2]"), program)
  elif finish == "lstm":
    program = P.Compose(module(f"List<{real(d)}> -> Tensor<bool>[1]"), program)
  return program, fresh, library


@pytest.mark.parametrize("seed", range(8))
def test_random_nested_programs_match_reference(seed):
  rng = np.random.default_rng(100 + seed)
  adt = "l" if seed % 2 == 0 else "g"
  program, fresh, library = _random_program(rng, adt)
  # The input's element size: the argument type of the first stage's module.
  d_in = _input_size(program, fresh, library)
  cp, variables, frozen = build(program, fresh, library, seed=seed)
  if adt == "l":
    examples = [rand_list(rng, (d_in,), 1, 6) for _ in range(4)]
  else:
    examples = [rand_graph(rng, (d_in,), 1, 6) for _ in range(4)]
  longest = max(len(e.values if isinstance(e, RefGraph) else e) for e in examples)
  x = to_batch(examples, length=longest + int(rng.integers(0, 3)), fill=np.nan)
  y = jax.jit(cp.apply, static_argnames="train")(variables, frozen, x, train=False)
  got = unbatch(y) if isinstance(y, (ListBatch, GraphBatch)) else list(np.asarray(y))
  for g, e in zip(got, examples):
    _assert_close(g, reference_apply(cp, variables, frozen, e), rtol=2e-4, atol=2e-5)


def _input_size(program, fresh: dict, library: dict) -> int:
  """Element size of the program's input: that of the innermost (first applied) stage."""
  node = program
  while isinstance(node, P.Compose):
    node = node.g
  while isinstance(node, (P.Repeat, P.Map, P.Conv)):
    node = node.fn
  while isinstance(node, P.Compose):
    node = node.g
  name = node.name
  text = fresh[name] if name in fresh else library[name][0]
  arg = parse_type(text.split(" -> ")[0])
  return (arg.elem if hasattr(arg, "elem") else arg).shape[0]
