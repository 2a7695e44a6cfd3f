"""hx's CPU kernels (`hx.compile.conv_pool`) built with AddressSanitizer and run on every code path: no read
or write out of bounds, no use after free.

The library is built with `-fsanitize=address` into a temporary directory and exercised in a child
Python with the sanitizer's runtime preloaded (LD_PRELOAD: Python itself is not instrumented): every
kind of block the kernels have a loop for, each split of the work, both backward calls, the values
against the XLA forms, and a call with shapes that do not fit. A first
child checks that the setup reports an overflow at all (a small instrumented library that reads past an
allocation), so that a silent run means a clean one. Slow: the instrumented build alone takes a minute.
"""

import os
import pathlib
import shlex
import subprocess
import sys

import pytest

import hx.compile.conv_pool as cp
from tests.compile import kernel_gate

pytestmark = [pytest.mark.slow, *kernel_gate.pytestmark()]

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-g")
# Python and jaxlib leak by the sanitizer's count at exit; reports of errors stay on.
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=0:halt_on_error=1:exitcode=86"

_OVERFLOW = r"""
#include <cstdlib>
extern "C" int read_past(int n) {
  int* p = static_cast<int*>(std::malloc(sizeof(int) * n));
  for (int i = 0; i < n; ++i) p[i] = i;
  const int v = p[n];  // one past the end
  std::free(p);
  return v;
}
"""

_CHILD = r"""
import json, sys
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
import hx.compile.conv_pool as cp

library = Path(sys.argv[1])
cp.build_library = lambda *a, **k: library  # the instrumented build, not the cached one
assert cp.load_kernels(), cp.load_error()
rng = np.random.default_rng(0)
blocks = [((19, 28, 28, 1), (5, 5, 1, 32)), ((9, 13, 11, 3), (3, 3, 3, 16)),
          ((21, 12, 12, 32), (5, 5, 32, 64)), ((10, 11, 11, 16), (4, 4, 16, 16)),
          ((3, 12, 12, 64), (5, 5, 64, 16)), ((1, 3, 3, 1616), (2, 2, 1616, 16)),
          ((2, 2, 3, 1616), (1, 1, 1616, 16)), ((4, 9, 10, 16), (2, 2, 16, 48)),
          ((2, 7, 7, 48), (3, 3, 48, 80))]
checked = 0
for x_shape, w_shape in blocks:
  x = rng.integers(0, 3, x_shape).astype(np.float32)
  w = rng.integers(-2, 3, w_shape).astype(np.float32)
  b = rng.integers(-4, 3, w_shape[3:]).astype(np.float32)
  g = rng.integers(-2, 3, cp._pooled_shape(x, w)).astype(np.float32)
  want_h, want_arg = jax.jit(cp._xla_forward)(x, w, b)
  for slices in (0, 1, 3):
    h, arg = jax.jit(cp._forward, static_argnums=3)(x, w, b, slices)
    np.testing.assert_array_equal(h, want_h)
    np.testing.assert_array_equal(arg, want_arg)
    for input_gradient in (True, False):
      ours = jax.jit(cp._backward, static_argnums=(4, 5))(x, w, arg, g, input_gradient, slices)
      xla = jax.jit(cp._xla_backward, static_argnums=4)(x, w, arg, g, input_gradient)
      for a, c in zip(ours, xla, strict=True):
        np.testing.assert_array_equal(a, c)
      checked += 1
# Shapes that do not fit: errors, and nothing read out of bounds on the way.
bad = jax.ffi.ffi_call("hx_conv_pool_backward_weights", (jax.ShapeDtypeStruct((5, 5, 16, 16), np.float32),
                                                        jax.ShapeDtypeStruct((16,), np.float32)))
try:
  jax.block_until_ready(bad(np.ones((4, 12, 12, 16), np.float32), np.ones((5, 5, 16, 16), np.float32),
                            np.ones((1, 4, 4, 16), np.uint8), np.ones((1, 4, 4, 16), np.float32),
                            slices=np.int64(0)))
  raise SystemExit("a mismatched call returned")
except Exception as e:
  assert "the shape of the window positions" in str(e), e
print(json.dumps({"checked": checked}))
"""


def _library(command: list[str], name: str) -> str | None:
  """The path of the compiler's library `name`, or None where it has none."""
  found = subprocess.run([*command, f"-print-file-name={name}"], capture_output=True, text=True, timeout=60)
  path = found.stdout.strip()
  return path if found.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


def _compiler_and_preload() -> tuple[list[str], str]:
  """The C++ compiler command and what to preload: its AddressSanitizer runtime, and its C++ runtime
  (without which the sanitizer cannot intercept the exceptions jaxlib throws and catches while starting:
  "CHECK failed ... real___cxa_throw"). Skips where the compiler has no sanitizer runtime."""
  compiler = cp._compiler()
  if compiler is None:
    pytest.skip("no C++ compiler")
  command = shlex.split(compiler)
  runtime = _library(command, "libasan.so")
  if runtime is None:
    pytest.skip(f"{compiler} has no AddressSanitizer runtime (libasan.so)")
  return command, " ".join(p for p in (runtime, _library(command, "libstdc++.so")) if p)


def _run(args, preload, timeout=900):
  env = {**os.environ, "LD_PRELOAD": preload, "ASAN_OPTIONS": ASAN_OPTIONS}
  return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


def test_the_kernels_under_address_sanitizer(tmp_path):
  command, preload = _compiler_and_preload()
  # The harness reports an overflow: an instrumented library read one past its allocation.
  probe = tmp_path / "overflow.cc"
  probe.write_text(_OVERFLOW)
  probe_library = tmp_path / "overflow.so"
  built = subprocess.run([*command, *ASAN_FLAGS, "-shared", "-fPIC", str(probe), "-o", str(probe_library)],
                         capture_output=True, text=True, timeout=300)
  if built.returncode != 0:
    pytest.skip(f"{shlex.join(command)} cannot build with -fsanitize=address: {built.stderr[-500:]}")
  caught = _run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(probe_library)!r}).read_past(5)"],
                preload, timeout=120)
  assert caught.returncode == 86 and "heap-buffer-overflow" in caught.stderr, caught.stderr[-2000:]

  library = cp.build_library(directory=tmp_path / "kernels", extra_flags=ASAN_FLAGS)
  assert "__asan_report_load" in library.read_bytes().decode("latin-1")  # instrumented
  done = _run([sys.executable, "-c", _CHILD, str(library)], preload)
  assert done.returncode == 0 and "AddressSanitizer" not in done.stderr, done.stderr[-4000:]
  assert '"checked": 54' in done.stdout.strip().splitlines()[-1]
