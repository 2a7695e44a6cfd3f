"""The shape of hx's code, checked from its source: no file over 800 lines, no function over 60 lines of
code (docstring, comments and blank lines aside), no class name defined twice, and no public name (one a
module lists in `__all__`) assigned in two modules, so that one concept has one definition."""

from __future__ import annotations

import ast
import collections
import io
import tokenize
from pathlib import Path

HX = Path(__file__).resolve().parents[1] / "hx"
MAX_LINES = 60
MAX_FILE_LINES = 800


def _modules() -> dict[str, ast.Module]:
  return {str(p.relative_to(HX.parent)): ast.parse(p.read_text("utf-8")) for p in sorted(HX.rglob("*.py"))}


def code_line_numbers(source: str) -> set[int]:
  """The lines of `source` that hold a token of code (neither a comment nor blank)."""
  skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
          tokenize.ENCODING, tokenize.ENDMARKER}
  lines = set()
  for tok in tokenize.generate_tokens(io.StringIO(source).readline):
    if tok.type not in skip:
      lines.update(range(tok.start[0], tok.end[0] + 1))
  return lines


def code_lines(code: set[int], node: ast.AST) -> int:
  """Lines of `node` (a function) that hold code (`code_line_numbers` of its file), its docstring aside."""
  doc: range = range(0)
  body = getattr(node, "body", [])
  if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
      body[0].value.value, str):
    doc = range(body[0].lineno, body[0].end_lineno + 1)
  return sum(1 for line in range(node.lineno, node.end_lineno + 1) if line in code and line not in doc)


def test_code_lines_count_code_only():
  source = 'def f(x):\n  """Doc.\n\n  More."""\n  # why\n\n  y = (x +\n       1)\n  return y\n'
  assert code_lines(code_line_numbers(source), ast.parse(source).body[0]) == 4


def test_no_function_is_over_sixty_lines_of_code():
  long = []
  for name, tree in _modules().items():
    code = code_line_numbers((HX.parent / name).read_text("utf-8"))
    for node in ast.walk(tree):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        n = code_lines(code, node)
        if n > MAX_LINES:
          long.append(f"{name}:{node.lineno} {node.name} ({n} lines)")
  assert long == []


def test_no_file_is_over_800_lines():
  long = {str(p.relative_to(HX.parent)): n for p in sorted(HX.rglob("*.py"))
          if (n := len(p.read_text("utf-8").splitlines())) > MAX_FILE_LINES}
  assert long == {}


def test_no_class_name_is_defined_twice():
  where = collections.defaultdict(list)
  for name, tree in _modules().items():
    for node in ast.walk(tree):
      if isinstance(node, ast.ClassDef):
        where[node.name].append(f"{name}:{node.lineno}")
  assert {k: v for k, v in where.items() if len(v) > 1} == {}


def _exported(tree: ast.Module) -> set[str]:
  for node in tree.body:
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                            for t in node.targets):
      try:
        return set(ast.literal_eval(node.value))
      except ValueError:
        return set()
  return set()


# Attributes every module of one kind has, each its own (a data module's flag, a rendered stand-in's data
# set name, an opt-in XLA flag's name): one name per role, not one concept defined twice.
PER_MODULE = {"FLAG", "NAME"}


def test_no_public_name_is_assigned_in_two_modules():
  where = collections.defaultdict(list)
  for name, tree in _modules().items():
    public = _exported(tree)
    for node in tree.body:
      targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
          node, ast.AnnAssign) else []
      for t in targets:
        if isinstance(t, ast.Name) and t.id in public and t.id not in PER_MODULE | {"__all__"}:
          where[t.id].append(name)
  assert {k: v for k, v in where.items() if len(v) > 1} == {}
