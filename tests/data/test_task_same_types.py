"""The paper's tasks and a user's are one type: `hx.data.sequence` gives an `hx.Sequence` whose tasks are
`hx.Task`s, as `hx.Sequence.of` and `hx.Task.from_arrays` do, and a paper task's own examples given to
`from_arrays` come back as the same examples with the same loss, metric and objective."""

from __future__ import annotations

import numpy as np
import pytest

import hx
from hx.data import TaskSizes
from hx.lang.values import ListBatch, gather

SIZES = TaskSizes(binary=(40, 10, 10), lists=(40, 12, 12))


@pytest.fixture(scope="module")
def cs1():
  return hx.data.sequence("cs1", 0, sizes=SIZES)


def _examples(task: hx.Task, split: str):
  """(inputs as arrays, targets) of one split: what a user would hold (a list split as a ListBatch of the
  images themselves)."""
  s = getattr(task, split)
  return gather(task.table, s.inputs), np.asarray(s.targets)


def test_a_paper_sequence_is_a_sequence_of_tasks_as_a_users_is(cs1):
  assert type(cs1) is hx.Sequence and len(cs1) == 4
  task = cs1.build(0)
  assert type(task) is hx.Task
  mine = hx.Task.from_arrays("mine", task.type, *(_examples(task, s) for s in ("train", "val", "test")))
  assert type(mine) is type(task) and type(hx.Sequence.of("mine", [mine])) is type(cs1)


@pytest.mark.parametrize("index", [0, 2])  # recognize_digit(0): images; count_digit(0): lists of images
def test_a_paper_tasks_examples_through_from_arrays_are_the_same_task(cs1, index):
  task = cs1.build(index)
  mine = hx.Task.from_arrays("again", task.type, *(_examples(task, s) for s in ("train", "val", "test")))
  assert (mine.type, mine.loss, mine.metric, mine.metric_component) == (
      task.type, task.loss, task.metric, task.metric_component)
  assert mine.objective == task.objective
  for split in ("train", "val", "test"):
    ours = gather(mine.table, getattr(mine, split).inputs)
    theirs = gather(task.table, getattr(task, split).inputs)
    if isinstance(theirs, ListBatch):
      np.testing.assert_array_equal(ours.mask, theirs.mask)
      ours, theirs = np.asarray(ours.values)[ours.mask], np.asarray(theirs.values)[theirs.mask]
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(getattr(mine, split).targets, getattr(task, split).targets)
