"""What successive-halving schedules would have chosen, replayed on the learning curves of a full run.

    python benchmarks/synthesis.py --task cs1:3 --preset quick --candidates 20 --epochs 20 \
        --schedules full --json full.json
    python benchmarks/studies/halving_replay.py full.json [--first 1,2,4] [--eta 2,3] [--patience 0,2,3]
        [--json out.json]

A survivor of `hx.synth.schedules.halving.successive_halving` resumes exactly where it paused, so its
validation scores are the first ones of its uninterrupted run: the per-epoch curves that
`benchmarks/synthesis.py` records for a `full` run (each ranked candidate's `val_history`) say what any
schedule with whole-epoch rungs would have done (`curve_replay.replay`), without training again.
For each schedule this prints the program halving would return, its validation and test scores (those of its
full run: halving's winner trains to the end), its rank in the full run, the candidate-epochs trained and an
estimate of the training seconds (each candidate's seconds per epoch in the full run, times its epochs under
halving, plus its compilation once), against the full run's.

`--patience P` (0: none) replays early stopping too (`curve_replay.stop_by_patience`: each curve
cut where `TuneConfig.patience = P` would stop it): one row trains every candidate to the end but for its
early stop ("first" -), the others halve as well.

The estimate leaves out what a real halving run adds: a validation at each pause and the re-dispatch of
paused candidates. Figures go to benchmarks/RESULTS.md by hand, labelled as replayed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _full_run(data: dict) -> dict:
  runs = [r for r in data["runs"] if r.get("schedule") == "full"]
  if not runs:
    raise SystemExit("the JSON has no run with schedule 'full' (run benchmarks/synthesis.py --schedules "
                     "full)")
  run = runs[0]
  if any(len(x) < 9 for x in run["ranked"]):
    raise SystemExit("the JSON's candidates have no learning curves (written by an older "
                     "benchmarks/synthesis.py): run it again")
  return run


def replay_schedules(data: dict, firsts: list[float], etas: list[int],
                     patiences: tuple[int | None, ...] = (None,)) -> list[dict]:
  """One row per patience and (first, eta), and per patience one without halving (first None; not for
  patience None, the full run itself): what would have been chosen on `data`'s full run, at what cost."""
  from benchmarks.studies.curve_replay import replay, stop_by_patience
  from hx.synth.schedules.halving import Halving

  run = _full_run(data)
  epochs = int(data["epochs"])
  # In the search's order: halving breaks ties in validation score by it.
  cands = [dict(program=x[0], status=x[1], val=x[2], test=x[3], epochs=x[4], seconds=x[5], compile=x[6],
                curve=list(x[7]) if x[1] == "trained" else [], order=x[8])
           for x in sorted(run["ranked"], key=lambda x: x[8])]
  full_rank = {x[8]: k for k, x in enumerate(run["ranked"], 1)}
  full_cost = sum(c["seconds"] for c in cands)
  rows = []
  for patience in patiences:
    curves = [list(stop_by_patience(c["curve"], patience)) for c in cands]
    plans = [(first, eta) for first in firsts for eta in etas]
    if patience is not None:
      plans.insert(0, (None, None))
    for first, eta in plans:
      if first is None:
        trained = [len(h) for h in curves]
      else:
        trained = replay(curves, Halving(first=first, eta=eta), epochs)
      scores = [min(h[:n]) if n else math.inf for h, n in zip(curves, trained)]
      win = min(range(len(cands)), key=lambda i: (scores[i], i))
      cost = sum(c["compile"] + (c["seconds"] - c["compile"]) * n / max(c["epochs"], 1)
                 for c, n in zip(cands, trained))
      # The test score is the full run's only if the winner trained as far as its best epoch there.
      finished = trained[win] >= 1 + cands[win]["curve"].index(min(cands[win]["curve"]))
      rows.append({"patience": patience, "first": first, "eta": eta, "program": cands[win]["program"],
                   "full_rank": full_rank[cands[win]["order"]], "val": scores[win],
                   "test": cands[win]["test"] if finished else None, "candidate_epochs": sum(trained),
                   "seconds": cost,
                   "full_candidate_epochs": sum(c["epochs"] for c in cands), "full_seconds": full_cost})
  return rows


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("full_json", help="benchmarks/synthesis.py --json output with a 'full' run")
  parser.add_argument("--first", default="1,2,3,4", help="comma-separated first-rung epochs (whole)")
  parser.add_argument("--eta", default="2,3", help="comma-separated eta values")
  parser.add_argument("--patience", default="0", help="comma-separated TuneConfig.patience values (0: none)")
  parser.add_argument("--json", default=None, help="write the rows here")
  args = parser.parse_args(argv)
  with open(args.full_json) as f:
    data = json.load(f)
  patiences = tuple(int(x) or None for x in args.patience.split(","))
  rows = replay_schedules(data, [float(x) for x in args.first.split(",")],
                          [int(x) for x in args.eta.split(",")], patiences)
  run = _full_run(data)
  best = run["ranked"][0]
  print(f"# {data['task']}: full run's winner `{best[0]}` val {best[2]:.4g} test {best[3]:.4g}; "
        f"{len(run['ranked'])} candidates x {data['epochs']} epochs (replayed, not trained)")
  print("| patience | first | eta | program | full rank | val | test | cand-epochs | est. s | full / this |")
  print("|---|---|---|---|---|---|---|---|---|---|")
  for r in rows:
    test = "-" if r["test"] is None else f"{r['test']:.4g}"
    first, eta = ("-", "-") if r["first"] is None else (f"{r['first']:g}", r["eta"])
    print(f"| {r['patience'] or '-'} | {first} | {eta} | `{r['program']}` | {r['full_rank']} | "
          f"{r['val']:.4g} | {test} | "
          f"{r['candidate_epochs']} / {r['full_candidate_epochs']} | {r['seconds']:.0f} | "
          f"{r['full_seconds'] / r['seconds']:.1f} |")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)
  return rows


if __name__ == "__main__":
  main()
