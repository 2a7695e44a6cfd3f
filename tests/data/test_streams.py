"""The long stream (`hx.data.long_stream`, `stream_plan`): its length, kinds and relations, the tasks'
types and data, and that a seed fixes it."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import hx
from hx.data import Sources, StreamSettings, StreamTask, long_stream, stream_plan
from hx.data.streams import DOMAINS, RELATIONS, STREAM_KINDS, STREAM_NAME
from hx.data.task import ArrayTaskSpec
from hx.lang.types import function_parts
from hx.presets import StreamPreset

# Small tasks and small rendered stand-ins: the structure is the same, the building takes a second. Its
# epochs differ per group, so that a task carrying another group's shows.
TINY = StreamPreset("tiny", StreamSettings(images=(20, 10, 10), lists=(10, 5, 5), graphs=(5, 3, 3),
                                           train_nodes=(4, 6), test_nodes=(6, 8)), epochs=(2, 3, 4))
SIZES = TINY.settings
SOURCES = Sources(standin_per_class=(20, 6, 6))


@pytest.fixture(scope="module")
def stream():
  return TINY.stream(0, 100, SOURCES)


def test_the_plan_has_100_tasks_of_every_kind_and_relation():
  plan = stream_plan(0)
  assert len(plan) == 100 and [t.index for t in plan] == list(range(1, 101))
  assert all(isinstance(t, StreamTask) for t in plan)
  assert {t.kind for t in plan} == set(STREAM_KINDS)
  assert {t.relation for t in plan} == set(RELATIONS)
  assert {t.domain for t in plan} == set(DOMAINS)
  assert len({t.name for t in plan}) == 100
  counts = collections.Counter(t.relation for t in plan)
  assert counts["new"] >= 20 and min(counts.values()) >= 3  # each relation often enough to average over


def test_each_relation_relates_as_it_says():
  plan = stream_plan(0)
  by = {t.index: t for t in plan}
  for t in plan:
    if t.relation in ("new", "distractor"):
      assert t.of is None and t.relabel is None
      continue
    earlier = by[t.of]
    assert t.of < t.index and earlier.relation in ("new", "new_output", "new_input")
    assert (t.kind, t.classes, t.family) == (earlier.kind, earlier.classes, earlier.family)
    if t.relation in ("less_data", "new_data"):
      assert t.base() == earlier.base()
      assert t.train_share == (0.1 if t.relation == "less_data" else 1.0)
    elif t.relation == "new_output":
      assert t.kind in ("recognize", "classify") and earlier.relabel is None and t.domain == earlier.domain
      assert sorted(t.relabel) == list(range(len(t.relabel))) and t.relabel != tuple(range(len(t.relabel)))
    else:
      assert earlier.domain == "digits" and t.domain == "inverted"
  # Distractors are on signs, which no other task uses, and nothing repeats them.
  assert {t.domain for t in plan if t.relation == "distractor"} == {"signs"}
  assert all(t.relation == "distractor" for t in plan if t.domain == "signs")
  assert not any(by[t.of].relation == "distractor" for t in plan if t.of)
  # Task 1 is the graph tasks' regressor (the standalone graph baseline maps it over the nodes).
  (cell,), value = function_parts(hx.parse_type(plan[0].type))
  for graph in (t for t in plan if t.kind == "shortest_path"):
    (nodes,), out = function_parts(hx.parse_type(graph.type))
    assert plan[0].kind == "regress" and (nodes.elem, out.elem) == (cell, value)


def test_the_first_twelve_tasks_hold_every_kind_and_relation():
  opening = stream_plan(3, 12)
  assert {t.kind for t in opening} == set(STREAM_KINDS)
  assert {t.relation for t in opening} == set(RELATIONS)
  assert [t.relation for t in opening[:4]] == ["new", "new", "less_data", "new"]


def test_a_seed_fixes_the_plan_and_a_shorter_stream_is_a_prefix():
  assert stream_plan(0) == stream_plan(0)
  assert stream_plan(0) != stream_plan(1)
  assert stream_plan(0, 10) == stream_plan(0)[:10]
  assert stream_plan(5, 30) == stream_plan(5, 100)[:30]


def test_every_task_is_an_hx_task_of_its_planned_type_and_size(stream):
  assert isinstance(stream, hx.TaskStream) and stream.name == STREAM_NAME and len(stream) == 100
  seq = stream.instance(0)
  for planned, spec in zip(stream_plan(0, 100, SIZES), seq.tasks):
    task = seq.build(planned.index - 1)
    assert isinstance(task, hx.Task) and isinstance(spec, ArrayTaskSpec)
    assert task.name == planned.name and str(task.type) == str(hx.parse_type(planned.type))
    assert task.synthetic == (planned.domain in ("toys", "signs")) == ("[synthetic: " in task.name)
    assert task.datasets == (planned.dataset,)
    group = {"regress": 0, "recognize": 0, "classify": 0, "count": 1, "sum": 1, "shortest_path": 2}
    sizes = (SIZES.images, SIZES.lists, SIZES.graphs)[group[planned.kind]]
    train = round(sizes[0] * planned.train_share)
    assert (len(task.train.targets), len(task.val.targets), len(task.test.targets)) == (train, *sizes[1:])
    want = {"epochs": TINY.epochs[group[planned.kind]], "batch_size": 32, "min_steps": 40}
    assert dict(spec.training) == want
    assert task.metric == ("error" if planned.kind in ("recognize", "classify") else "rmse")
    assert task.metric_component == (1 if planned.kind == "shortest_path" else None)


def test_the_data_is_what_the_task_says(stream):
  seq = stream.instance(0)
  plan = stream_plan(0, 100, SIZES)
  classify = next(t for t in plan if t.kind == "classify" and t.relation == "new_output")
  task = seq.build(classify.index - 1)
  assert set(np.unique(task.train.targets)) <= set(range(len(classify.classes)))
  regress = seq.build(0)
  costs, distances = regress.train.targets[:, 0], regress.train.targets[:, 1]
  assert set(np.unique(costs)) <= {1, 3, 5, 7, 9}
  assert set(np.unique(distances)) <= {1.0, 65.0}
  graph = seq.build(next(t for t in plan if t.kind == "shortest_path").index - 1)
  node_costs = graph.train.targets[..., 0]
  assert np.all(graph.train.targets[..., 1] >= node_costs)  # a node's least cost includes its own
  count = seq.build(3)
  assert np.all(count.train.targets >= 0) and count.train.targets.max() <= SIZES.train_lengths[1]
  # Inverted digits are the digits' negatives after normalisation: their pixels correlate negatively.
  digits, inverted = seq.build(3).table, seq.build(7).table
  assert plan[7].domain == "inverted" and digits.mean() == pytest.approx(inverted.mean(), abs=0.2)
  mean_digit, mean_inverted = (x.reshape(len(x), -1).mean(0) for x in (digits, inverted))
  assert np.corrcoef(mean_digit, mean_inverted)[0, 1] < -0.9


def test_a_seed_fixes_every_example():
  a, b = TINY.stream(2, 12, SOURCES).instance(0), TINY.stream(2, 12, SOURCES).instance(0)
  c = TINY.stream(3, 12, SOURCES).instance(0)
  for i in range(12):
    assert np.array_equal(a.build(i).table, b.build(i).table)
    assert np.array_equal(a.build(i).train.targets, b.build(i).train.targets)
  assert not np.array_equal(a.build(1).table, c.build(1).table)


def test_a_stream_without_training_settings_carries_none_and_its_data_is_the_same():
  """The stream's one table of training settings is its preset's: built without one, its tasks carry no
  settings of their own, and the data does not depend on them."""
  bare = long_stream(2, 3, SIZES, SOURCES).instance(0)
  dressed = TINY.stream(2, 3, SOURCES).instance(0)
  assert [dict(t.training) for t in bare.tasks] == [{}, {}, {}]
  assert [dict(t.training)["epochs"] for t in dressed.tasks] == [2, 2, 2]  # images
  for k in range(3):
    np.testing.assert_array_equal(bare.build(k).train.targets, dressed.build(k).train.targets)


def test_bad_arguments_are_refused():
  with pytest.raises(ValueError, match="length must be in 1..200"):
    stream_plan(0, 0)
  with pytest.raises(ValueError, match="seed must be a non-negative integer"):
    stream_plan(-1)
  with pytest.raises(ValueError, match="StreamSettings.less_data"):
    StreamSettings(less_data=1.5)
  with pytest.raises(ValueError, match="StreamSettings.classes"):
    StreamSettings(classes=7)
  with pytest.raises(ValueError, match="StreamSettings.train_lengths"):
    StreamSettings(train_lengths=(3, 2))
