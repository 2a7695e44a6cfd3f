"""Iterating a function to a fixed point in one compiled loop, and differentiating it: `fix(e)`.

    y, state, iterations = fixed_point(f, theta, x0, aux, state, weights, FixConfig())

applies x <- f(theta, x, aux, state) from x0 until the largest change of a counted entry is at most
`FixConfig.tolerance` or `FixConfig.max_iterations` applications have run, in one `lax.while_loop`.

Reverse mode cannot run through a while loop, and must not keep every iteration's activations (a long
loop's history is what the paper's short, fixed `conv_g^10` avoids). `jax.custom_vjp` gives it one of two
gradients (`FixConfig.gradient`):

**"unrolled"** (the default): truncated backpropagation through time. The forward loop also keeps its
last `window` iterates (the states only, in a ring buffer: `window` copies of the value, never an
application's activations); the reverse pass recomputes and differentiates those applications one at a
time, last first. When the loop ran at most `window` applications, which is every loop on the small graphs
programs train on (a 4x4 grid's shortest paths take 7 relaxations), this is exactly the gradient of the
applications that ran, as if `repeat(n, e)` had been written with the n the loop found. Past `window` it is
truncated: the earlier applications are not differentiated, and the cotangent that reaches the window's
first iterate is passed to x0 as if they were the identity (no convergence guarantee: documented, not
hidden). Memory: `window` values; time: one recomputed forward and backward per differentiated application.

**"implicit"**: differentiation at the fixed point x* = f(theta, x*), as deep-equilibrium models and
jaxopt's fixed-point solvers do, with J = d f / d x and J_theta = d f / d theta taken there. For the
output's cotangent g, the adjoint

    u = g + J^T g + (J^T)^2 g + ...     (the solution of u = g + J^T u)

is summed by the same kind of iteration, v <- J^T v, u <- u + v, until the terms stop changing (largest
change of v at most `adjoint_tolerance` times the largest entry of g: a loss's scale is arbitrary) or
`max_iterations` terms; then theta gets J_theta^T u and x0 gets the last term v. Memory: nothing per
iteration. When J is a contraction at x* the terms go to zero: u is the implicit-function-theorem
gradient, and x0 gets zero, as it should (a contraction's fixed point does not depend on the start). A
relaxation such as Bellman-Ford is not a contraction: it carries parts of its input unchanged (a node's
cost, the source's distance), its fixed point depends on x0 through them, and J has eigenvalues equal to
one along them. There the terms settle to the cotangent's projection onto those invariants, which is x0's
gradient exactly when f is linear along the trajectory, and the series is cut where they settle (a
truncated scheme). A loop stopped by its cap is differentiated as if it had converged.

Which to use: "implicit" suits a body that contracts to an isolated fixed point (its gradient then needs
no memory at all and does not depend on how many iterations ran). A learned graph kernel under fix is not
one: it must carry its input's costs and source along unchanged, and from a random start it is a
contraction that forgets its input, so at its fixed point the implicit gradient has nothing to say about
the input. "unrolled" is the default because on the loops programs train on it is exactly the gradient of
what ran (that of conv_g^n for the n the loop took; with the default window, every training loop's).
Measured (benchmarks/RESULTS.md, "fix against conv_g^10"): fine-tuning a conv_g^10 kernel under fix made
it no better than predicting the mean with the implicit gradient in every run; with the unrolled one it
did better on 8x8 and 12x12 grids in some runs and collapsed to the mean in others.

What makes a learned kernel work under fix is the training horizon (`FixConfig.train_horizon`): in
training the loop's cap is drawn per call, so the loss is taken after a random number of applications
and rewards a body that converges early and stays put. A residual graph kernel trained that way on 3x3
and 4x4 grids beats the same kernel trained under conv_g^10 on 8x8 and 12x12 grids (the measurements are
in benchmarks/RESULTS.md).

f must be a function of its arguments only (it must not close over traced values: pass them in aux).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Callable

import jax
import jax.numpy as jnp
from jax import lax

if TYPE_CHECKING:
  import chex

__all__ = ["FixConfig", "fixed_point", "max_change", "GRADIENTS"]

GRADIENTS = ("implicit", "unrolled")


@dataclasses.dataclass(frozen=True)
class FixConfig:
  """How `fix(e)` iterates (see the module docstring). Frozen and hashable: part of the lowering's key.

  Attributes:
    tolerance: the loop stops once no counted entry (real rows, list elements, graph nodes) changed by
      more than this in one application. Absolute, in the values' own units: the default 0.01 is a
      hundredth of the smallest cost in the shortest-path tasks; the hand-set Bellman-Ford kernel, whose
      changes are whole costs, stops exactly when nothing changes, and a learned kernel whose values creep
      by less stops instead of drifting on to the cap.
    max_iterations: the most applications of e, converged or not (a cap on the cost of a body that never
      settles; a 12x12 grid's shortest paths take about 30 relaxations, a 50-node path graph 50).
    adjoint_tolerance: ("implicit") the reverse pass stops summing its series once a term changes by at
      most this times the largest entry of the output's cotangent (relative: a loss's scale is arbitrary).
    gradient: "unrolled" (truncated backpropagation through the last `window` applications) or
      "implicit" (at the fixed point); see the module docstring.
    window: ("unrolled") how many applications are differentiated, i.e. how many iterates the forward loop
      keeps: exact for loops of at most this many applications, truncated beyond. The default is
      `max_iterations`' default, so that every training loop's gradient is exact (memory: `window`
      copies of the loop's value, a few floats per graph node).
    train_horizon: (lo, hi), (lo, None) or None. In training (a program applied with train=True), each
      call's loop stops at the latest after n applications, n drawn uniformly from lo..hi (inclusive; hi
      None: `max_iterations`; both capped at `max_iterations`) with the call's PRNG key, one n for the
      whole batch; inference always runs to `max_iterations`. The loss is then taken after a random number
      of applications, so a body scores well only if it has converged by lo and stays put up to hi: fast
      and stable, as a fixed point should be, and with hi = `max_iterations` stable as long as inference
      may run. None: training runs to `max_iterations` too. The default (16, None) is ours: 16 covers the
      relaxations of the 4x4 grids the paper trains its graph tasks on (at most 16 applications for
      Bellman-Ford), as the paper's conv_g^10 covers them. Measured (benchmarks/RESULTS.md, "fix against
      conv_g^10"): without a horizon a residual graph kernel trained under fix learned a damped relaxation
      that needs hundreds of applications on 12x12 grids; with a fixed training cap of 32 one that is
      right at 32 and drifts after it; with (16, 32) one that drifts past 32; with (16, 100) one that is
      right and stays put.
  """
  tolerance: float = 1e-2
  max_iterations: int = 100
  adjoint_tolerance: float = 1e-4
  gradient: str = "unrolled"
  window: int = 100
  train_horizon: tuple[int, int | None] | None = (16, None)

  def __post_init__(self):
    if not self.tolerance >= 0 or not self.adjoint_tolerance >= 0:
      raise ValueError(f"fix tolerances must be >= 0, got {self.tolerance}, {self.adjoint_tolerance}")
    if not isinstance(self.max_iterations, int) or self.max_iterations < 1:
      raise ValueError(f"fix max_iterations must be an integer >= 1, got {self.max_iterations!r}")
    if self.gradient not in GRADIENTS:
      raise ValueError(f"fix gradient must be one of {GRADIENTS}, got {self.gradient!r}")
    if not isinstance(self.window, int) or self.window < 1:
      raise ValueError(f"fix window must be an integer >= 1, got {self.window!r}")
    if self.train_horizon is not None:
      h = self.train_horizon
      ok = isinstance(h, tuple) and len(h) == 2 and isinstance(h[0], int) and h[0] >= 1
      if not (ok and (h[1] is None or (isinstance(h[1], int) and h[1] >= h[0]))):
        raise ValueError(f"fix train_horizon must be None or a tuple (lo, hi) of integers with 1 <= lo <= hi "
                         f"(hi None: max_iterations), got {h!r}")

  def horizon(self) -> tuple[int, int] | None:
    """The training caps' range (lo, hi) as drawn: `train_horizon` capped at `max_iterations`, or None."""
    if self.train_horizon is None:
      return None
    lo, hi = self.train_horizon
    hi = self.max_iterations if hi is None else min(hi, self.max_iterations)
    return min(lo, hi), hi


def max_change(a: chex.ArrayTree, b: chex.ArrayTree, weights: chex.ArrayTree) -> jax.Array:
  """The largest |a - b| over the entries where `weights` (a pytree like a of bool arrays, each
  broadcastable to its leaf) is True; 0 if there is none. NaN if a counted entry is NaN."""
  leaves = jax.tree.leaves(jax.tree.map(
      lambda x, y, w: jnp.max(jnp.where(w, jnp.abs(x - y), 0.0), initial=0.0), a, b, weights))
  return functools.reduce(jnp.maximum, leaves, jnp.float32(0.0))


def _solve(f: Callable, config: FixConfig, theta: chex.ArrayTree, x0: chex.ArrayTree, aux: chex.ArrayTree,
           state: chex.ArrayTree, weights: chex.ArrayTree,
           cap: jax.Array) -> tuple[chex.ArrayTree, chex.ArrayTree, jax.Array]:
  def cond(carry):
    i, _, _, change = carry
    # A NaN change compares False: a diverging body stops the loop (and the loss reports the NaN).
    return (i < cap) & (change > config.tolerance)

  def body(carry):
    i, x, s, _ = carry
    x_new, s = f(theta, x, aux, s)
    return i + 1, x_new, s, max_change(x, x_new, weights)

  i, x, state, _ = lax.while_loop(cond, body, (jnp.int32(0), x0, state, jnp.float32(jnp.inf)))
  return x, state, i


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _fixed_point(f: Callable, config: FixConfig, theta: chex.ArrayTree, x0: chex.ArrayTree,
                 aux: chex.ArrayTree, state: chex.ArrayTree, weights: chex.ArrayTree,
                 cap: jax.Array) -> tuple[chex.ArrayTree, chex.ArrayTree, jax.Array]:
  return _solve(f, config, theta, x0, aux, state, weights, cap)


def _solve_recording(f: Callable, config: FixConfig, theta: chex.ArrayTree, x0: chex.ArrayTree,
                     aux: chex.ArrayTree, state: chex.ArrayTree, weights: chex.ArrayTree,
                     cap: jax.Array) -> tuple[chex.ArrayTree, chex.ArrayTree, jax.Array, chex.ArrayTree]:
  """`_solve`, also keeping the last `config.window` iterates in a ring buffer: iterate t (the input of
  application t + 1; iterate 0 is x0) in slot t % window."""
  window = config.window

  def cond(carry):
    i, _, _, change, _ = carry
    return (i < cap) & (change > config.tolerance)

  def body(carry):
    i, x, s, _, ring = carry
    ring = jax.tree.map(lambda r, leaf: lax.dynamic_update_index_in_dim(r, leaf, i % window, 0), ring, x)
    x_new, s = f(theta, x, aux, s)
    return i + 1, x_new, s, max_change(x, x_new, weights), ring

  ring = jax.tree.map(lambda leaf: jnp.zeros((window,) + leaf.shape, leaf.dtype), x0)
  i, x, state, _, ring = lax.while_loop(cond, body, (jnp.int32(0), x0, state, jnp.float32(jnp.inf), ring))
  return x, state, i, ring


def _fixed_point_fwd(f, config, theta, x0, aux, state, weights, cap):
  if config.gradient == "unrolled":
    x, new_state, i, ring = _solve_recording(f, config, theta, x0, aux, state, weights, cap)
    return (x, new_state, i), (theta, (i, ring), aux, state, weights)
  x, new_state, i = _solve(f, config, theta, x0, aux, state, weights, cap)
  return (x, new_state, i), (theta, x, aux, state, weights)


def _unrolled_bwd(f, config, residuals, g):
  """Backpropagation through the last min(iterations, window) applications, recomputed from the ring of
  iterates (one application's activations at a time)."""
  theta, (count, ring), aux, state, _ = residuals

  def body(j, carry):
    u, theta_bar = carry
    x_k = jax.tree.map(lambda r: lax.dynamic_index_in_dim(r, (count - 1 - j) % config.window, 0, False), ring)
    _, vjp = jax.vjp(lambda th, x_: f(th, x_, aux, state)[0], theta, x_k)
    d_theta, u = vjp(u)
    return u, jax.tree.map(jnp.add, theta_bar, d_theta)

  zero = jax.tree.map(jnp.zeros_like, theta)
  u, theta_bar = lax.fori_loop(0, jnp.minimum(count, config.window), body, (g, zero))
  return theta_bar, u, None, None, None, None


def _fixed_point_bwd(f, config, residuals, cotangents):
  g = cotangents[0]  # the state's and the count's cotangents are dropped: neither is differentiable
  if config.gradient == "unrolled":
    return _unrolled_bwd(f, config, residuals, g)
  theta, x, aux, state, weights = residuals
  _, vjp_x = jax.vjp(lambda x_: f(theta, x_, aux, state)[0], x)
  scale = functools.reduce(jnp.maximum, [jnp.max(jnp.abs(leaf), initial=0.0) for leaf in jax.tree.leaves(g)],
                           jnp.float32(0.0))
  everywhere = jax.tree.map(lambda leaf: True, g)

  def cond(carry):
    k, _, _, change = carry
    return (k < config.max_iterations) & (change > config.adjoint_tolerance * scale)

  def body(carry):
    k, v, u, _ = carry
    (v_new,) = vjp_x(v)
    u = jax.tree.map(jnp.add, u, v_new)
    return k + 1, v_new, u, max_change(v, v_new, everywhere)

  _, v, u, _ = lax.while_loop(cond, body, (jnp.int32(0), g, g, jnp.float32(jnp.inf)))
  _, vjp_theta = jax.vjp(lambda th: f(th, x, aux, state)[0], theta)
  (theta_bar,) = vjp_theta(u)
  return theta_bar, v, None, None, None, None


_fixed_point.defvjp(_fixed_point_fwd, _fixed_point_bwd)


def fixed_point(f: Callable, theta: chex.ArrayTree, x0: chex.ArrayTree, aux: chex.ArrayTree,
                state: chex.ArrayTree, weights: chex.ArrayTree, config: FixConfig = FixConfig(),
                cap: jax.typing.ArrayLike | None = None) -> tuple[chex.ArrayTree, chex.ArrayTree, jax.Array]:
  """Iterates x <- f(theta, x, aux, state) from x0 to a fixed point (see the module docstring).

  Args:
    f: f(theta, x, aux, state) -> (x_new, state_new), pure; x_new has x's structure, shapes and dtypes.
    theta: pytree of float arrays: the parameters (differentiated).
    x0: pytree of float arrays: the start (differentiated).
    aux: pytree of arrays f reads but nothing differentiates (masks, index tables, keys).
    state: pytree threaded through the iterations and returned, not differentiated (running statistics).
    weights: pytree with x's structure of bool arrays, each broadcastable to its leaf: the entries whose
      change counts for convergence (padding never keeps a loop running).
    config: tolerance and cap.
    cap: an int32 scalar (may be traced): this call's cap, at most `config.max_iterations` (how
      `FixConfig.train_horizon` is applied); None: `config.max_iterations`.

  Returns:
    (x, state, iterations): the last iterate, the state after it and the number of applications of f
    (an int32 scalar; the cap if the loop did not converge).
  """
  limit = jnp.int32(config.max_iterations)
  cap = limit if cap is None else jnp.minimum(jnp.asarray(cap, jnp.int32), limit)
  return _fixed_point(f, config, theta, x0, aux, state, weights, cap)
