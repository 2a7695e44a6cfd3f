"""A data-fit prior replayed on the committed searches: skip fresh replacements of a frozen image module
that was trained on the task's own data set.

    python benchmarks/studies/fit_prior_replay.py [benchmarks/reproduction] [--json F]

Among the estimates worth measuring is a PICLE-style prior on "how well the task's inputs fit the
distribution a frozen module was trained on". Whatever statistic measures that fit, it can say no more
than "the inputs are the very data set the module was trained on": this study replays that best case.
Only functions that read the task's inputs can be compared with them, so it concerns image modules (a
type `Tensor<real>[c][h][w] -> ...`): a library function of such a type *fits* a task when the earlier
task that trained it read the same data sets (the records' `data.datasets` and `data.synthetic`). The rule
replayed: a candidate with a fresh function of a fitting library function's type (a fresh replacement of
a module that fits) is not trained; the best of the others on validation is chosen.

The library is rebuilt from the records of each run (same sequence, instantiation and fraction) in task
order: each task's winner adds its fresh functions under the names its `named` program gives them, with
that task's data sets. Per search where some library function fits, it prints the candidates, how many
the rule skips and their share of the recorded seconds, whether the full search's winner is a fresh
replacement, and the chosen program's test score over the winner's; then a summary per fraction. The
first task of a run has no library and is left out. Replayed from the records, nothing trained; results
go to benchmarks/notes by hand, labelled as replayed.
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

_IMAGE = re.compile(r"^Tensor<real>\[\d+\]\[\d+\]\[\d+\] ->")
_FUNCTION = re.compile(r"\b(?:lib\.)?nn_\w+\b")


def reads_images(type_text: str) -> bool:
  """Whether a function type (as records write it) takes one image, Tensor<real>[c][h][w]."""
  return bool(_IMAGE.match(type_text))


def added_functions(winner: dict) -> dict[str, str]:
  """The library functions a task's winner adds: name (as its `named` program writes it, without "lib.")
  -> type, for each fresh function of its `program` (`fresh_types`), matched by position."""
  program = _FUNCTION.findall(winner["program"])
  named = _FUNCTION.findall(winner.get("named") or "")
  if len(program) != len(named):
    raise ValueError(f"{winner['program']!r} and {winner.get('named')!r} name different functions")
  fresh = winner.get("fresh_types") or {}
  return {n.removeprefix("lib."): fresh[p] for p, n in zip(program, named) if p in fresh}


def replaces(candidate: dict, fitting: set[str]) -> bool:
  """Whether `candidate` ({"fresh_types": {name: type}}) has a fresh function of a fitting type."""
  return any(t in fitting for t in (candidate.get("fresh_types") or {}).values())


def replay_search(cands: list[dict], fitting: set[str]) -> dict:
  """The rule on one search's trained candidates ({program, fresh_types, val, test, seconds}).

  Returns {"candidates", "skipped", "skipped_share" (of the recorded seconds), "winner" (the full
  search's: least validation score), "winner_replaces", "chosen" (the least validation score among those
  not skipped; None when all are skipped), "test_ratio" (chosen's test over the winner's; None then)}.
  """
  winner = min(cands, key=lambda c: c["val"])
  kept = [c for c in cands if not replaces(c, fitting)]
  chosen = min(kept, key=lambda c: c["val"]) if kept else None
  total = sum(c["seconds"] for c in cands)
  skipped = sum(c["seconds"] for c in cands if replaces(c, fitting))
  return dict(candidates=len(cands), skipped=len(cands) - len(kept),
              skipped_share=skipped / total if total else 0.0, winner=winner["program"],
              winner_replaces=replaces(winner, fitting), chosen=None if chosen is None else chosen["program"],
              test_ratio=None if chosen is None else chosen["test"] / winner["test"])


def _source(record: dict) -> tuple:
  data = record.get("data") or {}
  return tuple(data.get("datasets") or ()), bool(data.get("synthetic"))


def replay_run(records: list[dict], name: str = "") -> list[dict]:
  """The rule on every search of one run (its records in task order) where a library function fits."""
  library: dict[str, tuple[str, tuple]] = {}  # name -> (type, the data sets it was trained on)
  rows = []
  for record in records:
    source = _source(record)
    cands = [dict(program=x["program"], fresh_types=x.get("fresh_types") or {}, val=x["val"], test=x["test"],
                  seconds=x["compile_seconds"] + x["train_seconds"] + x["eval_seconds"])
             for x in record["ranked"] if x["status"] == "trained" and math.isfinite(x["val"])]
    fitting = {t for t, s in library.values() if reads_images(t) and s == source}
    if len(cands) >= 2 and fitting:
      task = record["task"].split(" [")[0]
      rows.append(dict(task=f"{name} {record['task_index']} {task} @ {record['fraction']:g}",
                       fraction=record["fraction"], **replay_search(cands, fitting)))
    winners = [x for x in record["ranked"] if x.get("rank") == 1]
    if winners:
      for n, t in added_functions(winners[0]).items():
        library.setdefault(n, (t, source))
  return rows


def load_runs(root: str) -> dict[str, list[dict]]:
  """run@fraction -> its HOUDINI top-down records in task order (runs under `root`/variants left out)."""
  runs: dict[str, list[dict]] = {}
  pattern = os.path.join(root, "**", "houdini_topdown", "seed_*", "records", "*", "fraction_*.json")
  for path in sorted(glob.glob(pattern, recursive=True)):
    if os.sep + "variants" + os.sep in os.sep + os.path.relpath(path, root):
      continue
    with open(path) as f:
      record = json.load(f)
    run = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    runs.setdefault(f"{os.path.relpath(run, root)}@{record['fraction']:g}", []).append(record)
  for records in runs.values():
    records.sort(key=lambda r: r["task_index"])
  return runs


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))), "reproduction"))
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  if not os.path.isdir(args.root):
    raise SystemExit(f"{args.root}: no such folder")
  rows = []
  for key, records in load_runs(args.root).items():
    rows += replay_run(records, key.split("@")[0].replace(os.sep + "houdini_topdown", ""))
  if not rows:
    raise SystemExit(f"{args.root}: no HOUDINI top-down search with a library image module of its data sets")
  print(f"# {len(rows)} searches (replayed from {os.path.relpath(args.root)}; nothing trained)\n")
  print("| search | candidates | skipped (share of seconds) | winner a fresh replacement | chosen's test / "
        "winner's |")
  print("|---|---|---|---|---|")
  for r in rows:
    ratio = "-" if r["test_ratio"] is None else f"{r['test_ratio']:.3f}"
    print(f"| {r['task']} | {r['candidates']} | {r['skipped']} ({r['skipped_share']:.0%}) | "
          f"{'yes' if r['winner_replaces'] else 'no'} | {ratio} |")
  print("\n| fraction | searches | winner a fresh replacement | chosen's test over 1.05x the winner's | "
        "chosen's test / winner's, median (worst) | share of seconds skipped, median |")
  print("|---|---|---|---|---|---|")
  for fraction in sorted({r["fraction"] for r in rows}):
    got = [r for r in rows if r["fraction"] == fraction]
    ratios = [r["test_ratio"] for r in got if r["test_ratio"] is not None]
    print(f"| {fraction:g} | {len(got)} | {sum(r['winner_replaces'] for r in got)} | "
          f"{sum(x > 1.05 for x in ratios)} | {statistics.median(ratios):.3f} ({max(ratios):.3f}) | "
          f"{statistics.median(r['skipped_share'] for r in got):.0%} |")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)
  return rows


if __name__ == "__main__":
  main()
