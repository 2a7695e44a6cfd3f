"""One CNN block, conv -> 2x2 max-pool -> bias -> ReLU, as XLA:CPU custom calls: hx's own kernels for
training on a CPU.

    h = conv_pool(x, w, b)   # x (R, H, W, C) NHWC float32, w (K, K, C, O) HWIO, b (O) -> h (R, Hp, Wp, O)

`h` is `relu(max_pool(conv_valid(x, w), 2) + b)` (stride-1 VALID convolution, 2x2 windows with stride 2,
floor), what the CNN's training path computes (`hx.compile.modules._cnn_blocks`), and what `xla_block`
computes through XLA's own operations where the kernels do not run. Its gradient is XLA's:
the max's goes to each window's first maximum in row-major order, the ReLU's where its input is > 0.

Why: in a training step of the paper's CNN under XLA:CPU's kernels, the convolutions' gradients and the
pooling's gradient were most of the step, and XLA cannot exploit what the pooling makes of them: only one
of a window's four convolution outputs receives a gradient, and (after the ReLU) about half of the windows
none. These kernels (`conv_pool.cc`, beside this file, called through XLA's FFI) run the block in two
passes instead of XLA's five or more:

- forward: the convolution of each 2x2 window's four positions in registers, kept only as the window's
  maximum plus the bias, after the ReLU (`h`), and the position the maximum came from with whether the
  ReLU passed it (`arg`, one byte per output); the convolution output is never written to memory;
- backward: from `arg`, each output gradient the ReLU passes goes straight to the input patch of its one
  window position, for the weight gradient and (when `x` is differentiated) the input gradient; the bias
  gradient sums them.

Same values as XLA's path up to float32 rounding (another summation order), the same window positions
(ties go to the first), deterministic (fixed groups of images, partial sums added in a fixed order) and
independent of the number of threads, bit for bit; past 8 threads each group's work is split further
(by kernel rows and by images), so the backward pass keeps up to 8 x K threads busy (K x K kernels),
the forward pass as many as XLA's pool has.
Measured in benchmarks/RESULTS.md ("Training throughput").

Vector width: the kernels compute in vectors of the instruction set they are compiled for, with register
blocks sized for its register file: 16 floats and 32 registers with AVX-512, 8 and 16 with AVX or AVX2
(FMA), 4 elsewhere (SSE, ARM's NEON). Vectors wider than the machine's registers, which the compiler
splits, made every register block spill on AVX2. `vector_lanes` says which width the loaded library has.

Where they can run (`usable`): training mode on the CPU backend, float32, 2x2 pooling, output channels a
multiple of 16 (the channels the kernels take in whole groups, whatever the vector width, so that which
blocks can run does not depend on the CPU), input channels a multiple of 16 too unless the block is the
CNN's first (whose input, the images, usually needs no gradient), and the kernels built. Where they do
run (`hx.compile.conv_pool_choice.chosen`): where they can and were timed faster than XLA's path for
that block on this CPU, once per machine, or wherever they can with `HX_CPU_KERNELS=1`. They are built
on first use from `conv_pool.cc` by the C++ compiler (`$CXX`, a command line such as `ccache g++`,
else `c++`, `g++` or `clang++` on PATH) for this machine's CPU (`-march=native`, or the instruction set
$HX_KERNEL_MARCH names: `x86-64-v3` for a library that runs on any AVX2 machine, say), with jaxlib's FFI
headers, into a cache directory
(`$HX_KERNEL_CACHE_DIR`, else `$XDG_CACHE_HOME/hx/kernels`, else `~/.cache/hx/kernels`), one library per
source, compiler, flags, jaxlib and CPU, written atomically (a rename) so that processes building at once
do not collide. Without a compiler, or if building or loading fails, hx warns once (naming the compiler
and its error) and trains through XLA's own kernels: the same values to rounding, slower.
`HX_CPU_KERNELS=0` (also "false", "no", "off") turns them off, `=1` forces them where they can run, and
unset (or "auto") leaves it to the timings (`mode`); it is read when a CNN is traced. On a GPU they are
never used: `conv_pool` stages both the kernels and XLA's path (`jax.lax.platform_dependent`), and
lowering keeps the one for the platform lowered for, so a program traced in a CPU process and lowered for
a GPU holds no custom call of these; `usable` also says no where JAX's default backend is not the CPU,
which spares a GPU process building kernels it would not run.

The handlers trust no shape: each checks every operand and result against the images and the kernel and
returns an XLA error naming the mismatch (a `jax.ffi.ffi_call` of them with a gradient of one batch and
images of another raises in Python; it does not read out of bounds), and an exception in one of their
threads (memory that runs out) is the call's error too, not the end of the process.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hx.compile.cache import hx_cache_home

__all__ = ["ENABLE_ENV", "KERNEL_CACHE_DIR_ENV", "MARCH_ENV", "KernelBuildError", "build_library",
           "conv_pool", "conv_valid", "enabled", "kernel_cache_dir", "library_path", "load_error",
           "load_kernels", "march", "max_pool", "mode", "reduce_window_max", "usable", "vector_lanes",
           "xla_block"]

ENABLE_ENV = "HX_CPU_KERNELS"
KERNEL_CACHE_DIR_ENV = "HX_KERNEL_CACHE_DIR"
MARCH_ENV = "HX_KERNEL_MARCH"
SOURCE = Path(__file__).with_name("conv_pool.cc")
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")
_AUTO = ("", "auto")
_FLAGS = ("-O3", "-std=c++20", "-shared", "-fPIC", "-w")  # and -march=march()
_LANES = 16  # the channels conv_pool.cc takes in whole groups (kChannels), whatever its vector width
_ACTIVE = 0x80  # arg's bit for "the ReLU passes the gradient" (kActive in conv_pool.cc)
# FFI target name -> the handler symbol conv_pool.cc exports.
_TARGETS = {"hx_conv_pool_forward": "HxConvPoolForward",
            "hx_conv_pool_backward_with_input": "HxConvPoolBackwardWithInput",
            "hx_conv_pool_backward_weights": "HxConvPoolBackwardWeights"}


class KernelBuildError(RuntimeError):
  """The kernels could not be built or loaded (the message names the compiler, the file and the error)."""


def mode() -> str:
  """$HX_CPU_KERNELS read: "off" (0, false, no, off: XLA's path everywhere), "on" (1, true, yes, on: the
  kernels wherever they can run) or "auto" (unset, empty or auto: where they can run and were timed
  faster on this CPU, `hx.compile.conv_pool_choice`). Raises ValueError naming the variable for any other
  value."""
  value = os.environ.get(ENABLE_ENV, "").strip().lower()
  for name, spellings in (("off", _OFF), ("on", _ON), ("auto", _AUTO)):
    if value in spellings:
      return name
  raise ValueError(f"${ENABLE_ENV}={os.environ[ENABLE_ENV]!r}: expected 1 (hx's CPU kernels wherever they "
                   f"can run), 0 (XLA's path everywhere) or auto (the faster on this CPU, the default)")


def enabled() -> bool:
  """False when $HX_CPU_KERNELS turns hx's CPU kernels off."""
  return mode() != "off"


def march() -> str:
  """The instruction set the kernels are compiled for, as GCC's and Clang's -march take it:
  $HX_KERNEL_MARCH (x86-64-v3 for AVX2 and FMA, x86-64-v4 for AVX-512, say), else "native" (this CPU's).
  The kernels choose their vector width and register blocking from it (conv_pool.cc)."""
  return os.environ.get(MARCH_ENV, "").strip() or "native"


def kernel_cache_dir() -> Path:
  """$HX_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/hx/kernels, else ~/.cache/hx/kernels."""
  if os.environ.get(KERNEL_CACHE_DIR_ENV):
    return Path(os.environ[KERNEL_CACHE_DIR_ENV]).expanduser()
  return hx_cache_home() / "kernels"


def _compiler() -> str | None:
  """$CXX (a command line, "ccache g++" say), else the first C++ compiler on PATH, else None."""
  if os.environ.get("CXX", "").strip():
    return os.environ["CXX"]
  for name in ("c++", "g++", "clang++"):
    if shutil.which(name):
      return name
  return None


def _cpu_identity() -> str:
  """What `-march=native` compiles for: the CPU's model and instruction-set flags (Linux), else the
  machine and processor names."""
  try:
    with open("/proc/cpuinfo") as f:
      lines = [line for line in f if line.startswith(("model name", "flags", "Features"))]
    return "".join(sorted(set(lines)))
  except OSError:
    return platform.machine() + platform.processor()


def build_library(compiler: str | None = None, directory: Path | None = None,
                  extra_flags: tuple[str, ...] = ()) -> Path:
  """The kernels' shared library for this machine, compiled into `directory` unless already there.

  `compiler`: a command line split as a shell would (`shlex.split`: "ccache g++", or a quoted path with
  spaces), as $CXX is; by default $CXX, else c++, g++ or clang++ on PATH. `extra_flags` follow hx's own
  (`-fsanitize=address`, say: a library of their own). Raises KernelBuildError when there is no compiler
  or it fails (with its output).
  """
  compiler = compiler or _compiler()
  if compiler is None:
    raise KernelBuildError("no C++ compiler found ($CXX, c++, g++ or clang++ on PATH)")
  try:
    compiler_command = shlex.split(compiler)
  except ValueError as e:
    raise KernelBuildError(f"cannot split the compiler command {compiler!r} as a shell would: {e}") from e
  if not compiler_command:
    raise KernelBuildError(f"the compiler command {compiler!r} is empty")
  directory = directory or kernel_cache_dir()
  import jaxlib
  source = SOURCE.read_bytes()
  flags = (f"-march={march()}", *_FLAGS, *extra_flags)
  key = hashlib.sha256(b"\0".join([source, compiler.encode(), " ".join(flags).encode(),
                                   jaxlib.__version__.encode(), _cpu_identity().encode()])).hexdigest()[:20]
  target = directory / f"conv_pool-{key}.so"
  if target.exists():
    damage = _damage(target)
    if damage is None:
      return target
    warnings.warn(f"hx's CPU kernels' library {target} is {damage}: building it again", RuntimeWarning,
                  stacklevel=2)
  try:
    directory.mkdir(parents=True, exist_ok=True)
  except OSError as e:
    raise KernelBuildError(f"cannot create the kernel cache directory {directory}: {e}") from e
  # Not hx.atomic.write_atomically: several processes (test workers, a synthesis's worker processes) may
  # build the same library at once, and that one removes other writers' temporaries of the same path.
  # Each build here has its own directory; the rename is atomic, and the last one wins, with the same bytes.
  # The library's digest goes into place first, so a library in place has its digest beside it.
  try:
    with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
      out = Path(tmp) / target.name
      command = [*compiler_command, *flags, f"-I{jax.ffi.include_dir()}", str(SOURCE), "-o", str(out)]
      try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
      except (OSError, subprocess.TimeoutExpired) as e:
        raise KernelBuildError(f"{compiler} could not build {SOURCE}: {e}") from e
      if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise KernelBuildError(f"{compiler} failed ({done.returncode}) on {SOURCE}:\n{tail}")
      digest = Path(tmp) / _digest_path(target).name
      digest.write_text(_digest(out))
      os.replace(digest, _digest_path(target))
      os.replace(out, target)
  except OSError as e:
    raise KernelBuildError(f"cannot build the kernels in {directory}: {e}") from e
  return target


def _digest(path: Path) -> str:
  return hashlib.sha256(path.read_bytes()).hexdigest()


def _digest_path(library: Path) -> Path:
  """Where the SHA-256 of `library`'s bytes is kept from when it was built: LIBRARY.sha256."""
  return library.with_name(library.name + ".sha256")


def _damage(library: Path) -> str | None:
  """What is wrong with a library in the cache, or None: its bytes must match the digest kept when it was
  built. Loading a damaged one (a truncated copy, say) can kill the process (SIGBUS), not raise."""
  try:
    kept = _digest_path(library).read_text().strip()
  except OSError:
    return "without the digest hx keeps beside each library it builds (copied in, or damaged)"
  try:
    same = _digest(library) == kept
  except OSError as e:
    return f"unreadable ({e})"
  return None if same else "damaged (its bytes do not match their digest from its build)"


_lock = threading.Lock()
_loaded: bool | None = None  # None: not tried yet
_library: Path | None = None  # the library loaded
_lanes: int | None = None  # its vector width in floats
_load_error: str | None = None  # why they could not be built or loaded, if so


def load_kernels() -> bool:
  """Builds (if needed) and loads the kernels and registers their FFI targets, once per process.

  True when they are ready; False (after one warning) when they cannot be built or loaded.
  """
  global _loaded, _load_error, _library, _lanes
  with _lock:
    if _loaded is None:
      try:
        path = build_library()
        try:
          library = ctypes.CDLL(str(path))
          for name, symbol in _TARGETS.items():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, symbol)), platform="cpu")
          _lanes = int(library.HxConvPoolLanes())
        except (OSError, AttributeError) as e:
          raise KernelBuildError(f"cannot load {path}: {e}") from e
        _loaded, _library = True, path
      except KernelBuildError as e:
        _load_error = str(e)
        warnings.warn(f"hx's CPU kernels for the CNN are unavailable, so it trains through XLA's own "
                      f"(slower, same values to rounding): {e}. {ENABLE_ENV}=0 silences this.",
                      RuntimeWarning, stacklevel=2)
        _loaded = False
    return _loaded


def library_path() -> Path:
  """The kernels' library this process loaded (its name: a key of the source, compiler, flags, jaxlib and
  CPU it was built for). Loads it if no call has; raises KernelBuildError where it cannot be."""
  if not load_kernels():
    raise KernelBuildError(f"hx's CPU kernels could not be built or loaded: {_load_error}")
  return _library


def vector_lanes() -> int:
  """Floats per vector in the kernels this process loaded: 16 when built for AVX-512, 8 for AVX or AVX2,
  4 otherwise ($HX_KERNEL_MARCH, else this CPU). Raises KernelBuildError where they cannot be loaded."""
  library_path()
  return _lanes


def load_error() -> str | None:
  """Why `load_kernels` could not build or load the kernels in this process (the compiler's error, say);
  None where they are loaded or no call has tried."""
  return _load_error if _loaded is False else None


def _shape_problem(x_shape: tuple[int, ...], w_shape: tuple[int, ...], dtype) -> str | None:
  """Why the kernels cannot take images of x_shape and a kernel of w_shape, or None if they can."""
  if jnp.dtype(dtype) != jnp.float32:
    return f"the images are {jnp.dtype(dtype)}, not float32"
  if len(x_shape) != 4 or len(w_shape) != 4:
    return f"images {x_shape} and kernel {w_shape} are not NHWC and HWIO"
  if x_shape[3] != w_shape[2]:
    return f"images {x_shape} have {x_shape[3]} channels, kernel {w_shape} takes {w_shape[2]}"
  if w_shape[3] % _LANES:
    return f"kernel {w_shape} has {w_shape[3]} output channels, not a multiple of {_LANES}"
  if w_shape[0] != w_shape[1] or w_shape[0] < 1:
    return f"kernel {w_shape} is not square (K, K, C, O) with K >= 1"
  if min(x_shape[1], x_shape[2]) - w_shape[0] + 1 < 2:
    return f"images {x_shape} are too small for kernel {w_shape} and a 2x2 window"
  return None


def usable(x_shape: tuple[int, ...], w_shape: tuple[int, ...], pool: int, dtype,
           input_gradient: bool = True) -> bool:
  """Whether `conv_pool` can run this block here: NHWC x_shape, HWIO w_shape, `pool` x `pool` windows.
  Whether it does is `hx.compile.conv_pool_choice.chosen`'s call (also timed faster on this CPU).

  `input_gradient`: whether training will want the gradient with respect to the images (a CNN's later
  blocks; its first block's input is usually data). The kernels compute it for any channel count, but
  fast only for a multiple of 16 input channels (their scatter form); for fewer, XLA's path was faster
  (benchmarks/RESULTS.md), so such a block is not usable when the input gradient is wanted. Builds and
  loads the kernels on the first call that needs them.
  """
  if not enabled() or jax.default_backend() != "cpu" or pool != 2:
    return False
  if input_gradient and len(x_shape) == 4 and x_shape[3] % _LANES:
    return False
  return _shape_problem(tuple(x_shape), tuple(w_shape), dtype) is None and load_kernels()


def _pooled_shape(x: jax.Array, w: jax.Array) -> tuple[int, int, int, int]:
  r, h, wd, _ = x.shape
  k, _, _, o = w.shape
  return r, (h - k + 1) // 2, (wd - k + 1) // 2, o


def _check(x: jax.Array, w: jax.Array, b: jax.Array) -> None:
  """Raises ValueError naming what the kernels cannot take in images x, kernel w and bias b."""
  problem = _shape_problem(x.shape, w.shape, x.dtype)
  if problem is None and (w.dtype != jnp.float32 or b.dtype != jnp.float32):
    problem = f"the kernel and bias are {w.dtype} and {b.dtype}, not float32"
  if problem is None and b.shape != w.shape[3:]:
    problem = f"bias {b.shape} does not match kernel {w.shape}'s {w.shape[3]} output channels"
  if problem:
    raise ValueError(f"conv_pool: {problem}")


def _forward(x: jax.Array, w: jax.Array, b: jax.Array, slices: int = 0) -> tuple[jax.Array, jax.Array]:
  """The forward custom call: h (R, Hp, Wp, O) float32 and arg (R, Hp, Wp, O) uint8 (conv_pool.cc).

  `slices`: 0 to split the work as XLA's thread pool allows, else into that many tasks per group of
  images; the results are the same bit for bit whatever it is (what the tests check it for).
  """
  _check(x, w, b)
  if not load_kernels():
    raise KernelBuildError("conv_pool: hx's CPU kernels could not be built or loaded (see the warning); "
                           "call it only where usable() says so")
  shape = _pooled_shape(x, w)
  call = jax.ffi.ffi_call("hx_conv_pool_forward", (jax.ShapeDtypeStruct(shape, jnp.float32),
                                                  jax.ShapeDtypeStruct(shape, jnp.uint8)),
                          vmap_method="sequential")
  return call(x, w, b, slices=np.int64(slices))


def _backward(x: jax.Array, w: jax.Array, arg: jax.Array, g: jax.Array, input_gradient: bool,
              slices: int = 0) -> tuple[jax.Array, ...]:
  """The backward custom call from `_forward`'s arg and the output gradient g (R, Hp, Wp, O): (dw, db), and
  dx last when `input_gradient`. `slices` as in `_forward`."""
  out = (jax.ShapeDtypeStruct(w.shape, jnp.float32), jax.ShapeDtypeStruct(w.shape[3:], jnp.float32))
  if input_gradient:
    target, out = "hx_conv_pool_backward_with_input", (*out, jax.ShapeDtypeStruct(x.shape, jnp.float32))
  else:
    target = "hx_conv_pool_backward_weights"
  return jax.ffi.ffi_call(target, out, vmap_method="sequential")(x, w, arg, g, slices=np.int64(slices))


# The same two passes through XLA's own operations, for the platforms without the kernels: what a program
# lowered for one of them runs (`conv_pool`). Same values, window positions and gradients.

def conv_valid(x: jax.Array, w: jax.Array) -> jax.Array:
  """A stride-1 'VALID' convolution, x (R, H, W, C) NHWC, w (k, k, C, O) HWIO -> (R, H-k+1, W-k+1, O),
  in float32 on every backend (`hx.compile.modules.PRECISION`): the CNN template's convolution
  (`hx.compile.modules._cnn_blocks`), and what the kernels' XLA path below computes.

  Not `flax.linen.Conv`: it adds its bias inside, before the pooling, where the training path adds it
  after (on a quarter of the values); `Conv(use_bias=False)` is this very call. A training step of the
  paper's CNN built of flax's `Conv` and `max_pool` gives the same values but runs several times slower
  on XLA:CPU than the template.

  XLA's own gradients: the first convolution's input gradient is never computed (XLA drops it, as
  nothing uses it), the second's is a forward convolution of the padded output gradient with the flipped
  kernel. (A col2im matmul instead was faster alone but not inside the training step; the weight
  gradient as one matmul of the shifted input windows, which hx used before, is slower than XLA's once
  the CNN runs in slices; benchmarks/RESULTS.md.)
  """
  # HIGHEST, as modules.PRECISION (this module sits below modules, which imports it).
  return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                  precision=lax.Precision.HIGHEST)


def reduce_window_max(x: jax.Array, k: int) -> jax.Array:
  """k x k max-pooling with stride k (floor) over NHWC x (R, H, W, C) -> (R, H//k, W//k, C), with JAX's
  own gradient: the CNN's inference path."""
  return lax.reduce_window(x, -jnp.inf, lax.max, (1, k, k, 1), (1, k, k, 1), "VALID")


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def max_pool(x: jax.Array, k: int) -> jax.Array:
  """k x k max-pooling with stride k (floor) over NHWC x (R, H, W, C) -> (R, H//k, W//k, C).

  The values and gradient of `lax.reduce_window` with `lax.max`: each window's gradient goes to its
  first maximum in row-major order (what XLA's select-and-scatter does). Only the gradient is computed
  differently: JAX differentiates reduce_window through a variadic reduce-window over the values and
  four int32 index arrays, several times slower on XLA:CPU than this elementwise compare-and-select.
  """
  return reduce_window_max(x, k)


def _max_pool_fwd(x, k):
  y = reduce_window_max(x, k)
  return y, (x, y)


def _max_pool_bwd(k, res, g):
  x, y = res
  r, h, w, c = x.shape
  hh, ww = h // k, w // k
  windows = x[:, :hh * k, :ww * k].reshape(r, hh, k, ww, k, c)
  taken = jnp.zeros(y.shape, bool)
  rows = []
  for a in range(k):
    row = []
    for b in range(k):
      first = (windows[:, :, a, :, b, :] == y) & ~taken  # the window's first maximum, row-major
      taken = taken | first
      row.append(jnp.where(first, g, 0.0))
    rows.append(jnp.stack(row, 3))  # (R, H//k, W//k, k, C)
  dx = jnp.stack(rows, 2).reshape(r, hh * k, ww * k, c)
  return (jnp.pad(dx, ((0, 0), (0, h - hh * k), (0, w - ww * k), (0, 0))),)


max_pool.defvjp(_max_pool_fwd, _max_pool_bwd)


def xla_block(x: jax.Array, w: jax.Array, b: jax.Array, pool: int) -> jax.Array:
  """relu(max_pool(conv_valid(x, w), pool) + b) through XLA's operations: x (R, H, W, C), w (K, K, C, O),
  b (O) -> (R, (H-K+1)//pool, (W-K+1)//pool, O). What a CNN block trains through where `conv_pool` does
  not run it (`hx.compile.modules._cnn_blocks`), and what `hx.compile.conv_pool_choice` times it against."""
  return jax.nn.relu(max_pool(conv_valid(x, w), pool) + b)


def _xla_forward(x: jax.Array, w: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
  """`_forward`'s (h, arg) through XLA: h (R, Hp, Wp, O) float32, arg (R, Hp, Wp, O) uint8."""
  r, hp, wp, o = _pooled_shape(x, w)
  z = conv_valid(x, w)[:, :2 * hp, :2 * wp].reshape(r, hp, 2, wp, 2, o)
  windows = z.transpose(0, 1, 3, 5, 2, 4).reshape(r, hp, wp, o, 4)  # positions row-major, as in arg
  top = jnp.max(windows, -1)
  first = jnp.argmax(windows == top[..., None], -1).astype(jnp.uint8)  # the first maximum
  pre = top + b
  return jax.nn.relu(pre), first | jnp.where(pre > 0, _ACTIVE, 0).astype(jnp.uint8)


def _xla_backward(x: jax.Array, w: jax.Array, arg: jax.Array, g: jax.Array,
                  input_gradient: bool) -> tuple[jax.Array, ...]:
  """`_backward`'s (dw, db[, dx]) through XLA: each output gradient the ReLU passes sent to its window's
  position, then the convolution's own gradients."""
  r, hp, wp, o = arg.shape
  passed = jnp.where(arg >= _ACTIVE, g, 0.0)
  at = (arg & 3)[..., None] == jnp.arange(4, dtype=jnp.uint8)  # (R, Hp, Wp, O, 4)
  dz = jnp.where(at, passed[..., None], 0.0).reshape(r, hp, wp, o, 2, 2).transpose(0, 1, 4, 2, 5, 3)
  k = w.shape[0]
  dz = jnp.pad(dz.reshape(r, 2 * hp, 2 * wp, o),
               ((0, 0), (0, x.shape[1] - k + 1 - 2 * hp), (0, x.shape[2] - k + 1 - 2 * wp), (0, 0)))
  dx, dw = jax.vjp(conv_valid, x, w)[1](dz)
  db = jnp.sum(passed, (0, 1, 2))
  return (dw, db, dx) if input_gradient else (dw, db)


@jax.custom_vjp
def conv_pool(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
  """relu(max_pool(conv_valid(x, w), 2) + b): x (R, H, W, C) float32, w (K, K, C, O), b (O)
  -> (R, (H-K+1)//2, (W-K+1)//2, O).

  Where `usable` says so (elsewhere XLA's path is as good or better); see the module docstring. The
  kernels are chosen when the program is lowered, for the platform it is lowered for: lowered for a GPU
  (from a CPU process too, `jax.jit(f).trace(...).lower(lowering_platforms=("cuda",))`), each pass is its
  XLA form (`_xla_forward`, `_xla_backward`) and holds no custom call, which no GPU could run. Raises
  ValueError for shapes or dtypes the kernels cannot take, KernelBuildError where they are not built.
  """
  return _either_forward(x, w, b)[0]


def _either_forward(x, w, b):
  _check(x, w, b)
  return lax.platform_dependent(x, w, b, cpu=_forward, default=_xla_forward)


# The platform is chosen inside each pass, not around the custom_vjp: inside a conditional (what
# platform_dependent stages), this custom_vjp, whose residuals' structure says whether x is differentiated,
# lost its input gradient under JAX 0.10.2 when differentiated with x, then without, then with x again.
def _conv_pool_fwd(x, w, b):
  h, arg = _either_forward(x.value, w.value, b.value)
  # The residuals' structure (not a value) says whether x is differentiated: () if so, None if not.
  return h, (x.value, w.value, arg, () if x.perturbed else None)


def _conv_pool_bwd(res, g):
  x, w, arg, input_gradient = res
  g = jnp.zeros(arg.shape, jnp.float32) if isinstance(g, jax.custom_derivatives.SymbolicZero) else g
  wanted = input_gradient is not None
  grads = lax.platform_dependent(x, w, arg, g, cpu=functools.partial(_backward, input_gradient=wanted),
                                 default=functools.partial(_xla_backward, input_gradient=wanted))
  return (grads[2], *grads[:2]) if wanted else (None, *grads)


conv_pool.defvjp(_conv_pool_fwd, _conv_pool_bwd, symbolic_zeros=True)
