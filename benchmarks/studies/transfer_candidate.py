"""A transfer candidate with a frozen library CNN: inline (the CNN in every step) against its prefix table.

    python benchmarks/studies/transfer_candidate.py [--epochs 3] [--json out.json]

The candidate is `compose(nn_a, map_l(compose(nn_b, lib.nn_bench_1)))`: lib.nn_bench_1 the paper's CNN
(conv 5x5 x32, pool, conv 5x5 x64, pool, spatial dropout; 1x28x28 -> 1024 features) frozen in a library
(random weights, non-trivial batch statistics: it is a stand-in for a CNN an earlier task trained),
nn_b a fresh MLP (hidden 1024) to Tensor<bool>[1], nn_a a fresh LSTM (hidden 100) to the count. The
data are those of `benchmarks/train_throughput.py`: 6000 training lists of 2-5 RANDOM images (padded to
5) and 2100 validation lists of 6-8, batch 150; figures are throughput, not accuracy.

Two ways to train it, one after the other in one process, each from a cold start (nothing compiled and
no prefix table computed before it):

  inline   the whole program compiled with the library's specs: the frozen CNN runs forward (inference
           mode) on every image of every step and of every validation pass;
  memo     what synthesis does (`hx.synth.executors.train_program` with an `hx.compile.memo.PrefixTables`):
           the CNN runs once over the image table (10,000 rows) and `compose(nn_a, map_l(nn_b))` trains
           on the 1024-feature table.

Printed: seconds per epoch of training (median), one validation pass, compile time, the prefix table's
seconds (memo), the whole candidate's wall time for --epochs epochs, and the ratios inline / memo. Also
each training step's floating-point operations as XLA counts them, a large float32 matmul's rate on the
same threads, and from them the memoised epoch's floor: its step's operations at that rate, the fastest
any implementation of the same step could run here (`arithmetic_floor`).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.machine import cpu_model  # noqa: E402
from benchmarks.throughput_data import random_data  # noqa: E402
from benchmarks.train_throughput import (  # noqa: E402
  _restrict_cpus,
  last_step_flops,
  matmul_rate,
  report,
)


def _library(module_config, features):
  """A library holding the paper's CNN, random but frozen, with running statistics moved off 0/1."""
  import jax

  from hx.compile.lower import compile_program
  from hx.lang.parser import parse
  from hx.lang.types import FunctionType, TensorType
  from hx.synth.library import Library, Trained

  image = TensorType("real", (1, 28, 28))
  compiled = compile_program(parse("nn_c"), {"nn_c": FunctionType(image, features)}, module_config)
  variables = compiled.init(jax.random.key(1))
  variables["batch_stats"] = jax.tree.map(lambda a: a + 0.3, variables["batch_stats"])
  return Library().add(Trained(compiled, variables), sequence="bench", task="cnn").library


def _figures(result, total: float) -> dict:
  epochs = [h.train_seconds for h in result.history]
  return {
    "compile_s": round(result.compile_seconds, 2),
    "epoch_train_s": [round(s, 3) for s in epochs],
    "sec_per_epoch": round(statistics.median(epochs), 3),
    "val_pass_s": round(statistics.median(h.val_seconds for h in result.history), 3),
    "train_loss": [round(h.train_loss, 4) for h in result.history],
    "val_score": round(float(result.val_score), 4),
    "candidate_s": round(total, 2),
  }


def arithmetic_floor(inline_flops: float, memo_flops: float, peak: float, steps: int,
                     inline_sec_per_epoch: float) -> dict:
  """How fast the memoised candidate's epoch could be at most: its training step's floating-point
  operations (XLA's count) x `steps` per epoch at `peak` operations per second (a large matmul's rate on
  this machine), and what that allows against the inline candidate's `inline_sec_per_epoch`.

  A memoised table removes the frozen CNN's work and nothing else: the fresh functions' forward and
  backward remain, and no implementation computing the same step runs them faster than the machine's
  matmul rate. So `best_ratio` bounds the speed-up any such implementation reaches here.
  """
  floor = memo_flops * steps / peak
  return {"inline_step_gflop": round(inline_flops / 1e9, 2), "memo_step_gflop": round(memo_flops / 1e9, 2),
          "arithmetic ratio (inline / memo step flops)": round(inline_flops / memo_flops, 2),
          "matmul_2048_gflop_per_s": round(peak / 1e9, 1),
          "memo floor sec_per_epoch (its flops at the matmul rate)": round(floor, 3),
          "best ratio sec_per_epoch (inline / memo floor)": round(inline_sec_per_epoch / floor, 2)}


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--train_lists", type=int, default=6000)
  parser.add_argument("--val_lists", type=int, default=2100)
  parser.add_argument("--num_images", type=int, default=10000, help="rows of the random image table")
  parser.add_argument("--batch_size", type=int, default=150)
  parser.add_argument("--small", action="store_true", help="tiny module sizes (a smoke test, not a figure)")
  parser.add_argument("--threads", type=int, default=2, help="CPUs for the process (affinity); 0: all")
  parser.add_argument("--json", default=None, help="write the figures to this file")
  args = parser.parse_args(argv)

  os.environ["HX_COMPILATION_CACHE"] = "0"  # compile times are real compilations
  cpus = _restrict_cpus(args.threads)
  load_start = os.getloadavg()[0]

  import flax
  import jax
  import jaxlib
  import optax

  from hx.compile.fitting import Prepared
  from hx.compile.losses import Objective
  from hx.compile.lower import compile_program, make_frozen
  from hx.compile.memo import PrefixTables
  from hx.compile.modules import ModuleConfig
  from hx.compile.tuning import TuneConfig, TuneData, tune
  from hx.lang.parser import parse
  from hx.lang.types import FunctionType, ListType, TensorType
  from hx.synth.executors import TaskContext, train_program

  module_config = ModuleConfig() if not args.small else ModuleConfig(
    mlp_hidden=32, cnn_channels=(4, 8), lstm_hidden=16)
  features = TensorType("real", (16 * module_config.cnn_channels[-1],))
  bool1, real1 = TensorType("bool", (1,)), TensorType("real", (1,))
  library = _library(module_config, features)
  (cnn,) = library.specs()
  program = parse(f"compose(nn_a, map_l(compose(nn_b, lib.{cnn})))")
  types = {"nn_b": FunctionType(features, bool1), "nn_a": FunctionType(ListType(bool1), real1)}

  table, train, val = random_data(args.train_lists, args.val_lists, args.num_images)
  data = TuneData(train, val, None, table).on_device()
  objective = Objective("mse", "rmse")
  config = TuneConfig(batch_size=args.batch_size, epochs=args.epochs, seed=0)

  start = time.perf_counter()
  compiled = compile_program(program, types, module_config, library.specs())
  result = tune(compiled, make_frozen(compiled, library.variables()), data, objective, config)
  inline = _figures(result, time.perf_counter() - start)
  inline_flops = last_step_flops()

  prefixes = PrefixTables()
  t0 = time.perf_counter()
  jax.block_until_ready(prefixes.table(library, (cnn,), data.table))
  prefix_s = time.perf_counter() - t0
  context = TaskContext(Prepared(data, objective, config), library, module_config)
  start = time.perf_counter()
  _, result = train_program(program, types, context, seed=0, prefixes=prefixes)
  memo = _figures(result, time.perf_counter() - start + prefix_s)
  memo["prefix_table_s"] = round(prefix_s, 2)
  memo_flops = last_step_flops()

  figures = {
    "program": str(program), "module_config": "small" if args.small else "paper",
    "train_lists": args.train_lists, "val_lists": args.val_lists, "batch_size": args.batch_size,
    "table_rows": args.num_images, "epochs": args.epochs,
    "inline": inline, "memo": memo,
    "ratio sec_per_epoch (inline / memo)": round(inline["sec_per_epoch"] / memo["sec_per_epoch"], 1),
    "ratio candidate_s (inline / memo)": round(inline["candidate_s"] / memo["candidate_s"], 1),
    **arithmetic_floor(inline_flops, memo_flops, matmul_rate(), math.ceil(args.train_lists / args.batch_size),
                       inline["sec_per_epoch"]),
    "backend": jax.default_backend(), "cpu": cpu_model(), "cpu_count": os.cpu_count(), "cpus_used": cpus,
    "loadavg_1min_start": round(load_start, 2), "loadavg_1min_end": round(os.getloadavg()[0], 2),
    "versions": {"python": platform.python_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                 "flax": flax.__version__, "optax": optax.__version__},
    "date": datetime.date.today().isoformat(),
    "images": "random uniform [0,1] 1x28x28 (throughput only)",
  }
  report(figures, args.json)
  return figures


if __name__ == "__main__":
  main()
