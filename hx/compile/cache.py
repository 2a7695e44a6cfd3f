"""JAX's persistent compilation cache for hx: on by default, per user, turned on when Tune is first used.

Every synthesis run trains many candidates whose train and evaluation steps have the same structure as
those of earlier runs; the persistent cache lets a new process load those executables from disk instead
of compiling them again (seconds each on CPU for a CNN candidate).

Configuration, read when the cache is first turned on:
  HX_COMPILATION_CACHE_DIR   the directory (default: $XDG_CACHE_HOME/hx/jax, else ~/.cache/hx/jax);
  HX_COMPILATION_CACHE=0     leave the cache off (also "false", "no", "off").

`ensure_compilation_cache()` (called by `tune`) does nothing if the cache was already configured, by
this module or by the user through `jax.config` (a `jax_compilation_cache_dir` set by hand is kept).
Every executable is cached, however fast it compiled (`jax_persistent_cache_min_compile_time_secs=0`).

A damaged entry (a file JAX cannot read back: truncated by a process killed while JAX wrote it, which it
does in place, or altered) is removed and compiled anew, with one warning naming the file
(`repair_damaged_entries`, turned on with the cache). JAX itself only warns and compiles, every time: it
never writes over an entry that exists, so the damaged file would stay. What JAX cannot read it never
runs, so a damaged entry costs a compilation, never a crash or a wrong result; the zlib JAX compresses
with here checks every byte (Adler-32); with the zstandard package installed JAX compresses with zstd,
whose frames it writes without a checksum.
"""

from __future__ import annotations

import glob
import os
import warnings
from pathlib import Path

import jax

__all__ = [
  "CACHE_DIR_ENV", "CACHE_ENABLE_ENV", "default_cache_dir", "hx_cache_home", "enable_compilation_cache",
  "disable_compilation_cache", "ensure_compilation_cache", "compilation_cache_dir", "repair_damaged_entries",
]

CACHE_DIR_ENV = "HX_COMPILATION_CACHE_DIR"
CACHE_ENABLE_ENV = "HX_COMPILATION_CACHE"
_OFF = ("0", "false", "no", "off")

# Whether `ensure_compilation_cache` has decided already (enabled, disabled, or left the user's choice).
_configured = False


def hx_cache_home() -> Path:
  """$XDG_CACHE_HOME/hx, else ~/.cache/hx: where hx's caches live unless their own variable says."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return Path(base) / "hx"


def default_cache_dir() -> Path:
  """$HX_COMPILATION_CACHE_DIR, else $XDG_CACHE_HOME/hx/jax, else ~/.cache/hx/jax."""
  if os.environ.get(CACHE_DIR_ENV):
    return Path(os.environ[CACHE_DIR_ENV]).expanduser()
  return hx_cache_home() / "jax"


def _reset_jax_cache() -> None:
  # JAX opens its cache directory once, at the first compilation after it is set; to point it somewhere
  # else afterwards it must forget the open one. This helper lives in jax.experimental (present in jax
  # 0.4 through 0.11); without it a new directory only takes effect in a new process.
  try:
    from jax.experimental.compilation_cache import compilation_cache as cc
    cc.reset_cache()
  except (ImportError, AttributeError):
    pass


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
  """Turns the persistent compilation cache on in `path` (default: `default_cache_dir()`).

  Returns the directory (created if missing).
  """
  global _configured
  directory = Path(path).expanduser() if path is not None else default_cache_dir()
  directory.mkdir(parents=True, exist_ok=True)
  if jax.config.jax_compilation_cache_dir != str(directory):
    _reset_jax_cache()
  jax.config.update("jax_compilation_cache_dir", str(directory))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_enable_compilation_cache", True)
  repair_damaged_entries()
  _configured = True
  return directory


def repair_damaged_entries() -> bool:
  """Makes JAX's persistent cache remove an entry it cannot read back, with a warning that names the file,
  so that the executable compiled in its place is cached anew (module docstring); idempotent.

  Wraps `jax._src.compilation_cache.get_executable_and_time`, which JAX's compiler calls for every
  lookup (jax 0.10 and 0.11). Errors JAX raises on purpose pass through: a `CacheVerificationError`, and
  every error where `jax_raise_persistent_cache_errors` is set.

  Returns:
    True if the lookup is wrapped (now or before); False where this JAX has no such function (a damaged
    entry is then JAX's own warning and a compilation, every time).
  """
  try:
    from jax._src import compilation_cache as jax_cache
  except ImportError:
    return False
  read = getattr(jax_cache, "get_executable_and_time", None)
  if read is None:
    return False
  if getattr(read, "hx_repairs", False):
    return True
  deliberate = getattr(jax_cache, "CacheVerificationError", ())

  def get_executable_and_time(cache_key: str, *args, **kwargs):
    try:
      return read(cache_key, *args, **kwargs)
    except Exception as err:  # noqa: BLE001 -- whatever a damaged file makes JAX's reader raise
      if isinstance(err, deliberate) or getattr(jax.config, "jax_raise_persistent_cache_errors", False):
        raise
      files = _entry_files(cache_key)
      for path in files:
        Path(path).unlink(missing_ok=True)
      named = files[0] if files else f"{cache_key} in {jax.config.jax_compilation_cache_dir}"
      warnings.warn(f"hx's compile cache entry {named} cannot be read ({type(err).__name__}: "
                    f"{str(err).strip().splitlines()[0] if str(err).strip() else 'damaged'}); removed, "
                    "compiled again and cached anew", RuntimeWarning, stacklevel=2)
      return None, None

  get_executable_and_time.hx_repairs = True  # type: ignore[attr-defined]
  jax_cache.get_executable_and_time = get_executable_and_time
  return True


def _entry_files(cache_key: str) -> list[str]:
  """The files of the cache entry `cache_key` in the cache directory (JAX's KEY-cache, and KEY-atime
  where it keeps access times), the entry's own first."""
  directory = jax.config.jax_compilation_cache_dir
  if not directory:
    return []
  return sorted(glob.glob(os.path.join(glob.escape(directory), glob.escape(cache_key) + "-*")),
                key=lambda p: not p.endswith("-cache"))


def disable_compilation_cache() -> None:
  """Turns the persistent compilation cache off for this process (and stops Tune turning it on)."""
  global _configured
  jax.config.update("jax_enable_compilation_cache", False)
  _configured = True


def compilation_cache_dir() -> Path | None:
  """The directory JAX's persistent cache uses now, or None if the cache is off."""
  if not jax.config.jax_enable_compilation_cache or not jax.config.jax_compilation_cache_dir:
    return None
  return Path(jax.config.jax_compilation_cache_dir)


def ensure_compilation_cache() -> Path | None:
  """Turns the cache on as configured (see the module docstring), once per process; idempotent.

  Returns the cache directory, or None if the cache is off.
  """
  global _configured
  if not _configured:
    _configured = True
    if os.environ.get(CACHE_ENABLE_ENV, "1").strip().lower() in _OFF:
      jax.config.update("jax_enable_compilation_cache", False)
    elif not jax.config.jax_compilation_cache_dir:
      try:
        enable_compilation_cache()
      except OSError:
        # An unwritable home directory must not stop training: run without the cache.
        jax.config.update("jax_enable_compilation_cache", False)
    if compilation_cache_dir() is not None:  # a directory the user set by hand too
      repair_damaged_entries()
  return compilation_cache_dir()


def _forget_configuration() -> None:
  """For tests: let the next `ensure_compilation_cache` decide again."""
  global _configured
  _configured = False
