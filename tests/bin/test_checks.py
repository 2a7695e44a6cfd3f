"""hx.bin.checks: the binaries' refusals, each one line naming the flag, and checks that leave nothing."""

import os
import types

import pytest

from hx.bin.checks import FlagError, no_arguments, nonempty_lists, one_line, refuse, writable_directory
from hx.data import DataNotFoundError


def test_a_writable_directory_passes_and_the_check_leaves_nothing(tmp_path):
  (tmp_path / "there").mkdir()
  for path in (tmp_path / "there", tmp_path / "new" / "deeper"):
    writable_directory(path, "--output_dir")
  assert os.listdir(tmp_path) == ["there"] and os.listdir(tmp_path / "there") == []


def test_what_cannot_be_a_directory_is_refused_naming_the_flag(tmp_path):
  file = tmp_path / "file"
  file.write_text("mine")
  (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
  cases = {file: "is a file, not a directory",
           file / "sub": f"cannot create {file / 'sub'}: {file} is not a directory",
           tmp_path / "dangling" / "sub": f"{tmp_path / 'dangling'} is not a directory",
           "/proc/hx-check": "cannot create or write /proc/hx-check: "}
  for path, message in cases.items():
    with pytest.raises(FlagError, match="^--checkpoint_dir: ") as err:
      writable_directory(path, "--checkpoint_dir")
    assert message in str(err.value)


def test_empty_list_flags_and_stray_arguments_are_refused():
  nonempty_lists(types.SimpleNamespace(name="fractions", value=None),
                 types.SimpleNamespace(name="methods", value=["houdini"]))
  for value in ([], [""]):
    with pytest.raises(FlagError, match="--methods is empty"):
      nonempty_lists(types.SimpleNamespace(name="methods", value=value))
  no_arguments(["hx-run"])
  with pytest.raises(FlagError, match="unexpected arguments a b"):
    no_arguments(["hx-run", "a", "b"])


def test_a_refusal_is_one_line_on_stderr_and_status_1(capsys):
  err = DataNotFoundError("MNIST", "no such file", ["/x"], "--mnist")
  assert one_line(err) == "MNIST: no such file; looked at: /x; set --mnist to choose where MNIST comes from"
  assert refuse(err) == 1
  captured = capsys.readouterr()
  assert captured.out == "" and captured.err == f"error: {one_line(err)}\n"
