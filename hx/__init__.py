"""hx: HOUDINI in JAX — lifelong learning as synthesis of typed, differentiable functional programs.

The language layer is imported eagerly (it needs no JAX); `compile_program` and the other JAX-backed
names load their layer on first use, so parsing and type-checking stay fast to import.
"""

import importlib

from hx.cpu_convolutions import request_xla_convolutions
from hx.determinism import request_deterministic_gpu_ops

request_deterministic_gpu_ops()  # before any JAX backend starts: XLA reads its flags then
request_xla_convolutions()

from hx.lang import (  # noqa: E402
  Compose,
  Conv,
  Fix,
  Fold,
  Fresh,
  FunctionType,
  GraphType,
  Hole,
  HxTypeError,
  Lib,
  ListType,
  Map,
  ParseError,
  Program,
  Repeat,
  TensorType,
  Type,
  TypeVar,
  Typing,
  Zeros,
  canonical,
  infer,
  parse,
  parse_type,
  size,
)

_LAZY = {
    "compile_program": "hx.compile",
    "CompiledProgram": "hx.compile",
    "ModuleConfig": "hx.compile",
    "tune": "hx.compile",
    "TuneConfig": "hx.compile",
    "TuneData": "hx.compile",
    "register_module": "hx.compile",
    "unregister_module": "hx.compile",
    "Task": "hx.data",
    "Sequence": "hx.data",
    "TaskStream": "hx.data",
    "sequence": "hx.data",
    "build_task": "hx.data",
    "Sources": "hx.data",
    "TaskSizes": "hx.data",
    "save_task_arrays": "hx.data.sequence_file",
    "read_sequence_file": "hx.data.sequence_file",
    "tfds_split": "hx.data",
    "DataError": "hx.data",
    "DataNotFoundError": "hx.data",
    "DataFormatError": "hx.data",
    "training_settings": "hx.presets",
    "Library": "hx.synth",
    "synthesize": "hx.synth",
    "Frontier": "hx.synth",
    "FrontierEntry": "hx.synth",
    "Budget": "hx.synth",
    "SynthesisConfig": "hx.synth",
    "TopDown": "hx.synth",
    "Evolutionary": "hx.synth",
    "SearchSpace": "hx.synth",
    "run_sequence": "hx.synth",
    "load_run": "hx.synth",
    "Predictor": "hx.synth",
    "EvalConfig": "hx.evaluation",
    "evaluate": "hx.evaluation",
}

__all__ = [
    "Compose", "Conv", "Fix", "Fold", "Fresh", "FunctionType", "GraphType", "Hole", "HxTypeError", "Lib",
    "ListType", "Map", "ParseError", "Program", "Repeat", "TensorType", "Type", "TypeVar", "Typing",
    "Zeros", "canonical", "infer", "parse", "parse_type", "size", *_LAZY,
]


_SUBPACKAGES = ("lang", "compile", "data", "presets", "synth", "baselines", "evaluation", "bin")


def __dir__() -> list[str]:
  """The module's names with the lazily loaded ones (`_LAZY`, the subpackages), which `__getattr__` gives
  but Python's own `dir` (the module's `__dict__`) would omit until first use."""
  return sorted({*globals(), *_LAZY, *_SUBPACKAGES})


def __getattr__(name: str):
  if name in _LAZY:
    return getattr(importlib.import_module(_LAZY[name]), name)
  if name in _SUBPACKAGES:  # `hx.synth.enumerate(...)` after a plain `import hx`
    return importlib.import_module(f"hx.{name}")
  raise AttributeError(f"module 'hx' has no attribute {name!r}")
