"""What a training step at a small batch costs beyond its arithmetic, and whether fusing steps saves it.

    python benchmarks/studies/step_fusion.py [--mnist PATH/mnist.pkl.gz] [--batch_sizes 10,40]
        [--fuse 1,4] [--steps 600]

GS1 and GS2 start with a regression trained at batch 10 for the paper's 1,000 epochs (3,038 steps an
epoch for regress_mnist), so a per-step cost that does not scale with the batch is paid 3 million times.
This script times Tune's training step (`hx.compile.executables.make_train_step`: value_and_grad, Adam,
donated carry) of the paper's regressor `compose(nn_1, nn_2)` (MLP . CNN, 1.1M parameters) on
regress_mnist at the paper's sizes, at each batch size, one step per jitted call (Tune's way) and K steps
per call (the K steps unrolled in one XLA program, never a rolled loop: see DESIGN.md on convolutions in
loops). The time per step t(B) = a + b B over two batch sizes gives the fixed part a. Every configuration
is compiled first, then all run `--steps` steps per round, a warm-up round and `--rounds` timed ones
(medians reported).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--mnist", default=None)
  parser.add_argument("--batch_sizes", default="10,40")
  parser.add_argument("--fuse", default="1,4", help="steps per jitted call")
  parser.add_argument("--steps", type=int, default=600, help="steps timed per configuration")
  parser.add_argument("--rounds", type=int, default=3, help="timed rounds over all configurations")
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)

  import jax
  import jax.numpy as jnp
  import numpy as np
  import optax

  from hx.compile import TuneData, compile_program
  from hx.compile import batching as B
  from hx.compile import executables as X
  from hx.compile import tuning as T
  from hx.data import Sources, sequence
  from hx.lang import infer, parse
  from hx.lang.paper import default_type_variables
  from hx.presets import task_sizes, training_settings

  task = sequence("gs2", seed=0, sizes=task_sizes("paper"), sources=Sources(mnist=args.mnist)).build(0)
  program = parse("compose(nn_1, nn_2)")
  compiled = compile_program(program, default_type_variables(infer(program, {}, task.spec.type).fresh))
  data = TuneData(task.train, task.val, task.test, task.table).on_device()
  objective = X.resolve_objective(compiled, task.objective)
  apply = X.apply_for(compiled, objective)
  n = B.num_examples(task.train)
  out = {"task": task.name, "examples": n, "argv": sys.argv, "rows": []}
  print(f"{task.name}: {n} training examples; {jax.devices()[0].device_kind}")
  configs, key = [], jax.random.PRNGKey(1)
  for batch in (int(b) for b in args.batch_sizes.split(",")):
    config = training_settings(task.spec.kind, "paper").tune_config(seed=0, epochs=1, batch_size=batch)
    tx = optax.adam(config.learning_rate)
    steps = math.ceil(n / batch)
    order = B.epoch_order(jax.random.PRNGKey(0), 0, n, steps * batch)
    one = X.make_train_step(apply, objective, tx, batch, None)
    for fuse in (int(k) for k in args.fuse.split(",")):
      def fused(carry, frozen, table, inputs, targets, order, step, key, fuse=fuse, one=one):
        for k in range(fuse):  # unrolled on purpose
          carry = one(carry, frozen, table, inputs, targets, order, step + k, key)
        return carry
      variables = T.initial_variables(compiled, config, objective, data.train.targets)
      params, state = T._split_variables(dict(variables))
      carry = X.TrainState(params, state, tx.init(params), jnp.float32(0), jnp.int32(-1), jnp.float32(0))
      rest = ((), data.table, data.train.inputs, data.train.targets, order)
      start = time.perf_counter()
      exe = jax.jit(fused, donate_argnums=(0,)).lower(carry, *rest, jnp.int32(0), key).compile()
      calls = min(steps, args.steps) // fuse
      configs.append({"batch": batch, "fuse": fuse, "exe": exe, "carry": jax.tree.map(jnp.copy, carry),
                      "rest": rest, "starts": [jax.device_put(jnp.int32(c * fuse)) for c in range(calls)],
                      "compile_seconds": time.perf_counter() - start, "steps_per_epoch": steps, "ms": []})
  # Rounds over all configurations, so that a change of load touches them alike; round 0 warms up.
  for round_ in range(args.rounds + 1):
    for c in configs:
      carry, start = c["carry"], time.perf_counter()
      for s in c["starts"]:
        carry = c["exe"](carry, *c["rest"], s, key)
      jax.block_until_ready(carry)
      c["carry"] = carry
      if round_:
        c["ms"].append(1e3 * (time.perf_counter() - start) / (len(c["starts"]) * c["fuse"]))
  for c in configs:
    ms = float(np.median(c["ms"]))
    row = {"batch": c["batch"], "fuse": c["fuse"], "ms_per_step": ms, "ms_per_round": c["ms"],
           "us_per_example": 1e3 * ms / c["batch"], "compile_seconds": c["compile_seconds"],
           "steps_per_epoch": c["steps_per_epoch"]}
    out["rows"].append(row)
    print(f"batch {c['batch']:4d}, {c['fuse']} step(s) per call: {ms:6.2f} ms a step (median of "
          f"{args.rounds}: {', '.join(f'{x:.2f}' for x in c['ms'])}), {row['us_per_example']:5.0f} us an "
          f"example; compile {c['compile_seconds']:.1f} s", flush=True)
  single = {r["batch"]: r["ms_per_step"] for r in out["rows"] if r["fuse"] == 1}
  if len(single) >= 2:
    (b0, t0), (b1, t1) = sorted(single.items())[:2]
    slope = (t1 - t0) / (b1 - b0)
    out["fixed_ms"], out["ms_per_example"] = t0 - slope * b0, slope
    print(f"t(B) = {out['fixed_ms']:.2f} ms + {slope:.3f} ms x B (from batches {b0} and {b1})")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1)
  return out


if __name__ == "__main__":
  main()
