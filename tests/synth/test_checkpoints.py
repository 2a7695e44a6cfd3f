"""A synthesis interrupted midway resumes its candidates from their checkpoint files (`checkpoint_dir`)."""

import dataclasses
import json
import os

import pytest

import hx.compile.checkpoint as ck
from hx.compile import TuneConfig
from hx.compile.checkpoint import CheckpointError
from hx.synth.config import Budget, SynthesisConfig
from hx.synth.synthesize import synthesize, task_context
from tests.synth.test_synthesize import TINY, sum_task

CONFIG = SynthesisConfig(budget=Budget(candidates=3), module_config=TINY,
                         tune_configs={"sum_numbers": TuneConfig(epochs=3, batch_size=50)})
KW = dict(config=CONFIG, seed=4)


class Interrupt(Exception):
  pass


def _count_tune(monkeypatch, stop_after: int | None = None):
  """Counts checkpoint's calls of tune; raises Interrupt on the call after `stop_after`."""
  real, count = ck.tune, [0]

  def counted(*args, **kwargs):
    count[0] += 1
    if stop_after is not None and count[0] > stop_after:
      raise Interrupt()
    return real(*args, **kwargs)
  monkeypatch.setattr(ck, "tune", counted)
  return count


def _essence(result):
  return [(str(x.program), x.outcome.status, x.val_score, x.test_score, x.outcome.epochs_run, x.val_history)
          for x in result.entries]


@pytest.mark.slow
def test_an_interrupted_synthesis_resumes_its_candidates_to_the_uninterrupted_result(tmp_path, monkeypatch):
  task = sum_task(n=300)
  straight = synthesize(task, None, **KW)
  # Each candidate trains in two chunks (one epoch to measure its pace, then the rest: a file after
  # each); the fourth call is the second candidate's second chunk.
  _count_tune(monkeypatch, stop_after=3)
  with pytest.raises(Interrupt):
    synthesize(task, None, checkpoint_dir=tmp_path, **KW)
  assert len([f for f in os.listdir(tmp_path) if f.endswith(".npz")]) == 2
  monkeypatch.undo()
  count = _count_tune(monkeypatch)
  resumed = synthesize(task, None, checkpoint_dir=tmp_path, **KW)
  # The first candidate's finished file is its result; the second goes on from epoch 1 (again one
  # epoch to measure the pace, then the rest); the third trains.
  assert count[0] == 2 + 2
  assert _essence(resumed) == _essence(straight)
  assert resumed.library.version == straight.library.version
  count[0] = 0
  again = synthesize(task, None, checkpoint_dir=tmp_path, **KW)
  assert count[0] == 0 and _essence(again) == _essence(straight)
  assert sorted(os.listdir(tmp_path)) == sorted(f for f in os.listdir(tmp_path) if f.endswith(".npz"))


@pytest.mark.slow
def test_files_are_keyed_by_the_tasks_data_and_settings(tmp_path, monkeypatch):
  synthesize(sum_task(n=300, seed=0), None, checkpoint_dir=tmp_path, **KW)
  assert len(os.listdir(tmp_path)) == 3
  count = _count_tune(monkeypatch)
  other = synthesize(sum_task(n=300, seed=1), None, checkpoint_dir=tmp_path, **KW)
  assert count[0] == 3 * 2 and len(os.listdir(tmp_path)) == 6  # other data: nothing reused
  monkeypatch.undo()
  assert _essence(other) == _essence(synthesize(sum_task(n=300, seed=1), None, **KW))
  longer = dataclasses.replace(CONFIG, tune_configs={"sum_numbers": TuneConfig(epochs=4, batch_size=50)})
  synthesize(sum_task(n=300, seed=0), None, checkpoint_dir=tmp_path, **dict(KW, config=longer))
  assert len(os.listdir(tmp_path)) == 9  # other settings: nothing reused


def test_a_damaged_file_stops_the_synthesis_with_its_path(tmp_path):
  task = sum_task(n=300)
  synthesize(task, None, checkpoint_dir=tmp_path, **KW)
  victim = sorted(os.listdir(tmp_path))[0]
  (tmp_path / victim).write_bytes(b"garbage")
  with pytest.raises(CheckpointError, match=f"{victim}: not a Tune checkpoint"):
    synthesize(task, None, checkpoint_dir=tmp_path, **KW)


def test_task_context_names_what_it_needs():
  with pytest.raises(ValueError, match="training settings of task sum_numbers"):
    task_context(sum_task(n=50))
  context = task_context(sum_task(n=50), tune_config=TuneConfig(epochs=1), checkpoint_dir="somewhere")
  assert context.checkpoints.directory == "somewhere"
  assert context.checkpoints.task_key == {"task": "sum_numbers", "data": ck.fingerprint(context.ready.data)}
  assert (task_context(sum_task(n=50), tune_config=TuneConfig()).checkpoints is None)
  assert (task_context(sum_task(n=50, seed=1), tune_config=TuneConfig(), checkpoint_dir="x")
          .checkpoints.task_key != context.checkpoints.task_key)


def test_task_key_fingerprints_every_array_with_its_shape():
  import numpy as np

  from hx.synth.executors import task_key

  base = {"a": np.zeros((0, 3), np.float32), "b": np.asarray(1.0), "c": np.ones((2, 2), bool)}
  key = task_key("t", base)
  assert key == task_key("t", dict(base))
  assert key != task_key("t", {**base, "b": np.asarray(2.0)})
  assert key != task_key("t", {**base, "a": np.zeros((3, 0), np.float32)})  # same bytes, other shape
  assert key != task_key("t", {**base, "c": np.ones((2, 2), np.uint8)})  # same bytes, other dtype
  assert key != task_key("u", base)


def _job_and_context(tmp_path):
  from hx.lang import parse, parse_type
  from hx.synth.jobs import Job
  from hx.synth.space import Candidate

  context = task_context(sum_task(n=50), module_config=TINY, tune_config=TuneConfig(epochs=2, batch_size=50),
                         checkpoint_dir=tmp_path / "checkpoints", scores_dir=tmp_path / "kept")
  fresh = (("nn_1", parse_type("List<Tensor<real>[1]> -> Tensor<real>[1]")),)
  return Job(0, Candidate(parse("nn_1"), fresh, 1.0, ("nn_1",)), seed=7), context


def test_a_candidates_key_is_the_canonical_json_of_what_it_trains(tmp_path):
  from hx.canonical_json import canonical_json, content_key, jsonable

  job, context = _job_and_context(tmp_path)
  checkpoint = context.checkpoints.for_job(job, context)
  what = {"task": "sum_numbers", "data": ck.fingerprint(context.ready.data), "program": "nn_1",
          "fresh": {"nn_1": "List<Tensor<real>[1]> -> Tensor<real>[1]"},
          "training": jsonable(TuneConfig(epochs=2, batch_size=50, seed=7)), "modules": jsonable(TINY),
          "library": {}, "schedule": None}
  assert json.loads(checkpoint.key) == what
  assert checkpoint.key == canonical_json(what)
  assert checkpoint.path == os.path.join(tmp_path / "checkpoints", f"{content_key(what)}.npz")
  # Every field of the settings, those at their defaults too.
  assert {"mlp_order", "fold_step_norm"} <= set(what["modules"]) and "min_steps" in what["training"]
  # The kept file: the library's names, not their versions; named by the hash of its key's text.
  path, key = context.checkpoints.kept_for(job, context)
  assert key == canonical_json({**what, "library": []})
  assert path == os.path.join(tmp_path / "kept", f"{content_key({**what, 'library': []})}.json")


def test_a_candidates_key_changes_with_its_module_settings_schedule_and_training(tmp_path):
  import dataclasses

  from hx.synth.schedules import CheapFirst, Halving

  job, context = _job_and_context(tmp_path)

  def files(job, context):
    return (context.checkpoints.for_job(job, context).path,) + context.checkpoints.kept_for(job, context)

  def trained_with(**changes):
    ready = dataclasses.replace(context.ready, tune_config=dataclasses.replace(context.ready.tune_config,
                                                                               **changes))
    return dataclasses.replace(context, ready=ready)

  base = files(job, context)
  assert files(job, context) == base  # the same job: the same files
  variants = [
      files(job, dataclasses.replace(context, module_config=dataclasses.replace(TINY, mlp_order="relu_bn"))),
      files(job, dataclasses.replace(context, module_config=dataclasses.replace(TINY, fold_step_norm=False))),
      files(job, dataclasses.replace(context, module_config=dataclasses.replace(TINY, mlp_hidden=33))),
      files(dataclasses.replace(job, schedule=CheapFirst()), context),
      files(dataclasses.replace(job, schedule=CheapFirst(free=True)), context),
      files(dataclasses.replace(job, schedule=CheapFirst(keep_at=None)), context),
      files(dataclasses.replace(job, schedule=Halving()), context),
      files(dataclasses.replace(job, schedule=Halving(reference="median")), context),
      files(job, trained_with(learning_rate=2e-3)), files(job, trained_with(min_steps=10)),
      files(dataclasses.replace(job, seed=8), context),
  ]
  for i in range(3):  # checkpoint path, kept path, kept key
    assert len({v[i] for v in variants} | {base[i]}) == len(variants) + 1


@pytest.mark.slow
def test_halving_saves_its_last_rung_and_resumes_it(tmp_path, monkeypatch):
  from hx.synth.schedules.halving import Halving

  # 4 candidates, 6 epochs: rungs to 1, 2 and 4 epochs in memory, then the last from 4 to 6, saved.
  config = dataclasses.replace(CONFIG, budget=Budget(candidates=4, schedule=Halving(first=1, eta=2)),
                               tune_configs={"sum_numbers": TuneConfig(epochs=6, batch_size=50)})
  kw = dict(KW, config=config)
  task = sum_task(n=300)
  straight = synthesize(task, None, **kw)
  # The last rung trains one epoch to measure its pace, saves, then the rest: stop before the rest.
  _count_tune(monkeypatch, stop_after=1)
  with pytest.raises(Interrupt):
    synthesize(task, None, checkpoint_dir=tmp_path, **kw)
  monkeypatch.undo()
  (saved,) = tmp_path.glob("*.npz")
  from hx.compile.checkpoint import describe_checkpoint

  assert describe_checkpoint(saved)["kind"] == "paused" and describe_checkpoint(saved)["epochs"] == 5
  from hx.canonical_json import jsonable

  assert json.loads(describe_checkpoint(saved)["key"])["schedule"] == jsonable(Halving(first=1, eta=2))
  count = _count_tune(monkeypatch)
  resumed = synthesize(task, None, checkpoint_dir=tmp_path, **kw)
  assert count[0] == 1  # from the file's epoch 5, not from the rung's epoch 4
  assert _essence(resumed) == _essence(straight)
  # A straight run of the same candidates is another run: its files are its own.
  monkeypatch.undo()
  straight_config = dataclasses.replace(config, budget=Budget(candidates=4))
  synthesize(task, None, checkpoint_dir=tmp_path, **dict(kw, config=straight_config))
  assert len(list(tmp_path.glob("*.npz"))) == 1 + 4


# ---------------------------------------------------------------------------------------------------
# Kept outcomes (`scores_dir`): a synthesis resumed where the checkpoint files are gone.

def _kept(tmp_path):
  return dict(checkpoint_dir=tmp_path / "ck", scores_dir=tmp_path / "kept")


def test_kept_outcomes_stand_in_for_lost_checkpoints_and_only_the_winner_trains_again(tmp_path, monkeypatch):
  import shutil

  task = sum_task(n=300)
  straight = synthesize(task, None, **KW)
  first = synthesize(task, None, **_kept(tmp_path), **KW)
  assert _essence(first) == _essence(straight)
  kept = sorted(os.listdir(tmp_path / "kept"))
  assert len(kept) == 3 and all(f.endswith(".json") for f in kept)
  assert all((tmp_path / "kept" / f).stat().st_size < 20_000 for f in kept)
  shutil.rmtree(tmp_path / "ck")  # the variables are gone (another machine, a fresh clone)
  count = _count_tune(monkeypatch)
  resumed = synthesize(task, None, **_kept(tmp_path), **KW)
  assert count[0] == 2  # the winner alone, trained again (one epoch to measure its pace, then the rest)
  assert _essence(resumed) == _essence(straight)
  assert resumed.library.version == straight.library.version
  assert resumed.best.outcome.variables is not None
  # The runners-up restored from their kept outcomes have scores and history, but no variables.
  assert [r.outcome.variables is None for r in resumed.entries[1:]] == [True, True]
  assert sorted(os.listdir(tmp_path / "kept")) == kept


def test_a_kept_outcome_is_used_only_without_its_checkpoint(tmp_path, monkeypatch):
  task = sum_task(n=300)
  synthesize(task, None, **_kept(tmp_path), **KW)
  # A kept file altered to a better score than any: ignored while the checkpoint files are there.
  import json

  for f in os.listdir(tmp_path / "kept"):
    path = tmp_path / "kept" / f
    obj = json.loads(path.read_text())
    obj["outcome"]["val_score"] = -1.0
    path.write_text(json.dumps(obj))
  count = _count_tune(monkeypatch)
  again = synthesize(task, None, **_kept(tmp_path), **KW)
  assert count[0] == 0 and all(r.val_score >= 0 for r in again.entries)


def test_a_kept_outcome_with_the_tasks_data_changed_is_not_used(tmp_path, monkeypatch):
  import shutil

  synthesize(sum_task(n=300, seed=0), None, **_kept(tmp_path), **KW)
  shutil.rmtree(tmp_path / "ck")
  count = _count_tune(monkeypatch)
  synthesize(sum_task(n=300, seed=1), None, **_kept(tmp_path), **KW)
  assert count[0] == 3 * 2 and len(os.listdir(tmp_path / "kept")) == 6


def test_a_damaged_kept_file_stops_the_synthesis_with_its_path(tmp_path):
  import shutil

  task = sum_task(n=300)
  synthesize(task, None, **_kept(tmp_path), **KW)
  shutil.rmtree(tmp_path / "ck")
  victim = sorted(os.listdir(tmp_path / "kept"))[0]
  (tmp_path / "kept" / victim).write_text('{"format": "hx-kept-candidate/1", "key": ')
  with pytest.raises(CheckpointError, match=f"{victim}: not a kept candidate"):
    synthesize(task, None, **_kept(tmp_path), **KW)
  (tmp_path / "kept" / victim).write_text('{"format": "other"}')
  with pytest.raises(CheckpointError, match=f"{victim}: not a kept candidate .format 'other'"):
    synthesize(task, None, **_kept(tmp_path), **KW)


def test_scores_dir_needs_a_checkpoint_dir(tmp_path):
  with pytest.raises(ValueError, match="needs a checkpoint_dir"):
    synthesize(sum_task(n=300), None, scores_dir=tmp_path, **KW)
