"""Errors raised by the data layer: every one names the data set, the paths looked at and what to set."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DataError", "DataNotFoundError", "DataFormatError"]


class DataError(Exception):
  """A data set could not be read.

  Attributes:
    dataset: the data set's name, e.g. "MNIST".
    paths: the paths looked at, as strings.
    flag: the flag or argument that chooses where the data comes from, e.g. "--mnist_dir".
  """

  def __init__(self, dataset: str, problem: str, paths: Sequence[object] = (), flag: str = ""):
    self.dataset = dataset
    self.paths = tuple(str(p) for p in paths)
    self.flag = flag
    lines = [f"{dataset}: {problem}"]
    if self.paths:
      lines.append("looked at: " + ", ".join(self.paths))
    if flag:
      lines.append(f"set {flag} to choose where {dataset} comes from")
    super().__init__("\n  ".join(lines))


class DataNotFoundError(DataError, FileNotFoundError):
  """A data file or directory is missing (or an optional package to read it is not installed)."""


class DataFormatError(DataError, ValueError):
  """A data file exists but is truncated, corrupt or not in the expected format."""
