"""Halving and the short-run estimate, replayed on every search the committed reproduction trained.

    python benchmarks/studies/schedule_replay.py [benchmarks/reproduction] [--min_candidates 8]
        [--subsample 300] [--kept] [--json OUT]

The reproduction (benchmarks/reproduction/, the paper preset) trains every candidate of each HOUDINI task
to the end and records each one's validation score after every epoch (`val_history`) and its seconds
(compiling, training, evaluating). A survivor of halving resumes where it paused, and a short run
(`hx.synth.schedules.estimate`, method "short") trains the first epochs of the full run exactly, so these
curves say, without training again, what each schedule would have chosen on each task:

- "every candidate": the run itself;
- "halving F/ETA": `Halving(first=F, eta=ETA)` (`curve_replay.replay`);
- "short E, keep K": every candidate's first E epochs, scored by its best validation score among them;
  the best K train to the end (their full runs' scores) and the best of those wins;
- "cheap first, short E against them": `hx.synth.schedules.cheap_first.CheapFirst` with a probe of E epochs:
  the candidates whose training epoch costs at most a fifth of the costliest candidate's (typically a fresh
  head on frozen library functions, whose outputs are memoised) train to the end; every other candidate
  trains E epochs and goes on to the end only if its best score by then beats the best final score of the
  cheap ones (scored on all of the validation split: the comparison is with final scores). It bets that a
  costly candidate behind after E epochs stays behind;
- "cheap first, probe S steps": the same with the probe
  `hx.synth.schedules.cheap_first.CheapFirst(probe_steps=S)` trains, S optimiser steps (for S = 80 the whole
  run at 2% of the data, 10 epochs at 10%, one at 100%): what `Budget(schedule=CheapFirst(...))` would have
  chosen and trained. The records score whole epochs only, so a probe that ends inside an epoch is replayed to
  that epoch's end (the row says so); "..., keep K": `CheapFirst(probe_steps=S, keep=K)`, only the K cheap
  candidates with the best probes trained on; "..., halving E": `CheapFirst(probe_steps=S, keep=K, eta=E)`,
  the costly candidates ahead of the cheap ones going on in halving rungs of eta E, the probe the first; "...,
  keep K judged at 2 epochs": `CheapFirst(probe_steps=S, keep=K, keep_at=2)`, every cheap candidate trained 2
  epochs before the keep chooses;
- "floor": what any schedule that compiles every candidate costs at least: the compilations and the
  winner's full run, nothing else (a perfect estimate that costs nothing but the compilation);
- "floor, winner stopped by patience P": the same, the winner's training stopped after P epochs without
  a better validation score (`TuneConfig.patience`), its best epoch so far kept. Its test score is the
  recorded one where that best epoch is the full run's; elsewhere it was never measured (NaN, and the
  summary counts the tasks where it is known).

Cost is modelled from the records, not measured: a candidate costs its recorded compilation once, plus
its recorded training and evaluation seconds per epoch times the epochs it trains, except that a short
run scores a subsample of `--subsample` validation examples (as `hx.synth.schedules.estimate` does), whose
evaluation is charged in proportion. The records were written on 2 shared cores with a persistent
compilation cache of varying warmth, so the costs compare schedules on the same task, not tasks. What a
real run adds (a validation at each pause, re-dispatch) is left out. A transfer candidate's recorded
training seconds may include building its prefix table (`hx.compile.memo`: dispatched inside its first
training step before 960617d, over all 70,000 images before b40e5d2), so the replay can price it above a
fifth of the costliest and call it costly where a live run calls it cheap (LS task 8 at 10%,
benchmarks/RESULTS.md). Results go to
benchmarks/RESULTS.md by hand, labelled as replayed.

`--kept` also replays each task still under way from the candidates kept so far (`hx.synth.kept`: one
file per candidate trained to the end, under `candidates/TT_TASK/fraction_F/`), named "(under way, N
kept)": a replay of those candidates only, not of the task's search. Their order in the search is not
kept, so they are taken in program order; their seconds are the median epoch's times the epochs (a run
stopped for a benchmark window inflates one epoch, not the model), and the validation split's size is
the paper preset's for the task's group (`hx.data.tasks.TaskSizes`: 2,100 examples for lists and binary
tasks alike, 1,000 grids for the shortest-path tasks).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def load_tasks(root: str, min_candidates: int) -> list[dict]:
  """Every HOUDINI top-down record under `root` with at least `min_candidates` trained candidates, each
  as {name, epochs, val_examples, cands: [{program, val, test, curve, compile, train, eval, order}]} in
  the search's order."""
  tasks = []
  pattern = os.path.join(root, "*", "houdini_topdown", "seed_*", "records", "*", "fraction_*.json")
  for path in sorted(glob.glob(pattern)):
    with open(path) as f:
      record = json.load(f)
    cands = [dict(program=x["program"], val=x["val"], test=x["test"], curve=list(x["val_history"] or []),
                  compile=x["compile_seconds"], train=x["train_seconds"], eval=x["eval_seconds"],
                  epochs=x["epochs_run"], order=x["order"])
             for x in record["ranked"] if x["status"] == "trained" and x["val_history"]]
    if len(cands) < min_candidates:
      continue
    cands.sort(key=lambda c: c["order"])
    task = record["task"].split(" [")[0]
    name = f"{record['sequence']} {record['task_index']} {task} @ {record['fraction']:g}"
    seed = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(path))))
    if seed != "seed_0":  # another instantiation of the same task: a task of its own in the summary
      name += f" ({seed.replace('seed_', 'instantiation ')})"
    sequence_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(path)))))
    tasks.append(dict(name=name, epochs=max(c["epochs"] for c in cands), cands=cands,
                      val_examples=int(record["data"]["val"]),
                      steps_per_epoch=_steps_per_epoch(sequence_dir, task, int(record["data"]["train"]))))
  return tasks


def _program_and_fresh(key: str) -> tuple[str, str]:
  """A kept candidate's program and its fresh functions' types ("[('nn_1', 'TYPE'), ...]") from its key:
  today's, the canonical JSON of `hx.synth.jobs.Checkpoints.key` ({"program": P, "fresh": {name: type},
  ...}), or an older hx's text ("task ... | data ... | program P | fresh [...] | settings ...")."""
  if key.startswith("{"):
    what = json.loads(key)
    return what["program"], str(sorted(what["fresh"].items()))
  fields = dict(f.split(" ", 1) for f in key.split(" | ") if f.startswith(("program ", "fresh ")))
  return fields["program"], fields["fresh"]


def load_under_way(root: str, min_candidates: int) -> list[dict]:
  """Every HOUDINI top-down task under `root` still under way (kept candidates, no record yet) with at
  least `min_candidates` kept, in `load_tasks`'s form (see the module docstring for what differs)."""
  from hx.synth.kept import load_kept

  tasks = []
  pattern = os.path.join(root, "*", "houdini_topdown", "seed_*", "candidates", "*", "fraction_*")
  for folder in sorted(glob.glob(pattern)):
    seed_dir = os.path.dirname(os.path.dirname(os.path.dirname(folder)))
    task_dir, fraction = os.path.basename(os.path.dirname(folder)), os.path.basename(folder)
    if os.path.exists(os.path.join(seed_dir, "records", task_dir, fraction + ".json")):
      continue  # recorded: load_tasks has it
    cands = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
      with open(path) as f:
        key = json.load(f)["key"]
      o = load_kept(path, key)
      if o.status != "trained" or not o.history:
        continue
      program, fresh = _program_and_fresh(key)
      n = len(o.history)
      cands.append(dict(program=f"{program} {fresh}", val=o.val_score, test=o.test_score,
                        curve=[r.val_score for r in o.history], compile=o.compile_seconds,
                        train=n * statistics.median(r.train_seconds for r in o.history),
                        eval=n * statistics.median(r.val_seconds for r in o.history), epochs=n))
    if len(cands) < min_candidates:
      continue
    cands.sort(key=lambda c: c["program"])
    for i, c in enumerate(cands):
      c["order"] = i
    sequence = os.path.basename(os.path.dirname(os.path.dirname(seed_dir)))
    index, _, task = task_dir.partition("_")
    task = task.split("_synthetic")[0]  # "shortest_path_street_synthetic_gtsrb-synthetic_": a stand-in's
    name = f"{sequence} {int(index)} {task} @ {fraction.split('_')[1]} (under way, {len(cands)} kept)"
    train, val = _paper_sizes(task)
    steps = _steps_per_epoch(os.path.dirname(os.path.dirname(seed_dir)), task,
                             round(train * float(fraction.split("_")[1])))
    tasks.append(dict(name=name, epochs=max(c["epochs"] for c in cands), cands=cands,
                      val_examples=val, steps_per_epoch=steps))
  return tasks


def _paper_sizes(task: str) -> tuple[int, int | None]:
  """The paper preset's training and validation examples of `task` ("count_digit(0)",
  "shortest_path_street"): `hx.presets.training_settings`'s training examples, and the validation split
  of the task's group (`hx.data.tasks.TaskSizes`); None for a group whose validation split is a pool's
  size, not a setting (regress_*, classify_digit: a short run's evaluation is then charged in full)."""
  from hx.presets import kind_group, task_sizes, training_settings

  kind = task.split("(")[0]
  sizes = task_sizes("paper")
  val = {"recognize": sizes.binary[1], "lists": sizes.lists[1], "random_graphs": sizes.graphs[1],
         "graph": sum(n for _, n in sizes.grids_val)}.get(kind_group(kind))
  return training_settings(kind, "paper").train_examples, val


def _steps_per_epoch(sequence_dir: str, task: str, train: int) -> int:
  """Optimiser steps in an epoch of `train` examples of `task` ("count_digit(0)"), at the batch size of
  the run's settings (SEQUENCE/settings.json, `TuneConfig` per kind of task)."""
  with open(os.path.join(sequence_dir, "settings.json")) as f:
    configs = dict(json.load(f)["settings"]["tune_configs"])
  kind = task.split("(")[0]
  if kind not in configs:
    raise SystemExit(f"{sequence_dir}/settings.json: no training settings for {kind} ({sorted(configs)})")
  from hx.compile.tuning import TuneConfig

  return TuneConfig(batch_size=configs[kind]["batch_size"]).steps_per_epoch(train)


def _cost(c: dict, epochs: float, eval_share: float = 1.0) -> float:
  per = max(c["epochs"], 1)
  return c["compile"] + epochs * (c["train"] + eval_share * c["eval"]) / per


def stopped(curve: list[float], patience: int) -> tuple[int, float, int]:
  """Early stopping replayed on a validation curve (`curve[t - 1]` after epoch t), by Tune's rule
  (`hx.compile.tuning`: only a strictly lower score is better; stop once `patience` epochs followed the
  best): the epochs trained, the best score by then, and its epoch."""
  best, best_epoch = math.inf, 0
  for epoch, v in enumerate(curve, 1):
    if v < best:
      best, best_epoch = v, epoch
    elif epoch - best_epoch >= patience:
      return epoch, best, best_epoch
  return len(curve), best, best_epoch


def cheap_first(cands: list[dict], short: int, cheap_share: float = 0.2, keep: int | None = None,
                eta: int | None = None, keep_at: int | None = None, free_probe: float | None = None
                ) -> tuple[int, list[int]]:
  """`hx.synth.schedules.cheap_first.CheapFirst` replayed with a probe of `short` epochs (module docstring),
  its `keep`, its `eta` and its `keep_at` (whole epochs), by its own rule (`cheap_mask`, `best_cheap`,
  `free_cheap`, `going_on`, `costly_rungs`, `survivors`): the winner's index and the epochs each candidate
  trains. A candidate's step cost is its training seconds per epoch (the steps of an epoch are the same
  for every candidate of a task). `free_probe`: None, or `CheapFirst(free=True)` with a probe of that
  many epochs (the probe's steps over an epoch's, unrounded) as the measure of one costly probe."""
  from hx.synth.schedules.cheap_first import (
    best_cheap,
    cheap_mask,
    costly_rungs,
    free_cheap,
    going_on,
    look_epochs,
    survivors,
  )

  costs = [c["train"] / max(c["epochs"], 1) for c in cands]
  cheap = cheap_mask(costs, cheap_share)
  probe = [min(c["curve"][:short]) for c in cands]
  finished = [c["epochs"] <= short for c in cands]  # its probe was all of its run (or it stopped early)
  reach = [min(short, c["epochs"]) for c in cands]  # the epochs each has trained so far
  judged = list(probe)
  look = look_epochs(keep, keep_at, short, max(c["epochs"] for c in cands))
  if look is not None:
    # The cheap candidates' later look (CheapFirst.keep_at): all of them on to it first.
    for i, c in enumerate(cands):
      if cheap[i] and not finished[i]:
        reach[i] = min(look, c["epochs"])
        judged[i] = min(c["curve"][:reach[i]])
        finished[i] = c["epochs"] <= look
  kept = set(best_cheap(judged, cheap, finished, keep))
  if free_probe is not None:
    kept |= set(free_cheap(costs, cheap, finished, judged, [c["epochs"] - r for c, r in zip(cands, reach)],
                           free_probe))
  # As hx.synth.schedules.cheap_first: every candidate trained to the end has its final score (going_on reads
  # the cheap ones'); the costly ones' scores are still their probes'.
  on, bar = going_on(judged, cheap, finished, [c["val"] if i in kept or finished[i] else math.inf
                                               for i, c in enumerate(cands)])
  trained = [c["epochs"] if i in kept or finished[i] else reach[i] for i, c in enumerate(cands)]
  if eta is None:
    for i in on:
      trained[i] = cands[i]["epochs"]
  else:
    epochs = max(c["epochs"] for c in cands)
    pool = on
    for to in costly_rungs(short, eta, epochs) + [epochs]:
      pool = survivors([min(c["curve"][:n]) for c, n in zip(cands, trained)], pool, bar, eta)
      for i in pool:
        trained[i] = min(to, cands[i]["epochs"])
  done = [i for i, c in enumerate(cands) if trained[i] == c["epochs"]]
  return min(done, key=lambda i: (cands[i]["val"], i)), trained


def probe_rows(task: dict, probe_steps: tuple[int, ...], keeps: tuple[int | None, ...] = (None,),
               etas: tuple[int | None, ...] = (None,), keep_at: int | None = None, free: bool = False
               ) -> list[tuple[str, int, int | None, int | None, int | None, float | None]]:
  """Per probe of S optimiser steps, keep K and eta E (`CheapFirst(probe_steps=S, keep=K, eta=E,
  keep_at=keep_at, free=free)`), its row name, its epochs on `task`
  (`hx.synth.schedules.cheap_first.probe_epochs`, from the task's steps per epoch), K, E, keep_at, and with
  `free` the probe's unrounded epochs (else None). The records score whole epochs only: a probe that ends
  inside an epoch is replayed to the end of that epoch, and its row says so."""
  from hx.synth.schedules.cheap_first import probe_epochs

  rows = []
  for s in probe_steps:
    e = probe_epochs(s, task["steps_per_epoch"], task["epochs"])
    whole = math.ceil(e)
    rounded = "" if whole == e else f" (replayed as {whole} epoch{'' if whole == 1 else 's'})"
    for k in keeps:
      at = "" if keep_at is None or k is None else f" judged at {keep_at} epochs"
      for eta in etas:
        rows.append((f"cheap first, probe {s} steps{'' if k is None else f', keep {k}'}{at}"
                     f"{'' if eta is None else f', halving {eta}'}{', + free' if free else ''}{rounded}",
                     whole, k, eta, keep_at, e if free else None))
  return rows


def replay_task(task: dict, halvings: list[tuple[float, int]], shorts: list[tuple[int, int]],
                subsample: int, patiences: tuple[int, ...] = (),
                cheap_shorts: tuple[int, ...] = (), probe_steps: tuple[int, ...] = (),
                keeps: tuple[int | None, ...] = (None,), etas: tuple[int | None, ...] = (None,),
                keep_at: int | None = None, free: bool = False) -> list[dict]:
  """One row per schedule on `task`: the program chosen, its rank in the full run, its validation and
  test scores, candidate-epochs and modelled seconds."""
  from benchmarks.studies.curve_replay import replay
  from hx.synth.schedules.estimate import spearman
  from hx.synth.schedules.halving import Halving

  cands, epochs = task["cands"], task["epochs"]
  full_order = sorted(range(len(cands)), key=lambda i: (cands[i]["val"], i))
  full_rank = {i: k for k, i in enumerate(full_order, 1)}
  full_seconds = sum(_cost(c, c["epochs"]) for c in cands)
  share = 1.0 if task["val_examples"] is None else min(1.0, subsample / task["val_examples"])

  def row(schedule: str, win: int, trained: int, seconds: float, rho: float = math.nan,
          val: float | None = None, test: float | None = None) -> dict:
    return dict(task=task["name"], schedule=schedule, program=cands[win]["program"], rank=full_rank[win],
                val=cands[win]["val"] if val is None else val,
                test=cands[win]["test"] if test is None else test, candidate_epochs=trained, seconds=seconds,
                speedup=full_seconds / seconds, spearman=rho)

  rows = [row("every candidate", full_order[0], sum(c["epochs"] for c in cands), full_seconds)]
  # The floor of any schedule that compiles every candidate: that, and the winner's full run alone.
  best = full_order[0]
  rows.append(row("floor: compile all, train the winner", best, cands[best]["epochs"],
                  sum(c["compile"] for c in cands) + _cost(cands[best], cands[best]["epochs"])
                  - cands[best]["compile"]))
  compiles = sum(c["compile"] for c in cands)
  winner = cands[best]
  full_best_epoch = min(range(len(winner["curve"])), key=lambda t: (winner["curve"][t], t)) + 1
  for patience in patiences:
    epochs_run, val, best_epoch = stopped(winner["curve"], patience)
    rows.append(row(f"floor, winner stopped by patience {patience}", best, epochs_run,
                    compiles + _cost(winner, epochs_run) - winner["compile"], val=val,
                    test=winner["test"] if best_epoch == full_best_epoch else math.nan))
  curves = [c["curve"] for c in cands]
  for first, eta in halvings:
    trained = replay(curves, Halving(first=first, eta=eta), epochs)
    scores = [min(h[:n]) if n else math.inf for h, n in zip(curves, trained)]
    win = min(range(len(cands)), key=lambda i: (scores[i], i))
    rows.append(row(f"halving {first:g}/{eta}", win, sum(trained),
                    sum(_cost(c, n) for c, n in zip(cands, trained))))
  for e, keep in shorts:
    estimate = [min(h[:e]) for h in curves]
    kept = sorted(range(len(cands)), key=lambda i: (estimate[i], i))[:keep]
    win = min(kept, key=lambda i: (cands[i]["val"], i))
    # The short runs on the subsample, then the kept ones from scratch (compiled already).
    seconds = sum(_cost(c, e, share) for c in cands)
    seconds += sum(_cost(cands[i], cands[i]["epochs"]) - cands[i]["compile"] for i in kept)
    rows.append(row(f"short {e}, keep {keep}", win, e * len(cands) + sum(cands[i]["epochs"] for i in kept),
                    seconds, spearman(estimate, [c["val"] for c in cands])))
  cheap_rows = [(f"cheap first, short {e} against them", e, None, None, None, None) for e in cheap_shorts]
  for name, e, k, eta, at, fr in cheap_rows + (probe_rows(task, probe_steps, keeps, etas, keep_at, free)
                                              if probe_steps else []):
    win, trained = cheap_first(cands, e, keep=k, eta=eta, keep_at=at, free_probe=fr)
    rows.append(row(name, win, sum(trained), sum(_cost(c, n) for c, n in zip(cands, trained))))
  return rows


def summary(rows: list[dict]) -> list[dict]:
  """Per schedule over the tasks: how often it chose the full run's winner, the median and worst test
  score relative to the winner's, and the median modelled speed-up over training every candidate and
  over halving 2/4."""
  by_task: dict[str, dict[str, dict]] = {}
  for r in rows:
    by_task.setdefault(r["task"], {})[r["schedule"]] = r
  out = []
  for schedule in dict.fromkeys(r["schedule"] for r in rows):
    mine = [t[schedule] for t in by_task.values() if schedule in t]
    rel = [t[schedule]["test"] / t["every candidate"]["test"] for t in by_task.values()
           if schedule in t and math.isfinite(t[schedule]["test"])]
    halving = [t[schedule]["seconds"] and t["halving 2/4"]["seconds"] / t[schedule]["seconds"]
               for t in by_task.values() if "halving 2/4" in t and schedule in t]
    out.append(dict(schedule=schedule, tasks=len(mine), same_winner=sum(r["rank"] == 1 for r in mine),
                    test_known=len(rel), test_ratio_median=statistics.median(rel) if rel else math.nan,
                    test_ratio_worst=max(rel) if rel else math.nan,
                    speedup_median=statistics.median(r["speedup"] for r in mine),
                    vs_halving_median=statistics.median(halving) if halving else math.nan))
  return out


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "reproduction"))
  parser.add_argument("--min_candidates", type=int, default=8)
  parser.add_argument("--subsample", type=int, default=300, help="validation examples a short run scores")
  parser.add_argument("--kept", action="store_true",
                      help="also replay tasks under way from their kept candidates (see above)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  tasks = load_tasks(args.root, args.min_candidates)
  if args.kept:
    tasks += load_under_way(args.root, args.min_candidates)
  if not tasks:
    under_way = " (nor, with --kept, a task under way with as many kept: .../candidates/*/fraction_*/)"
    raise SystemExit(f"{args.root}: no HOUDINI top-down record with {args.min_candidates} or more trained "
                     "candidates (ROOT/<sequence>/houdini_topdown/seed_*/records/*/fraction_*.json)"
                     + (under_way if args.kept else ""))
  halvings = [(1, 3), (2, 4), (4, 4)]
  shorts = [(e, k) for e in (1, 2, 4, 8) for k in (1, 2, 4)]
  rows = [r for t in tasks for r in replay_task(t, halvings, shorts, args.subsample, (2, 4), (1, 2, 4),
                                                (40, 80, 160), (None, 1, 2, 3))]
  # The default keep with halving's rungs among the costly candidates (`CheapFirst(eta=...)`).
  rows += [r for t in tasks for r in replay_task(t, [], [], args.subsample, (), (), (40, 80), (3,), (2, 4))
           if r["schedule"].startswith("cheap first")]
  # The default keep judged after 2 epochs, where halving's first rung judges (`CheapFirst(keep_at=2)`).
  rows += [r for t in tasks for r in replay_task(t, [], [], args.subsample, (), (), (40, 80), (3,), (None,),
                                                 keep_at=2)
           if r["schedule"].startswith("cheap first")]
  # The same with every cheap candidate whose rest costs at most one costly probe trained on too
  # (`CheapFirst(keep_at=2, free=True)`).
  rows += [r for t in tasks for r in replay_task(t, [], [], args.subsample, (), (), (40, 80), (3,), (None,),
                                                 keep_at=2, free=True)
           if r["schedule"].startswith("cheap first")]
  print(f"# {len(tasks)} tasks (replayed from {os.path.relpath(args.root)}; costs modelled from the "
        "records)\n")
  print("| task | schedule | chosen (rank in full run) | test / full winner's | cand-epochs | model s | "
        "full / this | Spearman |")
  print("|---|---|---|---|---|---|---|---|")
  full = {r["task"]: r for r in rows if r["schedule"] == "every candidate"}
  for r in rows:
    rho = "-" if math.isnan(r["spearman"]) else f"{r['spearman']:.2f}"
    print(f"| {r['task']} | {r['schedule']} | {r['rank']} | {r['test'] / full[r['task']]['test']:.3f} | "
          f"{r['candidate_epochs']} | {r['seconds']:.0f} | {r['speedup']:.1f} | {rho} |")
  sums = summary(rows)
  print("\n| schedule | tasks | full run's winner | test / winner's, median (worst; tasks known) | "
        "full / this, median | halving 2/4 / this, median |")
  print("|---|---|---|---|---|---|")
  for s in sums:
    print(f"| {s['schedule']} | {s['tasks']} | {s['same_winner']} | {s['test_ratio_median']:.3f} "
          f"({s['test_ratio_worst']:.3f}; {s['test_known']}) | {s['speedup_median']:.1f} | "
          f"{s['vs_halving_median']:.2f} |")
  out = {"rows": rows, "summary": sums}
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


if __name__ == "__main__":
  main()
