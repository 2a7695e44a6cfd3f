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


def test_absl_refusals_are_one_line_without_absl_prefix_where_the_message_names_its_flag():
  from absl import flags

  from hx.bin.checks import flag_error_line

  assert flag_error_line(flags.IllegalFlagValueError("flag --tasks=0: --tasks must be >= 1, got 0")) == (
      "--tasks must be >= 1, got 0")
  assert flag_error_line(flags.IllegalFlagValueError(
      "flags executor=local, workers=2: --workers applies to worker processes\nflag --x=1: another")) == (
      "--workers applies to worker processes")
  # absl's own message keeps its prefix: it names the flag there only.
  assert flag_error_line(flags.IllegalFlagValueError("flag --tasks=x: invalid literal for int()")) == (
      "flag --tasks=x: invalid literal for int()")
  assert flag_error_line(flags.UnrecognizedFlagError("tasx")) == "Unknown command line flag 'tasx'"


def test_the_value_checks_name_the_flag_and_what_is_wrong(tmp_path):
  from hx.bin.checks import at_least, existing, fraction, needs, positive

  assert at_least(1)("tasks", None) is None and at_least(1)("tasks", 1) is None
  assert at_least(1)("tasks", 0) == "--tasks must be >= 1, got 0"
  assert at_least(0)("seeds", [0, 3, -2]) == "--seeds must be >= 0, got -2"
  assert positive("seconds")("time_budget", float("nan")) == (
      "--time_budget must be a positive number of seconds, got nan")
  assert positive("seconds")("time_budget", 0.5) is None
  assert fraction("fractions", ["0.5", "1"]) is None and fraction("fractions", ["", " "]) is None
  assert fraction("fractions", ["0.5", "0"]) == "--fractions: training fraction 0 is outside (0, 1]"
  assert fraction("fractions", ["half"]) == "--fractions: 'half' is not a list of floats"
  (tmp_path / "f").write_text("x")
  directory = existing("directory", "GTSRB's layout", allow=("tfds",))
  assert directory("gtsrb", str(tmp_path)) is None and directory("gtsrb", "tfds:/anywhere") is None
  assert directory("gtsrb", str(tmp_path / "f")) == (
      f"--gtsrb: {tmp_path / 'f'} is a file, not a directory (GTSRB's layout)")
  assert existing("file")("sequence_file", str(tmp_path)) == (
      f"--sequence_file: {tmp_path} is a directory, not a file")
  assert existing("file")("sequence_file", str(tmp_path / "no")) == (
      f"--sequence_file: {tmp_path / 'no'} does not exist")
  rule = needs("halving_eta", "needs --halving", lambda v: v["halving"], default=4)
  assert rule({"halving_eta": 4, "halving": False}) is None
  assert rule({"halving_eta": 3, "halving": True}) is None
  assert rule({"halving_eta": 3, "halving": False}) == "--halving_eta needs --halving"
