"""What a long run gives back between its tasks, so that its process's memory follows one task's working
set rather than growing with the tasks done (`hx.evaluation`'s runner calls `release_between_tasks` after
each task of a sequence, every method's).

Three things grow along a stream of tasks, each measured in benchmarks/notes/2026-12-05-stream.md:
JAX's own caches of traced and lowered functions (each task brings new program structures and frozen
prefixes; a function not called again is still held), hx's cache of compiled Tune executables (bounded,
but at 256), and the C library's heap, which keeps freed memory unless asked to give it back. None of it
changes a result: a function traced again compiles to the same executable (loaded from JAX's persistent
compilation cache, `hx.compile.cache`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

__all__ = ["release_between_tasks"]


def _malloc_trim() -> bool:
  """glibc's malloc_trim(0): the heap's free pages back to the system. False where there is no glibc."""
  name = ctypes.util.find_library("c")
  try:
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
  except OSError:
    return False
  if trim is None:
    return False
  trim(0)
  return True


def release_between_tasks() -> int:
  """Releases, at the end of a task, what only its candidates used: the Tune executables no candidate of
  it ran (`release_unused_executables`), JAX's caches of traced functions (`jax.clear_caches`), unreachable
  Python objects, and the C heap's free pages. Returns the number of executables released."""
  import jax

  from hx.compile.executables import release_unused_executables

  released = release_unused_executables()
  jax.clear_caches()
  gc.collect()
  _malloc_trim()
  return released
