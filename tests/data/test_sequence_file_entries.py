"""Sequence files beyond `test_sequence_file.py`: the other malformed entries, each one error whose message
is one line once the binary joins it (`hx.bin.checks.one_line`) and names the entry; and a file's sequence
run through `hx.evaluate`, stopped and resumed, to the records, report, forward transfer and plots of the
paper's sequences."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hx
from hx.data import DataError, DataFormatError
from hx.data.sequence_file import read_sequence_file, save_task_arrays
from tests.user_data import bright_images, bright_lists

IMAGE = "Tensor<real>[1][4][4] -> Tensor<bool>[1]"


def image_splits(seed: int = 0, n=(6, 2, 2)):
  rng = np.random.default_rng(seed)
  return [(rng.normal(size=(k, 1, 4, 4)).astype(np.float32), np.arange(k) % 2) for k in n]


def task_entry(extra: str = "", type: str = IMAGE, data: str = "a.npz", name: str = "a") -> str:
  return f'[[tasks]]\nname = "{name}"\ntype = "{type}"\ndata = "{data}"\n{extra}\n'


def refused(tmp_path, text: str) -> str:
  """The one line `hx-run` prints for the file `text` (beside a.npz, a.npy and notes.txt)."""
  save_task_arrays(tmp_path / "a.npz", IMAGE, *image_splits())
  np.save(tmp_path / "a.npy", np.ones(3))
  (tmp_path / "notes.txt").write_text("not arrays")
  path = tmp_path / "seq.toml"
  path.write_text('name = "mine"\n' + text)
  with pytest.raises(DataError) as info:
    read_sequence_file(path)
  return "; ".join(part.strip() for part in str(info.value).splitlines() if part.strip())


@pytest.mark.parametrize("text, message", [
    (task_entry(data="a.npy"), "seq.toml: tasks[0].data: {DIR}/a.npy is a file that np.savez did not write, "
                               "not an .npz file"),
    (task_entry(data="notes.txt"), "seq.toml: tasks[0].data: {DIR}/notes.txt is a file that np.savez did not "
                                   "write"),
    (task_entry(data="."), "seq.toml: tasks[0].data: {DIR} is a directory, not an .npz file"),
    (task_entry(type="Tensor<real>[1][4][4]"),
     "seq.toml: tasks[0].type: Tensor<real>[1][4][4] must take exactly one argument (an example's input), "
     "not 0"),
    (task_entry(type="Tensor<real>[1][4][4] -> Tensor<real>[1] -> Tensor<bool>[1]"),
     "seq.toml: tasks[0].type: Tensor<real>[1][4][4] -> Tensor<real>[1] -> Tensor<bool>[1] must take exactly "
     "one argument"),
    (task_entry('metric_component = "0"'),
     "seq.toml: tasks[0].metric_component: must be an integer, got '0'"),
    (task_entry("metric_component = 0.5"),
     "seq.toml: tasks[0].metric_component: must be an integer, got 0.5"),
    (task_entry("metric_component = 1"),
     "seq.toml: tasks[0]: task 'a': metric_component 1 is not a component of Tensor<bool>[1]"),
    ('fractions = ["half"]\n' + task_entry(), "seq.toml: fractions: must be a list of numbers, got 'half'"),
    ("methods = [1]\n" + task_entry(), "seq.toml: methods: must be a list of text, got 1 in [1]"),
    ("seeds = [0, true]\n" + task_entry(), "seq.toml: seeds: must be a list of integers, got True"),
    ('strategies = ["topdown", 2]\n' + task_entry(), "seq.toml: strategies: must be a list of text, got 2"),
    (task_entry() + task_entry(), "seq.toml: tasks: sequence mine: two tasks are named 'a'"),
    (task_entry(name=""), "seq.toml: tasks[0]: a task needs a non-empty name"),
    (task_entry(data="none.npz"), "seq.toml: tasks[0].data: {DIR}/none.npz does not exist"),
    ("tasks = [1]\n", "seq.toml: tasks[0]: must be a table ([[tasks]])"),
])
def test_each_malformed_entry_is_one_line_naming_it(tmp_path, text, message):
  line = refused(tmp_path, text)
  assert message.replace("{DIR}", str(tmp_path)) in line, line
  assert "\n" not in line and "Traceback" not in line


def test_a_malformed_entry_is_a_data_format_error_before_any_array_is_read(tmp_path):
  save_task_arrays(tmp_path / "a.npz", IMAGE, *image_splits())
  path = tmp_path / "seq.toml"
  # The second task's type is wrong: the error names it although the first task's arrays are fine.
  path.write_text('name = "mine"\n' + task_entry() + task_entry(type="Tensor<real>[1][4][4]", name="b"))
  with pytest.raises(DataFormatError, match=r"tasks\[1\]\.type"):
    read_sequence_file(path)


FILE = """
name = "filed"
methods = ["houdini", "standalone"]
fractions = [0.5, 1.0]
seeds = [0]
candidates = 2

[[tasks]]
name = "bright"
type = "Tensor<real>[1][6][6] -> Tensor<bool>[1]"
data = "bright.npz"
training = { epochs = 1, batch_size = 16 }

[[tasks]]
name = "count_bright"
type = "List<Tensor<real>[1][6][6]> -> Tensor<real>[1]"
data = "count.npz"
training = { epochs = 1, batch_size = 16 }
"""


@pytest.mark.slow
def test_a_files_sequence_stops_resumes_and_reports_as_the_papers_do(tmp_path):
  rng = np.random.default_rng(0)
  save_task_arrays(tmp_path / "bright.npz", "Tensor<real>[1][6][6] -> Tensor<bool>[1]",
                   bright_images(rng, 64), bright_images(rng, 16), bright_images(rng, 16))
  save_task_arrays(tmp_path / "count.npz", "List<Tensor<real>[1][6][6]> -> Tensor<real>[1]",
                   bright_lists(rng, 32), bright_lists(rng, 8), bright_lists(rng, 8))
  (tmp_path / "seq.toml").write_text(FILE)
  filed = read_sequence_file(tmp_path / "seq.toml")
  run = dict(filed.run)  # the file's candidates are a change to the preset's budget
  config = hx.EvalConfig.make(filed.stream, budget={"candidates": run.pop("candidates")}, **run)
  out = tmp_path / "run"
  written = []

  def interrupt(line: str) -> None:  # as a person stopping the run after its third record
    written.append(line)
    if len(written) == 3:
      raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    hx.evaluate(config, out, progress=interrupt)
  rest = hx.evaluate(config, out)
  assert rest.finished and rest.ran == 2 * 2 * 2 - 3  # the three records written are not run again
  for method in ("houdini_topdown", "standalone"):
    for folder in ("01_bright", "02_count_bright"):
      for fraction in ("0.5", "1"):
        record = json.loads((out / method / "seed_0" / "records" / folder / f"fraction_{fraction}.json")
                            .read_text())
        assert record["task"] == folder[3:] and np.isfinite(record["ranked"][0]["test"])
  report = (out / "report.md").read_text()
  assert "Task 2: count_bright" in report and "## Forward transfer" in report
  assert {p.name for p in (out / "plots").glob("*.png")} >= {"summary.png", "task_01.png", "task_02.png"}
  assert (out / "houdini_topdown" / "seed_0" / "libraries" / "after_01").is_dir()
  assert hx.evaluate(config, out).already_finished
