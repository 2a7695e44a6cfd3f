"""`python -m hx.synth.worker FD CPUS [POOL]`: one worker process of `hx.synth.parallel.ProcessExecutor`.

FD is the file descriptor of its connection to the executor; CPUS the cores to pin it to ("0,1"), or
"-" for no pinning. It pins itself before anything imports JAX's backend, then serves jobs. With POOL
(cores, "0,1": `ProcessExecutor(lend=True)`) it starts on POOL, so that XLA sizes its thread pool by
POOL, and pins every thread to CPUS once JAX's backend exists.
"""

import os
import sys


def main(argv: list[str]) -> None:
  if len(argv) not in (3, 4):
    raise SystemExit(f"usage: python -m hx.synth.worker FD CPUS [POOL] (got {argv[1:]})")
  cpus = None if argv[2] == "-" else [int(c) for c in argv[2].split(",")]
  pool = [int(c) for c in argv[3].split(",")] if len(argv) == 4 else None
  if cpus:
    # Before importing hx (and so JAX): XLA:CPU sizes its thread pool by the CPUs it may run on.
    os.sched_setaffinity(0, set(pool or cpus))
  from hx.synth.parallel import worker_main

  worker_main(int(argv[1]), cpus, pool)


if __name__ == "__main__":
  main(sys.argv)
