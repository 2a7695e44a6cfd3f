"""Sequence files: a user's tasks and their .npz arrays read back as the tasks `from_arrays` builds, and
every malformed entry refused in one line naming the file and the entry."""

from __future__ import annotations

import numpy as np
import pytest

from hx.data import DataFormatError, DataNotFoundError, Task
from hx.data.sequence_file import read_sequence_file, save_task_arrays
from hx.presets import task_tune_config

IMAGE = "Tensor<real>[1][4][4] -> Tensor<bool>[1]"
LIST = "List<Tensor<real>[2]> -> Tensor<real>[1]"
GRAPH = "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[1]>"


def image_splits():
  rng = np.random.default_rng(0)
  return [(rng.normal(size=(n, 1, 4, 4)).astype(np.float32), np.arange(n) % 2) for n in (6, 2, 2)]


def list_splits():
  rng = np.random.default_rng(1)
  return [([rng.normal(size=(k, 2)) for k in range(1, n + 1)], np.arange(n, dtype=float)) for n in (3, 2, 1)]


def graph_splits():
  g = {"nodes": np.ones((3, 1)), "edges": [[0, 1], [1, 2]]}
  h = {"nodes": np.zeros((2, 1)), "edges": np.zeros((0, 2), np.int64)}
  return [([g, h], [np.ones(3), np.zeros(2)]), ([h], [np.zeros(2)]), ([g], [np.ones(3)])]


def write(tmp_path, text: str, tasks=(("a.npz", IMAGE, image_splits),)):
  for name, t, splits in tasks:
    save_task_arrays(tmp_path / name, t, *splits())
  path = tmp_path / "seq.toml"
  path.write_text(text)
  return path


FILE = '''
name = "mine"
methods = ["houdini", "standalone"]
fractions = [0.5, 1.0]
candidates = 2

[[tasks]]
name = "first"
type = "Tensor<real>[1][4][4] -> Tensor<bool>[1]"
data = "a.npz"
training = { epochs = 2, batch_size = 4 }

[[tasks]]
name = "lists"
type = "List<Tensor<real>[2]> -> Tensor<real>[1]"
data = "b.npz"

[[tasks]]
name = "graphs"
type = "Graph<Tensor<real>[1]> -> Graph<Tensor<real>[1]>"
data = "c.npz"
metric_component = 0
'''


def test_a_file_reads_back_the_tasks_from_arrays_builds(tmp_path):
  path = write(tmp_path, FILE, (("a.npz", IMAGE, image_splits), ("b.npz", LIST, list_splits),
                                ("c.npz", GRAPH, graph_splits)))
  got = read_sequence_file(path)
  assert got.run == {"methods": ["houdini", "standalone"], "fractions": [0.5, 1.0], "candidates": 2}
  seq = got.stream.instance(3)
  assert seq.name == "mine" and seq.seed == 3 and len(seq) == 3
  first, lists, graphs = (seq.build(i) for i in range(3))
  (x, y), _, _ = image_splits()
  np.testing.assert_array_equal(first.table[:6], x)
  np.testing.assert_array_equal(first.train.targets[:, 0], y)
  assert task_tune_config(first.spec).batch_size == 4 and first.datasets == ("a",)
  np.testing.assert_array_equal(lists.train.inputs.mask.sum(axis=1), [1, 2, 3])
  assert graphs.metric_component == 0
  np.testing.assert_array_equal(graphs.train.inputs.edge_mask.sum(axis=1), [2, 0])
  np.testing.assert_array_equal(graphs.train.targets[0, :3, 0], [1, 1, 1])


@pytest.mark.parametrize("text, message", [
    ('name = "mine"\n', "seq.toml: tasks: missing"),
    ('name = "mine"\nwho = 1\n[[tasks]]\n', "seq.toml: who: unknown entry"),
    ('name = 3\n', "seq.toml: name: missing, or not text"),
    ('name = "Mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\ndata="a.npz"\n',
     "seq.toml: name: a sequence's name must be lower case"),
    ('name = "mine"\nfractions = 0.5\n', "seq.toml: fractions: must be a list, got 0.5"),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="Tensor<real>[1][4][4] -> "\ndata="a.npz"\n',
     "seq.toml: tasks[0].type: "),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\n', "tasks[0].data: missing, or not text"),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\ndata="a.npz"\nepochs=3\n',
     "tasks[0].epochs: unknown entry"),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\ndata="a.npz"\ntraining=3\n',
     "tasks[0].training: must be a table"),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="' + LIST + '"\ndata="a.npz"\n',
     "tasks[0].data: ", ),
    ('name = "mine"\n[[tasks]]\nname="a"\ntype="Tensor<real>[1][5][5] -> Tensor<bool>[1]"\ndata="a.npz"\n',
     "tasks[0]: task 'a', train split: inputs has shape (6, 1, 4, 4), not (n, 1, 5, 5)"),
    ('name = "mine"\n[[tasks]\n', "seq.toml: not TOML"),
])
def test_malformed_files_are_one_error_naming_the_entry(tmp_path, text, message):
  path = write(tmp_path, text)
  with pytest.raises(DataFormatError) as info:
    read_sequence_file(path)
  assert message in str(info.value).splitlines()[0]


def test_missing_files_are_named(tmp_path):
  with pytest.raises(DataNotFoundError, match="nowhere.toml does not exist"):
    read_sequence_file(tmp_path / "nowhere.toml")
  path = write(tmp_path, 'name = "mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\ndata="gone.npz"\n')
  with pytest.raises(DataNotFoundError, match=r"tasks\[0\]\.data: .*gone.npz does not exist"):
    read_sequence_file(path)


def test_a_list_file_whose_lengths_do_not_add_up_is_refused(tmp_path):
  save_task_arrays(tmp_path / "b.npz", LIST, *list_splits())
  arrays = dict(np.load(tmp_path / "b.npz"))
  arrays["val_lengths"] = np.array([1, 1])
  np.savez(tmp_path / "b.npz", **arrays)
  path = tmp_path / "seq.toml"
  path.write_text('name = "mine"\n[[tasks]]\nname="a"\ntype="' + LIST + '"\ndata="b.npz"\n')
  with pytest.raises(DataFormatError, match="val_lengths sums to 2 but val_inputs has 3 rows"):
    read_sequence_file(path)


def test_the_errors_name_the_file_and_entry_and_no_flag(tmp_path):
  # hx-run's --sequence_file only chooses the file; the mend is in the file (and Python has no flags).
  task = 'name = "mine"\n[[tasks]]\nname="a"\ntype="' + IMAGE + '"\n'
  bad = [write(tmp_path, task + 'data="a.npz"\nepochs=3\n'), write(tmp_path, task + 'data="gone.npz"\n'),
         tmp_path / "nowhere.toml"]
  for path in bad:
    with pytest.raises((DataFormatError, DataNotFoundError)) as info:
      read_sequence_file(path)
    assert "seq.toml" in str(info.value) or "nowhere.toml" in str(info.value)
    assert "--sequence_file" not in str(info.value) and "comes from" not in str(info.value), str(info.value)


def _with(splits, split: int, inputs=None, targets=None):
  out = [tuple(s) for s in splits]
  x, y = out[split]
  out[split] = (x if inputs is None else inputs, y if targets is None else targets)
  return out


@pytest.mark.parametrize("kind, message", [
    ("nan", "holds nan"),
    ("label", "7"),
    ("width", "(6, 1, 4, 5)"),
    ("ragged", "inputs"),
    ("empty", "val"),
])
def test_save_task_arrays_refuses_what_from_arrays_refuses(tmp_path, kind, message):
  splits = image_splits()
  x, y = splits[0]
  if kind == "nan":
    x = x.copy()
    x[2, 0, 1, 1] = np.nan
    splits = _with(splits, 0, inputs=x)
  elif kind == "label":
    splits = _with(splits, 0, targets=np.where(np.arange(len(y)) == 3, 7, y))
  elif kind == "width":
    splits = _with(splits, 0, inputs=np.zeros((6, 1, 4, 5), np.float32))
  elif kind == "ragged":
    splits = _with(splits, 0, inputs=[np.zeros((1, 4, 4))] * 5 + [np.zeros((1, 4, 3))])
  else:
    splits = _with(splits, 1, inputs=np.zeros((0, 1, 4, 4), np.float32), targets=np.zeros(0, int))
  with pytest.raises(ValueError) as saved:
    save_task_arrays(tmp_path / "a.npz", IMAGE, *splits)
  with pytest.raises(ValueError) as built:
    Task.from_arrays("a", IMAGE, *splits)
  assert str(saved.value) == str(built.value) and message in str(saved.value), str(saved.value)
  assert not (tmp_path / "a.npz").exists()
