"""The memory this process holds: what a long run records after each task, so that its growth can be
read from the records (`hx.evaluation.stream_memory`).

`process_memory()` gives the resident set size now (the pages of this process in RAM: its arrays, compiled
executables and caches, which a bounded run must release) and the largest it has been. On Linux both come
from the kernel (`/proc/self/statm`, `getrusage`); where `/proc` is missing only the peak is known. Any
layer may import this module.
"""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["process_memory"]


def _current_rss() -> int | None:
  """Resident bytes now, from /proc/self/statm (its second field, in pages); None without /proc."""
  try:
    with open("/proc/self/statm", "rb") as f:
      return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  except (OSError, ValueError, IndexError):
    return None


def process_memory() -> dict[str, int | None]:
  """{"rss_bytes": resident bytes now (None where the system does not say), "peak_rss_bytes": the most
  this process has held resident}: plain ints, for a JSON record."""
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  # ru_maxrss is in kilobytes on Linux and in bytes on macOS.
  peak = peak if sys.platform == "darwin" else peak * 1024
  now = _current_rss()
  # Linux updates the peak lazily (when the address space changes), so it can trail the count just read.
  return {"rss_bytes": now, "peak_rss_bytes": int(max(peak, now or 0))}
