"""hx.compile: neural module templates, lowering programs to pure JAX functions, training (Tune)."""

from hx.compile.lower import CompiledProgram, compile_program, make_frozen
from hx.compile.modules import (
  ModuleConfig,
  ModuleSpec,
  NoTemplateError,
  UnresolvedTypeError,
  apply_module,
  init_module,
  module_spec,
)
from hx.compile.values import GraphBatch, ListBatch, Split, gather

__all__ = [
  "CompiledProgram", "compile_program", "make_frozen",
  "ModuleConfig", "ModuleSpec", "NoTemplateError", "UnresolvedTypeError", "apply_module", "init_module",
  "module_spec",
  "GraphBatch", "ListBatch", "Split", "gather",
]
