"""benchmarks/studies/schedule_replay.py's arithmetic on small exact cases: early stopping replayed on a
curve, and the floors' modelled cost and test score."""

from __future__ import annotations

import math

import pytest

from benchmarks.studies.schedule_replay import replay_task, stopped


def test_early_stopping_stops_after_patience_epochs_without_a_better_score():
  curve = [5.0, 4.0, 4.5, 4.2, 3.0, 3.5, 3.6, 3.7]
  assert stopped(curve, 2) == (4, 4.0, 2)  # epochs 3 and 4 bring nothing better than epoch 2's 4.0
  assert stopped(curve, 3) == (8, 3.0, 5)  # epoch 5 improves; 6-8 do not: stops after epoch 8
  assert stopped(curve, 4) == (8, 3.0, 5)  # the curve ends first
  assert stopped([2.0, 2.0, 2.0], 1) == (2, 2.0, 1)  # an equal score is not a better one


def _cand(curve, order, compile_s=2.0, train=10.0, evals=5.0, test=None):
  return dict(program=f"p{order}", val=min(curve), test=min(curve) if test is None else test, curve=curve,
              compile=compile_s, train=train, eval=evals, epochs=len(curve), order=order)


def test_the_floors_charge_every_compilation_and_the_winners_epochs():
  # Per epoch a candidate costs (10 + 5) / 4 = 3.75 s; each compiles in 2 s.
  a = _cand([3.0, 2.0, 2.5, 2.6], 1, test=2.2)  # the winner: best epoch 2
  b = _cand([4.0, 3.5, 3.4, 3.3], 2)
  task = dict(name="t", epochs=4, cands=[a, b], val_examples=300)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (1, 2))}
  assert rows["every candidate"]["seconds"] == pytest.approx(2 * (2 + 15))
  assert rows["floor: compile all, train the winner"]["seconds"] == pytest.approx(4 + 15)
  # Patience 1 stops after epoch 3 (epoch 2 was best): 3 epochs, the full run's best epoch, its test.
  one = rows["floor, winner stopped by patience 1"]
  assert (one["candidate_epochs"], one["val"], one["test"]) == (3, 2.0, 2.2)
  assert one["seconds"] == pytest.approx(4 + 3 * 3.75)
  # Patience 2 stops after epoch 4: the whole curve.
  assert rows["floor, winner stopped by patience 2"]["candidate_epochs"] == 4


def test_a_stop_before_the_full_runs_best_epoch_has_no_known_test_score():
  a = _cand([3.0, 3.1, 3.2, 1.0], 1, test=1.1)
  task = dict(name="t", epochs=4, cands=[a, _cand([4.0] * 4, 2)], val_examples=300)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (2,))}
  row = rows["floor, winner stopped by patience 2"]
  assert (row["candidate_epochs"], row["val"]) == (3, 3.0) and math.isnan(row["test"])


def _settings(sequence_dir, **batch_sizes):
  """A run's settings.json as benchmarks/reproduce.py writes it, with the batch sizes the replay reads."""
  import json

  sequence_dir.mkdir(parents=True, exist_ok=True)
  (sequence_dir / "settings.json").write_text(json.dumps({"settings": {"tune_configs": [
      [kind, {"batch_size": b, "epochs": 20}] for kind, b in batch_sizes.items()]}}))


def _keep(folder, program: str, fresh: list, curve: list[float], epoch_seconds: list[float], test: float,
          older: bool = False):
  """A kept candidate as `hx.synth.kept` writes it, under a key of `hx.synth.jobs.Checkpoints.key`'s form
  (`older`: of the text form an older hx wrote)."""
  from hx.canonical_json import canonical_json
  from hx.compile import ModuleConfig, TuneConfig
  from hx.compile.fitting import Outcome
  from hx.compile.tuning import EpochRecord
  from hx.synth.kept import kept_path, save_kept

  key = canonical_json({"task": "count_digit(0)", "data": "abc", "program": program, "fresh": dict(fresh),
                        "training": TuneConfig(epochs=3), "modules": ModuleConfig(), "library": ["nn_cs1_1"],
                        "schedule": None})
  if older:
    key = (f"task count_digit(0) | data abc | program {program} | fresh {fresh} | TuneConfig(epochs=3) | "
           "ModuleConfig() | library ['nn_cs1_1']")
  history = tuple(EpochRecord(t, 1.0, v, v * v, s, s / 10)
                  for t, (v, s) in enumerate(zip(curve, epoch_seconds), 1))
  outcome = Outcome(status="trained", reason=None, val_score=min(curve), test_score=test,
                    epochs_run=len(curve), compile_seconds=4.0, history=history)
  save_kept(kept_path(folder, key), key, outcome)


def test_a_task_under_way_is_replayed_from_its_kept_candidates(tmp_path):
  from benchmarks.studies.schedule_replay import load_under_way

  seed = tmp_path / "cs1" / "houdini_topdown" / "seed_0"
  folder = seed / "candidates" / "03_count_digit(0)" / "fraction_1"
  folder.mkdir(parents=True)
  _settings(tmp_path / "cs1", count_digit=150)
  # One epoch of the first was stopped for 100 s: the model charges the median epoch instead.
  _keep(folder, "compose(nn_1, map_l(lib.nn_cs1_1))", [("nn_1", "List -> Real")], [3.0, 2.0, 2.5],
        [10.0, 110.0, 10.0], 2.1)
  _keep(folder, "compose(nn_1, map_l(nn_2))", [("nn_1", "A"), ("nn_2", "B")], [1.5, 1.4, 1.6],
        [50.0, 50.0, 50.0], 1.45, older=True)
  [task] = load_under_way(str(tmp_path), 2)
  assert task["name"] == "cs1 3 count_digit(0) @ 1 (under way, 2 kept)"
  assert task["epochs"] == 3 and task["val_examples"] == 2100
  assert task["steps_per_epoch"] == 80  # 12,000 lists at 100%, in batches of 150
  a, b = task["cands"]  # program order
  assert a["program"] == "compose(nn_1, map_l(lib.nn_cs1_1)) [('nn_1', 'List -> Real')]"
  assert (a["val"], a["test"], a["curve"], a["order"]) == (2.0, 2.1, [3.0, 2.0, 2.5], 0)
  assert a["train"] == pytest.approx(30.0) and a["eval"] == pytest.approx(3.0) and a["compile"] == 4.0
  assert b["train"] == pytest.approx(150.0) and b["order"] == 1
  assert b["program"] == "compose(nn_1, map_l(nn_2)) [('nn_1', 'A'), ('nn_2', 'B')]"  # an older hx's key
  assert load_under_way(str(tmp_path), 3) == []  # fewer kept than asked
  # Once the task has its record, the record is what load_tasks replays: no second copy here.
  (seed / "records" / "03_count_digit(0)").mkdir(parents=True)
  (seed / "records" / "03_count_digit(0)" / "fraction_1.json").write_text("{}")
  assert load_under_way(str(tmp_path), 2) == []


def test_cheap_candidates_train_first_and_a_costly_one_goes_on_only_while_ahead_of_them():
  from benchmarks.studies.schedule_replay import cheap_first

  # Training per epoch: 1 s (cheap: at most a fifth of the costliest's 10 s) and 10 s (costly).
  cheap = _cand([3.0, 2.0, 1.0, 0.9], 3, train=4.0, evals=2.0)  # final 0.9
  behind = _cand([1.5, 0.8, 0.7, 0.6], 1, train=40.0, evals=20.0)  # at epoch 1 (1.5) behind 0.9: dropped
  ahead = _cand([0.85, 0.5, 0.4, 0.3], 2, train=40.0, evals=20.0)  # at epoch 1 ahead: trained, wins
  win, trained = cheap_first([cheap, behind, ahead], 1)
  assert (win, trained) == (2, [4, 1, 4])
  # With a probe of 2 epochs the first costly candidate (0.8 < 0.9) goes on too (final 0.6).
  assert cheap_first([cheap, behind, ahead], 2) == (2, [4, 4, 4])
  # The bar is the cheap candidates' best final score, as in hx.synth.cheap_first: a costly one ahead
  # of it goes on whatever another costly one ends at (they train side by side).
  late = _cand([0.35, 0.2, 0.1, 0.05], 4, train=40.0, evals=20.0)
  assert cheap_first([cheap, ahead, late], 1) == (2, [4, 4, 4])
  # A probe as long as the run is the run: every candidate trains to the end.
  assert cheap_first([cheap, behind, ahead], 4) == (2, [4, 4, 4])
  task = dict(name="t", epochs=4, cands=[cheap, behind, ahead], val_examples=300, steps_per_epoch=30)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (), (1,), (30, 31, 200))}
  row = rows["cheap first, short 1 against them"]
  assert row["candidate_epochs"] == 9
  assert row["seconds"] == pytest.approx(3 * 2 + 4 * 1.5 + 1 * 15 + 4 * 15)
  # 30 steps are one epoch of 30; 31 end inside the second, replayed to its end; 200 the whole run.
  assert rows["cheap first, probe 30 steps"]["candidate_epochs"] == 9
  assert rows["cheap first, probe 31 steps (replayed as 2 epochs)"]["candidate_epochs"] == 12
  assert rows["cheap first, probe 200 steps"]["seconds"] == rows["every candidate"]["seconds"]


def test_each_instantiation_of_a_task_is_a_task_of_its_own(tmp_path):
  import json

  from benchmarks.studies.schedule_replay import load_tasks

  ranked = [dict(program=f"p{i}", val=1.0 + i, test=1.0 + i, val_history=[2.0 + i, 1.0 + i], status="trained",
                 compile_seconds=1.0, train_seconds=2.0, eval_seconds=1.0, epochs_run=2, order=i)
            for i in range(2)]
  for seed in (0, 1):
    folder = tmp_path / "ss" / "houdini_topdown" / f"seed_{seed}" / "records" / "02_sum_digits"
    folder.mkdir(parents=True)
    (folder / "fraction_0.02.json").write_text(json.dumps(dict(
        ranked=ranked, sequence="ss", task_index=2, task="sum_digits", fraction=0.02,
        data={"val": 2100, "train": 240})))
  _settings(tmp_path / "ss", sum_digits=150)
  tasks = load_tasks(str(tmp_path), 2)
  assert [t["steps_per_epoch"] for t in tasks] == [2, 2]  # 240 lists in batches of 150
  names = [t["name"] for t in tasks]
  assert names == ["ss 2 sum_digits @ 0.02", "ss 2 sum_digits @ 0.02 (instantiation 1)"]


def test_keep_trains_only_the_cheap_candidates_with_the_best_probes():
  from benchmarks.studies.schedule_replay import cheap_first

  # Three cheap candidates (1 s of training an epoch against the costly one's 10 s).
  slow = _cand([3.0, 2.0, 1.0, 0.2], 1, train=4.0, evals=2.0)    # worst after 1 epoch, best at the end
  quick = _cand([1.0, 0.9, 0.8, 0.7], 2, train=4.0, evals=2.0)   # best after 1 epoch
  middle = _cand([2.0, 1.9, 1.8, 1.7], 3, train=4.0, evals=2.0)
  costly = _cand([0.75, 0.5, 0.4, 0.3], 4, train=40.0, evals=20.0)
  # keep 1: only `quick` goes on; its 0.7 is the bar, which the costly one's 0.75 does not beat.
  assert cheap_first([slow, quick, middle, costly], 1, keep=1) == (1, [1, 4, 1, 1])
  # keep 2 adds `middle` (the bar stays 0.7); every cheap one (None) finds `slow`, the winner.
  assert cheap_first([slow, quick, middle, costly], 1, keep=2) == (1, [1, 4, 4, 1])
  assert cheap_first([slow, quick, middle, costly], 1) == (0, [4, 4, 4, 1])
  task = dict(name="t", epochs=4, cands=[slow, quick, middle, costly], val_examples=300, steps_per_epoch=30)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (), (), (30,), (None, 1))}
  assert rows["cheap first, probe 30 steps"]["rank"] == 1
  assert rows["cheap first, probe 30 steps, keep 1"]["rank"] == 3
  assert rows["cheap first, probe 30 steps, keep 1"]["candidate_epochs"] == 7


def test_free_trains_on_the_cheap_candidates_whose_rest_costs_at_most_one_costly_probe():
  from benchmarks.studies.schedule_replay import cheap_first

  slow = _cand([3.0, 2.0, 1.0, 0.2], 1, train=4.0, evals=2.0)    # 1 s an epoch: its last 3 epochs cost 3 s
  quick = _cand([1.0, 0.9, 0.8, 0.7], 2, train=4.0, evals=2.0)
  middle = _cand([2.0, 1.9, 1.8, 1.7], 3, train=4.0, evals=2.0)
  costly = _cand([0.75, 0.5, 0.4, 0.3], 4, train=40.0, evals=20.0)  # 10 s an epoch
  cands = [slow, quick, middle, costly]
  # A probe of one epoch of the costly one costs 10 s: every cheap rest (3 s) is within it, and `slow`
  # (the keep's loss above) wins; a probe of 0.2 epochs (2 s) frees none, and the keep alone goes on.
  assert cheap_first(cands, 1, keep=1, free_probe=1.0) == (0, [4, 4, 4, 1])
  assert cheap_first(cands, 1, keep=1, free_probe=0.2) == cheap_first(cands, 1, keep=1) == (1, [1, 4, 1, 1])
  task = dict(name="t", epochs=4, cands=cands, val_examples=300, steps_per_epoch=30)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (), (), (30, 6), (1,), free=True)}
  assert rows["cheap first, probe 30 steps, keep 1, + free"]["rank"] == 1
  assert rows["cheap first, probe 6 steps, keep 1, + free (replayed as 1 epoch)"]["rank"] == 3


def test_with_halving_the_costly_ahead_go_on_in_rungs_as_hx_trains_them():
  from benchmarks.studies.schedule_replay import cheap_first

  # Nothing cheap (equal costs): the bar is infinite and the schedule is halving after the probe.
  curves = [[4.0] * 8, [3.0, 2.9, 2.8, 2.7, 2.6, 2.5, 2.4, 2.3], [3.1, 2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4],
            [3.2, 3.2, 3.2, 3.2, 0.5, 0.5, 0.5, 0.5]]
  cands = [_cand(c, i) for i, c in enumerate(curves)]
  # Probe 2 epochs, eta 2: the best 2 after it (2, then 1) to 4 epochs, the best 1 (2) to 8.
  assert cheap_first(cands, 2, eta=2) == (2, [2, 4, 8, 2])
  # Without halving every one of them trains to the end and the late learner (3) wins.
  assert cheap_first(cands, 2) == (3, [8, 8, 8, 8])
  # A cheap candidate's final score is the bar: 2.5 leaves only candidate 2 ahead after the probe, and
  # one is at least one rung's share: it trains to the end.
  cheap = _cand([5.0, 4.0, 3.5, 3.0, 2.8, 2.7, 2.6, 2.5], 4, train=0.4, evals=0.2)
  assert cheap_first(cands + [cheap], 2, eta=2) == (2, [2, 2, 8, 2, 8])
  task = dict(name="t", epochs=8, cands=cands, val_examples=300, steps_per_epoch=10)
  rows = {r["schedule"]: r for r in replay_task(task, [], [], 300, (), (), (20,), (3,), (None, 2))}
  assert rows["cheap first, probe 20 steps, keep 3, halving 2"]["candidate_epochs"] == 16
  assert rows["cheap first, probe 20 steps, keep 3"]["candidate_epochs"] == 32


def test_the_summary_compares_each_schedule_on_the_tasks_it_ran():
  from benchmarks.studies.schedule_replay import summary

  def row(task, schedule, test, seconds):
    return dict(task=task, schedule=schedule, rank=1 if test == 1.0 else 2, test=test, seconds=seconds,
                speedup=10.0 / seconds)

  rows = [row("a", "every candidate", 1.0, 10.0), row("a", "halving 2/4", 1.0, 5.0),
          row("b", "every candidate", 2.0, 10.0), row("b", "halving 2/4", 3.0, 5.0),
          row("b", "only on b", 2.2, 2.0)]
  got = {s["schedule"]: s for s in summary(rows)}
  # "only on b" is judged against b's winner (2.0), not a's.
  assert got["only on b"]["tasks"] == 1 and got["only on b"]["test_ratio_median"] == pytest.approx(1.1)
  assert got["halving 2/4"]["test_ratio_worst"] == pytest.approx(1.5)
  assert got["only on b"]["vs_halving_median"] == pytest.approx(2.5)


def test_a_grid_task_under_way_has_its_stand_ins_name_and_its_sizes(tmp_path):
  from benchmarks.studies.schedule_replay import load_under_way

  seed = tmp_path / "gs1" / "houdini_topdown" / "seed_0"
  folder = seed / "candidates" / "02_shortest_path_street_synthetic_gtsrb-synthetic_" / "fraction_0.02"
  folder.mkdir(parents=True)
  _settings(tmp_path / "gs1", shortest_path_street=150)
  for i in range(2):
    _keep(folder, f"compose(nn_{i + 1}, lib.nn_gs1_1)", [(f"nn_{i + 1}", "A")], [3.0, 2.0], [1.0, 1.0], 2.0)
  [task] = load_under_way(str(tmp_path), 2)
  assert task["name"] == "gs1 2 shortest_path_street @ 0.02 (under way, 2 kept)"
  # 2% of the paper's 1,070,000 training grids in batches of 150; 1,000 validation grids.
  assert task["steps_per_epoch"] == 143 and task["val_examples"] == 1000
