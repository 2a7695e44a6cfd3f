"""What a person watching a training sees: candidates done of the total, the current candidate's epoch, the
best validation score so far and an estimate of the time left.

    with Progress("count_digit(1) @ 10%", total=20, show=True) as bar, bar.watching():
      ...                                   # trainings in this thread report their epochs to the bar
      bar.done(val_score)                   # after each candidate

`show=True` draws a tqdm bar on stderr when stderr is a terminal (or in a notebook), and otherwise prints
plain lines there (a log file gets a line per candidate and, during a long one, a line a minute rather than
a bar's redraws);
`show=False` shows nothing. The epochs come from `hx.compile.tuning.epochs_watched`: a candidate that
trains in another process (`--executor=processes`, Ray) is seen when it is done, not epoch by epoch.

The time left is the time so far per candidate (counting the current candidate's share of its epochs)
times the candidates left: after the first epoch there is an estimate, which the next candidates refine.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from typing import IO, Callable, Iterator

__all__ = ["Progress"]

_LINE_EVERY = 60.0  # seconds between plain lines during one candidate


def _duration(seconds: float) -> str:
  seconds = int(round(seconds))
  if seconds >= 3600:
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
  return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
  """A bar (or plain lines) for one task's trainings (module docstring).

  Args:
    task: what trains, shown first (e.g. "count_digit(1) @ 10%").
    total: candidates to train (None: unknown, then no time estimate).
    show: draw it (a bar on a terminal, lines otherwise); False: nothing but the counts.
    stream: where it goes (default stderr).
    unit: what is counted ("candidates"; a baseline's one training: "networks").
    clock: seconds (tests pass their own).
  """

  def __init__(self, task: str, total: int | None, show: bool, *, stream: IO[str] | None = None,
               unit: str = "candidates", clock: Callable[[], float] = time.monotonic):
    self.task, self.total, self.unit, self.clock = task, total, unit, clock
    self.count, self.best = 0, math.inf
    self.epoch: tuple[int, int] | None = None  # (epochs done, epochs) of the candidate training now
    self.extra: dict[str, int | float | str] = {}  # more to show, e.g. {"enumerated": 120}
    self.start = clock()
    self.stream = stream if stream is not None else sys.stderr
    self.bar = None
    self.lines = False
    self.last_line = self.start
    if show and (_is_terminal(self.stream) or (self.stream is sys.stderr and "ipykernel" in sys.modules)):
      # A terminal, or a notebook (whose stderr is no terminal, but where tqdm.auto draws a widget).
      from tqdm.auto import tqdm

      self.bar = tqdm(total=total, desc=task, leave=False, file=self.stream,
                      bar_format="{desc}: {n_fmt}/{total_fmt} " + unit + " |{bar}| {elapsed}{postfix}")
    else:
      self.lines = show

  def __enter__(self) -> Progress:
    return self

  def __exit__(self, *exc: object) -> None:
    self.close()

  @contextlib.contextmanager
  def watching(self) -> Iterator[None]:
    """Within the block, the epochs of trainings in this thread move the bar."""
    from hx.compile.tuning import epochs_watched

    with epochs_watched(self.epoch_done):
      yield

  def left(self) -> float | None:
    """Estimated seconds left, or None before there is anything to go on."""
    if self.total is None:
      return None
    share = self.count + (self.epoch[0] / self.epoch[1] if self.epoch and self.epoch[1] else 0.0)
    if share <= 0:
      return None
    return (self.clock() - self.start) / share * max(self.total - share, 0.0)

  def epoch_done(self, epoch: int, epochs: int, val_score: float) -> None:
    """A training in this thread finished `epoch` of its `epochs` with this validation score."""
    self.epoch = (epoch, epochs)
    if math.isfinite(val_score):
      self.best = min(self.best, val_score)
    self._show(line=self.clock() - self.last_line >= _LINE_EVERY)

  def done(self, val_score: float) -> None:
    """A candidate finished with this validation score (NaN: it failed)."""
    self.count += 1
    self.epoch = None
    if math.isfinite(val_score):
      self.best = min(self.best, val_score)
    if self.bar is not None:
      self.bar.update(1)
    self._show(line=True)

  def status(self) -> str:
    """One line: candidates, epoch, best, time left."""
    parts = [f"{self.count}/{self.total if self.total is not None else '?'} {self.unit}"]
    if self.epoch is not None:
      which = f" of the {_ordinal(self.count + 1)}" if self.total != 1 else ""
      parts.append(f"epoch {self.epoch[0]}/{self.epoch[1]}{which}")
    parts += [f"{k} {v}" for k, v in self.extra.items()]
    if math.isfinite(self.best):
      parts.append(f"best val {self.best:.4g}")
    left = self.left()
    parts.append(f"~{_duration(left)} left" if left is not None else "time left unknown yet")
    return f"{self.task}: " + ", ".join(parts)

  def _show(self, line: bool) -> None:
    if self.bar is not None:
      postfix = {}
      if self.epoch is not None:
        postfix["epoch"] = f"{self.epoch[0]}/{self.epoch[1]}"
      postfix.update(self.extra)
      if math.isfinite(self.best):
        postfix["best"] = f"{self.best:.4g}"
      left = self.left()
      postfix["left"] = _duration(left) if left is not None else "?"
      self.bar.set_postfix(postfix)
    elif self.lines and line:
      self.last_line = self.clock()
      print(self.status(), file=self.stream, flush=True)

  def close(self) -> None:
    if self.bar is not None:
      self.bar.close()
      self.bar = None


def _ordinal(n: int) -> str:
  suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
  return f"{n}{suffix}"


def _is_terminal(stream: IO[str]) -> bool:
  try:
    return stream.isatty()
  except (AttributeError, ValueError):  # no isatty, or a closed stream
    return False
