"""Reading from XLA_FLAGS which library runs XLA:CPU's convolutions (`hx.cpu_convolutions`)."""

import pytest

from hx.cpu_convolutions import EIGEN_FLAGS, ynnpack_convolutions


@pytest.mark.parametrize("flags, ynnpack", [
  (None, True),
  ("", True),
  ("--xla_gpu_deterministic_ops=true", True),
  ("--xla_cpu_experimental_ynn_fusion_type=", True),
  (EIGEN_FLAGS, False),
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
  (f"{EIGEN_FLAGS} --xla_cpu_experimental_ynn_fusion_type=+individual_convolution", True),
  (f"--xla_cpu_experimental_ynn_fusion_type=+individual_convolution {EIGEN_FLAGS}", False),
  # Another flag whose name begins the same is not this one.
  ("--xla_cpu_experimental_ynn_fusion_type_other=-individual_convolution", True),
])
def test_which_library_runs_the_convolutions(flags, ynnpack):
  environ = {} if flags is None else {"XLA_FLAGS": flags}
  assert ynnpack_convolutions(environ) is ynnpack
