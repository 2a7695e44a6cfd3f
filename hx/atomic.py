"""Files written atomically: a reader (or a run started again after a crash) finds the old file or the
new one, never a part of one.

    write_atomically(path, lambda f: json.dump(obj, f), text=True)

The content goes to a temporary file in the same directory, which is flushed, synced to disk and then
renamed over `path` (a rename within one file system is atomic on POSIX). If writing fails, the
temporary file is removed and `path` is untouched. Used for the lifelong and evaluation records
(`hx.synth.jsonfiles`) and for Tune checkpoints (`hx.compile.checkpoint`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

__all__ = ["write_atomically"]


def write_atomically(path: os.PathLike | str, write: Callable[[IO[Any]], None], *,
                     text: bool = False) -> None:
  """Calls `write(f)` on a temporary file in `path`'s directory (created if missing), then renames it to
  `path`. `text`: open it in text mode (UTF-8) rather than binary."""
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
  try:
    with os.fdopen(fd, "w" if text else "wb", **({"encoding": "utf-8"} if text else {})) as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.unlink(tmp)
    raise
