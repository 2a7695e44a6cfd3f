"""A damaged entry of the persistent compilation cache (truncated by a process killed while JAX wrote it,
or altered) is removed with one warning naming it, compiled again to the same result, and cached anew:
the next process loads it silently."""

import os
import subprocess
import sys

import pytest

# A process that turns hx's cache on in the directory HX_COMPILATION_CACHE_DIR names, runs two jitted
# functions and prints their results.
PROGRAM = """
import jax, jax.numpy as jnp
from hx.compile.cache import ensure_compilation_cache
ensure_compilation_cache()
x = jnp.arange(16.0).reshape(4, 4)
print(repr(float(jax.jit(lambda x: (jnp.sin(x) * 3 + x @ x.T).sum())(x))))
print(repr(float(jax.jit(lambda x: jnp.tanh(x).max())(x))))
"""


def _run(cache):
  env = dict(os.environ, HX_COMPILATION_CACHE_DIR=str(cache), HX_COMPILATION_CACHE="1")
  out = subprocess.run([sys.executable, "-W", "always", "-c", PROGRAM], capture_output=True, text=True,
                       env=env, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout, [line for line in out.stderr.splitlines() if "compile cache entry" in line]


def _truncate(path):
  data = path.read_bytes()
  path.write_bytes(data[:len(data) // 2])


def _flip(path):
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0x10
  path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _flip])
@pytest.mark.slow
def test_a_damaged_entry_is_removed_with_a_warning_and_cached_anew(tmp_path, damage):
  cache = tmp_path / "jax"
  expected, warned = _run(cache)
  assert not warned
  entries = sorted(cache.glob("*-cache"))
  assert entries
  whole = {p.name: p.read_bytes() for p in entries}
  for p in entries:
    damage(p)

  again, warned = _run(cache)
  assert again == expected
  assert len(warned) == len(entries), warned
  assert all("cannot be read" in line and "removed, compiled again and cached anew" in line
             for line in warned)
  assert sorted(line.split("hx's compile cache entry ")[1].split(" cannot")[0] for line in warned) == [
      str(p) for p in entries]
  assert {p.name: p.read_bytes() for p in sorted(cache.glob("*-cache"))}.keys() == whole.keys()

  third, warned = _run(cache)
  assert third == expected and not warned  # loaded from the entries written anew
