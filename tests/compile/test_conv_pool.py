"""hx's CPU kernels for a CNN block, conv -> 2x2 max-pool (`hx.compile.conv_pool`), against XLA's path."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hx.compile.conv_pool as cp
import hx.compile.modules as modules
from hx.compile.conv_pool import conv_valid as _conv_valid
from hx.compile.conv_pool import max_pool as _max_pool
from tests.compile import kernel_gate

pytestmark = kernel_gate.pytestmark()

# (images, kernel): the paper's first block (one channel: the masked gradient), its second (32 channels:
# the scattered gradient), odd sizes that floor-pooling crops with 3 channels, and 16 output channels
# (one channel group); the last sums each kernel row (5 x 64 floats) in several register-blocked chunks
# on every instruction set. Fewer images than the kernels' 8 groups in four.
SHAPES = [((7, 28, 28, 1), (5, 5, 1, 32)), ((9, 12, 12, 32), (5, 5, 32, 64)),
          ((3, 13, 11, 3), (3, 3, 3, 16)), ((10, 9, 10, 16), (2, 2, 16, 48)),
          ((6, 11, 11, 16), (4, 4, 16, 16)), ((3, 12, 12, 64), (5, 5, 64, 16))]


def _xla_block(x, w, b):
  return jax.nn.relu(_max_pool(_conv_valid(x, w), 2) + b)


def _integers(key, shape, low, high):
  # Small integers: every sum is exact in float32 whatever its order, and windows tie often.
  return jax.random.randint(key, shape, low, high).astype(jnp.float32)


def _first_max(z, y):
  """Each 2x2 window's first maximum (0-3, row-major): z (R, H, W, O) the convolution, y its pooling."""
  r, hp, wp, o = y.shape
  windows = np.asarray(z)[:, :2 * hp, :2 * wp].reshape(r, hp, 2, wp, 2, o).transpose(0, 1, 3, 5, 2, 4)
  return np.argmax(windows.reshape(r, hp, wp, o, 4) == np.asarray(y)[..., None], -1)


@pytest.mark.parametrize("xs, ws", SHAPES)
def test_forward_and_window_positions_equal_xla_exactly_on_integers(xs, ws):
  kx, kw, kb = jax.random.split(jax.random.key(0), 3)
  x, w, b = _integers(kx, xs, 0, 3), _integers(kw, ws, -2, 3), _integers(kb, ws[-1:], -4, 3)
  x = x.at[0].set(0.0)  # every window of image 0 ties (at 0): its first position takes it
  assert cp.usable(x.shape, w.shape, 2, x.dtype, input_gradient=False)
  h, arg = jax.jit(cp._forward)(x, w, b)
  z = _conv_valid(x, w)
  y_xla = lax.reduce_window(z, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  assert h.shape == y_xla.shape and arg.dtype == jnp.uint8
  np.testing.assert_array_equal(h, jax.nn.relu(y_xla + b))
  first = _first_max(z, y_xla)
  np.testing.assert_array_equal(np.asarray(arg) & 3, first)
  active = np.asarray(y_xla + b) > 0
  np.testing.assert_array_equal(np.asarray(arg) >> 7, active)
  assert 0 < np.mean(active) < 1
  assert np.all(first[0] == 0) and np.any(first[1:] > 0)


@pytest.mark.parametrize("xs, ws", SHAPES)
def test_gradients_equal_xla_exactly_on_integers(xs, ws):
  kx, kw, kb, kg = jax.random.split(jax.random.key(1), 4)
  x, w, b = _integers(kx, xs, 0, 3), _integers(kw, ws, -2, 3), _integers(kb, ws[-1:], -4, 3)
  g = _integers(kg, cp._pooled_shape(x, w), -2, 3)

  def loss(f, *args):
    return jnp.sum(f(*args) * g)

  for argnums in ((0, 1, 2), (1, 2)):  # with and without the input gradient
    ours = jax.jit(jax.value_and_grad(lambda *a: loss(cp.conv_pool, *a), argnums))(x, w, b)
    xla = jax.jit(jax.value_and_grad(lambda *a: loss(_xla_block, *a), argnums))(x, w, b)
    assert float(ours[0]) == float(xla[0])
    for a, b in zip(jax.tree.leaves(ours[1]), jax.tree.leaves(xla[1]), strict=True):
      np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("xs, ws", SHAPES[:2])
def test_gradients_close_to_xla_on_random_values_and_deterministic(xs, ws):
  kx, kw, kb = jax.random.split(jax.random.key(2), 3)
  x = jax.random.uniform(kx, xs)
  w = jax.random.normal(kw, ws) * 0.2
  b = jax.random.normal(kb, ws[-1:]) * 0.1

  def loss(f, *args):
    return jnp.sum(jnp.sin(f(*args)))

  ours = jax.jit(jax.value_and_grad(lambda *a: loss(cp.conv_pool, *a), (0, 1, 2)))
  xla = jax.jit(jax.value_and_grad(lambda *a: loss(_xla_block, *a), (0, 1, 2)))
  a, c = ours(x, w, b), xla(x, w, b)
  np.testing.assert_allclose(a[0], c[0], rtol=1e-5)
  for u, v in zip(a[1], c[1], strict=True):
    np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(v))))
  again = ours(x, w, b)
  for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(again), strict=True):
    np.testing.assert_array_equal(u, v)


def test_the_training_cnn_runs_the_kernels_with_xla_values_and_gradients(monkeypatch):
  """The paper's CNN (32 and 64 channels) in training mode: both blocks are custom calls, and the module's
  outputs and gradients are those of XLA's path (HX_CPU_KERNELS=0) to rounding."""
  convs = ({"w": jax.random.normal(jax.random.key(3), (5, 5, 1, 32)) * 0.2, "b": jnp.full((32,), 0.05)},
           {"w": jax.random.normal(jax.random.key(4), (5, 5, 32, 64)) * 0.05, "b": jnp.full((64,), 0.05)})
  x = jax.random.uniform(jax.random.key(5), (11, 28, 28, 1))

  def loss(c, x_):
    return jnp.sum(jnp.tanh(modules._cnn_blocks(c, x_, 2)))

  monkeypatch.setenv(cp.ENABLE_ENV, "1")
  ours = jax.jit(jax.value_and_grad(lambda c, x_: loss(c, x_)))
  assert modules._cnn_kernels(convs, x.shape, 2)
  assert str(jax.make_jaxpr(ours)(convs, x)).count("hx_conv_pool_") == 4  # two forwards, two backwards
  a = ours(convs, x)
  monkeypatch.setenv(cp.ENABLE_ENV, "0")
  xla = jax.jit(jax.value_and_grad(lambda c, x_: loss(c, x_)))
  assert not modules._cnn_kernels(convs, x.shape, 2)
  assert "hx_conv_pool_" not in str(jax.make_jaxpr(xla)(convs, x))
  c = xla(convs, x)
  np.testing.assert_allclose(a[0], c[0], rtol=1e-5)
  for u, v in zip(jax.tree.leaves(a[1]), jax.tree.leaves(c[1]), strict=True):
    np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(v))))
  # Inference never uses them.
  monkeypatch.setenv(cp.ENABLE_ENV, "1")
  inference = jax.make_jaxpr(lambda c, x_: modules._cnn_blocks(c, x_, 2, False))(convs, x)
  assert "hx_conv_pool_" not in str(inference)


def test_usable_only_where_the_kernels_apply(monkeypatch):
  monkeypatch.setenv(cp.ENABLE_ENV, "1")

  def first_block(x_shape, w_shape, pool=2, dtype=jnp.float32):
    return cp.usable(x_shape, w_shape, pool, dtype, input_gradient=False)

  assert first_block((4, 28, 28, 1), (5, 5, 1, 32))
  assert not first_block((4, 28, 28, 1), (5, 5, 1, 32), pool=3)
  assert not first_block((4, 28, 28, 1), (5, 5, 1, 24))  # channels not a multiple of 16
  assert not first_block((4, 28, 28, 1), (5, 5, 1, 32), dtype=jnp.float16)
  assert not first_block((4, 5, 5, 1), (5, 5, 1, 32))  # no whole window
  assert not first_block((4, 28, 28, 2), (5, 5, 1, 32))  # channels disagree
  # An input gradient through fewer than 16 input channels: XLA's path (the kernels' is slower there).
  assert cp.usable((4, 12, 12, 8), (5, 5, 8, 16), 2, jnp.float32, input_gradient=False)
  assert not cp.usable((4, 12, 12, 8), (5, 5, 8, 16), 2, jnp.float32, input_gradient=True)
  assert cp.usable((4, 12, 12, 32), (5, 5, 32, 64), 2, jnp.float32, input_gradient=True)
  for off in ("0", "off", "False"):
    monkeypatch.setenv(cp.ENABLE_ENV, off)
    assert not cp.usable((4, 28, 28, 1), (5, 5, 1, 32), 2, jnp.float32, input_gradient=False)


def test_a_failed_build_names_the_compiler_and_falls_back_with_one_warning(monkeypatch, tmp_path):
  monkeypatch.setenv(cp.KERNEL_CACHE_DIR_ENV, str(tmp_path / "kernels"))
  with pytest.raises(cp.KernelBuildError, match="/nonexistent/c\\+\\+"):
    cp.build_library(compiler="/nonexistent/c++")
  monkeypatch.setenv("CXX", "false")  # a compiler that fails
  with pytest.raises(cp.KernelBuildError, match="false failed"):
    cp.build_library()
  monkeypatch.setattr(cp, "_loaded", None)
  with pytest.warns(RuntimeWarning, match="trains through XLA's own"):
    assert not cp.load_kernels()
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert not cp.load_kernels()  # decided once per process
    assert not cp.usable((4, 28, 28, 1), (5, 5, 1, 32), 2, jnp.float32, input_gradient=False)
  assert not list((tmp_path / "kernels").glob("*.so"))


@pytest.mark.slow
def test_the_library_is_built_once_per_machine_and_source(monkeypatch, tmp_path):
  monkeypatch.setenv(cp.KERNEL_CACHE_DIR_ENV, str(tmp_path))
  path = cp.build_library()
  assert path.parent == tmp_path and path.suffix == ".so"
  stamp = path.stat().st_mtime_ns
  assert cp.build_library() == path and path.stat().st_mtime_ns == stamp  # found, not rebuilt
  # No temporaries left: the library and the digest of its bytes, checked before it is loaded again.
  assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, path.name + ".sha256"]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "no digest"])
@pytest.mark.slow
def test_a_damaged_library_in_the_cache_is_built_again_with_a_warning(monkeypatch, tmp_path, damage):
  monkeypatch.setenv(cp.KERNEL_CACHE_DIR_ENV, str(tmp_path))
  path = cp.build_library()
  good = path.read_bytes()
  if damage == "truncated":
    path.write_bytes(good[:len(good) // 2])
  elif damage == "flipped":
    path.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
  else:
    path.with_name(path.name + ".sha256").unlink()
  with pytest.warns(RuntimeWarning, match=re.escape(str(path)) + " is (damaged|without the digest)"):
    assert cp.build_library() == path
  assert len(path.read_bytes()) == len(good)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert cp.build_library() == path  # intact again: found, not rebuilt


def test_conv_pool_names_what_it_cannot_take():
  x, b = jnp.zeros((2, 12, 12, 8), jnp.float32), jnp.zeros((16,), jnp.float32)
  with pytest.raises(ValueError, match="24 output channels, not a multiple of 16"):
    cp.conv_pool(x, jnp.zeros((5, 5, 8, 24), jnp.float32), jnp.zeros((24,), jnp.float32))
  with pytest.raises(ValueError, match="8 channels, kernel .* takes 4"):
    cp.conv_pool(x, jnp.zeros((5, 5, 4, 16), jnp.float32), b)
  with pytest.raises(ValueError, match="too small"):
    cp.conv_pool(x[:, :5, :5], jnp.zeros((5, 5, 8, 16), jnp.float32), b)
  with pytest.raises(ValueError, match="float16, not float32"):
    cp.conv_pool(x.astype(jnp.float16), jnp.zeros((5, 5, 8, 16), jnp.float32), b)
  with pytest.raises(ValueError, match="bias \\(32,\\) does not match"):
    cp.conv_pool(x, jnp.zeros((5, 5, 8, 16), jnp.float32), jnp.zeros((32,), jnp.float32))



def test_a_cache_directory_it_cannot_write_is_a_build_error(tmp_path, monkeypatch):
  (tmp_path / "file").write_text("")
  with pytest.raises(cp.KernelBuildError, match="cannot create the kernel cache directory .*file/kernels"):
    cp.build_library(directory=tmp_path / "file" / "kernels")

  def refuse(**_):
    raise PermissionError(13, "Permission denied")

  monkeypatch.setattr(cp.tempfile, "TemporaryDirectory", refuse)  # what a read-only directory does
  with pytest.raises(cp.KernelBuildError, match="cannot build the kernels in .*: .*Permission denied"):
    cp.build_library(directory=tmp_path / "kernels")


@pytest.mark.parametrize("argnums, targets", [((0, 1, 2), ("forward", "backward_with_input")),
                                              ((1, 2), ("forward", "backward_weights"))])
def test_the_kernels_are_chosen_for_the_platform_lowered_for(argnums, targets):
  """Lowered for a GPU from this CPU process, the block is XLA's path (no custom call a GPU cannot run);
  lowered for the CPU, it is the kernels' calls and no convolution."""
  x, w, b = jnp.ones((3, 12, 12, 16)), jnp.ones((5, 5, 16, 32)), jnp.ones((32,))
  assert cp.usable(x.shape, w.shape, 2, x.dtype)
  traced = jax.jit(jax.value_and_grad(lambda *a: jnp.sum(cp.conv_pool(*a)), argnums)).trace(x, w, b)
  cpu = traced.lower(lowering_platforms=("cpu",)).as_text()
  assert sorted(set(re.findall(r"hx_conv_pool_\w+", cpu))) == sorted(f"hx_conv_pool_{t}" for t in targets)
  assert "stablehlo.convolution" not in cpu
  for platforms in (("cuda",), ("rocm",), ("tpu",)):
    other = traced.lower(lowering_platforms=platforms).as_text()
    assert "hx_conv_pool" not in other and "custom_call" not in other, platforms
    assert "stablehlo.convolution" in other
  # Lowered for both (one program serialized for either), each platform's branch is kept.
  both = traced.lower(lowering_platforms=("cpu", "cuda")).as_text()
  assert "hx_conv_pool_forward" in both and "stablehlo.convolution" in both


def _recording_compiler(directory):
  """A compiler command, in a directory whose name has a space, that writes its arguments to `args` beside
  it and an empty file where -o says (what a wrapper such as ccache hands on, without compiling)."""
  directory.mkdir()
  script = directory / "wrapper"
  script.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/args"\n'
                    'while [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done\n')
  script.chmod(0o755)
  return script


def test_the_compiler_is_a_command_line_split_as_a_shell_would(monkeypatch, tmp_path):
  script = _recording_compiler(tmp_path / "a wrapper")
  monkeypatch.setenv("CXX", f"'{script}' g++ -DHX_EXTRA")  # "ccache g++", with a quoted path
  path = cp.build_library(directory=tmp_path / "kernels")
  args = (tmp_path / "a wrapper" / "args").read_text().splitlines()
  assert args[:2] == ["g++", "-DHX_EXTRA"] and "-O3" in args and str(cp.SOURCE) in args
  assert path.exists() and path.parent == tmp_path / "kernels"
  monkeypatch.setenv("PATH", str(tmp_path))  # no compiler on PATH to fall back to
  for bad, match in (("'unclosed g++", "cannot split the compiler command"), ("  ", "no C\\+\\+ compiler")):
    monkeypatch.setenv("CXX", bad)
    with pytest.raises(cp.KernelBuildError, match=match):
      cp.build_library(directory=tmp_path / "other")


@pytest.mark.slow
def test_a_compiler_behind_a_wrapper_builds_the_kernels(monkeypatch, tmp_path):
  compiler = cp._compiler()
  monkeypatch.setenv("CXX", f"env {compiler}")  # `env` runs its arguments as ccache does
  path = cp.build_library(directory=tmp_path)
  assert path.stat().st_size > 10_000 and b"HxConvPoolForward" in path.read_bytes()


@pytest.mark.parametrize("xs, ws", SHAPES)
def test_the_xla_form_of_each_pass_equals_the_kernels_exactly_on_integers(xs, ws):
  """What a program lowered for another platform runs (`_xla_forward`, `_xla_backward`), here on the CPU."""
  kx, kw, kb, kg = jax.random.split(jax.random.key(6), 4)
  x, w, b = _integers(kx, xs, 0, 3), _integers(kw, ws, -2, 3), _integers(kb, ws[-1:], -4, 3)
  g = _integers(kg, cp._pooled_shape(x, w), -2, 3)
  h, arg = jax.jit(cp._forward)(x, w, b)
  xla_h, xla_arg = jax.jit(cp._xla_forward)(x, w, b)
  np.testing.assert_array_equal(xla_h, h)
  np.testing.assert_array_equal(xla_arg, arg)
  for input_gradient in (True, False):
    ours = jax.jit(cp._backward, static_argnums=4)(x, w, arg, g, input_gradient)
    xla = jax.jit(cp._xla_backward, static_argnums=4)(x, w, arg, g, input_gradient)
    assert len(ours) == len(xla) == (3 if input_gradient else 2)
    for a, c in zip(ours, xla, strict=True):
      np.testing.assert_array_equal(c, a)


def test_the_input_gradient_survives_differentiating_with_and_without_it_in_turn():
  """With x, then without, then with x again (a conditional around the custom_vjp lost the third's)."""
  x, w, b = jnp.ones((3, 12, 12, 16)), jnp.full((5, 5, 16, 16), 0.1), jnp.zeros((16,))

  def grads(argnums):
    return jax.jit(jax.grad(lambda *a: jnp.sum(jnp.sin(cp.conv_pool(*a))), argnums))(x, w, b)

  first = grads((0, 1, 2))
  assert float(jnp.sum(jnp.abs(first[0]))) > 0
  grads((1, 2))
  for a, c in zip(grads((0, 1, 2)), first, strict=True):
    np.testing.assert_array_equal(a, c)
