"""hx's CPU kernels built for each x86 instruction set this CPU runs ($HX_KERNEL_MARCH): each build takes
its own vector width (4 floats with SSE4.2, x86-64-v2; 8 with AVX2 and FMA, x86-64-v3; 16 with AVX-512,
x86-64-v4), equals XLA's values and gradients exactly on integers over every block it admits (the property
test), and gives the same bits whatever the thread count (the threads test). Each build runs those tests
in a child process, which loads the one library a process can. A build the CPU cannot run is only
built (the source must compile for it), then skipped.
"""

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hx.compile.conv_pool as cp
from tests.compile import kernel_gate

pytestmark = [*kernel_gate.pytestmark(), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# -march, the vector width it gives, the CPU flags it needs (/proc/cpuinfo's names).
BUILDS = [("x86-64-v2", 4, {"sse4_2", "popcnt"}), ("x86-64-v3", 8, {"avx2", "fma", "bmi2"}),
          ("x86-64-v4", 16, {"avx512f", "avx512bw", "avx512dq", "avx512vl"})]


def _cpu_flags() -> set[str]:
  try:
    with open("/proc/cpuinfo") as f:
      return set(next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []))
  except OSError:
    return set()


def _child(march: str, *args: str) -> subprocess.CompletedProcess:
  env = {**os.environ, cp.MARCH_ENV: march, cp.ENABLE_ENV: "1", kernel_gate.REQUIRE_ENV: "1"}
  return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=1200)


@pytest.mark.parametrize("march, lanes, flags", BUILDS, ids=[b[0] for b in BUILDS])
def test_each_instruction_set_build_equals_xla_and_ignores_threads(march, lanes, flags):
  if platform.machine() not in ("x86_64", "AMD64"):
    pytest.skip(f"x86 builds; this machine is {platform.machine()}")
  missing = flags - _cpu_flags()
  if missing:
    # Built all the same, so that a source that does not compile for it fails here too.
    done = _child(march, "-c", "import hx.compile.conv_pool as cp; print(cp.build_library())")
    assert done.returncode == 0, done.stderr[-3000:]
    pytest.skip(f"built; this CPU cannot run a {march} build (it lacks {', '.join(sorted(missing))})")
  done = _child(march, "-c", "import hx.compile.conv_pool as cp; print(cp.vector_lanes(), cp.library_path())")
  assert done.returncode == 0, done.stderr
  got_lanes, library = done.stdout.split()
  assert int(got_lanes) == lanes
  assert Path(library) != cp.library_path() or march == cp.march()  # a library of its own
  done = _child(march, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "not slow",
                "tests/compile/test_conv_pool_property.py", "tests/compile/test_conv_pool_threads.py")
  tail = done.stdout[-3000:]
  assert done.returncode == 0, tail + done.stderr[-2000:]
  assert re.search(r"\b\d+ passed\b", tail) and "skipped" not in tail and "failed" not in tail, tail
