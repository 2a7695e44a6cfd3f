"""The repeated tasks of a long stream's run (`hx.evaluation.stream_metrics`), those whose relation to an
earlier task (`REPEATS`) lets them reuse its functions: what HOUDINI's winners reuse on them (`Reuse`),
and what its library gains per relation (`Growth`).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import TYPE_CHECKING, Sequence

from hx.evaluation.stream_memory import LibraryPoint
from hx.evaluation.stream_metrics import TaskRow

if TYPE_CHECKING:
  from hx.data.streams import StreamTask

__all__ = ["REPEATS", "Reuse", "reuse_on_repeats", "Growth", "growth_by_relation", "repeats_growth"]


REPEATS = ("less_data", "new_data", "new_output", "new_input")
"""The relations of a task to an earlier one whose functions it may reuse (`hx.data.streams.RELATIONS`)."""


@dataclasses.dataclass(frozen=True)
class Reuse:
  """What a HOUDINI method's winners reuse on the stream's repeated tasks (`REPEATS`).

  Attributes:
    method: the HOUDINI method's id.
    repeats: the repeated tasks recorded (index, the index of the task it repeats).
    calls_library: those whose winner calls a library function.
    calls_earlier: those whose winner calls a function that the repeated task's winner computes with
      (one it trained, or a library function it called).
  """
  method: str
  repeats: tuple[tuple[int, int], ...]
  calls_library: tuple[int, ...]
  calls_earlier: tuple[int, ...]


def reuse_on_repeats(rows: Sequence[TaskRow], plan: Sequence[StreamTask], method: str) -> Reuse:
  """`Reuse` of `method`'s winners (their named programs: a function they trained written bare, a
  library one as lib.<name>) on the tasks `plan` marks as repeats of an earlier one."""
  from hx.lang import parse
  from hx.lang import program as P

  programs = {r.index: parse(r.program) for r in rows
              if r.method == method and r.program and r.test is not None}
  repeats, library, earlier = [], [], []
  for t in plan:
    if t.relation not in REPEATS or t.of is None or t.index not in programs:
      continue
    repeats.append((t.index, t.of))
    called = set(P.library_names(programs[t.index]))
    if called:
      library.append(t.index)
    first = programs.get(t.of)
    if first is not None and called & (set(P.fresh_names(first)) | set(P.library_names(first))):
      earlier.append(t.index)
  return Reuse(method, tuple(repeats), tuple(library), tuple(earlier))


@dataclasses.dataclass(frozen=True)
class Growth:
  """What HOUDINI's library gained, per relation of the task to the stream (`hx.data.streams.RELATIONS`).

  Attributes:
    relation: the relation.
    tasks: its tasks with a library saved before and after them.
    added: the bytes each of them added (library after it minus library before), in task order.
    nothing: how many added no function.
  """
  relation: str
  tasks: tuple[int, ...]
  added: tuple[int, ...]
  nothing: int

  @property
  def mean(self) -> float:
    """Bytes added per task."""
    return statistics.fmean(self.added) if self.added else 0.0

  def halves(self) -> tuple[float, float] | None:
    """Bytes added per task over the relation's first half of tasks and over its second half (its
    growth is sub-linear in its tasks when the second is the smaller); None under 4 tasks."""
    n = len(self.added)
    if n < 4:
      return None
    return statistics.fmean(self.added[:n // 2]), statistics.fmean(self.added[n // 2:])


def growth_by_relation(library: Sequence[LibraryPoint], plan: Sequence[StreamTask]) -> list[Growth]:
  """`Growth` per relation present in `plan` (in order of first appearance), from the library after each
  task (`library_growth`); the first task counts from an empty library."""
  after = {p.index: p for p in library}
  by: dict[str, list[tuple[int, int, bool]]] = {}
  for t in plan:
    if t.index not in after or (t.index > 1 and t.index - 1 not in after):
      continue
    before = after.get(t.index - 1, LibraryPoint(0, 0, 0, 0))
    now = after[t.index]
    added = (t.index, now.bytes - before.bytes, now.functions == before.functions)
    by.setdefault(t.relation, []).append(added)
  return [Growth(r, tuple(i for i, _, _ in v), tuple(b for _, b, _ in v), sum(n for _, _, n in v))
          for r, v in by.items()]


def repeats_growth(growth: Sequence[Growth]) -> Growth | None:
  """The `Growth` of every task that repeats an earlier one (`REPEATS`' relations together, in task
  order), labelled "every repeat"; None where the stream has none. Its halves say whether the library
  grows sub-linearly in the tasks where the stream repeats a domain."""
  got = sorted((i, b) for g in growth if g.relation in REPEATS for i, b in zip(g.tasks, g.added))
  if not got:
    return None
  nothing = sum(g.nothing for g in growth if g.relation in REPEATS)
  return Growth("every repeat", tuple(i for i, _ in got), tuple(b for _, b in got), nothing)
