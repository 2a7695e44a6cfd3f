"""A run killed (SIGKILL) in the middle of a candidate's training resumes to the scores of an uninterrupted
run; on the way, each damaged file the resumed run meets (a checkpoint, a library, a baseline network) is
one line that names it and says what to do, with exit status 1."""

import json
import shutil
import signal
import subprocess
import sys

import pytest

from hx.compile.checkpoint import describe_checkpoint

RUN = ("--sequence=cs1", "--tasks=2", "--methods=houdini,llt", "--fractions=1", "--candidates=2",
       "--epochs=3", "--examples=60,30,30", "--module=mlp_hidden=8,cnn_channels=2:4,lstm_hidden=4",
       "--executor=local", "--noprogress")

# hx.bin.run, in a process that saves a candidate's checkpoint after every epoch (instead of every two
# minutes) and kills itself (SIGKILL: no cleanup) right after the second save of a paused HOUDINI training
# of task 2: two epochs into the second candidate's three (the first, all library functions, is finished).
KILLED = """
import dataclasses, os, signal, sys
import hx.compile.checkpoint as ck
import hx.synth.executors as ex
from hx.compile.tuning import TuneState

for_job = ex.Checkpoints.for_job
ex.Checkpoints.for_job = lambda self, job, context: dataclasses.replace(for_job(self, job, context),
                                                                       every_seconds=0.0)
save, paused = ck.save_checkpoint, []

def save_then_die(path, key, run, seconds=None):
  save(path, key, run, seconds)
  if isinstance(run, TuneState) and "houdini_topdown/seed_0/checkpoints/02_" in str(path):
    paused.append(path)
    if len(paused) == 2:
      os.kill(os.getpid(), signal.SIGKILL)

ck.save_checkpoint = save_then_die
from hx.bin.run import console
console()
"""


def _run(directory, code=None):
  head = ["-c", code] if code else ["-m", "hx.bin.run"]
  return subprocess.run([sys.executable, *head, *RUN, f"--output_dir={directory}"], capture_output=True,
                        text=True, timeout=600)


def _scores(directory):
  return {str(p.relative_to(directory)): [(r["program"], r["val"], r["test"]) for r in
                                          json.loads(p.read_text())["ranked"]]
          for p in sorted(directory.glob("*/seed_0/records/*/fraction_*.json"))}


def _refused(out, *parts):
  assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith("error: ") and all(p in line for p in parts), line


def _flip_a_byte(path):
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0x01
  path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_run_killed_mid_candidate_resumes_to_the_uninterrupted_scores_past_damaged_files(tmp_path):
  whole = tmp_path / "whole"
  assert _run(whole).returncode == 0
  expected = _scores(whole)
  assert len(expected) == 4

  killed = tmp_path / "killed"
  out = _run(killed, KILLED)
  assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
  houdini = killed / "houdini_topdown" / "seed_0"
  (task2,) = (houdini / "checkpoints").glob("02_*/fraction_1")
  states = sorted((d["kind"], d["epochs"]) for d in map(describe_checkpoint, task2.glob("*.npz")))
  assert states == [("finished", 0), ("paused", 2)]  # one candidate done, the next two epochs into three
  assert len(_scores(killed)) == 2  # task 1's records only

  # A damaged checkpoint: the file named, and what to do.
  (paused,) = [p for p in task2.glob("*.npz") if describe_checkpoint(p)["kind"] == "paused"]
  kept = paused.read_bytes()
  paused.write_bytes(kept[:len(kept) // 2])
  _refused(_run(killed), f"checkpoint {paused}: not a Tune checkpoint (BadZipFile",
           "delete it to start this training again")
  paused.write_bytes(kept)

  # A damaged library (the one task 2 starts from).
  library = houdini / "libraries" / "after_01"
  backup = tmp_path / "library"
  shutil.copytree(library, backup)
  array = sorted((library / "arrays").glob("*.msgpack"))[0]
  _flip_a_byte(array)
  _refused(_run(killed), f"cannot load library {array}: ", "is altered: its sha256 is",
           f"delete {library}, then run the same command again to search task 1 anew")
  shutil.rmtree(library)
  shutil.copytree(backup, library)

  # A baseline network with a flipped byte (llt on task 2 starts from it): HOUDINI's task 2 resumes and
  # finishes first.
  network = killed / "llt" / "seed_0" / "networks" / "after_01"
  variables = network / "variables.msgpack"
  kept = variables.read_bytes()
  _flip_a_byte(variables)
  _refused(_run(killed), f"cannot load baseline network {variables}: altered: its sha256 is",
           f"delete {network} and {killed / 'llt' / 'seed_0' / 'records'}", "to train it anew")
  variables.write_bytes(kept)

  out = _run(killed)
  assert out.returncode == 0, out.stderr[-3000:]
  assert _scores(killed) == expected
  assert "networks" not in out.stderr and "candidates" not in out.stderr  # --noprogress
