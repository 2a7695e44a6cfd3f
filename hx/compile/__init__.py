"""hx.compile: neural module templates, lowering programs to pure JAX functions, training (Tune)."""

from hx.compile.cache import disable_compilation_cache, enable_compilation_cache
from hx.compile.losses import Objective, objective_for_type
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
from hx.compile.reference import RefGraph, reference_apply
from hx.compile.tune import EpochRecord, TuneConfig, TuneData, TuneResult, evaluate, tune
from hx.compile.values import GraphBatch, ListBatch, Split, gather

__all__ = [
  "CompiledProgram", "compile_program", "make_frozen",
  "ModuleConfig", "ModuleSpec", "NoTemplateError", "UnresolvedTypeError", "apply_module", "init_module",
  "module_spec", "RefGraph", "reference_apply",
  "GraphBatch", "ListBatch", "Split", "gather",
  "tune", "evaluate", "TuneConfig", "TuneData", "TuneResult", "EpochRecord", "Objective",
  "objective_for_type", "enable_compilation_cache", "disable_compilation_cache",
]
