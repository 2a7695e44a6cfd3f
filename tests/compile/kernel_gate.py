"""Whether the tests of hx's CPU kernels (`hx.compile.conv_pool`) run here, skip, or fail.

They skip, with the reason, where the kernels are off ($HX_CPU_KERNELS), JAX's backend is not the CPU, or
the kernels cannot be built: no C++ compiler, say. Where $HX_REQUIRE_CPU_KERNELS is set (CI sets it, in
.ci/pytest) and there is a compiler, kernels that do not build or load fail the tests' collection instead:
otherwise CI would pass with the kernels gone.

    pytestmark = kernel_gate.pytestmark()
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import jax
import pytest

import hx.compile.conv_pool as cp

REQUIRE_ENV = "HX_REQUIRE_CPU_KERNELS"
_NO = ("", "0", "false", "no", "off")


def decide(*, enabled: bool, backend: str, compiler: str | None, load_error: str | None,
           required: bool) -> tuple[str, str]:
  """("run", ""), ("skip", why) or ("fail", why) for the kernels' tests.

  enabled: $HX_CPU_KERNELS allows them; backend: JAX's default backend; compiler: the C++ compiler
  command hx builds with, None if none; load_error: why building or loading them failed, None if they
  are loaded; required: $HX_REQUIRE_CPU_KERNELS is set.
  """
  if not enabled:
    return "skip", f"hx's CPU kernels are off (${cp.ENABLE_ENV})"
  if backend != "cpu":
    return "skip", f"JAX's backend is {backend}, not the CPU"
  if load_error is None:
    return "run", ""
  if required and compiler is not None:
    return "fail", (f"${REQUIRE_ENV} is set and there is a C++ compiler ({compiler}), but hx's CPU kernels "
                    f"did not build or load: {load_error}")
  return "skip", f"hx's CPU kernels cannot be built here: {load_error}"


def required(environ: Mapping[str, str] = os.environ) -> bool:
  """Whether $HX_REQUIRE_CPU_KERNELS asks for the kernels (any value but empty, 0, false, no, off)."""
  return environ.get(REQUIRE_ENV, "").strip().lower() not in _NO


def pytestmark() -> list:
  """The marks for a module of the kernels' tests: none to run them, a skip with its reason, or (when
  they are required, `decide`) a failure of the module's collection naming the compiler and its error."""
  enabled = cp.enabled()
  backend = jax.default_backend()
  load_error = None
  if enabled and backend == "cpu" and not cp.load_kernels():
    load_error = cp.load_error() or "unknown error"
  action, why = decide(enabled=enabled, backend=backend, compiler=cp._compiler(), load_error=load_error,
                       required=required())
  if action == "fail":
    pytest.fail(why, pytrace=False)
  return [pytest.mark.skip(reason=why)] if action == "skip" else []
