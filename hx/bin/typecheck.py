r"""Parses, type-checks and prints programs: the paper's, or your own.

    python -m hx.bin.typecheck                       # the paper's CS1 programs (top-down)
    python -m hx.bin.typecheck --table=tab:GS2Progs  # another table of the paper's appendix
    python -m hx.bin.typecheck --program='compose(nn_a, map_l(nn_b))' \
        --type='List<Tensor<real>[1]> -> Tensor<real>[1]'

For each program it prints the canonical form, its size, its type and the inferred type of each fresh
function (for the paper's programs, with the types nothing constrains filled in by the paper's
conventions, as `hx.lang.paper` explains); a program that does not parse or type-check is reported
with the reason and the exit status is 1, as is an unknown table (one line naming the tables).
"""

from __future__ import annotations

from absl import app, flags

from hx.bin.checks import FlagError, check_flag, check_flags, no_arguments, parse_flags, parses, refuse
from hx.lang import HxTypeError, ParseError, infer, parse, parse_type, size
from hx.lang.paper import default_type_variables, paper_library, paper_programs, paper_tables

_TABLE = flags.DEFINE_string("table", "tab:CS1Progs", "Paper table whose programs to check (an error with "
                             "--program, which checks one of your own instead).")
_PROGRAM = flags.DEFINE_string("program", None, "A program to check instead of the paper's.")
_TYPE = flags.DEFINE_string("type", None, "The type --program must have (optional; an error without "
                            "--program).")
_LIBRARY = flags.DEFINE_string(
    "library", None, "Paper table whose library types --program may use (lib.NAME), e.g. tab:CS1Progs.")


# Checked when the flags are parsed (hx.bin.checks). A --program that does not parse or type-check is not
# refused: reporting why is what this binary is for.
def _table_with_program(values: dict) -> str | None:
  if values["program"] is not None and (_TABLE.present or values["table"] != _TABLE.default):
    return ("--table picks the paper's programs to check, and --program checks one of your own instead: "
            "give one of them (--library gives --program a table's library types)")
  return None


check_flag(_TYPE, parses(parse_type))
check_flags([_TABLE, _PROGRAM], _table_with_program)


def _report(text: str, expected: str | None, library: dict, paper_defaults: bool = False) -> bool:
  try:
    program = parse(text)
    typing = infer(program, library, parse_type(expected) if expected else None)
  except (ParseError, HxTypeError) as err:
    print(f"  {text}\n    error: {err}")
    return False
  print(f"  {program}\n    size {size(program)} : {typing.type}")
  fresh = default_type_variables(typing.fresh) if paper_defaults else typing.fresh
  for name, t in fresh.items():
    print(f"    {name} : {t}")
  return True


def _known_table(flag: str, table: str) -> str:
  if table not in paper_tables():
    raise FlagError(f"--{flag}: unknown table {table!r}; the tables are: {', '.join(paper_tables())}")
  return table


def main(argv: list[str]) -> int:
  try:
    no_arguments(argv)
    if _LIBRARY.value is not None:
      _known_table("library", _LIBRARY.value)
      if _PROGRAM.value is None:
        raise FlagError("--library gives the library types of --program; the paper's tables (--table) "
                        "check against their own libraries: give --program too")
    if _TYPE.value is not None and _PROGRAM.value is None:
      raise FlagError("--type is the type --program must have: give --program too")
    if _PROGRAM.value is None:
      _known_table("table", _TABLE.value)
  except FlagError as err:
    return refuse(err)
  if _PROGRAM.value is not None:
    library = paper_library(_LIBRARY.value) if _LIBRARY.value else {}
    return 0 if _report(_PROGRAM.value, _TYPE.value, library) else 1
  ok = True
  task = None
  for p in paper_programs():
    if p.table != _TABLE.value:
      continue
    if p.task != task:
      task = p.task
      print(f"Task {p.task_number}: {p.task} : {p.type}")
    ok &= _report(p.text, str(p.type), paper_library(p.library_table), paper_defaults=True)
  return 0 if ok else 1


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
