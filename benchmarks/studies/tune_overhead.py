"""What one call to Tune costs besides its training steps, on GS2 task 2 at the paper's sizes.

    python benchmarks/studies/tune_overhead.py [--mnist PATH/mnist.pkl.gz] [--until 0.005] [--calls 4]

Successive halving and checkpointed training call `hx.compile.tune` many times per candidate (a rung, a
chunk between saves), each resuming or starting a run. On GS2 task 2 (1,070,000 training grids, 7,134
steps an epoch) whatever a call does once per epoch's worth of data (drawing a permutation of the training
set, per-step setup) is paid again by every short call. This script trains the paper's relaxation
candidate `compose(repeat(10, conv_g(nn_1)), map_g(compose(lib.nn_gs2_1, lib.nn_gs2_2)))` as synthesis
would (the regressor memoised as a prefix table; here the exact cell states of
`benchmarks/studies/relaxation_learning.py`, so no regressor need be trained: the step is the same) for
`--until` of an epoch from the start, `--calls` times (the first compiles), and prints each call's wall time
next to the part Tune reports as training (its steps) and evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--until", type=float, default=0.005, help="epochs per call (0.005: 36 steps)")
  parser.add_argument("--calls", type=int, default=4)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)

  import jax.numpy as jnp

  from benchmarks.studies.relaxation_learning import exact_states, untrained_regressor
  from hx.compile import compile_program, make_frozen, tune
  from hx.compile.memo import frozen_prefix
  from hx.data import Sources, sequence
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.presets import task_sizes, training_settings
  from hx.synth import task_context

  seq = sequence("gs2", seed=0, sizes=task_sizes("paper"), sources=Sources(mnist=args.mnist))
  library = untrained_regressor(seq)
  task = seq.build(1)
  program = parse("compose(repeat(10, conv_g(nn_1)), map_g(compose(lib.nn_gs2_1, lib.nn_gs2_2)))")
  fresh = default_type_variables(infer(program, library.types(), task.spec.type).fresh)
  _, rest = frozen_prefix(program)
  compiled = compile_program(rest, fresh)
  config = training_settings(task.spec.kind, "paper").tune_config(epochs=1, seed=0)
  context = task_context(task, library, tune_config=config)
  data = context.ready.data._replace(table=jnp.asarray(exact_states(task)))
  frozen = make_frozen(compiled, library.variables())
  out = {"argv": sys.argv, "until": args.until, "calls": []}
  for _ in range(args.calls):
    start = time.perf_counter()
    r = tune(compiled, frozen, data, context.ready.objective, config, until=args.until)
    wall = time.perf_counter() - start
    call = {"steps": r.steps_run, "wall_seconds": wall, "train_seconds": r.train_seconds,
            "eval_seconds": r.eval_seconds, "compile_seconds": r.compile_seconds}
    out["calls"].append(call)
    print(f"{r.steps_run} steps: wall {wall:.2f} s; training {r.train_seconds:.2f} s, evaluation "
          f"{r.eval_seconds:.2f} s, compilation {r.compile_seconds:.2f} s", flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


if __name__ == "__main__":
  main()
