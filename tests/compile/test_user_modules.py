"""Modules of a user's own (`hx.compile.register_module`): a flax encoder for 8x8 images and an init/apply
pair, refused when their shapes do not fit their type, trained by Tune, offered by the search, frozen into
a library that saves and loads, and carried to worker processes."""

from __future__ import annotations

import copy
import importlib
import math
import os
import pickle
import subprocess
import sys
import textwrap

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hx
from hx.compile import (
  ModuleConfig,
  Rows,
  UnregisteredModuleError,
  apply_module,
  compile_program,
  init_module,
  module_spec,
  register_module,
  registered_modules,
  tune,
  unregister_module,
)
from hx.compile.lower import make_frozen
from hx.compile.modules import reference_module
from hx.compile.tuning import TuneConfig, TuneData
from hx.compile.values import Split
from hx.lang.objectives import objective_for_type
from hx.lang.types import parse_type
from hx.synth.library import Library, LibraryError, Trained
from hx.synth.parallel import ProcessExecutor
from hx.synth.space import Completer, SearchSpace

IMAGE = "Tensor<real>[1][8][8]"
ENCODER_TYPE = f"{IMAGE} -> Tensor<real>[32]"
PAIR_TYPE = f"{IMAGE} -> Tensor<bool>[1]"
SMALL = ModuleConfig(mlp_hidden=16)


class Encoder(nn.Module):
  """A user's image encoder: one 3x3 convolution ("same" padding), ReLU, a Dense to `features`."""
  features: int = 32

  @nn.compact
  def __call__(self, x):  # x (B, 1, 8, 8), channel-first as hx's image types
    h = nn.relu(nn.Conv(4, (3, 3))(jnp.transpose(x, (0, 2, 3, 1))))
    return nn.Dense(self.features)(h.reshape(h.shape[0], -1))


class WithBatchNorm(nn.Module):
  @nn.compact
  def __call__(self, x):
    return nn.BatchNorm(use_running_average=True)(nn.Dense(32)(x.reshape(x.shape[0], -1)))


def linear_init(key):
  return {"w": 0.1 * jax.random.normal(key, (64, 1)), "b": jnp.zeros((1,))}


def linear_apply(params, x):
  return x.reshape(x.shape[0], -1) @ params["w"] + params["b"]


def wide_apply(params, x):  # one value too many per row for a Tensor<bool>[1]
  return jnp.concatenate([linear_apply(params, x)] * 2, axis=1)


@pytest.fixture(autouse=True)
def _unregister():
  before = set(registered_modules())
  yield
  for name in set(registered_modules()) - before:
    unregister_module(name)


def _images(n, seed):
  rng = np.random.default_rng(seed)
  x = rng.normal(0, 0.3, size=(n, 1, 8, 8)).astype(np.float32)
  y = rng.integers(0, 2, (n, 1))
  x[y[:, 0] == 1] += 1.0
  return x, y.astype(np.float32)


def _task(name="bright"):
  return hx.Task.from_arrays(name, PAIR_TYPE, _images(64, 0), _images(16, 1), _images(16, 2),
                             training={"epochs": 2, "batch_size": 16})


def test_a_flax_module_gives_its_type_a_user_spec():
  spec = register_module("encoder", ENCODER_TYPE, module=Encoder())
  assert spec.template == "user" and spec.hyper == (("name", "encoder"),) and spec.activation == "none"
  assert str(spec.type) == ENCODER_TYPE
  assert module_spec(parse_type(ENCODER_TYPE)) == spec
  assert module_spec(parse_type(f"{IMAGE} -> Tensor<real>[16]")).template == "cnn"  # exact types only
  params, stats = init_module(spec, jax.random.key(0))
  assert stats == {} and params["Dense_0"]["kernel"].shape == (8 * 8 * 4, 32)
  x = jnp.asarray(_images(5, 0)[0])
  y, new = apply_module(spec, params, stats, (x,), Rows(jnp.ones(5, bool), train=True))
  assert y.shape == (5, 32) and new == {}
  np.testing.assert_allclose(y, Encoder().apply({"params": params}, x), rtol=1e-6)
  np.testing.assert_allclose(reference_module(spec, params, stats, [x[0]]), y[0], rtol=1e-5, atol=1e-6)


def test_an_init_apply_pair_gets_the_output_activation_unless_logits_are_asked():
  spec = register_module("linear", PAIR_TYPE, init=linear_init, apply=linear_apply)
  assert spec.activation == "sigmoid"
  params, stats = init_module(spec, jax.random.key(1))
  x = jnp.asarray(_images(3, 0)[0])
  run = lambda logits: apply_module(spec, params, stats, (x,), Rows(jnp.ones(3, bool)), logits=logits)[0]
  np.testing.assert_allclose(run(True), linear_apply(params, x), rtol=1e-6)
  np.testing.assert_allclose(run(False), jax.nn.sigmoid(linear_apply(params, x)), rtol=1e-6)


def test_a_module_whose_shapes_do_not_fit_its_type_is_refused_when_registered():
  with pytest.raises(ValueError, match=r"module 'enc16' \(flax module .*Encoder\) registered for "
                                       r"Tensor<real>\[1\]\[8\]\[8\] -> Tensor<real>\[32\]: on inputs "
                                       r"of shape \(2, 1, 8, 8\) it gave shape \(2, 16\); the type needs "
                                       r"\(2, 32\)"):
    register_module("enc16", ENCODER_TYPE, module=Encoder(16))
  with pytest.raises(ValueError, match=r"module 'wide' .* gave shape \(2, 2\); the type needs \(2, 1\)"):
    register_module("wide", PAIR_TYPE, init=linear_init, apply=wide_apply)
  with pytest.raises(ValueError, match=r"module 'flat' .* fails on inputs of shape \(2, 1, 4, 4\)"):
    register_module("flat", "Tensor<real>[1][4][4] -> Tensor<bool>[1]", init=linear_init, apply=linear_apply)
  with pytest.raises(ValueError, match="the 'params' collection only"):
    register_module("bn", ENCODER_TYPE, module=WithBatchNorm())
  assert not registered_modules()


def test_registrations_refuse_what_is_ambiguous_or_malformed():
  spec = register_module("encoder", ENCODER_TYPE, module=Encoder())
  assert register_module("encoder", parse_type(ENCODER_TYPE), module=Encoder()) == spec  # the same: no-op
  with pytest.raises(ValueError, match="registered already .* call unregister_module"):
    register_module("encoder", f"{IMAGE} -> Tensor<real>[8]", module=Encoder(8))
  with pytest.raises(ValueError, match="has module 'encoder' registered already; one module per type"):
    register_module("other", ENCODER_TYPE, module=Encoder())
  with pytest.raises(ValueError, match="type variables"):
    register_module("open", f"{IMAGE} -> 'a", module=Encoder())
  with pytest.raises(ValueError, match="must return a tensor that is not an image"):
    register_module("image", f"{IMAGE} -> {IMAGE}", init=linear_init, apply=linear_apply)
  with pytest.raises(TypeError, match="flax.linen.Module"):
    register_module("fn", ENCODER_TYPE, module=linear_apply)
  with pytest.raises(TypeError, match="not both"):
    register_module("both", ENCODER_TYPE, module=Encoder(), init=linear_init, apply=linear_apply)
  with pytest.raises(TypeError, match="both init= and apply="):
    register_module("half", ENCODER_TYPE, init=linear_init)
  assert list(registered_modules()) == ["encoder"]
  with pytest.raises(TypeError):
    registered_modules()["x"] = None  # a read-only view
  unregister_module("encoder")
  with pytest.raises(UnregisteredModuleError, match=r"call hx.compile.register_module\('encoder'"):
    init_module(spec, jax.random.key(0))
  with pytest.raises(KeyError):
    unregister_module("encoder")


def _data(config_type):
  splits = [Split(*_images(n, s)) for n, s in ((64, 0), (16, 1), (16, 2))]
  return TuneData(*splits), objective_for_type(parse_type(config_type).result)


@pytest.mark.slow
def test_tune_trains_a_program_through_the_users_encoder():
  register_module("encoder", ENCODER_TYPE, module=Encoder())
  program = hx.parse("compose(nn_2, nn_1)")
  types = {"nn_1": parse_type(ENCODER_TYPE), "nn_2": parse_type("Tensor<real>[32] -> Tensor<bool>[1]")}
  compiled = compile_program(program, types, SMALL)
  assert compiled.specs["nn_1"].template == "user" and compiled.specs["nn_2"].template == "mlp"
  data, objective = _data(PAIR_TYPE)
  start = compiled.init(jax.random.key(0))
  result = tune(compiled, make_frozen(compiled, {}), data, objective,
                TuneConfig(epochs=2, batch_size=16, seed=0), variables=start)
  assert result.failed is None and math.isfinite(result.val_score) and 0 <= result.test_score <= 100
  before, after = start["params"][0], result.variables["params"][0]
  assert jax.tree.structure(before) == jax.tree.structure(after)
  assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)))


def test_tune_trains_an_init_apply_pair_as_the_whole_program():
  register_module("linear", PAIR_TYPE, init=linear_init, apply=linear_apply)
  compiled = compile_program(hx.parse("nn_1"), {"nn_1": parse_type(PAIR_TYPE)}, SMALL)
  data, objective = _data(PAIR_TYPE)
  start = compiled.init(jax.random.key(0))
  result = tune(compiled, make_frozen(compiled, {}), data, objective,
                TuneConfig(epochs=2, batch_size=16, learning_rate=1e-2), variables=start)
  assert result.failed is None and math.isfinite(result.val_score)
  assert not np.allclose(start["params"][0]["w"], result.variables["params"][0]["w"])


def test_the_search_offers_the_registered_type_before_the_cnn_features():
  completer = Completer(None, SearchSpace(), SMALL)
  program = hx.parse("compose(nn_2, nn_1)")
  fresh = {"nn_1": parse_type(f"{IMAGE} -> 'a"), "nn_2": parse_type("'a -> Tensor<bool>[1]")}
  plain = [str(t["nn_1"]) for t in completer.complete_types(program, fresh)]
  assert plain == [f"{IMAGE} -> Tensor<real>[128]"]  # the CNN's features (one 5x5 block of 32 channels)
  register_module("encoder", ENCODER_TYPE, module=Encoder())
  offered = [str(t["nn_1"]) for t in completer.complete_types(program, fresh)]
  assert offered == [ENCODER_TYPE, f"{IMAGE} -> Tensor<real>[128]"]
  # Another image type is not the registered module's argument: nothing changes there.
  other = {"nn_1": parse_type("Tensor<real>[1][9][9] -> 'a"), "nn_2": fresh["nn_2"]}
  assert ENCODER_TYPE.split(" -> ")[1] not in str(list(completer.complete_types(program, other)))
  # The authors' filter takes the user's encoder for the CNN it replaces.
  typed = {"nn_1": parse_type(ENCODER_TYPE), "nn_2": parse_type("Tensor<real>[32] -> Tensor<bool>[1]")}
  assert completer.authors_reason(program, typed) is None


def _trained_library(tmp_path):
  register_module("encoder", ENCODER_TYPE, module=Encoder())
  program = hx.parse("compose(nn_2, nn_1)")
  types = {"nn_1": parse_type(ENCODER_TYPE), "nn_2": parse_type("Tensor<real>[32] -> Tensor<bool>[1]")}
  compiled = compile_program(program, types, SMALL)
  variables = compiled.init(jax.random.key(3))
  added = Library().add(Trained(compiled, variables, validation=10.0, test=12.0), sequence="u", task="t",
                        when="2026-01-01T00:00:00+00:00")
  path = tmp_path / "lib"
  added.library.save(path)
  return added.library, path, variables["params"][compiled.fresh_slots.index("nn_1")]


def test_a_library_entry_built_by_a_user_module_saves_and_loads(tmp_path):
  library, path, encoder = _trained_library(tmp_path)
  assert library["nn_u_2"].spec.template == "user"  # printed first: the MLP is nn_u_1
  loaded = Library.load(path)
  assert loaded == library and loaded.version == library.version
  saved = loaded["nn_u_2"].variables["params"]
  assert jax.tree.structure(saved) == jax.tree.structure(encoder)
  for a, b in zip(jax.tree.leaves(saved), jax.tree.leaves(encoder)):
    np.testing.assert_array_equal(a, b)
  # The frozen encoder runs as a library function.
  frozen_program = hx.parse("compose(nn_1, lib.nn_u_2)")
  compiled = compile_program(frozen_program, {"nn_1": parse_type("Tensor<real>[32] -> Tensor<bool>[1]")},
                             SMALL, loaded.specs())
  x = jnp.asarray(_images(4, 0)[0])
  frozen = make_frozen(compiled, loaded.variables())
  y = compiled.apply(compiled.init(jax.random.key(0)), frozen, x, train=False)
  assert y.shape == (4, 1) and bool(jnp.all((y > 0) & (y < 1)))


def test_loading_an_entry_whose_module_is_not_registered_says_to_register_it(tmp_path):
  _, path, _ = _trained_library(tmp_path)
  unregister_module("encoder")
  with pytest.raises(LibraryError, match=r"library\.json: function nn_u_2 was built by the user module "
                                         r"'encoder' .*not registered in this process: call "
                                         r"hx.compile.register_module\('encoder'") as caught:
    Library.load(path)
  assert caught.value.path.endswith("library.json")
  register_module("encoder", f"{IMAGE} -> Tensor<real>[16]", module=Encoder(16))
  with pytest.raises(LibraryError, match="registered for another type"):
    Library.load(path)


def test_a_pickled_module_config_carries_the_registrations():
  spec = register_module("encoder", ENCODER_TYPE, module=Encoder())
  register_module("linear", PAIR_TYPE, init=linear_init, apply=linear_apply)
  blob = pickle.dumps(SMALL)
  assert copy.deepcopy(SMALL) is SMALL
  for name in ("encoder", "linear"):
    unregister_module(name)
  assert pickle.loads(blob) == SMALL  # as a worker process unpickles its task's context
  assert set(registered_modules()) == {"encoder", "linear"}
  assert module_spec(parse_type(ENCODER_TYPE)) == spec
  for name in ("encoder", "linear"):
    unregister_module(name)
  assert pickle.loads(pickle.dumps(SMALL)) == SMALL and not registered_modules()


def test_a_module_other_processes_cannot_import_is_refused_when_sent():
  def local_apply(params, x):
    return linear_apply(params, x)

  register_module("local", PAIR_TYPE, init=linear_init, apply=local_apply)
  with pytest.raises(pickle.PicklingError, match=r"module 'local' .* cannot be sent to another process: "
                                                 r".*local_apply is defined in a function's body.*"
                                                 r"executor=hx.synth.Local\(\)"):
    pickle.dumps(SMALL)
  assert copy.copy(SMALL) is SMALL  # copies are not refused


@pytest.mark.slow
def test_synthesize_trains_a_program_through_the_users_encoder():
  register_module("encoder", ENCODER_TYPE, module=Encoder())
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=2), module_config=SMALL)
  result = hx.synthesize(_task(), config=config)
  users = _users(result)
  assert users, [(str(r.program), r.fresh_types) for r in result.entries]
  assert all(r.outcome.status == "trained" and math.isfinite(r.val_score) for r in users)


def _users(result):
  """The ranked candidates with a fresh function of the encoder's type, checked to hold the encoder's
  parameters there (a CNN of that type has others: a worker without the registration would build one)."""
  users = [r for r in result.entries if ENCODER_TYPE in map(str, r.fresh_types.values())]
  for r in users:
    slot = [str(t) for t in r.fresh_types.values()].index(ENCODER_TYPE)
    assert set(r.outcome.variables["params"][slot]) == {"Conv_0", "Dense_0"}
  return users


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_other_processes_train_the_users_encoder_as_this_process_does(executor):
  if executor == "ray":
    pytest.importorskip("ray", reason="Ray is not installed (the 'ray' extra)")
  register_module("encoder", ENCODER_TYPE, module=Encoder())
  task = _task()
  config = hx.SynthesisConfig(budget=hx.Budget(candidates=2), module_config=SMALL)
  local = hx.synthesize(task, config=config)
  chosen = ProcessExecutor(workers=2, threads=1) if executor == "processes" else hx.synth.Ray()
  elsewhere = hx.synthesize(task, config=config, executor=chosen)
  if executor == "processes":
    chosen.close()
  users = _users(elsewhere)
  assert users and all(r.outcome.status == "trained" for r in users), [(r.program, r.outcome.reason)
                                                                       for r in users]
  scores = lambda r: [(f"{x.program} {x.fresh_types}", x.val_score) for x in r.entries]
  assert [c for c, _ in scores(elsewhere)] == [c for c, _ in scores(local)]
  np.testing.assert_allclose([s for _, s in scores(elsewhere)], [s for _, s in scores(local)], rtol=1e-4)


_ENCODER_FILE = """
import flax.linen as nn

class Encoder(nn.Module):
  features: int = 32

  @nn.compact
  def __call__(self, x):
    return nn.Dense(self.features)(x.reshape(x.shape[0], -1))
"""

# A worker as `ProcessExecutor` starts one: a new interpreter in this directory, on hx's path only.
_WORKER = textwrap.dedent("""
  import pickle, sys
  import jax
  from hx.compile import init_module, module_spec
  from hx.lang.types import parse_type
  first, second = pickle.loads(sys.stdin.buffer.read())
  pickle.loads(first)
  spec = module_spec(parse_type(sys.argv[1]))
  print(spec.template, sorted(init_module(spec, jax.random.key(0))[0]))
  try:
    pickle.loads(second)
  except ImportError as err:
    print(err)
""")


@pytest.mark.slow
def test_a_worker_imports_a_module_from_where_the_sender_imported_it(tmp_path, monkeypatch):
  # A module beside the script that was run is on the sender's path (sys.path[0]), not on a worker's.
  for name in ("beside", "gone"):
    (tmp_path / name).mkdir()
    (tmp_path / name / f"hx_test_{name}_encoder.py").write_text(_ENCODER_FILE)
    monkeypatch.syspath_prepend(str(tmp_path / name))
  beside, gone = (importlib.import_module(f"hx_test_{n}_encoder") for n in ("beside", "gone"))
  try:
    register_module("beside", ENCODER_TYPE, module=beside.Encoder())
    first = pickle.dumps(SMALL)
    register_module("gone", f"{IMAGE} -> Tensor<real>[16]", module=gone.Encoder(16))
    second = pickle.dumps(SMALL)
  finally:
    for n in ("beside", "gone"):
      del sys.modules[f"hx_test_{n}_encoder"]
  (tmp_path / "gone" / "hx_test_gone_encoder.py").unlink()
  root = os.path.dirname(os.path.dirname(os.path.abspath(hx.__file__)))
  env = dict(os.environ, PYTHONPATH=root)
  run = subprocess.run([sys.executable, "-c", _WORKER, ENCODER_TYPE], input=pickle.dumps((first, second)),
                       capture_output=True, cwd=root, env=env, timeout=120)
  assert run.returncode == 0, run.stderr.decode()
  lines = run.stdout.decode().splitlines()
  assert lines[0] == "user ['Dense_0']"
  assert "cannot be built here (ModuleNotFoundError: No module named 'hx_test_gone_encoder'" in lines[1]
  assert "on its PYTHONPATH" in lines[1]
