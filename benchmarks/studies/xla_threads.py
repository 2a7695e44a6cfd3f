"""Which settings bound XLA:CPU's threads: per-thread CPU time of a jitted conv + matmul under each.

    python benchmarks/studies/xla_threads.py

Runs the same jitted function (a 5x5 convolution of 300 28x28 images and a 4096x1024 matmul, ten
calls after a compiled one) in a new process per setting and prints, per setting, the CPU seconds of
each thread that used more than 0.2 s. A setting that bounds XLA to one thread leaves one busy
thread (plus the compiler's). Settings: none; XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1"; the process pinned to one core (os.sched_setaffinity, what
hx.synth.parallel.ProcessExecutor does before JAX starts).
"""

from __future__ import annotations

import os
import subprocess
import sys

_CHILD = r'''
import os, sys, time
if sys.argv[1] == "pin":
  os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
import jax, jax.numpy as jnp
x = jnp.ones((300, 1, 28, 28)); w = jnp.ones((32, 1, 5, 5)) * 0.01; m = jnp.ones((4096, 1024)) * 0.001
f = jax.jit(lambda x, w, m: jnp.sum(jax.lax.conv_general_dilated(x, w, (1, 1), "VALID"))
            + jnp.sum(jnp.tanh(m @ m.T)))
f(x, w, m).block_until_ready()
t, c = time.perf_counter(), time.process_time()
for _ in range(10):
  f(x, w, m).block_until_ready()
wall, cpu = time.perf_counter() - t, time.process_time() - c
busy = []
for tid in os.listdir("/proc/self/task"):
  fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
  ticks = int(fields[11]) + int(fields[12])
  if ticks > 20:
    busy.append(round(ticks / os.sysconf("SC_CLK_TCK"), 2))
print(f"wall {wall:.2f} s, process CPU {cpu:.2f} s, busy threads' CPU s {sorted(busy, reverse=True)}")
'''


def main() -> None:
  settings = [("none", {}, "free"),
              ("XLA_FLAGS one thread", {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
                                                     "intra_op_parallelism_threads=1"}, "free"),
              ("pinned to one core", {}, "pin")]
  for name, env, mode in settings:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], env={**os.environ, **env}, capture_output=True,
                         text=True, check=True).stdout.strip()
    print(f"{name:24s} {out}")


if __name__ == "__main__":
  main()
