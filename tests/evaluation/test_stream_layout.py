"""A long stream's run written by an hx of layout version 2 (which spelt the recognize tasks "recognise"):
trained for real, made version 2 again as that hx wrote it, then resumed by `hx.evaluate` and reported by
`build_report`: respelt on opening (`hx.synth.run_directory.respell`), nothing trained again, the same
records and report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hx
from hx.data import Sources, StreamSettings
from hx.evaluation import build_report
from hx.presets import StreamPreset
from hx.synth.jsonfiles import RECORD_VERSION

TINY = StreamPreset("tiny", StreamSettings(images=(24, 10, 10), lists=(12, 6, 6), train_lengths=(2, 3),
                                           test_lengths=(3, 4)),
                    epochs=(1, 2, 1), batch_size=12, min_steps=2)


def _as_version_2(directory: Path) -> None:
  """`directory` as an hx of layout version 2 left it: "recognise" in its folders' names and its JSON,
  "record_version" 2 where it says 3."""
  for here, folders, files in os.walk(directory, topdown=False):
    for name in files:
      if name.endswith(".json"):
        path = Path(here) / name
        text = path.read_text("utf-8").replace("recognize", "recognise")
        path.write_text(text.replace(f'"record_version": {RECORD_VERSION}', '"record_version": 2'), "utf-8")
    for name in folders:
      if "recognize" in name:
        (Path(here) / name).rename(Path(here) / name.replace("recognize", "recognise"))


def _texts(directory: Path) -> dict[str, str]:
  return {str(p.relative_to(directory)): p.read_text("utf-8") for p in sorted(directory.rglob("*.json"))
          if "libraries" not in p.parts and "networks" not in p.parts}


@pytest.mark.slow
def test_a_version_2_stream_run_resumes_respelt_with_nothing_trained_again(tmp_path):
  stream = TINY.stream(0, 2, Sources(standin_per_class=(20, 6, 6)))
  assert stream.tasks[1].name.startswith("recognize_digit(")
  config = hx.EvalConfig.make(stream, methods=["houdini", "standalone"], fractions=[1.0], seeds=[0],
                              budget={"candidates": 2})
  directory = tmp_path / "run"
  first = hx.evaluate(config, directory)
  assert first.finished and first.ran == 2 * 2
  texts, report = _texts(directory), (directory / "report.md").read_text("utf-8")
  assert any("recognize_digit(" in t for t in texts.values())

  _as_version_2(directory)
  assert json.loads((directory / "settings.json").read_text())["record_version"] == 2
  assert sorted(p.name for p in (directory / "standalone" / "seed_0" / "records").iterdir())[1].startswith(
      "02_recognise_digit(")

  again = hx.evaluate(config, directory)
  assert again.finished and again.ran == 0  # every task read from its record: none trained again
  assert not [p for p in directory.rglob("*recognise*")]
  assert not [p for p in directory.rglob("*.json") if "recognise" in p.read_text("utf-8")]
  assert json.loads((directory / "settings.json").read_text())["record_version"] == RECORD_VERSION
  # The records are the ones written, but for the version they hold (their fields did not change).
  now = _texts(directory)
  assert set(now) == set(texts)
  for name, text in texts.items():
    if name != "settings.json":
      assert now[name].replace('"record_version": 2', f'"record_version": {RECORD_VERSION}') == text, name
  assert (directory / "report.md").read_text("utf-8") == report

  # Its report rebuilt (hx-report) from version 2 again: respelt the same way, the same report.
  _as_version_2(directory)
  assert build_report(directory).read_text("utf-8") == report
  assert not [p for p in directory.rglob("*recognise*")]
  assert {k: v.replace('"record_version": 2', f'"record_version": {RECORD_VERSION}')
          for k, v in _texts(directory).items() if k != "settings.json"} == {
      k: v for k, v in texts.items() if k != "settings.json"}
