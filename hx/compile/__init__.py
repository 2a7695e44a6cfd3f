"""hx.compile: neural module templates, lowering programs to pure JAX functions, training (Tune), and
training one model on one task (`fit`).

Names load their module on first use, so that the batch containers (`hx.lang.values`, which the data
layer builds) can be imported from here without importing JAX.
"""

import importlib

_MODULES = {
    "hx.compile.cache": ("disable_compilation_cache", "enable_compilation_cache"),
    "hx.compile.fitting": ("Outcome", "Prepared", "fit", "prepare"),
    "hx.compile.fixpoint": ("FixConfig", "fixed_point"),
    "hx.lang.objectives": ("Objective", "objective_for_type"),
    "hx.compile.lower": ("CompiledProgram", "compile_program", "make_frozen"),
    "hx.compile.modules": ("ModuleConfig", "ModuleSpec", "NoTemplateError", "Registration", "Rows",
                           "UnregisteredModuleError", "UnresolvedTypeError", "apply_module", "init_module",
                           "module_spec", "register_module", "registered_modules", "unregister_module"),
    "hx.compile.reference": ("RefGraph", "reference_apply"),
    "hx.compile.tuning": ("EpochRecord", "TuneConfig", "TuneData", "TuneResult", "evaluate",
                          "resolve_objective", "tune"),
    "hx.lang.values": ("EdgeGraphBatch", "GraphBatch", "GraphLayouts", "ListBatch", "SharedGraphs", "Split",
                       "gather", "pack_graphs", "take"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
  if name not in _WHERE:
    raise AttributeError(f"module 'hx.compile' has no attribute {name!r}")
  module = importlib.import_module(_WHERE[name])
  for exported in _MODULES[_WHERE[name]]:  # bind them all, so later lookups skip this function
    globals()[exported] = getattr(module, exported)
  return globals()[name]


def __dir__():
  return __all__
