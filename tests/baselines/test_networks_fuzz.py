"""Whatever lies in a saved baseline network's directory, `load_network` gives back the network its files
describe (the arrays saved, the method, task, column and architecture network.json states) or one
NetworkError whose message is one line naming the file and the field: never a KeyError, TypeError or
IndexError from the code that reads it, and never arrays that do not fit the architecture.

network.json mutated one field at a time (a value replaced by one of another type, removed, negated, made
NaN, a key added), any bytes in its place, the variables file cut or changed, and the cases by name."""

import copy
import hashlib
import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.baselines import Network, NetworkError, architecture, load_network, save_network
from hx.baselines.pnn import PNN
from hx.compile.modules import ModuleConfig
from hx.lang.types import parse_type
from tests.baselines.tiny import TINY, TYPES
from tests.synth.json_strategies import json_values, mutated

# The word a message about each field of network.json names it by.
FIELD_WORDS = {"format": "format", "format_version": "format version", "method": "method", "task": "task",
               "column": "column", "architecture": "architecture", "roles": "roles", "bytes": "bytes",
               "sha256": "sha256"}


def _network(kind="recognize", seed=0):
  arch = architecture(TYPES[kind], TINY)
  modules = jax.tree.map(np.asarray, arch.init(jax.random.key(seed)))
  return Network("standalone", f"tiny_{kind}", arch, modules)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """A saved network: (its directory, the network, its network.json as a value)."""
  path = tmp_path_factory.mktemp("saved") / "net"
  network = _network()
  save_network(network, path)
  return path, network, json.loads((path / "network.json").read_text())


def _copy(saved, base: Path) -> Path:
  path = base / "net"
  shutil.copytree(saved[0], path)
  return path


def _write_meta(path: Path, meta) -> None:
  (path / "network.json").write_text(json.dumps(meta), "utf-8")


def _refused(path: Path, config=TINY) -> NetworkError:
  """The NetworkError loading `path` gives, held to the property: one line, naming a file of the network."""
  with pytest.raises(NetworkError) as err:
    load_network(path, config)
  message = str(err.value)
  assert "\n" not in message, message
  assert err.value.path in (str(path), str(path / "network.json"), str(path / "variables.msgpack")), message
  assert message.startswith(f"cannot load baseline network {err.value.path}: "), message
  return err.value


def _same_arrays(a, b) -> bool:
  la, lb = jax.tree.leaves(dict(a)), jax.tree.leaves(dict(b))
  return len(la) == len(lb) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(la, lb))


def _loaded_as_described(path: Path, meta: dict, original: Network) -> None:
  """A network that loads is the one its files describe."""
  back = load_network(path, TINY)
  assert (back.method, back.task, back.column) == (meta["method"], meta["task"], meta.get("column"))
  assert back.architecture.kind == meta["architecture"]["kind"]
  assert back.architecture.task_type == parse_type(meta["architecture"]["task_type"])
  assert _same_arrays(back.modules, original.modules)
  shapes = jax.eval_shape(back.architecture.init, jax.random.key(0))
  assert [x.shape for x in jax.tree.leaves(dict(back.modules))] == [x.shape for x in jax.tree.leaves(shapes)]


@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_network_json_with_one_field_mutated_loads_as_it_says_or_is_refused_naming_the_field(
    saved, tmp_path_factory, data):
  meta = data.draw(mutated(saved[2]))
  path = _copy(saved, tmp_path_factory.mktemp("mutated"))
  _write_meta(path, meta)
  try:
    _loaded_as_described(path, meta, saved[1])
  except NetworkError:
    err = _refused(path)
    changed = [k for k in FIELD_WORDS if not isinstance(meta, dict) or meta.get(k, KeyError) != saved[2][k]]
    if isinstance(meta, dict) and len(changed) == 1:
      assert FIELD_WORDS[changed[0]] in str(err), (changed, str(err))


@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_any_json_value_as_network_json_is_refused(saved, tmp_path_factory, value):
  path = _copy(saved, tmp_path_factory.mktemp("value"))
  _write_meta(path, value)
  err = _refused(path)
  assert "network.json" in str(err)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=80))
def test_any_bytes_as_network_json_are_refused(saved, tmp_path_factory, data):
  path = _copy(saved, tmp_path_factory.mktemp("bytes"))
  (path / "network.json").write_bytes(data)
  assert "network.json" in str(_refused(path))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_cut_or_changed_variables_file_is_refused_naming_it(saved, tmp_path_factory, data):
  path = _copy(saved, tmp_path_factory.mktemp("variables"))
  original = (path / "variables.msgpack").read_bytes()
  end = data.draw(st.integers(0, len(original)))
  changed = original[:end] + data.draw(st.binary(max_size=8))
  if changed == original:
    changed = original + b"\0"
  (path / "variables.msgpack").write_bytes(changed)
  err = _refused(path)
  assert err.path == str(path / "variables.msgpack") and ("bytes where" in str(err) or "sha256" in str(err))


def _edit(**changes):
  """A damage that sets fields of network.json ("architecture.kind" a nested one)."""
  def damage(path, meta):
    meta = copy.deepcopy(meta)
    for name, value in changes.items():
      *outer, last = name.split(".")
      target = meta
      for k in outer:
        target = target[k]
      target[last] = value
    _write_meta(path, meta)
  return damage


def _drop(field):
  def damage(path, meta):
    _write_meta(path, {k: v for k, v in meta.items() if k != field})
  return damage


def _write(name, data: bytes):
  return lambda path, meta: (path / name).write_bytes(data)


def _other_variables(path, meta):
  """A variables file of another architecture, with network.json's size and sha256 made to match it."""
  import flax.serialization

  data = flax.serialization.to_bytes(dict(_network("regress").modules))
  (path / "variables.msgpack").write_bytes(data)
  _edit(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())(path, meta)


def _remove(name):
  def damage(path, meta):
    target = path / name
    shutil.rmtree(target) if target.is_dir() else target.unlink()
  return damage


IMAGE = "Tensor<real>[1][16][16]"

CASES = [
    ("missing directory", lambda path, meta: shutil.rmtree(path), "network.json",
     "cannot be read (No such file or directory)"),
    ("missing network.json", _remove("network.json"), "network.json", "cannot be read"),
    ("network.json a directory", lambda path, meta: ((path / "network.json").unlink(),
                                                     (path / "network.json").mkdir()),
     "network.json", "cannot be read"),
    ("not JSON", _write("network.json", b'{"format": '), "network.json", "is not valid JSON (line 1"),
    ("not UTF-8", _write("network.json", b'{"format": "\xff"}'), "network.json", "not UTF-8 text"),
    ("a list", _write("network.json", b"[]"), "", "network.json is not a saved baseline network's (the top "
                                                  "level: expected an object, got [])"),
    ("null", _write("network.json", b"null"), "", "expected an object, got null"),
    ("another format", _edit(format="hx-library"), "",
     "(format: expected one of 'hx-baseline-network', got \"hx-library\")"),
    ("no format", _drop("format"), "", "(the top level: missing 'format')"),
    ("version 1", _edit(format_version=1), "", "has format version 1; this hx reads version 2"),
    ("version 3", _edit(format_version=3), "", "has format version 3; this hx reads version 2"),
    ("version 2.0", _edit(format_version=2.0), "", "has format version 2.0"),
    ("version true", _edit(format_version=True), "", "has format version True"),
    ("version text", _edit(format_version="2"), "", "has format version '2'"),
    ("no method", _drop("method"), "network.json", "the top level: missing 'method'"),
    ("method a number", _edit(method=3), "network.json", "method: expected a string, got 3"),
    ("empty task", _edit(task=""), "network.json", "task: expected a non-empty string"),
    ("negative column", _edit(column=-1), "network.json", "column: expected an integer >= 0, got -1"),
    ("negative bytes", _edit(bytes=-5), "network.json", "bytes: expected an integer >= 0, got -5"),
    ("bytes a text", _edit(bytes="10"), "network.json", "bytes: expected an integer >= 0, got \"10\""),
    ("bytes off by one", lambda path, meta: _edit(bytes=meta["bytes"] + 1)(path, meta), "variables.msgpack",
     "bytes where network.json records"),
    ("sha256 not hex", _edit(sha256="xyz"), "network.json", "sha256: expected a sha256"),
    ("sha256 of other bytes", _edit(sha256="0" * 64), "variables.msgpack",
     "altered: its sha256 is"),
    ("roles not a list", _edit(roles="nn_cnn"), "network.json", "roles: expected an array"),
    ("roles empty", _edit(roles=[]), "network.json", "roles: expected at least 1 values, got 0"),
    ("a role too many", _edit(roles=["nn_cnn", "nn_mlp", "nn_rnn"]), "network.json",
     "roles: ['nn_cnn', 'nn_mlp', 'nn_rnn'] where the image architecture has ['nn_cnn', 'nn_mlp']"),
    ("no architecture", _drop("architecture"), "network.json", "missing 'architecture'"),
    ("architecture a list", _edit(architecture=[]), "network.json", "architecture: expected an object"),
    ("unknown kind", _edit(**{"architecture.kind": "tree"}), "network.json",
     "architecture.kind: expected one of 'image', 'vector', 'list', 'graph', got \"tree\""),
    ("kind of another type", _edit(**{"architecture.kind": "list"}), "network.json",
     "architecture.kind: 'list', but its task type"),
    ("task type not a type", _edit(**{"architecture.task_type": "Tensor<int>[1]"}), "network.json",
     "architecture.task_type: line 1, column 8: expected 'bool' or 'real', found 'int'"),
    ("task type of no baseline",
     _edit(**{"architecture.task_type": "List<Tensor<real>[3]> -> List<Tensor<real>[1]>"}),
     "network.json", "architecture.task_type: no baseline network for"),
    ("task type a number", _edit(**{"architecture.task_type": 7}), "network.json",
     "architecture.task_type: expected a string, got 7"),
    ("element of another type", _edit(**{"architecture.element": "Tensor<real>[2]"}), "network.json",
     "architecture.element: Tensor<real>[2], where the image architecture of type"),
    ("other output shapes", _edit(**{"architecture.task_type": f"{IMAGE} -> Tensor<bool>[3]",
                                     "architecture.element": "Tensor<bool>[3]"}), "variables.msgpack",
     "nn_mlp/params/out/b: float32[1] where network.json's image architecture has float32[3]"),
    ("an enormous output", _edit(**{"architecture.task_type": f"{IMAGE} -> Tensor<bool>[2147483647]",
                                    "architecture.element": "Tensor<bool>[2147483647]"}), "variables.msgpack",
     "where network.json's image architecture has float32[2147483647]"),
    ("variables missing", _remove("variables.msgpack"), "variables.msgpack", "No such file or directory"),
    ("variables truncated", lambda path, meta: _write("variables.msgpack", (
        path / "variables.msgpack").read_bytes()[:-1])(path, meta), "variables.msgpack",
     "bytes where network.json records"),
    ("variables empty", _write("variables.msgpack", b""), "variables.msgpack", "0 bytes where"),
    ("variables of another architecture", _other_variables, "variables.msgpack",
     "where network.json's image architecture has"),
]


@pytest.mark.parametrize("name, damage, where, message", CASES, ids=[c[0] for c in CASES])
def test_each_damage_is_refused_naming_the_file_and_the_field(saved, tmp_path, name, damage, where, message):
  path = _copy(saved, tmp_path)
  damage(path, saved[2])
  err = _refused(path)
  assert err.path == str(path / where).rstrip("/"), str(err)
  assert message in str(err), str(err)


def test_other_module_sizes_are_refused_naming_the_first_array_that_differs(saved):
  err = _refused(saved[0], ModuleConfig(mlp_hidden=8, cnn_channels=(4, 8), cnn_kernel=3, lstm_hidden=16))
  assert err.path == str(saved[0] / "variables.msgpack")
  want = "nn_mlp/batch_stats/bn/mean: float32[16] where network.json's image architecture has float32[8]"
  assert want in str(err), str(err)


def test_what_is_not_checksummed_loads_as_network_json_says(saved, tmp_path):
  # The checksum covers the variables; the method, task and column are what network.json says.
  path = _copy(saved, tmp_path)
  meta = {**saved[2], "method": "llt", "task": "another", "column": 2, "extra": [1]}
  _write_meta(path, meta)
  _loaded_as_described(path, meta, saved[1])
  _write_meta(path, {k: v for k, v in saved[2].items() if k != "column"})
  assert load_network(path, TINY).column is None


def test_a_progressive_column_loads_with_its_template_and_is_refused_with_another(tmp_path):
  archs = [architecture(TYPES["recognize"], TINY), architecture(TYPES["count"], TINY)]
  pnn = PNN(archs, TINY)
  modules = jax.tree.map(np.asarray, pnn.init_column(jax.random.key(0), 1))
  save_network(Network("pnn", "tiny_count", archs[1], modules, column=1), tmp_path / "net")
  back = load_network(tmp_path / "net", TINY, pnn.init_column(jax.random.key(1), 1))
  assert back.column == 1 and sorted(back.modules) == ["lateral", "nn_cnn", "nn_mlp", "nn_rnn"]
  assert _same_arrays(back.modules, modules)
  with pytest.raises(NetworkError, match="roles: .* where the list architecture has"):
    load_network(tmp_path / "net", TINY)  # the plain list architecture: no "lateral"
