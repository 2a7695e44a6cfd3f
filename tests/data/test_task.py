"""Tasks from a user's arrays (`hx.Task.from_arrays`): the layout they get and every refusal."""

from __future__ import annotations

import numpy as np
import pytest

import hx
from hx.data.task import ArrayTaskSpec
from hx.lang.values import EdgeGraphBatch, ListBatch, gather
from hx.presets import task_tune_config

IMAGE = "Tensor<real>[1][8][8] -> Tensor<bool>[1]"


def images(n: int, seed: int = 0) -> np.ndarray:
  return np.random.default_rng(seed).normal(size=(n, 1, 8, 8)).astype(np.float32)


def labels(n: int) -> np.ndarray:
  return np.arange(n) % 2


def splits(n=(12, 4, 4)):
  return [(images(k, i), labels(k)) for i, k in enumerate(n)]


def test_a_tensor_task_is_one_table_indexed_by_its_splits():
  (xt, yt), (xv, yv), (xs, ys) = splits()
  task = hx.Task.from_arrays("is odd", IMAGE, (xt, yt), (xv, yv), (xs, ys), training={"epochs": 3})
  assert isinstance(task.spec, ArrayTaskSpec) and task.spec.kind == "is_odd"
  assert task.table.dtype == np.float32 and task.table.shape == (20, 1, 8, 8)
  np.testing.assert_array_equal(task.table, np.concatenate([xt, xv, xs]))
  assert task.train.inputs.dtype == np.int32
  np.testing.assert_array_equal(gather(task.table, task.val.inputs), xv)
  assert task.train.targets.shape == (12, 1) and task.train.targets.dtype == np.float32
  np.testing.assert_array_equal(task.test.targets[:, 0], ys)
  assert (task.loss, task.metric) == ("bce", "error")
  assert task.objective.loss == "bce"
  assert task_tune_config(task.spec).epochs == 3 and task_tune_config(task.spec).batch_size == 150
  # Printing a task prints its summary, not its arrays.
  assert repr(task).startswith("Task(is odd : Tensor<real>[1][8][8] -> Tensor<bool>[1]; loss bce")
  assert "array" not in repr(task)
  assert task.with_fraction(0.5).train.targets.shape == (6, 1)


def test_ragged_lists_are_padded_indices_into_their_elements():
  rng = np.random.default_rng(0)
  lists = [rng.normal(size=(k, 3)).astype(np.float32) for k in (1, 3, 2)]
  counts = np.array([1.0, 3.0, 2.0])
  task = hx.Task.from_arrays("count", "List<Tensor<real>[3]> -> Tensor<real>[1]", (lists, counts),
                             ([lists[0]], [1.0]), ([lists[1]], [3.0]))
  batch = task.train.inputs
  assert isinstance(batch, ListBatch) and batch.values.shape == (3, 3)
  np.testing.assert_array_equal(batch.mask, [[1, 0, 0], [1, 1, 1], [1, 1, 0]])
  got = gather(task.table, batch)
  for i, x in enumerate(lists):
    np.testing.assert_array_equal(got.values[i, :len(x)], x)
  assert task.table.shape == (6 + 1 + 3, 3)
  assert task.train.targets.shape == (3, 1)  # (n,) targets of a Tensor<real>[1] output read as (n, 1)
  # A dense (n, L, ...) array is n lists of length L; a ListBatch keeps its mask.
  dense = hx.Task.from_arrays("d", "List<Tensor<real>[3]> -> Tensor<real>[1]", (np.ones((2, 4, 3)), [1, 2]),
                              (np.ones((1, 4, 3)), [1]), (ListBatch(np.ones((1, 4, 3)),
                                                                    np.array([[1, 1, 0, 0]], bool)), [1]))
  assert dense.train.inputs.mask.all() and dense.test.inputs.mask.sum() == 2


def test_graphs_from_edges_or_neighbours_and_per_node_targets():
  nodes = np.arange(6, dtype=np.float32).reshape(3, 2)
  by_edges = {"nodes": nodes, "edges": [[0, 1], [1, 0], [1, 2], [2, 1]]}
  by_lists = {"nodes": nodes[:2], "neighbours": [[1], [0]]}
  t = "Graph<Tensor<real>[2]> -> Graph<Tensor<real>[1]>"
  task = hx.Task.from_arrays("g", t, ([by_edges, by_lists], [np.ones(3), np.zeros(2)]),
                             ([by_lists], [np.ones(2)]), ([by_edges], [np.ones(3)]))
  g = task.train.inputs
  assert isinstance(g, EdgeGraphBatch) and g.values.shape == (2, 8)  # padded to the size bucket
  np.testing.assert_array_equal(g.mask.sum(axis=1), [3, 2])
  np.testing.assert_array_equal(g.senders[0, :4], [0, 1, 1, 2])
  np.testing.assert_array_equal(g.receivers[1, :2], [0, 1])  # node u receives from its neighbours
  np.testing.assert_array_equal(gather(task.table, g).values[0, :3], nodes)
  assert task.train.targets.shape == (2, 8, 1) and task.train.targets[1, :2].sum() == 0
  assert task.objective.per_element


def test_class_indices_for_a_many_class_output():
  x = np.ones((4, 5), np.float32)
  task = hx.Task.from_arrays("c", "Tensor<real>[5] -> Tensor<bool>[3]", (x, [0, 1, 2, 1]), (x, [0, 0, 0, 0]),
                             (x, [2, 2, 2, 2]))
  assert task.train.targets.dtype == np.int32 and task.train.targets.shape == (4,)
  assert (task.loss, task.metric) == ("ce", "error")


def bad(*, type=IMAGE, train=None, val=None, test=None, **options):
  (xt, yt), (xv, yv), (xs, ys) = splits()
  pick = lambda given, default: default if given is None else given  # noqa: E731
  return hx.Task.from_arrays("t", type, pick(train, (xt, yt)), pick(val, (xv, yv)), pick(test, (xs, ys)),
                             **options)


@pytest.mark.parametrize("call, message", [
    (lambda: bad(train=(images(12)[:, 0], labels(12))),
     r"train split: inputs has shape \(12, 8, 8\), not \(n, 1, 8, 8\).*add the channel axis"),
    (lambda: bad(train=(images(12).transpose(0, 2, 3, 1), labels(12))), r"not \(n, 1, 8, 8\)"),
    (lambda: bad(val=(images(4).reshape(4, 1, 4, 16), labels(4))), r"val split: inputs has shape"),
    (lambda: bad(train=(np.full((12, 1, 8, 8), "a"), labels(12))), r"train split: inputs has dtype <U1"),
    (lambda: bad(test=(np.where(np.arange(4)[:, None, None, None] == 2, np.nan, images(4)), labels(4))),
     r"test split: inputs holds nan at index \(2, 0, 0, 0\)"),
    (lambda: bad(train=(images(12), np.arange(12) % 10)), r"train split: targets hold 0, 1, 2.*0/1 labels"),
    (lambda: bad(train=(images(12), labels(11))), r"train split: 11 targets for 12 inputs"),
    (lambda: bad(val=(images(0), labels(0))), r"val split: inputs hold no example"),
    (lambda: bad(loss="mse"), r"loss 'mse' does not fit the output type Tensor<bool>\[1\]"),
    (lambda: bad(metric="rmse"), r"metric 'rmse' does not fit"),
    (lambda: bad(training={3: 3}), r"training settings are named by text"),
    (lambda: bad(type="Tensor<real>[1][8][8] -> 'a"), r"type variables"),
    (lambda: bad(type="Tensor<real>[1][8][8] -> Tensor<real>[1] -> Tensor<bool>[1]"),
     r"exactly one argument"),
    (lambda: bad(train=images(12)), r"the train split must be an \(inputs, targets\) pair"),
    (lambda: bad(type="Tensor<real>[5] -> Tensor<bool>[3]", train=(np.ones((2, 5)), np.eye(3)[[0, 1]]),
                 val=(np.ones((1, 5)), [0]), test=(np.ones((1, 5)), [0])),
     r"one-hot\? give the class indices"),
    (lambda: bad(type="Tensor<real>[5] -> Tensor<bool>[3]", train=(np.ones((2, 5)), [0, 3]),
                 val=(np.ones((1, 5)), [0]), test=(np.ones((1, 5)), [0])), r"range over 0..3.*0..2"),
    (lambda: bad(type="Tensor<real>[1] -> Tensor<real>[1]", train=(np.ones((2, 1)), [np.inf, 1]),
                 val=(np.ones((1, 1)), [0]), test=(np.ones((1, 1)), [0])), r"targets holds inf"),
])
def test_bad_arrays_are_one_value_error_naming_split_array_and_problem(call, message):
  with pytest.raises(ValueError, match=message):
    call()


LIST = "List<Tensor<real>[2]> -> Tensor<real>[1]"


@pytest.mark.parametrize("inputs, message", [
    ([np.ones((2, 2)), np.ones((0, 2))], r"list 1 of the inputs is empty"),
    ([np.ones((2, 3))], r"list 0 of the inputs has shape \(2, 3\), not \(L, 2\)"),
    (np.ones((2, 2)), r"inputs has shape \(2, 2\), not \(n, L, 2\)"),  # plain rows for a list type
    (ListBatch(np.ones((1, 3, 2)), np.array([[False, True, True]])), r"mask of list 0 is \[0, 1, 1\]"),
    (5, r"inputs of a List type must be a sequence"),
])
def test_bad_lists_are_refused(inputs, message):
  n = 1 if isinstance(inputs, ListBatch) or (isinstance(inputs, list) and len(inputs) == 1) else 2
  with pytest.raises(ValueError, match=message):
    hx.Task.from_arrays("l", LIST, (inputs, np.ones(n)), ([np.ones((1, 2))], [1]), ([np.ones((1, 2))], [1]))


@pytest.mark.parametrize("graph, message", [
    ({"nodes": np.ones((2, 1)), "edges": [[0, 2]]}, r"graph 0 of the inputs's edge 0 \(0, 2\) names a node "
                                                    r"outside 0..1"),
    ({"nodes": np.ones((2, 1)), "edges": [[0.5, 1]]}, r"edges must be integer \(E, 2\)"),
    ({"nodes": np.ones((2, 1))}, r"must be a dict with \"nodes\" and one of"),
    ({"nodes": np.ones((2, 1)), "neighbours": [[1]]}, r"2 nodes but 1 neighbour lists"),
])
def test_bad_graphs_are_refused(graph, message):
  ok = {"nodes": np.ones((2, 1)), "edges": [[0, 1]]}
  t = "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[1]>"
  with pytest.raises(ValueError, match=message):
    hx.Task.from_arrays("g", t, ([graph], [np.ones(2)]), ([ok], [np.ones(2)]), ([ok], [np.ones(2)]))


def test_per_element_targets_must_match_each_example():
  t = "List<Tensor<real>[1]> -> List<Tensor<real>[1]>"
  ok = ([np.ones((2, 1))], [np.ones(2)])
  with pytest.raises(ValueError, match=r"targets of example 0 give 3 values for its 2 list elements"):
    hx.Task.from_arrays("l", t, ([np.ones((2, 1))], [np.ones(3)]), ok, ok)
  with pytest.raises(ValueError, match=r"targets as one array must be \(n, L, ...\) with L >= the longest"):
    hx.Task.from_arrays("l", t, ([np.ones((2, 1))], np.ones(1)), ok, ok)
  with pytest.raises(ValueError, match=r"needs a List input"):
    hx.Task.from_arrays("l", "Tensor<real>[1] -> List<Tensor<real>[1]>", ok, ok, ok)


def test_a_type_that_does_not_parse_names_line_and_column():
  with pytest.raises(hx.ParseError, match="column"):
    bad(type="Tensor<real>[1][8][8] -> Tensor<bool[1]")


@pytest.mark.parametrize("training, message", [
    ({"epoch": 3}, r"task 't': unknown training setting\(s\) epoch; the settings are .*batch_size"),
    ({"batch_size": 0}, r"task 't': training settings: "),
])
def test_training_settings_are_checked_where_the_tune_config_is_built(training, message):
  task = bad(training=training)  # the data layer does not know TuneConfig's fields
  with pytest.raises(ValueError, match=message):
    task_tune_config(task.spec)
  with pytest.raises(ValueError, match=message):
    hx.synthesize(task)


_TYPES = ("Tensor<real>[2][3][3] -> Tensor<bool>[1]", "Tensor<real>[3] -> Tensor<bool>[4]",
          "List<Tensor<real>[2]> -> Tensor<real>[1]", "List<Tensor<real>[2]> -> List<Tensor<real>[1]>",
          "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[2]>")


def _any_array(draw, st):
  shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=4))
  dtype = draw(st.sampled_from(["float32", "float64", "int64", "bool", "uint8"]))
  values = draw(st.sampled_from([0.0, 1.0, -3.0, 2.5, float("nan"), float("inf"), 7.0]))
  a = np.full(shape, values if dtype.startswith("float") else abs(values) if np.isfinite(values) else 1)
  return a.astype(dtype)


def test_any_arrays_give_a_task_or_one_value_error():
  """Arrays of any shape, dtype and value (finite or not), lists of them and graphs of them: the task
  or one ValueError, never another exception."""
  hypothesis = pytest.importorskip("hypothesis")
  st = hypothesis.strategies

  @st.composite
  def member(draw):
    kind = draw(st.sampled_from(["array", "list", "graph", "scalar"]))
    if kind == "array":
      return _any_array(draw, st)
    if kind == "list":
      return [_any_array(draw, st) for _ in range(draw(st.integers(0, 3)))]
    if kind == "graph":
      return [{"nodes": _any_array(draw, st), "edges": draw(st.lists(st.lists(st.integers(-1, 4), min_size=2,
                                                                             max_size=2), max_size=3))}
              for _ in range(draw(st.integers(0, 2)))]
    return draw(st.sampled_from([None, 3, "x"]))

  @st.composite
  def inputs(draw, t):
    """Inputs that fit `t` half of the time (so that the targets' checks are reached), else anything."""
    if draw(st.booleans()):
      return draw(member())
    n = draw(st.integers(1, 3))
    if t.startswith("Tensor<real>[2]"):
      return np.zeros((n, 2, 3, 3))
    if t.startswith("Tensor"):
      return np.zeros((n, 3))
    if t.startswith("List"):
      return [np.zeros((draw(st.integers(1, 3)), 2)) for _ in range(n)]
    return [{"nodes": np.zeros((2, 1)), "edges": [[0, 1]]} for _ in range(n)]

  @hypothesis.settings(max_examples=250, deadline=None, derandomize=True)
  @hypothesis.given(st.sampled_from(_TYPES).flatmap(lambda t: st.tuples(st.just(t), inputs(t), member(),
                                                                        inputs(t), member())))
  def check(case):
    t, x, y, x2, y2 = case
    try:
      task = hx.Task.from_arrays("fuzz", t, (x, y), (x2, y2), (x, y))
    except ValueError:
      return
    assert task.table.dtype == np.float32 and np.isfinite(task.table).all()

  check()
