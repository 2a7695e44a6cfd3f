"""The shape of hx's code, checked from its source: no file over 800 lines, no function over 60 lines of
code (docstring, comments and blank lines aside), at most 8 functions of more than 8 parameters and none
of more than 12, annotations that name their types (`Any` in at most `MAX_ANY` of them), no class name
defined twice, and no public name (one a module lists in `__all__`) assigned in two modules, so that one
concept has one definition."""

from __future__ import annotations

import ast
import collections
import io
import re
import tokenize
from pathlib import Path

HX = Path(__file__).resolve().parents[1] / "hx"
MAX_LINES = 60
MAX_FILE_LINES = 800
MAX_PARAMETERS = 12
WIDE = 8
"""A function of more than `WIDE` parameters is wide; at most `MAX_WIDE` are (the public entry points whose
keywords users pass: `hx.synthesize`, `run_sequence`, `EvalConfig.make`, `task_from_arrays`, ...)."""
MAX_WIDE = 8
MAX_ANY = 30
"""`Any` in hx's annotations (parameters, returns, annotated assignments and fields): where a value really
is of no one type (forwarded keywords, shape-only trees), not where a type has a name."""


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


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
  """A function's parameters, positional and keyword-only, with *args and **kwargs, self and cls aside."""
  a = node.args
  named = [p for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
  return len(named) + (a.vararg is not None) + (a.kwarg is not None)


def test_parameter_count_counts_every_kind_of_parameter_but_self():
  source = "class C:\n  def f(self, a, /, b, *c, d, **e):\n    pass\n"
  assert parameter_count(ast.parse(source).body[0].body[0]) == 5


def test_few_functions_take_more_than_eight_parameters_and_none_more_than_twelve():
  counts = {f"{name}:{node.lineno} {node.name}": parameter_count(node) for name, tree in _modules().items()
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
  wide = {k: n for k, n in counts.items() if n > WIDE}
  assert {k: n for k, n in wide.items() if n > MAX_PARAMETERS} == {}
  assert len(wide) <= MAX_WIDE, sorted(wide.items(), key=lambda kv: -kv[1])


def annotation_anys(tree: ast.Module) -> int:
  """How many times `Any` is named in `tree`'s annotations (of parameters, returns, annotated
  assignments), string annotations included."""
  count = 0
  for node in ast.walk(tree):
    annotations = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      a = node.args
      annotations = [p.annotation for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                     if p is not None and p.annotation is not None]
      annotations += [node.returns] if node.returns is not None else []
    elif isinstance(node, ast.AnnAssign):
      annotations = [node.annotation]
    for x in annotations:
      text = x.value if isinstance(x, ast.Constant) and isinstance(x.value, str) else ast.unparse(x)
      count += len(re.findall(r"\bAny\b", text))
  return count


def test_annotation_anys_counts_string_and_nested_annotations():
  source = "def f(a: Any, b: 'dict[str, Any]') -> list[Any]:\n  c: Any = 1\n"
  assert annotation_anys(ast.parse(source)) == 4


def test_annotations_name_their_types():
  assert sum(annotation_anys(tree) for tree in _modules().values()) <= MAX_ANY


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
