"""A prior over program shapes learned from a run's earlier tasks, replayed on the committed searches.

    python benchmarks/studies/prior_replay.py [benchmarks/reproduction] [--min_candidates 8] [--json F]

Among the estimates of a candidate's final score worth measuring is a PICLE-style prior "over module
combinations learned from the earlier tasks' records": one that costs no training and no compilation,
which is what a schedule needs to go below the floor of compiling every candidate
(`schedule_replay.py`). This study measures the simplest such prior on every HOUDINI search the
reproduction trained, using only what the records of the same run's earlier tasks say:

- a candidate's *shape* is its program with each fresh function written as its type and each library
  function as `lib` (`compose(nn[List<Tensor<real>[50]> -> Tensor<real>[1]], map_l(compose(lib, ...)))`):
  two count_digit tasks of one sequence enumerate the same shapes;
- each earlier task's trained candidates get their normalised rank in that task's search, 0 for its
  winner and 1 for its last; a shape's prior is the mean over the earlier tasks where it was trained;
- a shape never seen falls back to the mean of the earlier candidates with as many library functions
  (0, 1, 2, ...), then to 0.5; ties keep the search's order.

Per task it prints where the full run's winner lands in the prior's order, the rank correlation of the
prior with the final validation score, and the schedule "train only the prior's first K to the end" for
K = 1, 2, 3: the program chosen, its rank in the full run, its test score over the winner's, and the
modelled seconds (the K candidates' recorded compile, training and evaluation; the others cost nothing)
against training every candidate. The first task of each run has no earlier task and is left out. Costs
are modelled from the records as in `schedule_replay.py`; results go to benchmarks/notes by hand,
labelled as replayed.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_FRESH = re.compile(r"\bnn_\d+\b")
_LIB = re.compile(r"\blib\.[A-Za-z0-9_]+")


def shape(program: str, fresh_types: dict[str, str]) -> str:
  """`program` with each fresh function (`nn_3`) written as its type and each library function as lib."""
  text = _LIB.sub("lib", program)
  return _FRESH.sub(lambda m: f"nn[{fresh_types.get(m.group(0), '?')}]", text)


def library_calls(program: str) -> int:
  """How many library functions `program` calls."""
  return len(_LIB.findall(program))


def load_runs(root: str, min_candidates: int) -> dict[str, list[dict]]:
  """run directory -> its HOUDINI top-down tasks in task order, each {name, cands: [{program, shape,
  libs, val, test, seconds, order}]} (trained candidates only); tasks with fewer than `min_candidates`
  trained candidates still teach the prior but are not scored. Runs under `root`/variants are left out
  (run the study on such a folder itself to replay it)."""
  runs: dict[str, list[dict]] = {}
  pattern = os.path.join(root, "**", "houdini_topdown", "seed_*", "records", "*", "fraction_*.json")
  for path in sorted(glob.glob(pattern, recursive=True)):
    if os.sep + "variants" + os.sep in os.sep + os.path.relpath(path, root):
      continue  # variants of the paper preset (reproduction/variants/) are not its searches
    with open(path) as f:
      record = json.load(f)
    cands = [dict(program=x["program"], shape=shape(x["program"], x.get("fresh_types") or {}),
                  libs=library_calls(x["program"]), val=x["val"], test=x["test"], order=x["order"],
                  seconds=x["compile_seconds"] + x["train_seconds"] + x["eval_seconds"])
             for x in record["ranked"] if x["status"] == "trained" and math.isfinite(x["val"])]
    run = os.path.dirname(os.path.dirname(os.path.dirname(path)))  # .../<sequence>/houdini_topdown/seed_N
    key = f"{run}@{record['fraction']:g}"
    task = record["task"].split(" [")[0]
    where = os.path.relpath(run, root).split(os.sep + "houdini_topdown")[0]  # e.g. fraction_0.1/cs1
    runs.setdefault(key, []).append(dict(
        index=record["task_index"], scored=len(cands) >= min_candidates, cands=cands,
        name=f"{where} {record['task_index']} {task} @ {record['fraction']:g}"))
  for tasks in runs.values():
    tasks.sort(key=lambda t: t["index"])
  return runs


def normalised_ranks(cands: list[dict]) -> list[float]:
  """Each candidate's rank in its search by validation score, scaled to [0, 1] (0: the winner)."""
  order = sorted(range(len(cands)), key=lambda i: (cands[i]["val"], cands[i]["order"]))
  out = [0.0] * len(cands)
  for k, i in enumerate(order):
    out[i] = k / max(1, len(cands) - 1)
  return out


def prior(earlier: list[dict], cands: list[dict]) -> list[float]:
  """The prior score of each of `cands` (lower: more promising) from the tasks `earlier`."""
  by_shape: dict[str, list[float]] = {}
  by_libs: dict[int, list[float]] = {}
  for task in earlier:
    for c, r in zip(task["cands"], normalised_ranks(task["cands"])):
      by_shape.setdefault(c["shape"], []).append(r)
      by_libs.setdefault(c["libs"], []).append(r)
  out = []
  for c in cands:
    seen = by_shape.get(c["shape"]) or by_libs.get(c["libs"])
    out.append(statistics.fmean(seen) if seen else 0.5)
  return out


def replay_task(earlier: list[dict], task: dict, keeps: tuple[int, ...] = (1, 2, 3)) -> dict:
  """The prior's ranking of `task`'s candidates against the full run's, and the keep-K schedules."""
  from hx.synth.schedules.estimate import spearman

  cands = task["cands"]
  scores = prior(earlier, cands)
  by_prior = sorted(range(len(cands)), key=lambda i: (scores[i], cands[i]["order"]))
  full = sorted(range(len(cands)), key=lambda i: (cands[i]["val"], cands[i]["order"]))
  full_rank = {i: k for k, i in enumerate(full, 1)}
  total = sum(c["seconds"] for c in cands)
  winner = cands[full[0]]
  row = dict(task=task["name"], candidates=len(cands), winner_at=by_prior.index(full[0]) + 1,
             spearman=spearman(scores, [c["val"] for c in cands]), keep={})
  for k in keeps:
    kept = by_prior[:k]
    chosen = min(kept, key=lambda i: (cands[i]["val"], cands[i]["order"]))
    seconds = sum(cands[i]["seconds"] for i in kept)
    row["keep"][k] = dict(program=cands[chosen]["program"], rank=full_rank[chosen],
                          test_ratio=cands[chosen]["test"] / winner["test"] if winner["test"] else math.nan,
                          speedup=total / seconds if seconds else math.inf)
  return row


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "reproduction"))
  parser.add_argument("--min_candidates", type=int, default=8)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  rows = []
  for tasks in load_runs(args.root, args.min_candidates).values():
    for i, task in enumerate(tasks):
      if i and task["scored"]:
        rows.append(replay_task(tasks[:i], task))
  if not rows:
    raise SystemExit(f"{args.root}: no HOUDINI top-down search after a run's first task with "
                     f"{args.min_candidates} or more trained candidates")
  print(f"# {len(rows)} tasks (replayed from {os.path.relpath(args.root)}; costs modelled from the "
        "records)\n")
  print("| task | candidates | full run's winner in the prior's order | Spearman | keep 1: rank, test / "
        "winner's, full / this | keep 2 | keep 3 |")
  print("|---|---|---|---|---|---|---|")
  for r in rows:
    cells = [f"{v['rank']}, {v['test_ratio']:.3f}, {v['speedup']:.1f}x" for v in r["keep"].values()]
    rho = "-" if math.isnan(r["spearman"]) else f"{r['spearman']:.2f}"
    print(f"| {r['task']} | {r['candidates']} | {r['winner_at']} | {rho} | " + " | ".join(cells) + " |")
  print("\n| keep | tasks | the full run's winner | test / winner's, median (worst) | full / this, median |")
  print("|---|---|---|---|---|")
  for k in rows[0]["keep"]:
    got = [r["keep"][k] for r in rows]
    ratios = [g["test_ratio"] for g in got]
    print(f"| {k} | {len(got)} | {sum(g['rank'] == 1 for g in got)} | {statistics.median(ratios):.3f} "
          f"({max(ratios):.3f}) | {statistics.median(g['speedup'] for g in got):.1f}x |")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)
  return rows


if __name__ == "__main__":
  main()
