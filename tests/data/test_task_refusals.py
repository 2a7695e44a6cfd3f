"""`hx.Task.from_arrays` beyond `test_task.py`: the rest of the bad inputs a user's arrays can hold, each one
`ValueError` naming the split, the array and the problem; the indices it writes never leave the table
(and a task made by hand whose indices do is refused); and it makes one copy of the data, no more."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

import hx
from hx.lang.values import ListBatch, Split

IMAGE = "Tensor<real>[1][8][8] -> Tensor<bool>[1]"
VECTOR = "Tensor<real>[3] -> Tensor<real>[1]"
LIST = "List<Tensor<real>[2]> -> Tensor<real>[1]"
GRAPH = "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[1]>"


def vectors(n: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  return rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=n).astype(np.float32)


def vector_task(train=None, val=None, test=None, type=VECTOR, **options):
  pick = lambda given, seed: vectors(4, seed) if given is None else given  # noqa: E731
  return hx.Task.from_arrays("v", type, pick(train, 0), pick(val, 1), pick(test, 2), **options)


def one_list():
  return [np.ones((2, 2))], [1.0]


def one_graph():
  return [{"nodes": np.ones((2, 1)), "edges": [[0, 1]]}], [np.ones(2)]


def test_targets_of_shape_n_are_read_as_n_1_for_a_one_component_output_only():
  x, y = vectors(4)
  task = vector_task(train=(x, y))
  assert task.train.targets.shape == (4, 1)
  np.testing.assert_array_equal(task.train.targets[:, 0], y)
  with pytest.raises(ValueError, match=r"train split: targets has shape \(4,\), not \(n, 2\) as "
                                       r"Tensor<real>\[2\] needs"):
    vector_task(type="Tensor<real>[3] -> Tensor<real>[2]", train=(x, y),
                val=(x, np.ones((4, 2))), test=(x, np.ones((4, 2))))


@pytest.mark.parametrize("type, targets, message", [
    (IMAGE, np.full(4, 0.5), r"targets hold 0.5; Tensor<bool>\[1\] takes 0/1 labels"),
    (IMAGE, -np.ones(4), r"targets hold -1; Tensor<bool>\[1\] takes 0/1 labels"),
    ("Tensor<real>[1][8][8] -> Tensor<bool>[3]", [0, 1, 1.5, 2], r"targets are not whole numbers; "
                                                               r"Tensor<bool>\[3\] takes class indices 0..2"),
    ("Tensor<real>[1][8][8] -> Tensor<bool>[3]", [0, -1, 1, 2], r"targets range over -1..2"),
])
def test_labels_outside_the_outputs_range_are_refused(type, targets, message):
  x = np.zeros((4, 1, 8, 8), np.float32)
  ok = (x, [0, 1, 0, 1])
  with pytest.raises(ValueError, match=r"task 't', train split: " + message):
    hx.Task.from_arrays("t", type, (x, targets), ok, ok)


@pytest.mark.parametrize("where, make, message", [
    ("inputs", lambda x, y: (x.astype(complex), y), r"train split: inputs has dtype complex128; give real"),
    ("targets", lambda x, y: (x, y * 1j), r"train split: targets has dtype complex64; give real"),
    ("inputs", lambda x, y: (np.where(np.arange(3) == 1, 1e39, x.astype(np.float64)), y),
     r"train split: inputs holds 1e\+39 at index \(0, 1\); every value must be finite in float32"),
    ("targets", lambda x, y: (x, np.where(np.arange(4) == 3, -1e300, y.astype(np.float64))),
     r"train split: targets holds -1e\+300 at index \(3,\); every value must be finite in float32"),
    ("inputs", lambda x, y: (np.where(np.arange(3) == 2, -np.inf, x), y),
     r"train split: inputs holds -inf at index \(0, 2\); every value must be finite$"),
    ("inputs", lambda x, y: (x.astype("datetime64[s]"), y), r"train split: inputs has dtype datetime64"),
])
def test_values_that_float32_cannot_hold_are_refused_not_cast(where, make, message):
  """Values beyond float32's range would be inf in the table (the check ran on the float64 array), and
  complex ones would lose their imaginary part."""
  x, y = vectors(4)
  with pytest.raises(ValueError, match=message):
    vector_task(train=make(x, y))


def test_nan_in_a_list_element_or_a_graph_node_names_which():
  lists = [np.ones((2, 2)), np.array([[1.0, np.nan]])]
  with pytest.raises(ValueError, match=r"val split: list 1 of the inputs holds nan at index \(0, 1\)"):
    hx.Task.from_arrays("l", LIST, one_list(), (lists, [1, 2]), one_list())
  graph = {"nodes": np.array([[1.0], [np.inf]]), "edges": [[0, 1]]}
  with pytest.raises(ValueError, match=r"test split: graph 0 of the inputs's nodes holds inf at index "
                                       r"\(1, 0\)"):
    hx.Task.from_arrays("g", GRAPH, one_graph(), one_graph(), ([graph], [np.ones(2)]))


@pytest.mark.parametrize("inputs, message", [
    # The layout one wrote by hand before there was from_arrays: indices into a table of one's own.
    (np.arange(3, dtype=np.int32), r"inputs has shape \(3,\), not \(n, L, 2\)"),
    (ListBatch(np.zeros((3, 4), np.int32), np.ones((3, 4), bool)),
     r"inputs' values has shape \(3, 4\), not \(n, L, 2\)"),
    ([], r"inputs hold no example; every split needs one at least"),
])
def test_a_list_type_refuses_plain_indices_and_no_example(inputs, message):
  with pytest.raises(ValueError, match=r"task 'l', train split: " + message):
    hx.Task.from_arrays("l", LIST, (inputs, np.ones(3)), one_list(), one_list())


def test_inputs_and_targets_of_different_lengths_name_the_split():
  with pytest.raises(ValueError, match=r"task 'l', test split: 2 targets for 3 inputs; give one per example"):
    hx.Task.from_arrays("l", LIST, one_list(), one_list(), ([np.ones((1, 2))] * 3, [1.0, 2.0]))
  x, y = vectors(4)
  with pytest.raises(ValueError, match=r"task 'v', val split: 5 targets for 4 inputs"):
    vector_task(val=(x, np.ones(5)))


def test_per_element_targets_given_as_one_value_ask_for_one_per_element():
  t = "List<Tensor<real>[2]> -> List<Tensor<real>[1]>"
  ok = ([np.ones((2, 2))], [np.ones(2)])
  with pytest.raises(ValueError, match=r"targets of example 0 is a single value \(3.0\); give one per list "
                                       r"element"):
    hx.Task.from_arrays("l", t, ([np.ones((2, 2))], [3.0]), ok, ok)


def test_a_graph_without_edges_may_give_them_as_an_empty_list():
  lonely = {"nodes": np.ones((2, 1)), "edges": []}
  task = hx.Task.from_arrays("g", GRAPH, ([lonely], [np.ones(2)]), one_graph(), one_graph())
  assert not task.train.inputs.edge_mask.any() and task.train.inputs.mask.sum() == 2


@pytest.mark.parametrize("graph, message", [
    ({"nodes": np.ones((0, 1)), "edges": []}, r"graph 0 of the inputs has no node"),
    ({"nodes": np.ones((2, 1)), "neighbours": [[0.5], [0]]},
     r"graph 0 of the inputs's neighbours of node 0 must be a list of node numbers \(integers\)"),
    ({"nodes": np.ones((2, 1)), "neighbours": [["a"], [0]]},
     r"graph 0 of the inputs's neighbours of node 0 has dtype <U1"),
    ({"nodes": np.ones((2, 1)), "neighbours": 3}, r"graph 0 of the inputs's neighbours must be one list per "
                                                  r"node"),
])
def test_graphs_without_nodes_or_with_malformed_neighbours_are_refused(graph, message):
  with pytest.raises(ValueError, match=r"task 'g', train split: " + message):
    hx.Task.from_arrays("g", GRAPH, ([graph], [np.ones(2)]), one_graph(), one_graph())


@pytest.mark.parametrize("component", ["1", 0.5, True])
def test_a_metric_component_must_be_an_integer(component):
  two = "Tensor<real>[3] -> Tensor<real>[2]"
  pair = (vectors(4)[0], np.ones((4, 2)))
  with pytest.raises(ValueError, match=r"task 'v': metric_component must be an integer \(a component of "
                                       r"Tensor<real>\[2\]\), got "):
    vector_task(train=pair, val=pair, test=pair, type=two, metric_component=component)
  task = vector_task(train=pair, val=pair, test=pair, type=two, metric_component=np.int64(1))
  assert type(task.metric_component) is int and type(task.spec.metric_component) is int


def test_a_type_or_training_of_the_wrong_kind_is_refused():
  with pytest.raises(ValueError, match=r"task 'v': the type must be text or an hx.Type, got a int"):
    vector_task(type=3)
  with pytest.raises(ValueError, match=r"task 'v': training settings must be a mapping of TuneConfig fields"):
    vector_task(training=5)


def _indices(inputs) -> np.ndarray:
  return np.asarray(getattr(inputs, "values", inputs))


@pytest.mark.parametrize("type, split", [
    (VECTOR, lambda k: vectors(k, k)),
    (LIST, lambda k: ([np.ones((1 + i % 3, 2)) for i in range(k)], np.ones(k))),
    (GRAPH, lambda k: ([{"nodes": np.ones((1 + i % 4, 1)), "edges": []} for i in range(k)],
                       [np.ones(1 + i % 4) for i in range(k)])),
])
def test_every_index_the_task_writes_is_a_row_of_its_table(type, split):
  task = hx.Task.from_arrays("t", type, split(7), split(3), split(5))
  rows = 0
  for s in (task.train, task.val, task.test):
    index = _indices(s.inputs)
    assert np.issubdtype(index.dtype, np.integer) and index.min() >= 0 and index.max() < len(task.table)
    real = index[s.inputs.mask] if hasattr(s.inputs, "mask") else index
    rows += len(np.unique(real))
  assert rows == len(task.table)  # each element has its own row, and no split shares one


def test_a_task_made_by_hand_with_an_index_past_its_table_is_refused():
  """A gather clamps an index past the table's end: the task would train on its last row, silently."""
  task = vector_task()
  assert list(task.val.inputs) == [4, 5, 6, 7]
  with pytest.raises(ValueError, match=r"task 'v', val split: inputs index rows 12..15 of a table of 12 rows "
                                       r"\(0..11\)"):
    dataclasses.replace(task, val=Split(task.val.inputs + 8, task.val.targets))
  with pytest.raises(ValueError, match=r"task 'v', train split: inputs index rows -1..2"):
    dataclasses.replace(task, train=Split(task.train.inputs - 1, task.train.targets))
  with pytest.raises(ValueError, match=r"task 'v', test split: inputs must be integer row indices into the "
                                       r"task's table, got float32"):
    dataclasses.replace(task, test=Split(task.test.inputs.astype(np.float32), task.test.targets))
  lists = hx.Task.from_arrays("l", LIST, one_list(), one_list(), one_list())
  batch = lists.test.inputs
  with pytest.raises(ValueError, match=r"task 'l', test split: inputs index rows 6..7 of a table of 6 rows"):
    dataclasses.replace(lists, test=Split(batch._replace(values=batch.values + 2), lists.test.targets))


def _peak_bytes(make) -> tuple[int, hx.Task]:
  tracemalloc.start()
  try:
    task = make()
    return tracemalloc.get_traced_memory()[1], task
  finally:
    tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_the_users_data_is_copied_once_into_the_table(dtype):
  """The only array as large as the data that `from_arrays` allocates is the table (NumPy reports its
  allocations to tracemalloc): no concatenation per split, no cast of the whole, no mask of its values."""
  rng = np.random.default_rng(0)
  images = [(rng.normal(size=(k, 1, 28, 28)) * 50).astype(dtype) for k in (2000, 500, 500)]
  splits = [(x, np.arange(len(x)) % 2) for x in images]
  peak, task = _peak_bytes(lambda: hx.Task.from_arrays("m", "Tensor<real>[1][28][28] -> Tensor<bool>[1]",
                                                       *splits))
  assert task.table.nbytes == 3000 * 28 * 28 * 4
  assert peak < 1.1 * task.table.nbytes, (peak, task.table.nbytes)
  lists = [[x[i:i + 1 + i % 4] for i in range(0, len(x) - 4, 4)] for x in images]
  list_splits = [(ls, np.array([len(v) for v in ls], np.float32)) for ls in lists]
  peak, task = _peak_bytes(lambda: hx.Task.from_arrays(
      "l", "List<Tensor<real>[1][28][28]> -> Tensor<real>[1]", *list_splits))
  assert peak < 1.1 * task.table.nbytes, (peak, task.table.nbytes)


def test_a_task_made_by_hand_is_held_to_the_layout_its_type_needs():
  """The failures a hand-made task once met only inside a trace (a list task's plain indices: an
  AttributeError on a tracer; (n,) targets: broadcast against (n, 1) outputs and trained silently wrong;
  images of another shape than the type's: an XLA shape error) are one ValueError when it is made."""
  listed = hx.Task.from_arrays("l", LIST, *[([np.ones((2, 2), np.float32)] * 3, np.ones(3))] * 3)
  with pytest.raises(ValueError, match=r"task 'l', train split: a List<Tensor<real>\[2\]> argument takes a "
                                       r"hx.lang.values.ListBatch"):
    dataclasses.replace(listed, train=Split(np.zeros(3, np.int32), listed.train.targets))
  task = vector_task()
  flat = task.train.targets[:, 0]
  with pytest.raises(ValueError, match=r"task 'v', train split: targets have shape \(4,\), not \(4, 1\) as "
                                       r"Tensor<real>\[1\] needs for 4 examples; \(n,\) targets"):
    dataclasses.replace(task, train=Split(task.train.inputs, flat))
  with pytest.raises(ValueError, match=r"task 'v': its table holds elements of shape \(3, 1\), but its type"):
    dataclasses.replace(task, table=task.table[:, :, None])
  with pytest.raises(ValueError, match=r"task 'v', val split: a Tensor<real>\[3\] argument takes \(n,\) row "
                                       "indices"):
    dataclasses.replace(task, val=Split(task.val.inputs[:, None], task.val.targets))
  labelled = (vectors(4)[0], [0, 1, 2, 1])
  classes = hx.Task.from_arrays("c", "Tensor<real>[3] -> Tensor<bool>[3]", labelled, labelled, labelled)
  with pytest.raises(ValueError, match=r"targets of Tensor<bool>\[3\] are class indices"):
    dataclasses.replace(classes, test=Split(classes.test.inputs, classes.test.targets.astype(np.float32)))
