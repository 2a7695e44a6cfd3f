"""hx asks XLA for deterministic GPU kernels unless the user chose otherwise (hx/determinism.py)."""

import os
import subprocess
import sys

import pytest

from hx.cpu_convolutions import OWN_FLAGS, jaxlib_has_flag
from hx.determinism import FLAG, request_deterministic_gpu_ops


def test_the_flag_is_added_to_other_flags_and_kept_once():
  env = {"XLA_FLAGS": "--xla_dump_to=/tmp/x"}
  assert request_deterministic_gpu_ops(env) == f"--xla_dump_to=/tmp/x {FLAG}=true"
  assert request_deterministic_gpu_ops(env) == env["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {FLAG}=true"
  empty: dict[str, str] = {}
  assert request_deterministic_gpu_ops(empty) == empty["XLA_FLAGS"] == f"{FLAG}=true"


def test_a_users_choice_is_never_overridden():
  env = {"XLA_FLAGS": f"{FLAG}=false --xla_force_host_platform_device_count=2"}
  assert request_deterministic_gpu_ops(env) == f"{FLAG}=false --xla_force_host_platform_device_count=2"


def _flags_after_import(xla_flags: str | None) -> str:
  env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
  if xla_flags is not None:
    env["XLA_FLAGS"] = xla_flags
  code = ("import os, hx, jax.numpy as jnp; jnp.ones(2).sum().block_until_ready(); "
          "print(os.environ['XLA_FLAGS'])")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
  return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_importing_hx_sets_the_flag_before_jax_runs_and_xla_accepts_it():
  # (hx also requests XLA's own CPU convolutions under jaxlib 0.10: tests/test_cpu_convolutions.py.)
  also = f" {OWN_FLAGS}" if jaxlib_has_flag() else ""
  assert _flags_after_import(None) == f"{FLAG}=true{also}"
  assert _flags_after_import(f"{FLAG}=false") == f"{FLAG}=false{also}"
