"""What saving a Tune run to disk costs (`hx.compile.checkpoint`): one file's size and seconds.

    python benchmarks/studies/checkpoint_overhead.py [--repeats 5] [--epochs 4] [--rounds 3] [--json out.json]

The program is GS2 task 1's regressor as the paper writes it, `compose(nn_1, nn_2)` on
Tensor<real>[1,28,28] -> Tensor<real>[2] at the paper's module sizes (the CNN to 1,024 features, the MLP
with 1,024 hidden units: about 1.1 million parameters), trained on RANDOM images (the figures are sizes
and seconds, not accuracy): 2,000 training and 500 validation images, batch 10.

Printed:
  - a paused run's checkpoint (parameters, Adam's two moments, the best epoch's variables): bytes, and the
    median seconds of `save_checkpoint` (written, synced and renamed) and `load_checkpoint` (read and
    checked against the program's variables) over --repeats;
  - a finished run's file (the chosen variables only): bytes and seconds;
  - `tune` against `tune_checkpointed` over --epochs epochs, in turn (each first in one round of three)
    for --rounds after one unmeasured `tune`, with a file after every
    epoch (`every_seconds` 0, the most often it writes) and with the default (120: here one epoch to
    measure the pace, then the rest): median wall seconds and their ratios to `tune` (the scores must be
    the same, or the script stops).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.machine import cpu_model  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--epochs", type=int, default=4)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)

  import jax
  import numpy as np

  from hx.compile import TuneConfig, TuneData, compile_program, objective_for_type, tune
  from hx.compile.checkpoint import Checkpoint, load_checkpoint, save_checkpoint, tune_checkpointed
  from hx.compile.values import Split
  from hx.lang import parse
  from hx.lang.types import FunctionType, TensorType

  image, out = TensorType("real", (1, 28, 28)), TensorType("real", (2,))
  features = TensorType("real", (1024,))
  program = parse("compose(nn_1, nn_2)")
  compiled = compile_program(program, {"nn_1": FunctionType(features, out),
                                       "nn_2": FunctionType(image, features)})
  rng = np.random.default_rng(0)

  def split(n):
    return Split(rng.uniform(0, 1, (n, 1, 28, 28)).astype(np.float32),
                 rng.uniform(0, 65, (n, 2)).astype(np.float32))
  data = TuneData(split(2000), split(500)).on_device()
  objective = objective_for_type(out)
  config = TuneConfig(batch_size=10, epochs=args.epochs)
  params = sum(x.size for x in jax.tree.leaves(compiled.init(jax.random.key(0))["params"]))

  paused = tune(compiled, (), data, objective, config, until=1).state
  finished = tune(compiled, (), data, objective, TuneConfig(batch_size=10, epochs=1))
  figures: dict = {"parameters": int(params)}
  with tempfile.TemporaryDirectory() as tmp:
    for name, run in (("paused", paused), ("finished", finished)):
      path = os.path.join(tmp, f"{name}.npz")
      saves, loads = [], []
      for _ in range(args.repeats):
        t0 = time.perf_counter()
        save_checkpoint(path, "bench", run)
        t1 = time.perf_counter()
        load_checkpoint(path, "bench", compiled, config)
        loads.append(time.perf_counter() - t1)
        saves.append(t1 - t0)
      figures[name] = {"bytes": os.path.getsize(path), "save_s": statistics.median(saves),
                       "load_s": statistics.median(loads)}
      print(f"{name} run: {os.path.getsize(path) / 1e6:.1f} MB, save {statistics.median(saves) * 1e3:.0f} "
            f"ms, load {statistics.median(loads) * 1e3:.0f} ms (medians of {args.repeats})", flush=True)

    times: dict[str, list[float]] = {"tune": [], "every0": [], "every120": []}
    plain = tune(compiled, (), data, objective, config)
    for round_ in range(args.rounds):
      ways = ("tune", "every0", "every120")
      for way in ways[round_ % 3:] + ways[:round_ % 3]:  # each first in turn
        t0 = time.perf_counter()
        if way == "tune":
          r = tune(compiled, (), data, objective, config)
        else:
          where = Checkpoint(os.path.join(tmp, f"{way}_{round_}.npz"), "bench",
                             every_seconds=float(way.removeprefix("every")))
          r = tune_checkpointed(compiled, (), data, objective, config, where)
        times[way].append(time.perf_counter() - t0)
        if (plain.val_score, plain.best_epoch) != (r.val_score, r.best_epoch):
          raise SystemExit(f"scores differ: {plain.val_score} against {r.val_score}")
  med = {k: statistics.median(v) for k, v in times.items()}
  figures["seconds"] = times
  figures["median_s"] = med
  print(f"{args.epochs} epochs, medians of {args.rounds} rounds: tune {med['tune']:.2f} s; tune_checkpointed "
        f"with a file every epoch {med['every0']:.2f} s (ratio {med['every0'] / med['tune']:.3f}), with the "
        f"default every_seconds {med['every120']:.2f} s (ratio {med['every120'] / med['tune']:.3f}); the "
        "same scores", flush=True)
  out_json = {"argv": sys.argv, "figures": figures, "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
              "load": os.getloadavg()},
              "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "versions": {"python": platform.python_version(), "jax": jax.__version__}}
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out_json, f, indent=1)
  return out_json


if __name__ == "__main__":
  main()
