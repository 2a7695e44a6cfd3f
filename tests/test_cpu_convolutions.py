"""Which library runs XLA:CPU's convolutions (`hx.cpu_convolutions`): read from XLA_FLAGS, and XLA's own
requested by `import hx` unless the user chose."""

import os
import subprocess
import sys

import pytest

from hx import cpu_convolutions
from hx.cpu_convolutions import (
  FLAG,
  OWN_FLAGS,
  YNNPACK_FLAGS,
  choose_convolutions,
  jaxlib_has_flag,
  request_xla_convolutions,
  ynnpack_convolutions,
)


@pytest.mark.parametrize("flags, ynnpack", [
  (None, True),
  ("", True),
  ("--xla_gpu_deterministic_ops=true", True),
  ("--xla_cpu_experimental_ynn_fusion_type=", True),
  (OWN_FLAGS, False),
  ("--xla_gpu_deterministic_ops=true --xla_cpu_experimental_ynn_fusion_type=-individual_convolution", False),
  ("--xla_cpu_experimental_ynn_fusion_type=+individual_convolution", True),
  ("--xla_cpu_experimental_ynn_fusion_type=-INDIVIDUAL_CONVOLUTION", False),
  # An exact list replaces the defaults: convolutions run in YNNPACK only if it names them.
  ("--xla_cpu_experimental_ynn_fusion_type=individual_dot", False),
  ("--xla_cpu_experimental_ynn_fusion_type=individual_dot,individual_convolution", True),
  # Signed changes: the last one naming convolutions decides; others leave them in.
  ("--xla_cpu_experimental_ynn_fusion_type=-individual_dot", True),
  ("--xla_cpu_experimental_ynn_fusion_type=-individual_convolution,+individual_convolution", True),
  # The flag given twice: the last occurrence wins, as XLA's parser does.
  (f"{OWN_FLAGS} --xla_cpu_experimental_ynn_fusion_type=+individual_convolution", True),
  (f"--xla_cpu_experimental_ynn_fusion_type=+individual_convolution {OWN_FLAGS}", False),
  # Another flag whose name begins the same is not this one.
  ("--xla_cpu_experimental_ynn_fusion_type_other=-individual_convolution", True),
])
def test_which_library_runs_the_convolutions(flags, ynnpack):
  environ = {} if flags is None else {"XLA_FLAGS": flags}
  assert ynnpack_convolutions(environ) is ynnpack


def test_the_request_adds_the_flag_once_and_keeps_a_users_choice(monkeypatch):
  monkeypatch.setattr(cpu_convolutions, "_backend_started", lambda: False)  # as before JAX runs
  monkeypatch.setattr(cpu_convolutions, "jaxlib_has_flag", lambda: True)
  env = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}
  assert request_xla_convolutions(env) == f"--xla_gpu_deterministic_ops=true {OWN_FLAGS}"
  assert request_xla_convolutions(env) == env["XLA_FLAGS"] == f"--xla_gpu_deterministic_ops=true {OWN_FLAGS}"
  assert not ynnpack_convolutions(env)
  empty: dict[str, str] = {}
  assert request_xla_convolutions(empty) == empty["XLA_FLAGS"] == OWN_FLAGS
  for chosen in (YNNPACK_FLAGS, f"{FLAG}=individual_dot", f"{FLAG}="):
    env = {"XLA_FLAGS": chosen}
    assert request_xla_convolutions(env) == chosen == env["XLA_FLAGS"]


def _after_import(xla_flags: str | None, jax_first: bool = False) -> tuple[str, str]:
  """XLA_FLAGS after `import hx` in a fresh process, and how its compiled convolution runs."""
  env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
  if xla_flags is not None:
    env["XLA_FLAGS"] = xla_flags
  code = ("import os, jax, jax.numpy as jnp\n"
          + ("jnp.ones(2).sum().block_until_ready()\n" if jax_first else "")
          + "import hx\n"
          "from jax import lax\n"
          "f = jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'VALID', "
          "dimension_numbers=('NHWC', 'HWIO', 'NHWC')))\n"
          "text = f.lower(jnp.ones((8, 28, 28, 1)), jnp.ones((5, 5, 1, 32))).compile().as_text()\n"
          "print(os.environ.get('XLA_FLAGS', ''))\n"
          "print('ynnpack' if '__ynn_fusion' in text else 'xla')\n")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
  flags, library = out.stdout.strip().splitlines()[-2:]
  return flags, library


CHECKED = pytest.mark.skipif(not jaxlib_has_flag(), reason="the flag is requested under jaxlib 0.10.x only")


@pytest.mark.slow
@CHECKED
def test_importing_hx_gives_xla_its_own_convolutions_unless_told_otherwise():
  flags, library = _after_import(None)
  assert OWN_FLAGS in flags and library == "xla"
  flags, library = _after_import(YNNPACK_FLAGS)
  assert OWN_FLAGS not in flags and library == "ynnpack"


@CHECKED
def test_a_backend_started_before_hx_keeps_its_flags():
  # JAX ran first: XLA read XLA_FLAGS already, so hx leaves them, and says YNNPACK runs the convolutions.
  flags, library = _after_import(None, jax_first=True)
  assert OWN_FLAGS not in flags and library == "ynnpack"


@pytest.mark.parametrize("started, known", [(True, True), (False, False)])
def test_the_request_leaves_the_flags_once_a_backend_runs_or_under_an_unchecked_jaxlib(monkeypatch, started,
                                                                                       known):
  monkeypatch.setattr(cpu_convolutions, "_backend_started", lambda: started)
  monkeypatch.setattr(cpu_convolutions, "jaxlib_has_flag", lambda: known)
  env = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}
  assert request_xla_convolutions(env) == "--xla_gpu_deterministic_ops=true" == env["XLA_FLAGS"]
  assert ynnpack_convolutions(env)


def test_a_chosen_library_is_appended_and_wins():
  env = {"XLA_FLAGS": OWN_FLAGS}
  assert choose_convolutions("ynnpack", env) == f"{OWN_FLAGS} {YNNPACK_FLAGS}" == env["XLA_FLAGS"]
  assert ynnpack_convolutions(env)
  assert not ynnpack_convolutions({"XLA_FLAGS": choose_convolutions("xla", env)})
