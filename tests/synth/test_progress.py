"""What a person watching a training sees: a bar on a terminal, plain lines in a file, nothing when off."""

import io

import pytest

from hx.synth.progress import Progress


class _Clock:
  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_plain_lines_say_candidates_epoch_best_and_time_left_at_most_once_a_minute():
  out, clock = io.StringIO(), _Clock()
  p = Progress("count_digit(1) @ 10%", 4, True, stream=out, clock=clock)
  clock.now += 10
  p.epoch_done(1, 4, 0.5)  # ten seconds in: no line yet
  assert out.getvalue() == ""
  clock.now += 60
  p.epoch_done(2, 4, 0.4)  # 70 s for half a candidate: 3.5 candidates left at 140 s each
  clock.now += 30
  p.done(0.3)  # 100 s a candidate, three left
  p.extra["enumerated"] = 12
  clock.now += 20
  p.done(float("nan"))  # a failed candidate counts, and leaves the best as it was
  assert out.getvalue().splitlines() == [
      "count_digit(1) @ 10%: 0/4 candidates, epoch 2/4 of the 1st, best val 0.4, ~8m10s left",
      "count_digit(1) @ 10%: 1/4 candidates, best val 0.3, ~5m00s left",
      "count_digit(1) @ 10%: 2/4 candidates, enumerated 12, best val 0.3, ~2m00s left"]


def test_a_terminal_gets_a_bar_with_the_same_figures():
  out, clock = _Terminal(), _Clock()
  with Progress("sum_digits @ 100%", 2, True, stream=out, clock=clock) as p:
    clock.now += 30
    p.epoch_done(3, 6, 1.25)
    shown = out.getvalue()
  assert "sum_digits @ 100%: 0/2 candidates" in shown
  assert "epoch=3/6" in shown and "best=1.25" in shown and "left=1m30s" in shown


@pytest.mark.parametrize("stream", [io.StringIO(), _Terminal()])
def test_off_shows_nothing(stream):
  p = Progress("t", 3, False, stream=stream)
  p.epoch_done(1, 2, 0.1)
  p.done(0.1)
  p.close()
  assert stream.getvalue() == "" and p.count == 1 and p.best == 0.1


def test_no_estimate_before_anything_is_done_or_without_a_total():
  out = io.StringIO()
  Progress("t", None, True, stream=out).done(0.2)
  Progress("t", 2, True, stream=out).epoch_done(0, 2, float("nan"))
  assert out.getvalue().splitlines() == ["t: 1/? candidates, best val 0.2, time left unknown yet"]
