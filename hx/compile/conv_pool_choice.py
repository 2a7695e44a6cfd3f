"""Which path each CNN block trains through on this CPU, hx's kernels or XLA's: timed once, then kept.

hx's kernels (`hx.compile.conv_pool`) beat XLA's path by a margin that depends on the CPU (its vector
width, caches and cores), on jaxlib (XLA's own kernels change between versions) and on the block's
shape; where they would lose, XLA's path should train the block. So, where $HX_CPU_KERNELS is unset (or
"auto"), the first time a training block the kernels can run (`conv_pool.usable`) is traced, hx times
the block's training gradient both ways (`time_block`: TIMING_ROWS random images, the two paths
alternated, the best of several calls each) and trains the block through the faster one.

The choice is kept in a small JSON file beside the built kernels (`choice_path`: one per kernel
library, itself one per source, compiler, flags, jaxlib and CPU, and per block shape), which every later
process on this machine reads instead of timing again: a run that resumes trains each block the way it
started, and its numbers do not change mid-run. The first process to write a block's file wins (it is
linked into place, never replaced), so processes that time the same block at once (a synthesis's
workers, test workers) all train it one way. A file that cannot be read (truncated, say, or written by
something else) is timed again and replaced, with a warning. Deleting the directory makes hx time again.

$HX_CPU_KERNELS=1 forces the kernels wherever they can run, =0 XLA's path everywhere; neither times.
Each block's choice is logged once per process at debug level (absl's), with both times.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from hx.compile import conv_pool

__all__ = ["TIMING_ROWS", "Block", "Choice", "choice_directory", "choice_path", "choose", "chosen",
           "faster", "time_block"]

TIMING_ROWS = 128
"""Images per timed call: about a training step's worth of one candidate's CNN at the presets' batches."""
_ROUNDS = 5  # timed calls of each path, alternated, after a warm-up call of each
_VERSION = 1  # of the choice files' layout


@dataclasses.dataclass(frozen=True)
class Block:
  """A CNN block as the kernels take it: images (H, W, C), kernel (K, K, C, O), and whether training wants
  the gradient with respect to the images (a CNN's later blocks)."""

  image: tuple[int, int, int]
  kernel: tuple[int, int, int, int]
  input_gradient: bool

  @property
  def name(self) -> str:
    """'28x28x1-5x5x1x32-w' (weights' gradient only) or '12x12x32-5x5x32x64-wx' (with the images')."""
    dims = "x".join(map(str, self.image)) + "-" + "x".join(map(str, self.kernel))
    return dims + ("-wx" if self.input_gradient else "-w")


@dataclasses.dataclass(frozen=True)
class Choice:
  """A block's path: the kernels' and XLA's times (milliseconds per call of TIMING_ROWS images) and
  whether the kernels train it (`faster`)."""

  block: Block
  kernels_ms: float
  xla_ms: float
  kernels: bool

  def to_json(self) -> dict:
    return {"version": _VERSION, "block": self.block.name, "kernels_ms": self.kernels_ms,
            "xla_ms": self.xla_ms, "kernels": self.kernels}

  @staticmethod
  def from_json(block: Block, data: dict) -> Choice:
    """The choice a file holds for `block`; ValueError where the file is not one (another version or
    block, a field missing or of the wrong type)."""
    if not isinstance(data, dict) or data.get("version") != _VERSION or data.get("block") != block.name:
      raise ValueError(f"not a version-{_VERSION} choice for block {block.name}")
    times = data.get("kernels_ms"), data.get("xla_ms")
    if not all(isinstance(t, (int, float)) and t >= 0 for t in times) or not isinstance(data.get("kernels"),
                                                                                         bool):
      raise ValueError(f"the times or the choice are missing or malformed: {data}")
    return Choice(block, float(times[0]), float(times[1]), data["kernels"])


def faster(kernels_ms: float, xla_ms: float) -> bool:
  """Whether the kernels train a block timed at `kernels_ms` against XLA's `xla_ms`: when strictly faster
  (on a tie XLA's path, which every backend shares)."""
  return kernels_ms < xla_ms


def time_block(block: Block, rows: int = TIMING_ROWS) -> Choice:
  """Times `block`'s training gradient (of sum(h * g) with respect to w and b, and x where the block wants
  its input gradient), jitted, through hx's kernels and through XLA's path on `rows` random images:
  one warm-up call of each, then _ROUNDS calls of each, alternated; each path's best call.

  Runs on a thread of its own, outside any trace the caller is in (a CNN being traced when it asks).
  """
  result: list = []

  def run() -> None:
    try:
      result.append(_time(block, rows))
    except BaseException as e:  # handed to the caller's thread
      result.append(e)

  thread = threading.Thread(target=run, name="hx-conv-pool-timing")
  thread.start()
  thread.join()
  if isinstance(result[0], BaseException):
    raise result[0]
  return result[0]


def _time(block: Block, rows: int) -> Choice:
  rng = np.random.default_rng(0)
  h, wd, c = block.image
  x = jnp.asarray(rng.uniform(size=(rows, h, wd, c)).astype(np.float32))
  w = jnp.asarray((rng.normal(size=block.kernel) / np.sqrt(np.prod(block.kernel[:3]))).astype(np.float32))
  b = jnp.zeros(block.kernel[3:], jnp.float32)
  g = jnp.asarray(rng.normal(size=conv_pool._pooled_shape(x, w)).astype(np.float32))
  argnums = (0, 1, 2) if block.input_gradient else (1, 2)

  def gradient(f):
    return jax.jit(jax.grad(lambda *a: jnp.sum(f(*a) * g), argnums))

  calls = {"kernels": gradient(conv_pool.conv_pool),
           "xla": gradient(lambda x_, w_, b_: conv_pool.xla_block(x_, w_, b_, 2))}
  best = {}
  for name, call in calls.items():
    jax.block_until_ready(call(x, w, b))
    best[name] = float("inf")
  for _ in range(_ROUNDS):
    for name, call in calls.items():
      start = time.perf_counter()
      jax.block_until_ready(call(x, w, b))
      best[name] = min(best[name], (time.perf_counter() - start) * 1000)
  kernels_ms, xla_ms = round(best["kernels"], 4), round(best["xla"], 4)
  return Choice(block, kernels_ms, xla_ms, faster(kernels_ms, xla_ms))


def choice_directory() -> Path:
  """Where the choices are kept: `choices/` in the kernels' cache directory (`conv_pool.kernel_cache_dir`)."""
  return conv_pool.kernel_cache_dir() / "choices"


def choice_path(block: Block, library: Path, directory: Path | None = None) -> Path:
  """The file of `block`'s choice for the kernel library `library` (its name is its key: source,
  compiler, flags, jaxlib and CPU): DIRECTORY/LIBRARY-STEM/BLOCK.json."""
  return (directory or choice_directory()) / library.stem / f"{block.name}.json"


def _read(block: Block, path: Path) -> Choice | None:
  """The choice in `path`; None where there is none; None with a warning where it cannot be read."""
  try:
    text = path.read_text()
  except (FileNotFoundError, NotADirectoryError):
    return None
  except OSError as e:
    warnings.warn(f"cannot read hx's kernel choice {path} ({e}); timing block {block.name} again",
                  RuntimeWarning, stacklevel=3)
    return None
  try:
    return Choice.from_json(block, json.loads(text))
  except ValueError as e:  # json.JSONDecodeError included
    warnings.warn(f"hx's kernel choice {path} is corrupt ({e}); timing block {block.name} again and "
                  f"replacing it", RuntimeWarning, stacklevel=3)
    return None


def _write_first(path: Path, choice: Choice, replace: bool) -> None:
  """Writes `choice` to `path` unless another process wrote one first (a hard link into place fails where
  the file exists); `replace` replaces an unreadable file instead. A directory that cannot be written only
  costs later processes a timing of their own."""
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".choice-", suffix=".json",
                                     delete=False) as f:
      json.dump(choice.to_json(), f)
      temporary = Path(f.name)
    try:
      if replace:
        os.replace(temporary, path)
      else:
        os.link(temporary, path)
    except FileExistsError:
      pass
    finally:
      temporary.unlink(missing_ok=True)
  except OSError as e:
    warnings.warn(f"cannot keep hx's kernel choice for block {choice.block.name} in {path.parent} ({e}): "
                  f"later processes will time it again", RuntimeWarning, stacklevel=3)


def choose(block: Block, library: Path, measure: Callable[[Block], Choice] = time_block,
           directory: Path | None = None) -> Choice:
  """`block`'s choice for the kernel library `library`: the one kept (`choice_path`), else `measure`d and
  kept; where another process kept one meanwhile, that one (so that every process trains the block one
  way)."""
  path = choice_path(block, library, directory)
  kept = _read(block, path)
  if kept is not None:
    return kept
  unreadable = path.exists()
  measured = measure(block)
  _write_first(path, measured, replace=unreadable)
  return _read(block, path) or measured


_lock = threading.Lock()
_chosen: dict[Block, Choice] = {}  # this process's choices, each logged once


def chosen(x_shape: tuple[int, ...], w_shape: tuple[int, ...], pool: int, dtype,
           input_gradient: bool = True) -> bool:
  """Whether a training CNN block on NHWC images of x_shape, HWIO kernel w_shape and `pool` x `pool`
  windows runs hx's kernels: where they can (`conv_pool.usable`) and, unless $HX_CPU_KERNELS forces them,
  where they were timed faster on this CPU (`choose`). The first call for a block may take a few seconds
  (two compilations and the timings), once per machine; later ones read the kept choice."""
  if not conv_pool.usable(x_shape, w_shape, pool, dtype, input_gradient):
    return False
  if conv_pool.mode() == "on":
    return True
  block = Block(tuple(x_shape[1:]), tuple(w_shape), bool(input_gradient))
  with _lock:
    choice = _chosen.get(block)
    if choice is None:
      choice = _chosen[block] = choose(block, conv_pool.library_path(), time_block)
      logging.debug("hx's CNN block %s trains through %s on this CPU: kernels %.3f ms, XLA's path %.3f ms "
                    "(%d images)", block.name, "hx's kernels" if choice.kernels else "XLA's path",
                    choice.kernels_ms, choice.xla_ms, TIMING_ROWS)
  return choice.kernels


def choices() -> dict[Block, Choice]:
  """The choices this process made or read so far (`chosen`), by block."""
  with _lock:
    return dict(_chosen)
