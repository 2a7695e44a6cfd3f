"""Result files: settings as plain JSON values, and atomic writes that never leave a partial file."""

import dataclasses
import json
from pathlib import Path

import pytest

from hx.synth.jsonfiles import jsonable, write_json


@dataclasses.dataclass(frozen=True)
class _Settings:
  epochs: int
  fractions: tuple[float, ...]
  score: float
  kind: object


def test_jsonable_gives_plain_values():
  got = jsonable(_Settings(3, (0.1, 1.0), float("nan"), Path("/data/mnist.pkl.gz")))
  assert got == {"epochs": 3, "fractions": [0.1, 1.0], "score": "nan", "kind": "/data/mnist.pkl.gz"}
  assert jsonable({1: float("inf"), "a": None, "b": True}) == {"1": "inf", "a": None, "b": True}


def test_write_json_replaces_the_file_whole_or_not_at_all(tmp_path):
  path = tmp_path / "deeper" / "record.json"
  write_json(path, {"a": 1})
  assert json.loads(path.read_text()) == {"a": 1}
  with pytest.raises(TypeError):
    write_json(path, {"a": object()})  # not serialisable: fails half-way through the dump
  assert json.loads(path.read_text()) == {"a": 1}
  assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no temporary file left


def test_every_field_is_written_at_its_default_too():
  # Layout version 2 (hx.synth.jsonfiles.RECORD_VERSION): no field is left out, whatever it holds.
  from hx.compile import ModuleConfig
  from hx.synth.schedules import CheapFirst

  @dataclasses.dataclass(frozen=True)
  class Settings:
    a: int = 1
    b: str = "old"

  assert jsonable(Settings()) == {"a": 1, "b": "old"}
  assert jsonable(Settings(a=2, b="new")) == {"a": 2, "b": "new"}
  modules = jsonable(ModuleConfig())
  assert modules["mlp_order"] == "bn_relu" and modules["fold_step_norm"] is True
  assert jsonable(CheapFirst()) == {"probe_steps": 80, "cheap": 0.2, "keep": 3, "eta": None, "keep_at": 2.0,
                                    "free": False}

