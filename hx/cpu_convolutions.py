"""Which library runs XLA:CPU's convolutions in this process: YNNPACK (jaxlib's default) or XLA's own.

jaxlib 0.10 hands each XLA:CPU convolution to YNNPACK (a `__ynn_fusion`), which runs one over a few dozen
images fast but one over a whole training step's images several times slower (an unfused im2col copy
into a fresh buffer), so the CNN module trains in unrolled slices of images when YNNPACK runs its
convolutions (`hx.compile.modules._cnn_slices`). `XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=
-individual_convolution` leaves convolutions to XLA's own (Eigen) kernels, which take a whole step's
images at once: then slicing only adds compile time, and the CNN trains in one call. Which is faster
depends on the CPU (benchmarks/RESULTS.md, "Training throughput": on a 2-core Zen 3 EPYC the Eigen
convolutions trained the count_digit candidate's epoch faster and compiled its step in less time); hx
keeps jaxlib's default and reads the flag, never sets it.

XLA reads `XLA_FLAGS` once, when JAX starts its backend: set it before the first JAX computation (before
`import hx` is safe). The flag's value is a comma-separated list, either of exact fusion types (the
list replaces the defaults, which include `individual_convolution`) or of `+`/`-` prefixed changes to
the defaults; XLA upper-cases the names, so they are read here case-insensitively, and the last
occurrence of the flag in `XLA_FLAGS` wins, as XLA's flag parser does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["EIGEN_FLAGS", "FLAG", "ynnpack_convolutions"]

FLAG = "--xla_cpu_experimental_ynn_fusion_type"
EIGEN_FLAGS = f"{FLAG}=-individual_convolution"
"""The XLA_FLAGS entry that leaves XLA:CPU's convolutions to XLA's own kernels."""

_CONVOLUTION = "individual_convolution"


def ynnpack_convolutions(environ: Mapping[str, str] = os.environ) -> bool:
  """Whether XLA:CPU runs convolutions through YNNPACK under `environ["XLA_FLAGS"]` (True by default).

  Examples: no flag, an empty value, or `+individual_convolution`: True. `-individual_convolution`, or
  an exact list without it (`individual_dot`): False.
  """
  value = None
  for token in environ.get("XLA_FLAGS", "").split():
    name, _, given = token.partition("=")
    if name == FLAG:
      value = given
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
