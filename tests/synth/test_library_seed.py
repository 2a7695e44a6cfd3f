"""A sequence's results do not depend on its name: a candidate that calls the library is seeded with the
sequence's functions named after its `library_seed` (`hx.synth.space.with_library_seed`), 0 by default
for a user's sequence; the paper's sequences keep their names there, the seeds their committed records
were made with."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import hx
from hx.compile import ModuleConfig
from hx.data.sequences import PAPER_LIBRARY_SEEDS, SEQUENCES, sequence
from hx.lang.types import parse_type
from hx.synth.jobs import job_seed
from hx.synth.space import Candidate, equivalence_key, with_library_seed
from tests.user_data import bright_images


def _calling(name: str) -> Candidate:
  """compose(nn_1, map_l(lib.<name>)) with its one fresh function's type."""
  program = hx.parse(f"compose(nn_1, map_l(lib.{name}))")
  types = {"nn_1": parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]")}
  return Candidate(program, tuple(types.items()), 0.0, equivalence_key(program, types))


def test_the_papers_sequences_keep_the_seeds_their_names_gave():
  assert set(PAPER_LIBRARY_SEEDS) == set(SEQUENCES)
  for name in SEQUENCES:
    seq = sequence(name, seed=1)
    assert seq.library_seed == name
    candidate = _calling(f"nn_{name}_1")
    seeded = with_library_seed(candidate, seq.name, seq.library_seed)
    # The seed as it was derived before the field existed: a hash of the key, which names the function.
    old = zlib.crc32(repr((3, candidate.key)).encode()) & 0x7FFFFFFF
    assert job_seed(3, seeded) == job_seed(3, candidate) == old
  assert job_seed(0, _calling("nn_cs1_1")) == 873591246  # as the committed CS1 records were seeded


def test_a_candidates_seed_depends_on_the_library_seed_not_on_the_sequences_name():
  mine, yours = _calling("nn_bc_2"), _calling("nn_bc_file_2")
  assert job_seed(0, mine) != job_seed(0, yours)  # the names alone
  assert job_seed(0, with_library_seed(mine, "bc", 0)) == job_seed(0, with_library_seed(yours, "bc_file", 0))
  assert job_seed(0, with_library_seed(mine, "bc", 0)) != job_seed(0, with_library_seed(mine, "bc", 1))
  # Another sequence's functions, and equality, are left as they are.
  assert job_seed(0, with_library_seed(mine, "other", 0)) == job_seed(0, mine)
  assert with_library_seed(mine, "bc", 0) == mine


def test_a_bad_library_seed_is_refused():
  x = bright_images(np.random.default_rng(0), 8)
  task = hx.Task.from_arrays("bright", "Tensor<real>[1][6][6] -> Tensor<bool>[1]", x, x, x)
  for bad in (-1, "Has Capitals", True, 1.5):
    with pytest.raises(ValueError, match="library_seed"):
      hx.Sequence.of("mine", [task], library_seed=bad)
    with pytest.raises(ValueError, match="library_seed"):
      hx.TaskStream("mine", [task], library_seed=bad)
  assert hx.Sequence.of("mine", [task]).library_seed == 0
  assert hx.TaskStream("mine", [task], library_seed="a1").instance(2).library_seed == "a1"


def _stream(name: str) -> hx.TaskStream:
  rng = np.random.default_rng(0)
  training = {"epochs": 1, "batch_size": 16}
  first = hx.Task.from_arrays("bright", "Tensor<real>[1][6][6] -> Tensor<bool>[1]", bright_images(rng, 48),
                              bright_images(rng, 16), bright_images(rng, 16), training=training)
  dark = [(x, 1 - y) for x, y in (bright_images(rng, 48), bright_images(rng, 16), bright_images(rng, 16))]
  second = hx.Task.from_arrays("dark", "Tensor<real>[1][6][6] -> Tensor<bool>[1]", *dark, training=training)
  return hx.TaskStream(name, [first, second])


def _results(run) -> list[tuple]:
  """Per record and candidate: the program (library names without the sequence's), scores, epochs."""
  out = []
  for r in run.records:
    for c in r["ranked"]:
      program = c["program"].replace("nn_bc_file_", "nn_").replace("nn_bc_", "nn_")
      out.append((r["task"], program, c["val"], c["test"], c["epochs_run"]))
  return out


@pytest.mark.slow
def test_two_sequences_differing_only_in_name_give_identical_results(tmp_path):
  config = dict(config=hx.SynthesisConfig(budget=hx.Budget(candidates=3), space=hx.SearchSpace(order="cost"),
                                          module_config=ModuleConfig(mlp_hidden=8, cnn_channels=(4, 8))),
                checkpoints=False)
  bc = hx.run_sequence(_stream("bc").instance(0), tmp_path / "bc", **config)
  renamed = hx.run_sequence(_stream("bc_file").instance(0), tmp_path / "bc_file", **config)
  calls = [c["program"] for c in bc.records[1]["ranked"] if "lib." in c["program"]]
  assert calls, "the second task's candidates call the library"
  assert _results(bc) == _results(renamed)
  settings = json.loads((tmp_path / "bc" / "settings.json").read_text())
  assert settings["settings"]["library_seed"] == 0
  # Another library seed seeds those candidates otherwise.
  other = hx.run_sequence(hx.TaskStream("bc", _stream("bc").tasks, library_seed=1).instance(0),
                          tmp_path / "other", **config)
  assert _results(other)[:3] == _results(bc)[:3]  # the first task calls no library function
  assert _results(other) != _results(bc)


def test_a_sequence_file_gives_its_library_seed(tmp_path):
  from hx.data.errors import DataFormatError
  from hx.data.sequence_file import read_sequence_file, save_task_arrays

  rng = np.random.default_rng(0)
  save_task_arrays(tmp_path / "bright.npz", "Tensor<real>[1][6][6] -> Tensor<bool>[1]",
                   *(bright_images(rng, 8) for _ in range(3)))
  task = ('[[tasks]]\nname = "bright"\ntype = "Tensor<real>[1][6][6] -> Tensor<bool>[1]"\n'
          'data = "bright.npz"\n')
  for given, expected in (("", 0), ("library_seed = 3\n", 3), ('library_seed = "a1"\n', "a1")):
    (tmp_path / "s.toml").write_text(f'name = "mine"\n{given}\n{task}')
    assert read_sequence_file(tmp_path / "s.toml").stream.instance(0).library_seed == expected
  (tmp_path / "s.toml").write_text(f'name = "mine"\nlibrary_seed = -2\n\n{task}')
  with pytest.raises(DataFormatError, match=r"s\.toml: library_seed: sequence mine: library_seed must be"):
    read_sequence_file(tmp_path / "s.toml")
