"""The canonical JSON of a value and its hash (`hx.canonical_json`): what names hx's saved files."""

import dataclasses
import hashlib
import json
from pathlib import Path

from hx.canonical_json import canonical_json, content_key, jsonable, text_key


@dataclasses.dataclass(frozen=True)
class Inner:
  tolerance: float = 0.01
  horizon: tuple = (16, None)


@dataclasses.dataclass(frozen=True)
class Settings:
  width: int = 8
  rate: float = 0.5
  name: str = "relu_bn"
  inner: Inner = Inner()
  missing: int | None = None


@dataclasses.dataclass(frozen=True)
class Reordered:  # Settings' fields, declared in another order
  missing: int | None = None
  name: str = "relu_bn"
  inner: Inner = Inner()
  rate: float = 0.5
  width: int = 8


def test_the_canonical_json_writes_every_field_with_sorted_keys_and_no_spaces():
  assert canonical_json(Settings()) == ('{"inner":{"horizon":[16,null],"tolerance":0.01},"missing":null,'
                                        '"name":"relu_bn","rate":0.5,"width":8}')


def test_the_order_of_fields_and_keys_does_not_matter():
  assert canonical_json(Reordered()) == canonical_json(Settings())
  assert content_key(Reordered()) == content_key(Settings())
  assert canonical_json({"b": 1, "a": [1, 2]}) == canonical_json({"a": (1, 2), "b": 1}) == '{"a":[1,2],"b":1}'


def test_non_finite_floats_are_text_and_other_values_their_text():
  assert canonical_json({"x": float("nan"), "y": float("inf"), "z": float("-inf")}) == (
      '{"x":"nan","y":"inf","z":"-inf"}')
  assert canonical_json([Path("/data/m.pkl"), True, None, 2, "é"]) == '["/data/m.pkl",true,null,2,"\\u00e9"]'
  assert canonical_json({1: "one"}) == '{"1":"one"}'
  assert jsonable(Settings(rate=float("nan")))["rate"] == "nan"


def test_the_same_value_gives_the_same_key_and_a_changed_field_another():
  key = content_key({"modules": Settings(), "program": "nn_1"})
  assert key == content_key({"program": "nn_1", "modules": Settings()})
  assert len(key) == 32 and int(key, 16) >= 0
  assert key == hashlib.blake2b(canonical_json({"modules": Settings(), "program": "nn_1"}).encode(),
                                digest_size=16).hexdigest()
  assert key == text_key(canonical_json({"modules": Settings(), "program": "nn_1"}))
  changed = [Settings(width=9), Settings(rate=0.25), Settings(name="bn_relu"), Settings(missing=0),
             Settings(inner=Inner(tolerance=0.02)), Settings(inner=Inner(horizon=(16, 4)))]
  keys = {content_key({"modules": s, "program": "nn_1"}) for s in changed}
  assert len(keys) == len(changed) and key not in keys
  assert content_key({"modules": Settings(), "program": "nn_2"}) != key


def test_a_field_at_its_default_is_in_the_key():
  # A dataclass with one field more (at its default) is another value: its files have other names.
  @dataclasses.dataclass(frozen=True)
  class Grown(Settings):
    added: bool = False

  assert json.loads(canonical_json(Grown()))["added"] is False
  assert content_key(Grown()) != content_key(Settings())
