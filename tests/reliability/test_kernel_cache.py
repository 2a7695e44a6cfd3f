"""The CPU kernels' library in the kernel cache, damaged (truncated, as a copy cut short leaves it): built
again with one warning naming it, never a crash, and the next process loads it silently."""

import os
import subprocess
import sys

import pytest

# A process that loads the kernels from HX_KERNEL_CACHE_DIR and prints whether they loaded and from where.
PROGRAM = """
import warnings
warnings.simplefilter("always")
from hx.compile import conv_pool
print(conv_pool.load_kernels())
print(conv_pool._library)
"""


def _load(cache):
  env = dict(os.environ, HX_KERNEL_CACHE_DIR=str(cache), HX_CPU_KERNELS="1")
  out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  loaded, library = out.stdout.split()
  return loaded == "True", library, [line for line in out.stderr.splitlines() if "kernels" in line]


def _damaged(tmp_path):
  """A kernel cache whose library is cut to half its length; the library's path."""
  from hx.compile import conv_pool

  try:
    built = conv_pool.build_library()  # the one the default cache holds (built there once)
  except conv_pool.KernelBuildError as err:
    pytest.skip(f"no kernels on this machine: {err}")
  cache = tmp_path / "kernels"
  cache.mkdir()
  data = built.read_bytes()
  (cache / built.name).write_bytes(data[:len(data) // 2])
  return cache, cache / built.name


@pytest.mark.slow
def test_a_truncated_kernel_library_is_built_again_never_a_crash(tmp_path):
  cache, library = _damaged(tmp_path)
  loaded, path, warned = _load(cache)
  assert loaded and path == str(library)
  assert any(str(library) in line for line in warned), warned  # what was wrong with it, said once
  assert _load(cache) == (True, str(library), [])
