"""hx's CPU kernels (`hx.compile.conv_pool`) called directly with shapes that do not fit together, or with
too little memory: each call is a Python exception naming what went wrong, not a read or write out of
bounds, nor the end of the process (an exception thrown on a thread of XLA's pool ends it unless caught).

The calls run in a child process, so that a kernel that did read out of bounds, or crash, fails this test
instead of crashing (or quietly corrupting) the test process.
"""

import json
import re
import subprocess
import sys

import pytest

from tests.compile import kernel_gate

pytestmark = kernel_gate.pytestmark()

# (name, FFI target, operand shapes, result shapes and dtypes, what the error must say). The operands are
# float32 except those given as (shape, "uint8"). Images (4, 12, 12, 16) through a (5, 5, 16, 16) kernel
# pool to (4, 4, 4, 16).
X, W, P = (4, 12, 12, 16), (5, 5, 16, 16), (4, 4, 4, 16)
U8 = "uint8"
CASES = [
    ("window positions of another batch", "hx_conv_pool_backward_weights",
     [X, W, ((1, 4, 4, 16), U8), (1, 4, 4, 16)], [W, (16,)],
     r"the shape of the window positions is \(1, 4, 4, 16\), not \(4, 4, 4, 16\)"),
    ("an output gradient of another batch", "hx_conv_pool_backward_with_input",
     [X, W, (P, U8), (1, 4, 4, 16)], [W, (16,), X],
     r"the shape of the output gradient is \(1, 4, 4, 16\), not \(4, 4, 4, 16\)"),
    ("an input gradient of another batch", "hx_conv_pool_backward_with_input",
     [X, W, (P, U8), P], [W, (16,), (2, 12, 12, 16)],
     r"the shape of the input gradient is \(2, 12, 12, 16\), not \(4, 12, 12, 16\)"),
    ("a weight gradient of another kernel", "hx_conv_pool_backward_weights",
     [X, W, (P, U8), P], [(3, 3, 16, 16), (16,)], r"the shape of the weight gradient is \(3, 3, 16, 16\)"),
    ("a bias gradient too long", "hx_conv_pool_backward_weights",
     [X, W, (P, U8), P], [W, (32,)], r"the shape of the bias gradient is \(32,\), not \(16,\)"),
    ("a bias too long", "hx_conv_pool_forward", [X, W, (32,)], [P, (P, U8)],
     r"the shape of the bias is \(32,\), not \(16,\)"),
    ("an output of another batch", "hx_conv_pool_forward", [X, W, (16,)], [(8, 4, 4, 16), (P, U8)],
     r"the shape of the output is \(8, 4, 4, 16\), not \(4, 4, 4, 16\)"),
    ("window positions' output too small", "hx_conv_pool_forward", [X, W, (16,)], [P, ((4, 4, 3, 16), U8)],
     r"the shape of the window positions' output is \(4, 4, 3, 16\)"),
    ("a kernel of other channels", "hx_conv_pool_forward", [X, (5, 5, 8, 16), (16,)], [P, (P, U8)],
     "have 16 channels, the kernel .* takes 8"),
    ("a kernel not square", "hx_conv_pool_backward_weights", [X, (5, 3, 16, 16), (P, U8), P],
     [(5, 3, 16, 16), (16,)], r"the kernel \(5, 3, 16, 16\) is not square"),
    ("images smaller than the kernel", "hx_conv_pool_forward", [(4, 5, 12, 16), W, (16,)],
     [(4, 1, 4, 16), ((4, 1, 4, 16), U8)], "smaller than the kernel"),  # (an empty result is never called)
    ("24 output channels", "hx_conv_pool_forward", [X, (5, 5, 16, 24), (24,)],
     [(4, 4, 4, 24), ((4, 4, 4, 24), U8)], "24 output channels, not a multiple of 16"),
    ("window positions as float32", "hx_conv_pool_backward_weights", [X, W, P, P], [W, (16,)],
     "(?i)u8|uint8"),
]

_CHILD = r"""
import json, resource, sys
import jax, numpy as np
import hx.compile.conv_pool as cp

assert cp.load_kernels()

def array(spec):
  shape, dtype = (spec[0], spec[1]) if isinstance(spec[-1], str) else (spec, "float32")
  return np.ones(tuple(shape), dtype)

outcomes = []
for name, target, operands, results, pattern in json.loads(sys.argv[1]):
  avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in map(array, results)]
  try:
    jax.block_until_ready(jax.ffi.ffi_call(target, avals)(*map(array, operands), slices=np.int64(0)))
    outcomes.append([name, "returned", ""])
  except Exception as e:  # what XLA raises for a handler's error: JaxRuntimeError
    outcomes.append([name, type(e).__name__, str(e)])

# Last, as it leaves the process little memory: a backward call whose groups each allocate a partial weight
# gradient of 64 MB (above glibc's largest mmap threshold, so each is a fresh mapping), with room in the
# address space for its results and one or two of those, not eight.
C, O = 8192, 2048
x, w = jax.device_put(np.ones((8, 2, 2, C), np.float32)), jax.device_put(np.ones((1, 1, C, O), np.float32))
arg = jax.device_put(np.full((8, 1, 1, O), 0x80, np.uint8))
g = jax.device_put(np.ones((8, 1, 1, O), np.float32))
results = (jax.ShapeDtypeStruct(w.shape, np.float32), jax.ShapeDtypeStruct((O,), np.float32))
call = jax.ffi.ffi_call("hx_conv_pool_backward_weights", results)
backward = jax.jit(lambda *a: call(*a, slices=np.int64(0))).lower(x, w, arg, g).compile()
jax.block_until_ready(backward(x, w, arg, g))  # with room: it runs
with open("/proc/self/status") as f:
  size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size + 200 * 2 ** 20, resource.RLIM_INFINITY))
try:
  jax.block_until_ready(backward(x, w, arg, g))
  outcomes.append(["out of memory", "returned", ""])
except Exception as e:
  outcomes.append(["out of memory", type(e).__name__, str(e)])
print(json.dumps(outcomes))
"""


@pytest.mark.slow
def test_mismatched_shapes_and_exhausted_memory_are_python_errors_naming_them():
  done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(CASES)], capture_output=True, text=True,
                        timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  outcomes = json.loads(done.stdout.strip().splitlines()[-1])
  patterns = [c[-1] for c in CASES] + ["RESOURCE_EXHAUSTED: hx_conv_pool_backward_weights: out of memory"]
  assert [o[0] for o in outcomes] == [c[0] for c in CASES] + ["out of memory"]
  for (name, kind, message), pattern in zip(outcomes, patterns, strict=True):
    assert kind != "returned", f"{name}: the call returned"
    assert re.search(pattern, message), f"{name}: {kind}: {message}"
