import subprocess
import sys

import hx


def test_every_public_name_resolves():
  for name in hx.__all__:
    assert getattr(hx, name) is not None, name


def test_lazy_names_come_from_their_layer():
  from hx.compile import compile_program
  from hx.data import sequence
  assert hx.compile_program is compile_program
  assert hx.sequence is sequence


def test_importing_hx_does_not_import_jax():
  code = "import sys, hx; hx.parse('nn_a'); print('jax' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


def test_the_data_layer_does_not_import_jax():
  code = "import sys, hx.data; hx.data.sequence('cs1'); print('jax' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"


def test_compile_names_resolve_lazily_to_the_objects_not_modules():
  import types

  import hx.compile
  from hx.compile import TuneConfig, tune
  from hx.compile.tuning import tune as tune_function
  assert tune is tune_function and callable(tune) and TuneConfig().batch_size == 150
  for name in hx.compile.__all__:
    assert not isinstance(getattr(hx.compile, name), types.ModuleType), name


def test_unknown_attribute():
  try:
    hx.no_such_thing  # noqa: B018
  except AttributeError as err:
    assert "no_such_thing" in str(err)
  else:
    raise AssertionError("expected AttributeError")


def test_synthesis_names():
  import hx.synth
  from hx.synth.synthesize import synthesize
  from hx.synth.topdown import enumerate_programs
  assert hx.synthesize is synthesize and hx.synth.enumerate is enumerate_programs
  assert hx.Library is hx.synth.Library and hx.run_sequence is hx.synth.run_sequence


def test_subpackages_load_on_first_use():
  code = "import hx; print(hx.synth.enumerate.__name__, hx.data.sequence.__name__)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.split() == ["enumerate_programs", "sequence"]


def test_every_public_name_has_a_docstring():
  import typing

  # Type aliases (Program, Type: unions of the node and type classes) are documented where they are defined.
  missing = [name for name in hx.__all__ if typing.get_origin(getattr(hx, name)) is not typing.Union
             and not (getattr(hx, name).__doc__ or "").strip()]
  assert missing == []


def test_a_users_own_problem_is_public():
  for name in ("Task", "TaskStream", "Sequence", "EvalConfig", "evaluate", "register_module", "synthesize"):
    assert name in hx.__all__
  assert hx.Task.from_arrays.__doc__ and "(inputs, targets)" in hx.Task.from_arrays.__doc__
