"""Frozen prefixes (`hx.compile.memo`): splitting programs, and training on a prefix table giving the same
losses, gradients and scores as running the library functions inside every step; stale tables never
reused."""

import dataclasses

import chex
import jax
import numpy as np
import pytest

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, make_frozen, tune
from hx.compile.memo import PrefixTables, apply_prefix, frozen_prefix, referenced_rows
from hx.data import Sources, TaskSizes, build_task, task_spec
from hx.lang import parse
from hx.lang.types import parse_type
from hx.synth.library import Library, Trained

T = parse_type
SMALL = ModuleConfig(mlp_hidden=32, cnn_channels=(4, 8), lstm_hidden=8)
FEATURES = T("Tensor<real>[128]")  # 8 channels of 4x4


@pytest.mark.parametrize("text,names,rest", [
    ("compose(nn_a, map_l(compose(nn_b, lib.cnn)))", ("cnn",), "compose(nn_a, map_l(nn_b))"),
    ("compose(conv_g^10(nn_k), map_g(compose(lib.f, lib.g)))", ("f", "g"), "repeat(10, conv_g(nn_k))"),
    ("compose(nn_a, lib.cnn)", ("cnn",), "nn_a"),
    ("compose(nn_a, compose(lib.mlp, lib.cnn))", ("mlp", "cnn"), "nn_a"),
    ("compose(fold_l(nn_s, zeros(1)), map_l(lib.cnn))", ("cnn",), "fold_l(nn_s, zeros(1))"),
    ("compose(nn_a, map_l(compose(lib.f, compose(nn_b, lib.cnn))))", ("cnn",),
     "compose(nn_a, map_l(compose(lib.f, nn_b)))"),
    # Library functions only: the outermost stays, to score on the table.
    ("map_l(compose(lib.f, lib.g))", ("g",), "map_l(lib.f)"),
    ("compose(lib.mlp, lib.cnn)", ("cnn",), "lib.mlp"),
    ("map_g(compose(lib.f, compose(lib.g, lib.h)))", ("g", "h"), "map_g(lib.f)"),
    ("compose(lib.f, map_l(compose(lib.g, lib.h)))", ("g", "h"), "lib.f"),
    # Nothing to split: no library function first, or one library function alone.
    ("compose(nn_a, map_l(compose(lib.f, nn_b)))", (), None),
    ("compose(lib.mlp, nn_b)", (), None),
    ("lib.cnn", (), None),
    ("map_g(lib.f)", (), None),
])
def test_frozen_prefix(text, names, rest):
  program = parse(text)
  got_names, got_rest = frozen_prefix(program)
  assert got_names == names
  assert got_rest == (program if rest is None else parse(rest))


def _library(seed: int) -> Library:
  """A library holding a CNN (image -> features) and an MLP (features -> bool), random but frozen."""
  p = parse("compose(nn_m, nn_c)")
  types = {"nn_m": T(f"{FEATURES} -> Tensor<bool>[1]"), "nn_c": T(f"Tensor<real>[1][28][28] -> {FEATURES}")}
  compiled = compile_program(p, types, SMALL)
  variables = compiled.init(jax.random.key(seed))
  # Non-trivial running statistics, as a trained network has.
  variables["batch_stats"] = jax.tree.map(lambda a: a + 0.3, variables["batch_stats"])
  return Library().add(Trained(compiled, variables), sequence="t", task="t").library


@pytest.fixture(scope="module")
def count_task():
  sizes = TaskSizes(lists=(150, 60, 60))
  return build_task(task_spec("count_digit(2)"), Sources(), sizes, 0)


def _assert_same_training(r_split, r_whole) -> None:
  """The same per-epoch losses and scores, test score and trained parameters, up to rounding."""
  losses = [(e.train_loss, e.val_loss, e.val_score) for e in r_whole.history]
  np.testing.assert_allclose([(e.train_loss, e.val_loss, e.val_score) for e in r_split.history], losses,
                             rtol=2e-4)
  np.testing.assert_allclose(r_split.test_score, r_whole.test_score, rtol=2e-4)
  chex.assert_trees_all_close(r_split.variables, r_whole.variables, rtol=2e-3, atol=2e-5)


@pytest.mark.slow
def test_prefix_table_matches_the_library_function_inside_the_program(count_task):
  lib = _library(0)
  table = count_task.table[:300]  # the 5k digits' table has more rows than the task uses
  out = apply_prefix(("nn_t_1", "nn_t_2"), lib.specs(), lib.variables(), table, chunk=128)
  compiled = compile_program(parse("compose(lib.nn_t_1, lib.nn_t_2)"), {}, SMALL, lib.specs())
  direct = compiled.apply({"params": (), "batch_stats": ()}, compiled.make_frozen(lib.variables()),
                          table, train=False)
  assert out.shape == (300, 1) and out.dtype == np.float32
  np.testing.assert_allclose(np.asarray(out), np.asarray(direct), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["compose(nn_a, map_l(compose(nn_b, lib.nn_t_2)))",
                                  "compose(nn_a, map_l(compose(lib.nn_t_1, lib.nn_t_2)))"])
def test_training_on_the_prefix_table_equals_training_the_whole_program(count_task, text):
  lib = _library(0)
  program = parse(text)
  fresh = {"nn_a": T("List<Tensor<bool>[1]> -> Tensor<real>[1]"), "nn_b": T(f"{FEATURES} -> Tensor<bool>[1]")}
  fresh = {n: t for n, t in fresh.items() if n in text}
  data = TuneData(count_task.train, count_task.val, count_task.test, count_task.table)
  config = TuneConfig(epochs=2, batch_size=50, seed=3)
  whole = compile_program(program, fresh, SMALL, lib.specs())
  r_whole = tune(whole, make_frozen(whole, lib.variables()), data, count_task.objective, config)
  names, rest = frozen_prefix(program)
  assert names
  tables = PrefixTables()
  split = compile_program(rest, fresh, SMALL, lib.specs())
  assert split.fresh_slots == whole.fresh_slots
  # As hx.synth trains it: the prefix on the rows the splits read only (the others 0, never read).
  rows = referenced_rows(data.train.inputs, data.val.inputs, data.test.inputs)
  assert 0 < rows.size < data.table.shape[0]
  table = tables.table_for(lib, names, data)
  # Found once per data object: a second candidate of the task gets the same table.
  assert tables.table_for(lib, names, data) is table and (tables.hits, tables.misses) == (1, 1)
  outside = np.setdiff1d(np.arange(data.table.shape[0]), rows)
  assert not np.asarray(table)[outside].any() and np.asarray(table)[rows].any()
  r_split = tune(split, make_frozen(split, lib.variables()), data._replace(table=table), count_task.objective,
                 config)
  _assert_same_training(r_split, r_whole)


def test_the_referenced_rows_are_every_index_of_every_split(count_task):
  splits = (count_task.train, count_task.val, count_task.test)
  rows = referenced_rows(*(s.inputs for s in splits))
  expect = np.unique(np.concatenate([np.asarray(s.inputs.values).reshape(-1) for s in splits]))
  np.testing.assert_array_equal(rows, expect)
  np.testing.assert_array_equal(referenced_rows(count_task.train.inputs, None),
                                np.unique(np.asarray(count_task.train.inputs.values)))
  # Inputs that hold values, not indices: every row may be read.
  assert referenced_rows(count_task.train.inputs, np.zeros((3, 2), np.float32)) is None


def test_a_prefix_on_some_rows_computes_those_and_zeros_the_others(count_task):
  lib = _library(0)
  table = count_task.table[:50]
  full = np.asarray(apply_prefix(("nn_t_2",), lib.specs(), lib.variables(), table, chunk=16))
  part = np.asarray(apply_prefix(("nn_t_2",), lib.specs(), lib.variables(), table, rows=[40, 3, 3, 17],
                                 chunk=16))
  assert part.shape == full.shape == (50, 128)
  np.testing.assert_allclose(part[[3, 17, 40]], full[[3, 17, 40]], rtol=1e-5, atol=1e-6)
  assert not np.delete(part, [3, 17, 40], axis=0).any()
  none = np.asarray(apply_prefix(("nn_t_2",), lib.specs(), lib.variables(), table, rows=[]))
  assert none.shape == (50, 128) and not none.any()
  with pytest.raises(ValueError, match="rows must index the table's 50 rows, got 3..50"):
    apply_prefix(("nn_t_2",), lib.specs(), lib.variables(), table, rows=[3, 50])
  # Memoised per set of rows: the same rows in another order share a table, others do not.
  tables = PrefixTables()
  a = tables.table(lib, ("nn_t_2",), table, [3, 17, 40])
  assert tables.table(lib, ("nn_t_2",), table, np.array([40, 17, 3, 3])) is a
  assert tables.table(lib, ("nn_t_2",), table, [3, 17]) is not a
  assert tables.table(lib, ("nn_t_2",), table) is not a
  assert (tables.hits, tables.misses) == (1, 3)


def test_tables_are_shared_and_a_replaced_function_never_reuses_a_stale_table(count_task):
  lib, retrained = _library(0), _library(1)
  tables = PrefixTables()
  a = tables.table(lib, ("nn_t_2",), count_task.table)
  b = tables.table(lib, ("nn_t_2",), count_task.table)
  assert a is b and (tables.hits, tables.misses) == (1, 1)
  # Same contents in another array: the same table.
  assert tables.table(lib, ("nn_t_2",), np.array(count_task.table)) is a
  # The same name with other parameters (a retrained function): another version, a new table.
  assert lib.versions()["nn_t_2"] != retrained.versions()["nn_t_2"]
  c = tables.table(retrained, ("nn_t_2",), count_task.table)
  assert tables.misses == 2 and not np.allclose(np.asarray(a), np.asarray(c))
  expect = apply_prefix(("nn_t_2",), retrained.specs(), retrained.variables(), count_task.table)
  np.testing.assert_allclose(np.asarray(c), np.asarray(expect), rtol=1e-6)
  # Another table (e.g. another task's images): another entry.
  d = tables.table(lib, ("nn_t_2",), count_task.table[:10])
  assert d.shape[0] == 10 and tables.misses == 3
  # Bounded: the least recently used table goes first.
  small = PrefixTables(max_entries=1)
  small.table(lib, ("nn_t_2",), count_task.table[:10])
  small.table(lib, ("nn_t_2",), count_task.table[:20])
  small.table(lib, ("nn_t_2",), count_task.table[:10])
  assert (small.hits, small.misses) == (0, 3)
  assert dataclasses.is_dataclass(SMALL)


@pytest.fixture(scope="module")
def grid_task():
  sizes = TaskSizes(grids_train=((3, 40), (4, 60)), grids_val=((5, 20),), grids_test=((5, 20),))
  return build_task(task_spec("shortest_path_mnist"), Sources(), sizes, 0)


def _grid_library() -> Library:
  """A regressor nn_g_1 ∘ nn_g_2 from a grid's cell images to cell states, random but frozen."""
  state = T("Tensor<real>[2]")
  p = parse("compose(nn_m, nn_c)")
  image = T("Tensor<real>[3][28][28]")
  compiled = compile_program(p, {"nn_m": T(f"{FEATURES} -> {state}"), "nn_c": T(f"{image} -> {FEATURES}")},
                             SMALL)
  variables = compiled.init(jax.random.key(5))
  variables["batch_stats"] = jax.tree.map(lambda a: a + 0.3, variables["batch_stats"])
  return Library().add(Trained(compiled, variables), sequence="g", task="g").library


@pytest.mark.slow
def test_a_program_of_library_functions_alone_is_scored_on_the_table_of_all_but_the_last(grid_task):
  """map_g(lib.f ∘ lib.g), a candidate without parameters: scored as map_g(lib.f) on lib.g's table,
  with the validation and test scores of running both on every cell."""
  lib = _grid_library()
  program = parse("map_g(compose(lib.nn_g_1, lib.nn_g_2))")
  names, rest = frozen_prefix(program)
  assert (names, rest) == (("nn_g_2",), parse("map_g(lib.nn_g_1)"))
  data = TuneData(grid_task.train, grid_task.val, grid_task.test, grid_task.table)
  config = TuneConfig(epochs=2, batch_size=25, seed=1)
  whole = compile_program(program, {}, SMALL, lib.specs())
  r_whole = tune(whole, make_frozen(whole, lib.variables()), data, grid_task.objective, config)
  split = compile_program(rest, {}, SMALL, lib.specs())
  table = PrefixTables().table(lib, names, data.table)
  assert table.shape == (grid_task.table.shape[0], 128)
  r_split = tune(split, make_frozen(split, lib.variables()), data._replace(table=table), grid_task.objective,
                 config)
  assert r_whole.steps_run == r_split.steps_run == 0 and np.isfinite(r_whole.val_score)
  np.testing.assert_allclose(r_split.val_score, r_whole.val_score, rtol=1e-4)
  np.testing.assert_allclose(r_split.test_score, r_whole.test_score, rtol=1e-4)


@pytest.mark.slow  # ~20 s; the list case above stays in the fast suite
def test_training_a_grid_program_on_its_prefix_table_equals_training_the_whole_program(grid_task):
  """map_g(lib.f ∘ lib.g) on the cells of the grids hx.data builds: the regressor's table instead of the
  CNN and MLP on every cell of every step, with the same losses, scores and parameters."""
  state = T("Tensor<real>[2]")
  lib = _grid_library()
  program = parse("compose(repeat(2, conv_g(nn_k)), map_g(compose(lib.nn_g_1, lib.nn_g_2)))")
  fresh = {"nn_k": T(f"List<{state}> -> {state}")}
  data = TuneData(grid_task.train, grid_task.val, grid_task.test, grid_task.table)
  config = TuneConfig(epochs=2, batch_size=25, seed=1)
  whole = compile_program(program, fresh, SMALL, lib.specs())
  r_whole = tune(whole, make_frozen(whole, lib.variables()), data, grid_task.objective, config)
  names, rest = frozen_prefix(program)
  assert names == ("nn_g_1", "nn_g_2")
  split = compile_program(rest, fresh, SMALL, lib.specs())
  table = PrefixTables().table(lib, names, data.table)
  assert table.shape == (grid_task.table.shape[0], 2)
  r_split = tune(split, make_frozen(split, lib.variables()), data._replace(table=table), grid_task.objective,
                 config)
  _assert_same_training(r_split, r_whole)


def test_prefixes_of_one_structure_share_one_executable_and_give_each_functions_outputs(count_task):
  import hx.compile.memo as memo

  first, second = _library(0), _library(1)  # the same architecture, other weights, other names
  specs = {n.replace("nn_t", "nn_u"): s for n, s in second.specs().items()}
  variables = {n.replace("nn_t", "nn_u"): v for n, v in second.variables().items()}
  table = count_task.table[:64]
  memo._RUNS.clear()
  a = np.asarray(apply_prefix(("nn_t_1", "nn_t_2"), first.specs(), first.variables(), table))
  b = np.asarray(apply_prefix(("nn_u_1", "nn_u_2"), specs, variables, table))
  assert len(memo._RUNS) == 1  # traced and compiled once
  alone = np.asarray(apply_prefix(("nn_t_1", "nn_t_2"), second.specs(), second.variables(), table))
  np.testing.assert_array_equal(b, alone)  # each call's own weights, whatever the names
  assert not np.array_equal(a, b)
