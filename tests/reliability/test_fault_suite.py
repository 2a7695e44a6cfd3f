"""The fault suite: a short run (CS1's first two tasks, HOUDINI, tiny modules, three epochs) that meets a
fault and is then run again with the same command gives the uninterrupted run's records (every candidate's
program, validation and test score):

- killed with SIGKILL at random moments, several times (no cleanup, anywhere: mid-write included);
- a write refused with ENOSPC in each kind of file hx writes (settings, record, checkpoint, library,
  report): the run stops with one line naming the file and saying that the same command resumes, and
  leaves no temporary and no half-written file behind.

Each run saves a candidate's checkpoint after every epoch (instead of every two minutes), so that the
faults also meet paused trainings."""

import json
import os
import random
import shutil
import subprocess
import sys
import time

import pytest

RUN = ("--sequence=cs1", "--tasks=2", "--methods=houdini", "--fractions=1", "--candidates=2", "--epochs=3",
       "--examples=60,30,30", "--module=mlp_hidden=8,cnn_channels=2:4,lstm_hidden=4", "--executor=local",
       "--noprogress")

# hx.bin.run with a checkpoint after every epoch, and, where FAULT_KIND is set, os.fsync refusing (ENOSPC)
# the first regular file whose path holds FAULT_KIND: what a disk that fills up there does (the data of a
# write reaches the disk at the sync; a write call itself may be refused the same way).
PROGRAM = """
import dataclasses, errno, os
import hx.synth.executors as ex

for_job = ex.Checkpoints.for_job
ex.Checkpoints.for_job = lambda self, job, context: dataclasses.replace(for_job(self, job, context),
                                                                       every_seconds=0.0)
kind, refused, fsync = os.environ.get("FAULT_KIND"), [], os.fsync

def full_disk(fd):
  path = os.readlink(f"/proc/self/fd/{fd}")
  if kind and not refused and kind in path and os.path.isfile(path):
    refused.append(path)
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
  return fsync(fd)

os.fsync = full_disk
from hx.bin.run import console
console()
"""


def _command(directory):
  return [sys.executable, "-c", PROGRAM, *RUN, f"--output_dir={directory}"]


def _run(directory, kind=None):
  env = dict(os.environ, **({"FAULT_KIND": kind} if kind else {}))
  return subprocess.run(_command(directory), capture_output=True, text=True, timeout=300, env=env)


def _records(directory):
  """Each record's candidates as (program, status, validation score, test score), by the record's path."""
  return {str(p.relative_to(directory)): [(r["program"], r["status"], r["val"], r["test"]) for r in
                                          json.loads(p.read_text())["ranked"]]
          for p in sorted(directory.glob("*/seed_*/records/*/fraction_*.json"))}


def _temporaries(directory):
  return sorted(str(p) for p in directory.rglob("*") if ".tmp-" in p.name)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
  """The uninterrupted run: its records (`_records`), its seconds and its directory."""
  directory = tmp_path_factory.mktemp("whole") / "run"
  started = time.perf_counter()
  out = _run(directory)
  seconds = time.perf_counter() - started
  assert out.returncode == 0, out.stderr[-3000:]
  records = _records(directory)
  assert len(records) == 2 and all(len(r) == 2 for r in records.values())
  return records, seconds, directory


@pytest.fixture(scope="module")
def uninterrupted(whole):
  return whole[0]


@pytest.mark.slow
def test_a_run_killed_at_random_moments_resumes_to_the_uninterrupted_records(tmp_path, whole):
  uninterrupted, seconds, _ = whole
  directory = tmp_path / "run"
  moments = random.Random(87)
  kills, ends = 0, []
  while kills < 3 and len(ends) < 12:
    proc = subprocess.Popen(_command(directory), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:  # about half of a run is starting the process (imports, JAX), the rest is the run's work
      _, err = proc.communicate(timeout=moments.uniform(0.4, 0.9) * seconds)
      ends.append(f"exit {proc.returncode}: {err[-500:]}")
      assert proc.returncode == 0, ends
      shutil.rmtree(directory)  # it finished first: start again, to be killed three times in one run
      kills = 0
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.communicate()
      kills += 1
      ends.append("killed")
  assert kills == 3, ends
  out = _run(directory)
  assert out.returncode == 0, out.stderr[-3000:]
  assert _records(directory) == uninterrupted


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["settings.json", "/records/", "/checkpoints/", "/libraries/", "report.md"])
def test_a_full_disk_in_each_kind_of_file_is_one_line_and_the_same_command_resumes(tmp_path, uninterrupted,
                                                                                     kind):
  directory = tmp_path / "run"
  started = time.perf_counter()
  out = _run(directory, kind)
  assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith("error: cannot ") and str(directory) in line and kind in line, line
  assert "No space left on device (ENOSPC); nothing was left half-written: free some space there, then run " \
         "the same command again to resume" in line, line
  assert not _temporaries(directory)
  for record in directory.glob("*/seed_*/records/*/fraction_*.json"):
    json.loads(record.read_text())  # whole, every one there
  out = _run(directory)
  assert out.returncode == 0, out.stderr[-3000:]
  assert _records(directory) == uninterrupted
  assert (directory / "report.md").is_file() and not _temporaries(directory)
  assert time.perf_counter() - started < 120


@pytest.mark.slow
@pytest.mark.parametrize("file", ["houdini_topdown/seed_0/settings.json",
                                  "houdini_topdown/seed_0/records/02_recognize_digit(1)/fraction_1.json"])
def test_a_run_directory_of_a_newer_layout_is_refused_in_one_line(tmp_path, whole, file):
  directory = tmp_path / "run"
  shutil.copytree(whole[2], directory)
  value = json.loads((directory / file).read_text())
  value["record_version"] = 4
  (directory / file).write_text(json.dumps(value))
  if file.endswith("settings.json"):  # a finished run reads nothing of it: one with a task to go
    shutil.rmtree(next(directory.glob("houdini_topdown/seed_0/records/02_*")))
  out = _run(directory)
  assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-2000:])
  (line,) = out.stderr.strip().splitlines()
  assert line.startswith(f"error: {directory / file}: a run directory's layout of record_version 4, written "
                         "by a newer hx; this hx reads record_version 1, 2 or 3 only"), line
