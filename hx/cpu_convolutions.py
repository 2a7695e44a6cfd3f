"""Which library runs XLA:CPU's convolutions: XLA's own kernels (hx's default) or YNNPACK (jaxlib's).

jaxlib 0.10 hands each XLA:CPU convolution to YNNPACK (a `__ynn_fusion`), which runs one over a few dozen
images fast but one over a whole training step's images several times slower (an unfused im2col copy
into a fresh buffer), so under YNNPACK the CNN module trains in unrolled slices of images
(`hx.compile.cnn_blocks._cnn_slices`), and every slice adds to the training step's compile time.
`--xla_cpu_experimental_ynn_fusion_type=-individual_convolution` leaves convolutions to XLA's own
(Eigen) kernels, which take a whole step's images at once: the CNN then trains in one call. On the
count_digit candidate at the paper's sizes that trained an epoch faster, compiled the step in less time
and used less memory than YNNPACK with slices (benchmarks/RESULTS.md, "Training throughput", where the
machines and figures are). So `import hx` requests XLA's own convolutions (`request_xla_convolutions`,
before JAX starts a backend, as `hx.determinism` does for GPU kernels), unless the user's XLA_FLAGS
already name the setting: `XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=+individual_convolution`
keeps YNNPACK's, and with it the sliced CNN. On a GPU the flag changes no kernel; it still decides
whether the CNN is sliced, and under hx's default it is not.

XLA stops the process at a flag it does not know, and this one is experimental: hx requests it only
under the jaxlib series where it was checked (`jaxlib_has_flag`: 0.10); under others jaxlib's default
stands, and so do the slices. XLA reads `XLA_FLAGS` once, when JAX starts its backend. A program that ran
JAX before importing hx keeps the flags it started with: hx then leaves XLA_FLAGS alone, so that
`ynnpack_convolutions()`, read from XLA_FLAGS when the CNN is traced, says what the backend runs. The
flag's value is a comma-separated list, either of exact fusion types (the list replaces the defaults,
which include `individual_convolution`) or of `+`/`-` prefixed changes to the defaults; XLA upper-cases
the names, so they are read here case-insensitively, and the last occurrence of the flag wins, as in
XLA's parser.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Mapping, MutableMapping

__all__ = ["FLAG", "OWN_FLAGS", "YNNPACK_FLAGS", "choose_convolutions", "jaxlib_has_flag",
           "request_xla_convolutions", "ynnpack_convolutions"]

FLAG = "--xla_cpu_experimental_ynn_fusion_type"
OWN_FLAGS = f"{FLAG}=-individual_convolution"
"""The XLA_FLAGS entry that leaves XLA:CPU's convolutions to XLA's own kernels (hx's default)."""
YNNPACK_FLAGS = f"{FLAG}=+individual_convolution"
"""The XLA_FLAGS entry that keeps them in YNNPACK (jaxlib's default), the CNN then trained in slices."""

_CONVOLUTION = "individual_convolution"
_CHECKED_JAXLIB = "0.10."  # the jaxlib series whose XLA has FLAG and runs convolutions through YNNPACK


def _value(environ: Mapping[str, str]) -> str | None:
  """The value of the last FLAG in environ's XLA_FLAGS, or None."""
  value = None
  for token in environ.get("XLA_FLAGS", "").split():
    name, _, given = token.partition("=")
    if name == FLAG:
      value = given
  return value


def ynnpack_convolutions(environ: Mapping[str, str] = os.environ) -> bool:
  """Whether XLA:CPU runs convolutions through YNNPACK under `environ["XLA_FLAGS"]`.

  Examples: no flag, an empty value, or `+individual_convolution`: True. `-individual_convolution`, or
  an exact list without it (`individual_dot`): False.
  """
  value = _value(environ)
  if not value:
    return True
  items = [item.strip().lower() for item in value.split(",") if item.strip()]
  if items and all(item[0] in "+-" for item in items):
    verdict = True  # changes to the defaults, which include convolutions: the last one that names them
    for item in items:
      if item[1:] == _CONVOLUTION:
        verdict = item[0] == "+"
    return verdict
  return _CONVOLUTION in items


def _backend_started() -> bool:
  """Whether this process has started a JAX backend (then XLA_FLAGS is read already)."""
  bridge = sys.modules.get("jax._src.xla_bridge")
  started = getattr(bridge, "backends_are_initialized", None)
  return bool(started and started())


def jaxlib_has_flag() -> bool:
  """Whether the installed jaxlib is of the series where FLAG was checked (module docstring)."""
  try:
    return importlib.metadata.version("jaxlib").startswith(_CHECKED_JAXLIB)
  except importlib.metadata.PackageNotFoundError:
    return False


def choose_convolutions(library: str, environ: MutableMapping[str, str] = os.environ) -> str:
  """Appends to `environ["XLA_FLAGS"]` the entry that makes `library` ("xla" or "ynnpack") run XLA:CPU's
  convolutions (the last occurrence of FLAG wins). Returns the resulting XLA_FLAGS value."""
  entry = {"xla": OWN_FLAGS, "ynnpack": YNNPACK_FLAGS}[library]
  flags = f"{environ.get('XLA_FLAGS', '')} {entry}".strip()
  environ["XLA_FLAGS"] = flags
  return flags


def request_xla_convolutions(environ: MutableMapping[str, str] = os.environ) -> str:
  """Chooses XLA's own convolutions in `environ["XLA_FLAGS"]` unless FLAG is there already, a JAX backend
  has started, or the installed jaxlib is not one where FLAG was checked (module docstring).

  Returns:
    The resulting XLA_FLAGS value.
  """
  if _value(environ) is None and not _backend_started() and jaxlib_has_flag():
    return choose_convolutions("xla", environ)
  return environ.get("XLA_FLAGS", "")
