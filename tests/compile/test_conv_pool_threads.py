"""hx's CPU kernels (`hx.compile.conv_pool`) give the same bits however their work is split among threads.

The backward pass sums its weight and bias gradients over images in 8 fixed groups, added in group order;
past 8 threads each group's work is split further (by kernel rows and by images, `slices` tasks per group),
which must not change any sum's order. The calls' `slices` attribute sets that split directly (it is
chosen from the size of XLA's thread pool otherwise), so each split is compared with the one-task-per-group
split here on any machine; and a child process pinned to one CPU (XLA then has a one-thread pool)
compares with one on every CPU. Inputs are random floats, whose sums differ in their last bits when their
order changes.
"""

import hashlib
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import hx.compile.conv_pool as cp
from tests.compile import kernel_gate

pytestmark = kernel_gate.pytestmark()

# (images, kernel, input gradient): the paper's first block (the masked form, no input gradient); the
# masked form with one (one task per group whatever `slices`); the paper's second block (register-blocked
# weight and input gradients); an even kernel size; 64 input channels (each kernel row summed in several
# register-blocked chunks). Fewer images than groups in one, uneven groups in the others.
BLOCKS = [((19, 28, 28, 1), (5, 5, 1, 32), False), ((9, 13, 11, 3), (3, 3, 3, 16), True),
          ((21, 12, 12, 32), (5, 5, 32, 64), True), ((10, 11, 11, 16), (4, 4, 16, 16), True),
          ((3, 12, 12, 64), (5, 5, 64, 16), True)]


def _inputs(x_shape, w_shape, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random(x_shape, np.float32)
  w = (rng.standard_normal(w_shape) * 0.3).astype(np.float32)
  b = (rng.standard_normal(w_shape[3:]) * 0.1).astype(np.float32)
  g = rng.standard_normal(cp._pooled_shape(x, w)).astype(np.float32)
  return x, w, b, g


def _results(x, w, b, g, input_gradient, slices):
  """The forward's (h, arg) and the backward's (dw, db[, dx]) with `slices` tasks per group, as numpy."""
  h, arg = jax.jit(cp._forward, static_argnums=3)(x, w, b, slices)
  backward = jax.jit(cp._backward, static_argnums=(4, 5))(x, w, arg, g, input_gradient, slices)
  return [np.asarray(a) for a in (h, arg, *backward)]


@pytest.mark.parametrize("x_shape, w_shape, input_gradient", BLOCKS)
def test_every_split_of_the_work_gives_the_same_bits(x_shape, w_shape, input_gradient):
  x, w, b, g = _inputs(x_shape, w_shape)
  one = _results(x, w, b, g, input_gradient, 1)
  assert len(one) == (5 if input_gradient else 4)
  names = ("h", "arg", "dw", "db", "dx")[:len(one)]
  assert np.any(one[2] != 0) and np.any(one[3] != 0)
  for slices in (0, 2, 3, 5, 16):  # 0: as many as XLA's pool here; 16: more than any kernel has rows
    for name, a, c in zip(names, _results(x, w, b, g, input_gradient, slices), one, strict=True):
      np.testing.assert_array_equal(a, c, err_msg=f"{name} with {slices} slices")


_CHILD = r"""
import hashlib, json, os, sys
cpus = json.loads(sys.argv[1])
os.sched_setaffinity(0, cpus)  # before JAX starts: XLA sizes its thread pool by the CPUs it may use
sys.path.insert(0, os.getcwd())
import numpy as np
import jax
from tests.compile.test_conv_pool_threads import BLOCKS, _inputs, _results
digest = hashlib.sha256()
for x_shape, w_shape, input_gradient in BLOCKS:
  for a in _results(*_inputs(x_shape, w_shape), input_gradient, 0):
    digest.update(a.tobytes())
print(json.dumps([len(os.sched_getaffinity(0)), digest.hexdigest()]))
"""


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU here: no other thread count to compare")
def test_one_thread_and_every_thread_give_the_same_bits():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  cpus = sorted(os.sched_getaffinity(0))
  outcomes = []
  for subset in ([cpus[0]], cpus):
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(subset)], capture_output=True, text=True,
                          cwd=root, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes.append(json.loads(done.stdout.strip().splitlines()[-1]))
  (one_count, one), (all_count, every) = outcomes
  assert (one_count, all_count) == (1, len(cpus))
  assert one == every
  # And the bits are this process's too.
  digest = hashlib.sha256()
  for x_shape, w_shape, input_gradient in BLOCKS:
    for a in _results(*_inputs(x_shape, w_shape), input_gradient, 0):
      digest.update(a.tobytes())
  assert digest.hexdigest() == every
