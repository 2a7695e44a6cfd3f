"""hx's CPU kernels (`hx.compile.conv_pool`) against XLA's path over every block `usable()` admits.

Each drawn block is one `usable()` accepts (it is asserted), with small sizes so that the draws stay fast;
the explicit examples are wide inputs whose input gradient once took another block's loop (a kernel
choice keyed on K * 100 + C / 16: K = 2 with 1,616 channels ran the loop of K = 3 with 16). Inputs are
small integers, so every sum is exact in float32 in any order and windows tie often: the value and the
gradients must equal XLA's exactly.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import hx.compile.conv_pool as cp
from hx.compile.conv_pool import conv_valid as _conv_valid
from hx.compile.conv_pool import max_pool as _max_pool
from tests.compile import kernel_gate

pytestmark = kernel_gate.pytestmark()


def _xla_block(x, w, b):
  """The block as hx trains it where the kernels are not usable (`hx.compile.modules._cnn_blocks`)."""
  return jax.nn.relu(_max_pool(_conv_valid(x, w), 2) + b)


@st.composite
def blocks(draw):
  """(x_shape, w_shape, input_gradient) with small sizes, anywhere in `usable()`'s domain."""
  input_gradient = draw(st.booleans())
  k = draw(st.integers(1, 5))
  # With the input gradient, usable() wants whole vectors of input channels; without it, any count.
  c = 16 * draw(st.integers(1, 4)) if input_gradient else draw(st.integers(1, 40))
  o = 16 * draw(st.integers(1, 5))  # 16, 32, 48, 64, 80: every vector blocking of the output channels
  h, w = draw(st.integers(k + 1, k + 6)), draw(st.integers(k + 1, k + 6))
  r = draw(st.integers(1, 11))  # fewer and more images than the kernels' 8 groups
  return (r, h, w, c), (k, k, c, o), input_gradient


def _assert_equals_xla(x_shape, w_shape, input_gradient, seed=0):
  assert cp.usable(x_shape, w_shape, 2, jnp.float32, input_gradient=input_gradient)
  rng = np.random.default_rng(seed)  # numpy's: jax.random would compile for each drawn shape
  x = rng.integers(0, 3, x_shape).astype(np.float32)
  w = rng.integers(-2, 3, w_shape).astype(np.float32)
  b = rng.integers(-4, 3, w_shape[3:]).astype(np.float32)
  g = rng.integers(-2, 3, cp._pooled_shape(x, w)).astype(np.float32)
  argnums = (0, 1, 2) if input_gradient else (1, 2)

  def loss(f):
    return jax.jit(jax.value_and_grad(lambda *a: jnp.sum(f(*a) * g), argnums))

  (ours, ours_grads), (xla, xla_grads) = loss(cp.conv_pool)(x, w, b), loss(_xla_block)(x, w, b)
  assert float(ours) == float(xla)
  assert len(ours_grads) == len(argnums)
  for name, a, c in zip(("x", "w", "b")[-len(argnums):], ours_grads, xla_grads, strict=True):
    np.testing.assert_array_equal(a, c, err_msg=f"the gradient with respect to {name}")


@settings(max_examples=3)
@given(blocks())
@example(((1, 3, 3, 1616), (2, 2, 1616, 16), True))
@example(((2, 2, 3, 1616), (1, 1, 1616, 16), True))
@example(((1, 3, 4, 1632), (2, 2, 1632, 16), True))
def test_value_and_gradients_equal_xla_anywhere_usable(block):
  _assert_equals_xla(*block)


@pytest.mark.slow
@settings(max_examples=40)
@given(blocks(), st.integers(0, 2 ** 16))
def test_value_and_gradients_equal_xla_anywhere_usable_more_draws(block, seed):
  _assert_equals_xla(*block, seed=seed)
