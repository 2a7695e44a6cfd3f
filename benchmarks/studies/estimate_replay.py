"""How well the first epochs of a full run rank the candidates: the short-run estimate, replayed.

    python benchmarks/synthesis.py --task cs1:3 --preset paper --fraction 0.02 --candidates 20 \
        --combinators authors --schedules full --json full.json
    python benchmarks/studies/estimate_replay.py full.json [--keep 4] [--json out.json]

A short run (`hx.synth.schedules.estimate`, method "short") trains a candidate's first steps exactly as its
full run does (same seed, batches and dropout keys), so the per-epoch validation curves a `full` run records
(each ranked candidate's `val_history`) say what a short run of e whole epochs would have estimated, with
two differences: the curves score the whole validation split, a short run a fixed subsample of it; and a
short run may stop inside an epoch. For each e this prints the share of the full run's training it is,
Spearman's rank correlation of each candidate's best score over its first e epochs with its final
validation score, where the full run's winner ranks by that estimate, and whether it is among the best
`--keep`. A failed candidate (no curve) is left out. Figures go to benchmarks/RESULTS.md by hand,
labelled as replayed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def replay(run: dict, keep: int) -> list[dict]:
  """Per whole epoch e of the full run `run` (a benchmarks/synthesis.py run): e, the share of the run's
  epochs, the Spearman correlation of min(curve[:e]) with the final validation scores, the full winner's
  rank by that estimate (1 best) and whether it is within `keep`."""
  from hx.synth.schedules.estimate import spearman

  rows = [x for x in run["ranked"] if x[1] == "trained" and x[7]]
  winner = run["ranked"][0][8]
  final = [x[2] for x in rows]
  epochs = max(len(x[7]) for x in rows)
  out = []
  for e in range(1, epochs + 1):
    estimate = [min(x[7][:e]) for x in rows]
    order = sorted(range(len(rows)), key=lambda i: (estimate[i], rows[i][8]))
    rank = next(k for k, i in enumerate(order, 1) if rows[i][8] == winner)
    out.append({"epochs": e, "share": e / epochs, "spearman": spearman(estimate, final), "winner_rank": rank,
                "winner_kept": rank <= keep})
  return out


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("full_json", help="benchmarks/synthesis.py --json output with a 'full' run")
  parser.add_argument("--keep", type=int, default=4, help="candidates an estimate schedule trains to the end")
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  with open(args.full_json) as f:
    data = json.load(f)
  run = next((r for r in data["runs"] if r.get("schedule") == "full"), None)
  if run is None:
    raise SystemExit("the JSON has no run with schedule 'full'")
  rows = replay(run, args.keep)
  print(f"# {data['task']}, {len(run['ranked'])} candidates; full run's winner {run['ranked'][0][0]} "
        f"(order {run['ranked'][0][8]})")
  print("| epochs | share of training | Spearman with final val | full winner's rank | within keep |")
  print("|---|---|---|---|---|")
  for r in rows:
    rho = "-" if math.isnan(r["spearman"]) else f"{r['spearman']:.3f}"
    print(f"| {r['epochs']} | {r['share']:.0%} | {rho} | {r['winner_rank']} | {r['winner_kept']} |")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=1)
  return rows


if __name__ == "__main__":
  main()
