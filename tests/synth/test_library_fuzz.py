"""Whatever JSON lies in a library's library.json, `Library.load` gives the library or one LibraryError
naming the directory or file: never a KeyError, TypeError, AttributeError or RecursionError."""

import json
import shutil

import jax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.compile import ModuleConfig, init_module, module_spec
from hx.lang.types import parse_type
from hx.synth.library import Entry, Library, LibraryError, Provenance
from tests.synth.json_strategies import json_values, mutated

CFG = ModuleConfig(mlp_hidden=8, cnn_channels=(4,), cnn_kernel=3, lstm_hidden=6, graph_hidden=6,
                   graph_message=3)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """(directory, manifest) of a library of one small MLP entry."""
  spec = module_spec(parse_type("Tensor<real>[3] -> Tensor<bool>[1]"), CFG)
  params, stats = init_module(spec, jax.random.key(0))
  entry = Entry.of("nn_t_1", spec, {"params": params, "batch_stats": stats},
                   Provenance("t", "task", "nn_t_1", 0.5, None, "2018-12-03T09:00:00+00:00"))
  path = tmp_path_factory.mktemp("saved") / "lib"
  Library((entry,), (("t", 1),)).save(path)
  return path, json.loads((path / "library.json").read_text("utf-8"))


def _copy(saved, tmp_path_factory, manifest_text: str):
  path = tmp_path_factory.mktemp("fuzz") / "lib"
  shutil.copytree(saved[0], path)
  (path / "library.json").write_text(manifest_text, "utf-8")
  return path


def _load_or_refuse(path) -> None:
  try:
    library = Library.load(path)
  except LibraryError as err:
    assert str(path) in str(err) and len(str(err).splitlines()) == 1
    return
  assert isinstance(library, Library) and all(isinstance(e, Entry) for e in library.entries)


@settings(max_examples=100)
@given(value=json_values)
def test_any_json_value_as_library_json_is_refused_with_the_path(saved, tmp_path_factory, value):
  path = _copy(saved, tmp_path_factory, json.dumps(value))
  with pytest.raises(LibraryError) as info:
    Library.load(path)
  assert str(path) in str(info.value)


@settings(max_examples=200)
@given(data=st.data())
def test_library_json_with_one_field_mutated_loads_or_is_refused_with_the_path(saved, tmp_path_factory, data):
  _load_or_refuse(_copy(saved, tmp_path_factory, json.dumps(data.draw(mutated(saved[1])))))


@pytest.mark.parametrize("key", ["\x85", "line\nbreak", "notes"])
def test_a_provenance_field_it_does_not_have_is_one_line_naming_it(saved, tmp_path_factory, key):
  # Found by the fuzz above: a key holding a line-breaking character ('\x85' is one to str.splitlines).
  manifest = json.loads(json.dumps(saved[1]))
  manifest["entries"][0]["provenance"][key] = 1
  path = _copy(saved, tmp_path_factory, json.dumps(manifest))
  with pytest.raises(LibraryError) as info:
    Library.load(path)
  message = str(info.value)
  assert len(message.splitlines()) == 1 and str(path) in message, message
  assert f"the provenance of nn_t_1 has no field {key!r}" in message, message


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "1" * 5000])
def test_library_json_nested_too_deep_or_with_a_huge_number_is_refused(saved, tmp_path_factory, text):
  path = _copy(saved, tmp_path_factory, text)
  with pytest.raises(LibraryError, match="library.json is not JSON hx reads"):
    Library.load(path)


@pytest.mark.parametrize("depth", [100, 300, 400, 450, 500, 700, 1000, 5000])
def test_a_structure_nested_at_any_depth_is_one_library_error(saved, tmp_path_factory, depth):
  # Around 450 the JSON decoder still reads it, and the walks over the structure go deeper than Python's
  # recursion limit; past that the decoder refuses it; each must end in a LibraryError.
  manifest = json.loads(json.dumps(saved[1]))
  manifest["entries"][0]["structure"] = "STRUCTURE"
  nested = '{"tuple": [' * depth + '{"array": {"dtype": "float32", "shape": [1]}}' + "]}" * depth
  path = _copy(saved, tmp_path_factory, json.dumps(manifest).replace('"STRUCTURE"', nested))
  with pytest.raises(LibraryError, match="library.json is (malformed|not JSON hx reads)") as info:
    Library.load(path)
  assert str(path) in str(info.value)
