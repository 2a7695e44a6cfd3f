"""`benchmarks/on_gpu.sh reproduce` and `weights`: bad settings are one line and exit 1, before anything is
copied or trained (the stage's settings checks need no GPU; its run is checked by hand on a lent machine
and, on the CPU, by the round trip RESULTS.md names); `weights` packs the latest library and network of
each method and instantiation and every checkpoint folder that holds a file, in parts that unpack to the
same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stage(tmp_path: Path, stage: str = "reproduce", **env: str) -> subprocess.CompletedProcess:
  base = {k: v for k, v in os.environ.items() if not k.startswith("REPRODUCE_") and k != "MNIST"}
  # python3 is the interpreter running the tests (the stage calls python3).
  base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
  return subprocess.run(["bash", str(ROOT / "benchmarks" / "on_gpu.sh"), stage], capture_output=True,
                        text=True, env={**base, "OUT": str(tmp_path / "out"), **env}, timeout=120)


@pytest.mark.parametrize("env, message", [
    ({}, "reproduce: REPRODUCE_SEQUENCES must name the sequences (e.g. gs1,gs2)"),
    ({"REPRODUCE_SEQUENCES": "gs1", "REPRODUCE_DIR": "/nonexistent/reproduction"},
     "reproduce: REPRODUCE_DIR /nonexistent/reproduction is not a directory"),
    ({"REPRODUCE_SEQUENCES": "gs1", "MNIST": "/nonexistent/mnist.pkl.gz"},
     "reproduce: MNIST must name the full MNIST pickle (got '/nonexistent/mnist.pkl.gz')"),
])
def test_bad_settings_are_one_line_and_exit_1(tmp_path, env, message):
  out = _stage(tmp_path, **env)
  assert out.returncode == 1
  assert out.stderr.strip().splitlines() == [message]
  assert not (tmp_path / "out" / "reproduce.log").exists()  # nothing ran


@pytest.mark.slow
def test_a_refused_reproduce_run_is_exit_1_and_brings_nothing_back(tmp_path):
  mnist = tmp_path / "mnist.pkl.gz"
  mnist.write_bytes(b"")  # reproduce.py refuses the sequence name before reading it
  out = _stage(tmp_path, REPRODUCE_SEQUENCES="gs9", REPRODUCE_DIR=str(tmp_path), MNIST=str(mnist))
  assert out.returncode == 1
  assert "reproduce: reproduce.py failed (exit" in out.stderr
  assert not (tmp_path / "out" / "reproduction.tgz").exists()


def _tree(root: Path) -> None:
  """A reproduction folder's weights as a run leaves them: libraries and networks after each task."""
  for rel in ["gs2/houdini_topdown/seed_0/libraries/after_01",
              "gs2/houdini_topdown/seed_0/libraries/after_02",
              "gs2/houdini_topdown/seed_1/libraries/after_01", "gs2/llt/seed_0/networks/after_01",
              "gs2/llt/seed_0/networks/after_02", "gs1/houdini_topdown/seed_0/libraries/after_01"]:
    (root / rel / "arrays").mkdir(parents=True)
    (root / rel / "library.json").write_text(rel)
    (root / rel / "arrays" / "w.npy").write_bytes(os.urandom(3000))  # incompressible, as weights are
  (root / "gs2/standalone/seed_0/records").mkdir(parents=True)
  # A network cut short mid-training (GS2's regressor) and a search's emptied checkpoint folder.
  ckpt = root / "gs2/standalone/seed_0/checkpoints/01_regress_mnist/fraction_0.1"
  ckpt.mkdir(parents=True)
  (ckpt / "4f3c.npz").write_bytes(os.urandom(2000))
  (root / "gs2/houdini_topdown/seed_0/checkpoints").mkdir(parents=True)


def test_weights_packs_the_latest_library_and_network_of_each_method_in_parts(tmp_path):
  root = tmp_path / "reproduction"
  _tree(root)
  out = _stage(tmp_path, "weights", REPRODUCE_SEQUENCES="gs2", REPRODUCE_DIR=str(root),
               REPRODUCE_WEIGHTS_PART="4K")
  assert out.returncode == 0, out.stderr
  parts = sorted((tmp_path / "out").glob("weights.tgz.*"))
  assert [p.name for p in parts][:2] == ["weights.tgz.00", "weights.tgz.01"]  # 9 KB of weights in 4 KB parts
  assert all(p.stat().st_size <= 4096 for p in parts)
  whole = tmp_path / "weights.tgz"
  whole.write_bytes(b"".join(p.read_bytes() for p in parts))
  back = tmp_path / "back"
  back.mkdir()
  subprocess.run(["tar", "xzf", str(whole), "-C", str(back)], check=True)
  got = sorted(str(p.relative_to(back)) for p in back.rglob("library.json"))
  assert got == ["gs2/houdini_topdown/seed_0/libraries/after_02/library.json",
                 "gs2/houdini_topdown/seed_1/libraries/after_01/library.json",
                 "gs2/llt/seed_0/networks/after_02/library.json"]
  for rel in got:  # the same bytes as the originals
    weights = Path(rel).parent / "arrays" / "w.npy"
    assert (back / weights).read_bytes() == (root / weights).read_bytes()
  # The checkpoint that holds a file comes back whole; the empty checkpoint folder does not.
  checkpoint = "gs2/standalone/seed_0/checkpoints/01_regress_mnist/fraction_0.1/4f3c.npz"
  assert sorted(str(p.relative_to(back)) for p in back.rglob("*.npz")) == [checkpoint]
  assert (back / checkpoint).read_bytes() == (root / checkpoint).read_bytes()
  assert not (back / "gs2/houdini_topdown/seed_0/checkpoints").exists()


def test_weights_with_none_to_pack_brings_nothing(tmp_path):
  root = tmp_path / "reproduction"
  (root / "gs2/standalone/seed_0/records").mkdir(parents=True)
  (root / "gs2/standalone/seed_0/checkpoints").mkdir(parents=True)  # empty: nothing to resume
  out = _stage(tmp_path, "weights", REPRODUCE_SEQUENCES="gs2", REPRODUCE_DIR=str(root))
  assert out.returncode == 0, out.stderr
  assert "weights: no libraries, networks or checkpoints under" in out.stdout
  assert not list((tmp_path / "out").glob("weights.tgz*"))


@pytest.mark.parametrize("env, message", [
    ({}, "weights: REPRODUCE_SEQUENCES must name the sequences (e.g. gs1,gs2)"),
    ({"REPRODUCE_SEQUENCES": "gs2", "REPRODUCE_DIR": "/nonexistent/reproduction"},
     "weights: REPRODUCE_DIR /nonexistent/reproduction is not a directory"),
])
def test_weights_bad_settings_are_one_line_and_exit_1(tmp_path, env, message):
  out = _stage(tmp_path, "weights", **env)
  assert out.returncode == 1
  assert out.stderr.strip().splitlines() == [message]
