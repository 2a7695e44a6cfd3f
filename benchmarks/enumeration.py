r"""Times top-down enumeration (`hx.synth.topdown.enumerate_programs`) until every program the paper prints
for a task has come up, task by task, for each table of the paper (nothing is trained).

    python benchmarks/enumeration.py [--tables tab:LS1Progs tab:LS2Progs] [--json out.json]

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


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tables", nargs="*", default=None, help="default: every table of the paper")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
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
