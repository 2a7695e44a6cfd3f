r"""Where the paper's programs come in the top-down search, and how long enumerating them takes (nothing is
trained).

    python benchmarks/enumeration.py --positions [--markdown]   # rank-1 positions against the budgets
    python benchmarks/enumeration.py --filter_effect   # what the authors' filter removes
    python benchmarks/enumeration.py [--tables tab:LS1Progs tab:LS2Progs] [--json out.json]   # timing

`--positions` prints, for every top-down table of the paper and each task, the place of its rank-1
program among the candidates the paper preset trains (`hx.evaluation.paper.rank1_positions`) against the
preset's budget for that task, under four searches: the paper preset's (`hx.synth.paper_space`: the
authors' order and candidate filter), the authors' order without the filter, and hx's cost order with and
without it. `--markdown` prints it as the table RESULTS.md keeps.

Without `--positions`, it times the enumeration until every program the paper prints for a task has
come up, task by task, for each table:

For table T and task k, the library is the paper's rank-1 functions of T's tasks before k (their types
from `hx.lang.paper`); the enumeration runs in the search's own order and stops once each printed
program's equivalence class has been yielded, which is what tests/synth/test_topdown.py checks for every
table. The lifelong sequences' tables (LS) have the largest libraries and take the longest.

Prints, per table: seconds, and the enumeration's counters summed over its tasks (partial programs
expanded, fillings proposed, of those ill-typed, candidates yielded).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from hx.lang import infer
from hx.lang.paper import default_type_variables, paper_library_before, paper_programs, paper_tables
from hx.synth.space import equivalence_key
from hx.synth.topdown import EnumerationStats, enumerate_programs


def time_table(table: str) -> dict:
  """Enumerates each task of `table` until its printed programs have all come up."""
  progs = [p for p in paper_programs() if p.table == table]
  stats = EnumerationStats()
  start = time.perf_counter()
  missing = 0
  for n in sorted({p.task_number for p in progs}):
    lib = paper_library_before(table, n)
    tp = [p for p in progs if p.task_number == n]
    wanted = {equivalence_key(p.program, default_type_variables(infer(p.program, lib, p.type).fresh))
              for p in tp}
    for c in enumerate_programs(tp[0].type, lib, stats=stats):
      wanted.discard(c.key)
      if not wanted:
        break
    missing += len(wanted)
  return {"seconds": time.perf_counter() - start, "expanded": stats.expanded, "proposed": stats.proposed,
          "ill_typed": stats.ill_typed, "yielded": stats.yielded, "missing": missing}


SEARCHES = ("paper preset", "authors' order, no filter", "cost order, filter", "cost order, no filter")


def positions(tables: list[str] | None = None) -> list[dict]:
  """One row per rank-1 program: its table, task, budget and position under each of `SEARCHES`."""
  import dataclasses

  from hx.evaluation.paper import rank1_positions
  from hx.synth import paper_space

  def spaces(graphs: bool):
    base = paper_space(graphs=graphs)
    cost = dataclasses.replace(base, order="cost")
    return (base, dataclasses.replace(base, authors_filter=False), cost,
            dataclasses.replace(cost, authors_filter=False))

  rows: dict[tuple[str, int], dict] = {}
  tables = tables or [t for t in paper_tables() if not t.startswith("text:") and "Evo" not in t]
  for table in tables:
    graphs = "GS" in table
    for name, space in zip(SEARCHES, spaces(graphs)):
      for p in rank1_positions("paper", space=space, tables=[table]):
        row = rows.setdefault((p.table, p.task_number), {"table": p.table, "task": p.task_number,
                                                          "program": p.program, "budget": p.budget})
        row[name] = p.position
  return list(rows.values())


def print_positions(rows: list[dict], markdown: bool) -> None:
  if markdown:
    print("| table | task | budget | " + " | ".join(SEARCHES) + " |")
    print("|---|---|---|" + "---|" * len(SEARCHES))
  for r in rows:
    cells = [str(r[s]) if r[s] is not None else ">300" for s in SEARCHES]
    if markdown:
      cells = [f"**{c}**" if r[s] is None or r[s] > r["budget"] else c for c, s in zip(cells, SEARCHES)]
      print(f"| {r['table']} | {r['task']} | {r['budget']} | " + " | ".join(cells) + " |")
    else:
      print(f"{r['table']:18s} {r['task']}  budget {r['budget']:3d}  " + "  ".join(f"{c:>5s}" for c in cells))
  for s in SEARCHES:
    within = sum(r[s] is not None and r[s] <= r["budget"] for r in rows)
    print(f"{s}: {within} of {len(rows)} within budget")


def filter_effect(tables: list[str] | None = None) -> dict:
  """What the authors' filter removes from the candidates the paper preset's order (without the filter)
  puts within each rank-1 task's budget: counts per reason, with an example of each."""
  import dataclasses
  import re

  from hx.evaluation.paper import rank1_tasks
  from hx.synth import paper_space
  from hx.synth.space import Completer

  reasons: dict[str, list] = {}
  total = kept_total = 0
  tables = tables or [t for t in paper_tables() if t.startswith("tab:") and "Evo" not in t]
  for t in rank1_tasks("paper", tables):
    p, library = t.program, t.library
    space = paper_space(graphs=p.sequence.startswith("gs"))
    free = list(enumerate_programs(p.type, library, space=dataclasses.replace(space, authors_filter=False),
                                   limit=t.budget))
    kept = {c.key for c in enumerate_programs(p.type, library, space=space, limit=t.budget)}
    completer = Completer(library, space)
    for c in free:
      total += 1
      if c.key in kept:
        kept_total += 1
        continue
      why = completer.authors_reason(c.program, c.fresh_types) or "more than two open types"
      why = re.sub(r"nn_\d+ : .*? (is not|takes)", r"a fresh function \1", why)
      reasons.setdefault(why, [0, f"{t.table} task {p.task_number}: {c}"])[0] += 1
  return {"candidates": total, "kept": kept_total, "removed": {k: v[0] for k, v in reasons.items()},
          "examples": {k: v[1] for k, v in reasons.items()}}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tables", nargs="*", default=None, help="default: every table of the paper")
  parser.add_argument("--positions", action="store_true", help="rank-1 positions against the budgets")
  parser.add_argument("--markdown", action="store_true", help="with --positions: a markdown table")
  parser.add_argument("--filter_effect", action="store_true",
                      help="what the authors' filter removes within the budgets")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  if args.filter_effect:
    effect = filter_effect(args.tables)
    print(f"{effect['candidates']} candidates within the budgets, {effect['kept']} kept by the filter")
    for why, n in sorted(effect["removed"].items(), key=lambda kv: -kv[1]):
      print(f"{n:5d}  {why}\n       e.g. {effect['examples'][why]}")
    return
  if args.positions:
    rows = positions(args.tables)
    print_positions(rows, args.markdown)
    if args.json:
      with open(args.json, "w") as f:
        json.dump({"positions": rows, "searches": SEARCHES}, f, indent=1)
    return
  tables = args.tables or [t for t in paper_tables() if not t.startswith("text:")]
  results = {}
  for table in tables:
    results[table] = time_table(table)
    r = results[table]
    print(f"{table:20s} {r['seconds']:7.2f} s  expanded {r['expanded']:6d}  proposed {r['proposed']:7d}  "
          f"ill-typed {r['ill_typed']:7d}  yielded {r['yielded']:5d}  missing {r['missing']}", flush=True)
  total = sum(r["seconds"] for r in results.values())
  print(f"total {total:.1f} s")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"tables": results, "total_seconds": total, "python": platform.python_version()}, f,
                indent=1)


if __name__ == "__main__":
  main()
