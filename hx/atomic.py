"""Files and directories written atomically: a reader (or a run started again after a crash) finds the old
one or the new one, never a part of one. Every atomic write in hx goes through here.

    write_atomically(path, lambda f: json.dump(obj, f), text=True)         # a file
    write_directory_atomically(path, lambda tmp: (tmp / "a.json").write_text(...))   # a directory

The content goes to a temporary sibling named `.NAME.tmp-XXXXXXXX` (in the same directory, so on the same
file system), which is flushed and synced to disk (for a directory: every file and folder in it), then
renamed over `path` (a rename within one file system is atomic on POSIX) and the parent directory synced,
so that the rename itself survives a power cut. A directory that exists is replaced by atomically
exchanging the two (Linux renameat2 RENAME_EXCHANGE) and then deleting the old one; where the exchange is
unavailable, the old directory is renamed aside first (`.NAME.old-XXXXXXXX`), so a crash between the two
renames leaves it there rather than nowhere.

If writing fails (an error, or Ctrl-C), the temporary is removed and `path` is untouched. A write the
system refuses (a full disk, a read-only file system, a permission refused: any OSError) raises
`WriteFailed`, an OSError whose message is one line that names the file, says that nothing was left
half-written and that the same command (or call) resumes once the cause is gone; the binaries print it as
their one `error:` line (`hx.bin.checks.refuse`). A process that
is killed outright cannot remove it: the next write of the same `path` removes the temporaries a killed
write left (one process writes a given path at a time in hx: a run's directory belongs to one run, which
`hold_directory` enforces).

The CPU kernels' shared library (`hx.compile.conv_pool`) is the one exception: processes may build it at
once, so each builds in its own temporary directory and renames the result into place.

Used for the lifelong and evaluation records (`hx.synth.jsonfiles`), Tune checkpoints
(`hx.compile.checkpoint`), libraries (`hx.synth.library`) and the baselines' networks
(`hx.baselines.networks`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator

__all__ = ["WriteFailed", "DirectoryInUse", "hold_directory", "write_atomically",
           "write_text", "write_directory_atomically", "write_new_file", "fsync_directory", "TEMPORARY",
           "LOCK_FILE"]

TEMPORARY = ".tmp-"
"""What the names of temporaries hold: `.NAME.tmp-XXXXXXXX` for the file or directory NAME."""


class WriteFailed(OSError):
  """The system refused a write of hx's (`errno` as the OSError it refused with: ENOSPC, EROFS, EACCES,
  ...); `filename` (str) is the file or directory that was being written, which holds what it held
  before. `str()` is one line naming it, the cause and that the same command resumes.

  Pickles as an OSError does (a worker process's write comes back to the parent as itself).
  """

  def reason(self) -> str:
    """The cause and what to do, without the file: "No space left on device (ENOSPC); nothing was left
    half-written: free some space there, then run the same command again to resume"."""
    code = errno.errorcode.get(self.errno, "") if self.errno is not None else ""
    cause = f"{self.strerror or 'refused'}" + (f" ({code})" if code else "")
    if self.errno in (errno.ENOSPC, errno.EDQUOT):
      fix = "free some space there"
    elif self.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
      fix = "make it writable"
    else:
      fix = "remove the cause"
    return f"{cause}; nothing was left half-written: {fix}, then run the same command again to resume"

  def __str__(self) -> str:
    return f"cannot write {self.filename}: {self.reason()}"

  @classmethod
  def of(cls, err: OSError, path: os.PathLike | str) -> "WriteFailed":
    """`err` (an OSError) as the WriteFailed of writing `path`; `err` itself if it is one already."""
    if isinstance(err, WriteFailed):
      return err
    return cls(err.errno, err.strerror or str(err), os.fspath(path))


@contextlib.contextmanager
def _refused_as_write_failed(path: os.PathLike | str) -> Iterator[None]:
  """Raises an OSError of the block as the `WriteFailed` of writing `path` (DirectoryInUse as itself)."""
  try:
    yield
  except DirectoryInUse:
    raise
  except OSError as err:
    raise WriteFailed.of(err, path) from err


def _temporaries(path: Path) -> list[Path]:
  """The temporaries earlier writes of `path` left (killed before they could remove them)."""
  return [Path(p) for p in glob.glob(os.path.join(glob.escape(os.fspath(path.parent)),
                                                  glob.escape(f".{path.name}{TEMPORARY}") + "*"))]


def _remove_stale(path: Path) -> None:
  for stale in _temporaries(path):
    if stale.is_dir() and not stale.is_symlink():
      shutil.rmtree(stale, ignore_errors=True)
    else:
      stale.unlink(missing_ok=True)


def write_atomically(path: os.PathLike | str, write: Callable[[IO[Any]], None], *,
                     text: bool = False) -> None:
  """Calls `write(f)` on a temporary file in `path`'s directory (created if missing), then renames it to
  `path`. `text`: open it in text mode (UTF-8) rather than binary.

  Raises:
    WriteFailed: the system refused a step (`path` then holds what it held before).
  """
  path = Path(path)
  with _refused_as_write_failed(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMPORARY}")
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
    fsync_directory(path.parent)


def write_text(path: os.PathLike | str, content: str) -> None:
  """Writes the str `content` to `path` as UTF-8, atomically (`write_atomically`; WriteFailed as there)."""
  write_atomically(path, lambda f: f.write(content), text=True)


def write_directory_atomically(path: os.PathLike | str, fill: Callable[[Path], None]) -> None:
  """Calls `fill(tmp)` on a new empty temporary directory beside `path` (its parents are created), syncs
  everything `fill` wrote, then puts it at `path`, replacing a directory that is there (module docstring).

  `path` itself is taken as given (a symbolic link at `path` is replaced, not followed: resolve it first to
  replace what it points at). Whether an existing `path` may be replaced is the caller's to check.

  Raises:
    WriteFailed: the system refused a step, in `fill` too (`path` then holds what it held before).
  """
  path = Path(path)
  with _refused_as_write_failed(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}{TEMPORARY}", dir=path.parent))
    try:
      fill(tmp)
      _sync_tree(tmp)
      _install(tmp, path)
    except BaseException:
      shutil.rmtree(tmp, ignore_errors=True)
      raise
    fsync_directory(path.parent)


def write_new_file(path: os.PathLike | str, data: bytes) -> None:
  """Writes `data` to `path`, which must not exist, and syncs it to disk."""
  with open(path, "xb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


def fsync_directory(path: os.PathLike | str) -> None:
  """Makes a directory's entries (new files, renames) durable; a no-op where directories cannot be opened."""
  if not hasattr(os, "O_DIRECTORY"):
    return
  fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _sync_tree(root: Path) -> None:
  """Syncs every file under `root`, then every directory, deepest first (files `fill` wrote without
  syncing would otherwise be renamed into place with their data still in memory)."""
  walked = list(os.walk(root))
  for folder, _, files in walked:
    for name in files:
      fd = os.open(os.path.join(folder, name), os.O_RDONLY)
      try:
        os.fsync(fd)
      finally:
        os.close(fd)
  for folder, _, _ in reversed(walked):
    fsync_directory(folder)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
  """Atomically swaps two directory entries (Linux renameat2). OSError(ENOSYS) where unavailable."""
  try:
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
  except (AttributeError, OSError, TypeError):  # not Linux, or a libc without it
    raise OSError(errno.ENOSYS, "renameat2 is not available") from None
  renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
  if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err), os.fspath(a), None, os.fspath(b))


def _install(tmp: Path, path: Path) -> None:
  """Puts the finished directory `tmp` at `path`, replacing what is there atomically where possible."""
  if not os.path.lexists(path):
    os.rename(tmp, path)
    return
  try:
    _exchange(tmp, path)
  except OSError as err:
    if err.errno not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
      raise
    # No atomic exchange here: move the old directory aside, then the new one in.
    aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
    os.rmdir(aside)
    os.rename(path, aside)
    try:
      os.rename(tmp, path)
    except BaseException:
      os.rename(aside, path)
      raise
    shutil.rmtree(aside, ignore_errors=True)
    return
  shutil.rmtree(tmp, ignore_errors=True)  # after the exchange, tmp holds the old directory


class DirectoryInUse(OSError):
  """Another process holds the directory a run writes into (`hold_directory`)."""


LOCK_FILE = ".hx-lock"
"""The file in a run's directory that its process holds locked (it stays when the run ends; only the
lock, which the system releases when the process ends however it ends, marks the directory busy)."""


@contextlib.contextmanager
def hold_directory(directory: os.PathLike | str) -> Iterator[None]:
  """Holds `directory` (created if missing) for this process while the block runs: a second process that
  tries to hold it meanwhile gets `DirectoryInUse`, at once, instead of writing into the same run.

  An advisory `flock` on DIRECTORY/.hx-lock: released when the block ends or the process dies (a killed
  run leaves nothing to clean up). Within one process the directory may be held once at a time.

  Raises:
    DirectoryInUse: another process holds it (the message names it and that process).
    WriteFailed: the directory or its lock file cannot be created or written (read-only, full).
  """
  directory = Path(directory)
  path = directory / LOCK_FILE
  with _refused_as_write_failed(path):
    directory.mkdir(parents=True, exist_ok=True)
    f = open(path, "a+", encoding="utf-8")  # noqa: SIM115 -- closed below, held open for the block
  with f:
    try:
      fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      f.seek(0)
      holder = f.read().strip() or "another process"
      raise DirectoryInUse(f"{directory} is being written by another hx run ({holder}); wait for it to "
                           "end, or use another directory") from None
    with _refused_as_write_failed(path):
      f.seek(0)
      f.truncate()
      f.write(f"process {os.getpid()}")
      f.flush()
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)
