"""`hx.bin.figures`' inputs fuzzed: a run directory whose settings.json or record holds any JSON value in
any field gives the figures and headline tables (`collect_figures`, `readme_blocks`), or one ValueError
(or FileNotFoundError) whose message names the file; never another exception from the code reading it.

The run is a committed reproduction's (CS2's settings and one progressive-network record), copied."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hx.evaluation.fraction_plots import collect_figures  # noqa: E402
from hx.evaluation.headline import readme_blocks  # noqa: E402

RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduction" / "cs2"
RECORD = "pnn/seed_0/records/03_count_digit(1)/fraction_0.02.json"
SETTINGS = json.loads((RUN / "settings.json").read_text("utf-8"))
RECORD_VALUE = json.loads((RUN / RECORD).read_text("utf-8"))

LEAVES = st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=5)
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def _copy(value: dict) -> dict:
  return json.loads(json.dumps(value))


def _read(directory: Path) -> None:
  """Both readers of the root `directory`: each gives its result or one error naming a file of it."""
  for read in (collect_figures, readme_blocks):
    try:
      read(directory)
    except (ValueError, FileNotFoundError) as err:
      assert "settings.json" in str(err) or "fraction_0.02.json" in str(err) or str(directory) in str(err), (
          read.__name__, str(err))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(part=st.sampled_from(["settings", "record", "ranked"]), data=st.data())
def test_any_json_in_a_field_gives_the_figures_or_one_error_naming_the_file(tmp_path_factory, part, data):
  run_settings, record = _copy(SETTINGS), _copy(RECORD_VALUE)
  if part == "settings":
    where = run_settings["settings"]
  elif part == "record":
    where = record
  else:
    where = record["ranked"][0]
  key = data.draw(st.sampled_from(sorted(where) + ["extra"]))
  where[key] = data.draw(JSON)
  directory = tmp_path_factory.mktemp("root") / "cs2"
  (directory / RECORD).parent.mkdir(parents=True)
  (directory / "settings.json").write_text(json.dumps(run_settings))
  (directory / RECORD).write_text(json.dumps(record))
  _read(directory.parent)
  shutil.rmtree(directory.parent)


def test_the_unchanged_run_draws():
  # The fuzz's starting point is a run the readers accept (else every case would be an error).
  assert collect_figures(RUN.parent / "cs2")
