"""A user's module registered for A -> B enters the search at its type: B becomes the first intermediate
type of a fresh function from A, so that the user's encoder appears in candidates shaped like
`compose(nn, encoder)`, for a vector encoder as for an image encoder (`hx.synth.space`)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

import hx
from hx.compile import ModuleConfig, register_module
from hx.lang.types import parse_type
from hx.synth.space import Completer, SearchSpace, paper_space
from hx.synth.topdown import enumerate_programs

VECTOR_ENCODER = "Tensor<real>[30] -> Tensor<real>[8]"
IMAGE_ENCODER = "Tensor<real>[1][8][8] -> Tensor<real>[16]"
SMALL = ModuleConfig(mlp_hidden=16, cnn_channels=(4, 8))


def squares_init(key: jax.Array) -> dict:
  """A vector encoder's parameters: w (30, 8), b (8,)."""
  return {"w": 0.1 * jax.random.normal(key, (30, 8)), "b": jnp.zeros(8)}


def squares_apply(params: dict, x: jax.Array) -> jax.Array:
  """(B, 30) -> (B, 8): a linear map of the inputs' squares."""
  return (x * x) @ params["w"] + params["b"]


class ImageEncoder(nn.Module):
  """(B, 1, 8, 8) images to (B, 16) features: a dense layer over the pixels."""

  @nn.compact
  def __call__(self, x):
    return nn.Dense(16)(x.reshape(x.shape[0], -1))


def _shapes(task_type: str, space: SearchSpace = SearchSpace(), limit: int = 12) -> list[str]:
  """The first candidates of `task_type`, each as "program [name : type; ...]"."""
  return [str(c) for c in enumerate_programs(parse_type(task_type), None, space=space, config=SMALL,
                                             limit=limit)]


def test_a_vector_encoder_appears_composed_with_a_fresh_network():
  register_module("squares", VECTOR_ENCODER, init=squares_init, apply=squares_apply)
  for space in (SearchSpace(), SearchSpace(order="cost"), SearchSpace(stacked_fresh=True)):
    shapes = _shapes("Tensor<real>[30] -> Tensor<bool>[1]", space)
    assert ("compose(nn_1, nn_2)  [nn_1 : Tensor<real>[8] -> Tensor<bool>[1]; nn_2 : "
            f"{VECTOR_ENCODER}]") in shapes, shapes
  # Inside a map over a list of vectors too, before the default intermediate types.
  shapes = _shapes("List<Tensor<real>[30]> -> Tensor<real>[1]")
  maps = [s for s in shapes if s.startswith("compose(nn_1, map_l(nn_2))")]
  assert maps[0].endswith(f"nn_2 : {VECTOR_ENCODER}]"), maps


def test_a_vector_encoder_passes_the_authors_filter_in_the_cnns_place():
  register_module("squares", VECTOR_ENCODER, init=squares_init, apply=squares_apply)
  shapes = _shapes("Tensor<real>[30] -> Tensor<bool>[1]", paper_space())
  encoded = f"compose(nn_1, nn_2)  [nn_1 : Tensor<real>[8] -> Tensor<bool>[1]; nn_2 : {VECTOR_ENCODER}]"
  assert encoded in shapes
  completer = Completer(None, paper_space(), SMALL)
  # The same function type without the registration is a vector-to-vector network: the authors' code
  # refuses it, and so does their filter.
  plain = {"nn_1": parse_type("Tensor<real>[8] -> Tensor<bool>[1]"),
           "nn_2": parse_type("Tensor<real>[30] -> Tensor<real>[8]")}
  assert completer.authors_reason(hx.parse("compose(nn_1, nn_2)"), plain) is None
  hx.compile.unregister_module("squares")
  assert completer.authors_reason(hx.parse("compose(nn_1, nn_2)"), plain) is not None


def test_an_image_encoder_appears_composed_with_a_fresh_network_and_inside_a_map():
  register_module("pixels", IMAGE_ENCODER, module=ImageEncoder())
  shapes = _shapes("Tensor<real>[1][8][8] -> Tensor<bool>[1]")
  encoded = f"compose(nn_1, nn_2)  [nn_1 : Tensor<real>[16] -> Tensor<bool>[1]; nn_2 : {IMAGE_ENCODER}]"
  assert encoded in shapes
  shapes = _shapes("List<Tensor<real>[1][8][8]> -> Tensor<real>[1]", limit=20)
  assert any(s.startswith("compose(nn_1, map_l(compose(nn_2, nn_3)))")
             and s.endswith(f"nn_3 : {IMAGE_ENCODER}]") for s in shapes), shapes


def _halves(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
  """n vectors of 30 normal reals, labelled 1 where the first 15's squares outweigh the last 15's."""
  x = rng.normal(size=(n, 30)).astype(np.float32)
  return x, ((x[:, :15] ** 2).sum(1) > (x[:, 15:] ** 2).sum(1)).astype(np.int64)


def test_a_vector_encoder_that_helps_wins_a_synthetic_task():
  """Synthetic data: the label is a quadratic function of the inputs, linear in the encoder's squares."""
  rng = np.random.default_rng(0)
  register_module("squares", VECTOR_ENCODER, init=squares_init, apply=squares_apply)
  task = hx.Task.from_arrays("halves", "Tensor<real>[30] -> Tensor<bool>[1]", _halves(rng, 300),
                             _halves(rng, 100), _halves(rng, 100), training={"epochs": 10, "batch_size": 32})
  result = hx.synthesize(task, config=hx.SynthesisConfig(budget=hx.Budget(candidates=2), module_config=SMALL))
  assert len(result.trained) == 2
  best = result.best
  # compose(an MLP, the encoder), whatever names the ranking gives its fresh functions.
  assert isinstance(best.program, hx.Compose)
  outer, inner = best.program.f, best.program.g
  assert isinstance(outer, hx.Fresh) and isinstance(inner, hx.Fresh)
  assert str(best.fresh_types[inner.name]) == VECTOR_ENCODER
  assert best.val_score < result.entries[1].val_score
