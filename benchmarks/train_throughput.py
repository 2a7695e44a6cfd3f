"""Training throughput of the paper's count_digit candidate under Tune, and of its PyTorch peer.

    python benchmarks/train_throughput.py [--epochs 3] [--json out.json]
    python benchmarks/train_throughput.py --peer [--rounds 2] [--threads 2]
    python benchmarks/train_throughput.py --authors HARNESS [--rounds 3] [--threads 2]

The candidate is `compose(nn_a, map_l(compose(nn_b, nn_c)))` at the paper's sizes (appendix C):
nn_c a CNN (conv 5x5 x32, pool, conv 5x5 x64, pool, spatial dropout) from a 1x28x28 image to its 1024
features, nn_b an MLP (hidden 1024, batch norm, dropout) to Tensor<bool>[1], nn_a an LSTM (hidden 100)
from the list of bools to the count, Tensor<real>[1]. Data: 6000 lists of 2-5 images (padded to 5)
for training and 2100 lists of 6-8 (padded to 8) for validation, indices into one table of RANDOM 28x28
images (uniform [0, 1]) with random count targets: the figures are throughput, not accuracy.

Measured: compile time of the training step and of the validation pass (with JAX's persistent cache off
unless --persistent_cache, so that it is a real compilation), steady examples (lists) per second and
seconds per epoch of training, and the time of one validation pass over the 2100 lists (the median of
--val_repeats passes after the compiled one). Also the training step's floating-point operations as XLA
counts them (`cost_analysis`; a `lax.scan` body such as the LSTM's is counted once, which the CNN and
MLP dwarf), the rate a step reaches, and that of a 2048x2048 float32 matmul on the same threads: the
most a step made of convolutions and matmuls could reach.

--peer also trains the same candidate written in PyTorch (benchmarks/torch_reference.py, the optional
`bench` extra) on the same lists and images, the way the authors' code trains it (batches of one list
length), in the same process after hx, and prints both seconds per epoch and their ratio (torch / hx:
above 1 means hx is faster). --rounds alternates hx and torch that many times, so that both see the same
load on a shared machine. --threads restricts the process to that many CPUs (sched_setaffinity, before
JAX starts: XLA's thread pool sizes itself by it) and gives torch as many threads. --peer_device cuda
runs the peer on the GPU (torch's CUDA build), beside hx on JAX's GPU backend: both on one GPU, one after
the other.

--authors HARNESS also times the paper authors' own PyTorch code on the same candidate in every round
(after hx and the peer, so the three alternate): HARNESS is a directory the user set up as
PATH/tools/authors-harness/README.md describes (HARNESS/bench_count.py, the authors' repository in
HARNESS/src, a venv with torch in HARNESS/venv). It runs as a child process (`bench_count.py --threads N
--epochs E+1`, evaluations in the loop off), pinned to the same CPUs, on random data of the same sizes
drawn by the harness (6,000 lists of 2-5 images, batches of one length as the authors' loop draws them);
its first epoch is a warm-up and is dropped. Nothing of the authors' code is imported here. --authors
implies --peer; the harness always builds the paper's sizes (--small does not reach it).

The CNN's blocks train through hx's own CPU kernels where they apply and were timed faster on this CPU
(`hx.compile.conv_pool_choice`; HX_CPU_KERNELS=0 turns them off, =1 forces them): `cnn_block_paths`
prints each block's path with both timings, `cpu_isa` the CPU's widest vector extension and
`kernel_march` the instruction set the kernels were compiled for ($HX_KERNEL_MARCH, else native). When
the step ran the kernels, every round also tunes the same step through XLA's path right after hx's
default (`xla_kernels_*`, and with --authors the authors' code against it): XLA cannot count a custom
call's arithmetic, so that step's floating-point operations are the step's count.

--convolutions xla|ynnpack chooses which library runs XLA:CPU's convolutions (`hx.cpu_convolutions`):
XLA's own kernels, hx's default, with the CNN in one call, or YNNPACK, jaxlib's default, with the CNN
in slices. XLA_FLAGS is read once per process, so comparing the two takes two processes, alternated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.machine import cpu_model  # noqa: E402
from benchmarks.throughput_data import random_data  # noqa: E402


def _restrict_cpus(threads: int) -> int:
  """Pins this process to `threads` CPUs (before JAX starts); the number of CPUs it may use."""
  cpus = sorted(os.sched_getaffinity(0))
  if 0 < threads < len(cpus):
    os.sched_setaffinity(0, cpus[:threads])
  return len(os.sched_getaffinity(0))


def report(figures: dict, json_path: str | None) -> None:
  """Prints the figures one per line and writes them to `json_path` (if given)."""
  width = max(len(k) for k in figures)
  for k, v in figures.items():
    print(f"{k:<{width}}  {v}")
  if json_path:
    with open(json_path, "w") as f:
      json.dump(figures, f, indent=2)


def _peak_rss_mb() -> int:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # KiB on Linux


def last_step_flops() -> float | None:
  """XLA's count (`cost_analysis`) of the floating-point operations of the training step Tune compiled
  last in this process, or None if it has compiled none."""
  from hx.compile.executables import cached_executables

  steps = cached_executables("train_step")
  if not steps:
    return None
  cost = steps[-1].cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  return float(cost.get("flops", 0.0))


def matmul_rate(n: int = 2048, repeats: int = 10) -> float:
  """Floating-point operations per second of an n x n float32 matmul on this process's threads (best of
  `repeats`): the most a step made of convolutions and matmuls could reach on this machine."""
  import jax
  import jax.numpy as jnp

  a = jnp.ones((n, n), jnp.float32)
  matmul = jax.jit(lambda x: x @ x)
  matmul(a).block_until_ready()
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    matmul(a).block_until_ready()
    times.append(time.perf_counter() - t0)
  return 2 * n ** 3 / min(times)


def last_step_runs_kernels() -> bool:
  """Whether the training step Tune compiled last calls hx's CPU kernels (`hx.compile.conv_pool`)."""
  from hx.compile.executables import cached_executables

  steps = cached_executables("train_step")
  return bool(steps) and "hx_conv_pool_" in steps[-1].as_text()


def _flop_rate(sec_per_step: float, flops: float | None) -> dict:
  """XLA's count of the training step's floating-point operations, the rate a step reaches, and the rate
  of a large float32 matmul on this machine: how far a faster epoch can go."""
  if flops is None:
    return {}
  peak = matmul_rate()
  return {"train_step_gflop (XLA cost_analysis, the step through XLA's kernels)": round(flops / 1e9, 2),
          "train_step_gflop_per_s": round(flops / sec_per_step / 1e9, 1),
          "matmul_2048_gflop_per_s (float32, best of 10)": round(peak / 1e9, 1)}


def authors_run(harness: str, epochs: int, threads: int, batch_size: int, train_lists: int,
                val_lists: int) -> dict:
  """One run of the authors' code through the harness in `harness` (a child process on this process's
  CPUs): its JSON figures (`bench_count.py`), with "epoch_train_s" the training epochs after the first."""
  import tempfile

  python = os.path.join(harness, "venv", "bin", "python")
  script = os.path.join(harness, "bench_count.py")
  for path in (python, script):
    if not os.path.exists(path):
      raise SystemExit(f"--authors {harness}: {path} is missing (see the harness README)")
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "authors.json")
    # --eval_every larger than the run: the harness then scores validation and test only at the first
    # and last iteration (both outside the timed training epochs), not every 1% of the iterations.
    cmd = [python, script, "--threads", str(threads), "--epochs", str(epochs + 1),
           "--eval_every", str(10 ** 9), "--batch_size", str(batch_size),
           "--train_per_len", str(max(1, train_lists // 4)), "--val_per_len", str(max(1, val_lists // 3)),
           "--json", out]
    proc = subprocess.run(cmd, cwd=harness, capture_output=True, text=True)
    if proc.returncode != 0:
      raise SystemExit(f"the authors' harness failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    with open(out) as f:
      figures = json.load(f)
  steady = figures["epoch_train_s"][1:] or figures["epoch_train_s"]
  figures["epoch_train_s"] = steady
  figures["sec_per_epoch"] = round(statistics.median(steady), 3)
  return figures


def _hx_xla_run(args, compiled, data, objective, config) -> dict:
  """`_hx_run` with the CNN's blocks through XLA's path (HX_CPU_KERNELS=0, read when the step is traced,
  so Tune's caches are cleared before and after), plus XLA's count of the step's operations ("flops")."""
  from hx.compile.conv_pool import ENABLE_ENV
  from hx.compile.executables import clear_tune_caches

  before = os.environ.get(ENABLE_ENV)
  os.environ[ENABLE_ENV] = "0"
  try:
    clear_tune_caches()
    figures = _hx_run(args, compiled, data, objective, config)
    figures["flops"] = last_step_flops()
  finally:
    if before is None:
      os.environ.pop(ENABLE_ENV)
    else:
      os.environ[ENABLE_ENV] = before
    clear_tune_caches()
  return figures


def cpu_isa() -> str:
  """The widest x86 vector extension this CPU reports (/proc/cpuinfo's flags): "AVX-512", "AVX2", "AVX",
  or the machine's name elsewhere (ARM, say)."""
  try:
    with open("/proc/cpuinfo") as f:
      flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
  except OSError:
    flags = []
  for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX")):
    if flag in flags:
      return name + (" (FMA)" if "fma" in flags else "")
  return platform.machine()


def _hx_run(args, compiled, data, objective, config) -> dict:
  """One tune of the candidate: the per-epoch figures."""
  from hx.compile.tuning import evaluate, tune

  rss_before = _peak_rss_mb()
  start, cpu_start = time.perf_counter(), time.process_time()
  result = tune(compiled, (), data, objective, config)
  total, cpu_total = time.perf_counter() - start, time.process_time() - cpu_start
  if result.failed:
    raise SystemExit(f"training failed: {result.failed}")
  rss_training = _peak_rss_mb()
  epoch_train = [h.train_seconds for h in result.history]
  val_passes = []
  for _ in range(args.val_repeats):
    t0 = time.perf_counter()
    evaluate(compiled, result.variables, (), data.val, objective, table=data.table, config=config)
    val_passes.append(time.perf_counter() - t0)
  return {
    # Peak resident memory of the process (ru_maxrss, which only grows): before the first tune (data
    # on the device, nothing compiled), after tune (training with a validation pass per epoch), and
    # after the validation passes timed here.
    "peak_rss_mb": {"before": rss_before, "after_training": rss_training, "after_evaluation": _peak_rss_mb()},
    "init_s": round(result.init_seconds, 3),
    "compile_s": round(result.compile_seconds, 2),
    "epoch_train_s": [round(s, 3) for s in epoch_train],
    "sec_per_epoch": round(statistics.median(epoch_train), 3),
    "val_pass_in_training_s": [round(h.val_seconds, 3) for h in result.history],
    "val_pass_s": round(statistics.median(val_passes), 3),
    "train_loss": [round(h.train_loss, 4) for h in result.history],
    "total_s": round(total, 2),
    # CPU seconds this process used in tune (init, compile, training, validation), per epoch after taking
    # out the init and compile wall time: a bound on the work per epoch that other processes do not inflate.
    "process_cpu_s_per_epoch": round(
        (cpu_total - result.init_seconds - result.compile_seconds) / max(1, len(result.history)), 2),
  }


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--epochs", type=int, default=3, help="epochs to time (all are steady: compiled first)")
  parser.add_argument("--train_lists", type=int, default=6000)
  parser.add_argument("--val_lists", type=int, default=2100)
  parser.add_argument("--num_images", type=int, default=10000, help="rows of the random image table")
  parser.add_argument("--batch_size", type=int, default=150)
  parser.add_argument("--val_repeats", type=int, default=3)
  parser.add_argument("--eval_images", type=int, default=8192,
                      help="most images (list elements) per evaluation chunk: 1,024 lists of 8")
  parser.add_argument("--small", action="store_true", help="tiny module sizes (a smoke test, not a figure)")
  parser.add_argument("--persistent_cache", action="store_true",
                      help="leave JAX's persistent compilation cache on (compile time is then a cache load)")
  parser.add_argument("--peer", action="store_true",
                      help="also train the PyTorch peer (benchmarks/torch_reference.py) and print the ratio")
  parser.add_argument("--rounds", type=int, default=1,
                      help="with --peer or --authors: alternate hx, the peer and the authors' code "
                           "this many times")
  parser.add_argument("--authors", default=None, metavar="HARNESS",
                      help="also time the authors' code through this harness directory (implies --peer)")
  parser.add_argument("--threads", type=int, default=2,
                      help="CPUs for the process (affinity) and torch's thread count; 0: all")
  parser.add_argument("--peer_device", default="cpu",
                      help="with --peer: torch's device, cpu or cuda (a GPU build of torch; hx then runs on "
                           "JAX's default backend, which should be the same GPU)")
  parser.add_argument("--convolutions", choices=("xla", "ynnpack"), default=None,
                      help="which library runs XLA:CPU's convolutions (hx.cpu_convolutions): xla, XLA's own "
                           "kernels (hx's default; the CNN trains in one call), or ynnpack (jaxlib's "
                           "default; the CNN trains in slices). Unset: what XLA_FLAGS and hx choose")
  parser.add_argument("--json", default=None, help="write the figures to this file")
  args = parser.parse_args(argv)
  if args.convolutions:  # before JAX starts its backend, which reads XLA_FLAGS once
    from hx.cpu_convolutions import FLAG, choose_convolutions, jaxlib_has_flag
    if not jaxlib_has_flag():  # XLA would stop the process at an unknown flag
      raise SystemExit(f"--convolutions: this jaxlib is not one where XLA's {FLAG} was checked (0.10.x)")
    choose_convolutions(args.convolutions)
  args.peer = args.peer or args.authors is not None
  if args.peer and args.peer_device != "cpu":
    # JAX takes 75% of a GPU's memory at start by default; torch then runs out beside it.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

  if not args.persistent_cache:
    os.environ["HX_COMPILATION_CACHE"] = "0"
  cpus = _restrict_cpus(args.threads)
  load_start = os.getloadavg()[0]

  import flax
  import jax
  import jaxlib
  import optax

  from hx.compile.losses import Objective
  from hx.compile.lower import compile_program
  from hx.compile.modules import ModuleConfig
  from hx.compile.tuning import TuneConfig, TuneData
  from hx.cpu_convolutions import ynnpack_convolutions
  from hx.lang.parser import parse
  from hx.lang.types import FunctionType, ListType, TensorType

  image = TensorType("real", (1, 28, 28))
  bool1, real1 = TensorType("bool", (1,)), TensorType("real", (1,))
  module_config = ModuleConfig() if not args.small else ModuleConfig(
    mlp_hidden=32, cnn_channels=(4, 8), lstm_hidden=16)
  features = TensorType("real", (16 * module_config.cnn_channels[-1],))
  program = parse("compose(nn_a, map_l(compose(nn_b, nn_c)))")
  types = {"nn_c": FunctionType(image, features), "nn_b": FunctionType(features, bool1),
           "nn_a": FunctionType(ListType(bool1), real1)}
  compiled = compile_program(program, types, module_config)

  table, train, val = random_data(args.train_lists, args.val_lists, args.num_images)
  data = TuneData(train, val, None, table).on_device()
  objective = Objective("mse", "rmse")
  config = TuneConfig(batch_size=args.batch_size, epochs=args.epochs, eval_images=args.eval_images)

  rounds, xla_rounds = [], []
  for _ in range(max(1, args.rounds) if args.peer else 1):
    hx_figures = _hx_run(args, compiled, data, objective, config)
    if last_step_runs_kernels():
      xla_rounds.append(_hx_xla_run(args, compiled, data, objective, config))
    peer = None
    if args.peer:
      from benchmarks import torch_reference
      peer = torch_reference.run(table, *train.inputs, train.targets, *val.inputs, val.targets,
                                 epochs=args.epochs, batch_size=args.batch_size,
                                 eval_batch_size=max(1, args.eval_images // 8), threads=cpus,
                                 small=args.small, device=args.peer_device)
    authors = None
    if args.authors:
      authors = authors_run(args.authors, args.epochs, cpus, args.batch_size, args.train_lists,
                            args.val_lists)
    rounds.append((hx_figures, peer, authors))

  first = rounds[0][0]
  steps = -(-args.train_lists // args.batch_size)
  sec_per_epoch = statistics.median(s for hx_figures, *_ in rounds for s in hx_figures["epoch_train_s"])
  figures = {
    "program": str(program),
    "module_config": "small" if args.small else "paper",
    "train_lists": args.train_lists, "val_lists": args.val_lists, "batch_size": args.batch_size,
    "steps_per_epoch": steps,
    "images_per_epoch": steps * args.batch_size * train.inputs.values.shape[1],
    "init_s": first["init_s"],
    "compile_s": first["compile_s"],
    "persistent_cache": bool(args.persistent_cache),
    "cpu_convolutions": "ynnpack (sliced CNN)" if ynnpack_convolutions() else "xla (one call)",
    "epoch_train_s": [s for hx_figures, *_ in rounds for s in hx_figures["epoch_train_s"]],
    "sec_per_epoch": round(sec_per_epoch, 3),
    "examples_per_s": round(steps * args.batch_size / sec_per_epoch, 1),
    "ms_per_step": round(1000 * sec_per_epoch / steps, 2),
    "val_pass_in_training_s": first["val_pass_in_training_s"],
    "val_pass_s": first["val_pass_s"],
    "train_loss": first["train_loss"],
    "total_s": first["total_s"],
    "peak_rss_mb": first["peak_rss_mb"],
    # From the last round: in later rounds nothing is compiled, so the figure is not skewed by subtracting
    # compile wall time (which a loaded machine stretches) from process CPU time.
    "process_cpu_s_per_epoch": rounds[-1][0]["process_cpu_s_per_epoch"],
  }
  flops = last_step_flops()
  from hx.compile import conv_pool_choice
  figures["cpu_isa"] = cpu_isa()
  # Each CNN block's path as hx chose it on this CPU (`hx.compile.conv_pool_choice`), with both timings.
  from hx.compile.conv_pool import march, mode
  figures["kernel_march"] = march()
  figures["cnn_block_paths"] = {
      block.name: {"path": "hx's kernels" if c.kernels else "XLA's", "kernels_ms": c.kernels_ms,
                   "xla_ms": c.xla_ms} for block, c in conv_pool_choice.choices().items()
  } if mode() == "auto" else f"forced by HX_CPU_KERNELS ({mode()}): not timed"
  if xla_rounds:
    # XLA cannot count a custom call's arithmetic: the step's count is that of the same step compiled
    # through XLA's path (HX_CPU_KERNELS=0), which every round also timed, right after hx's default.
    flops = xla_rounds[-1]["flops"]
    xla_sec = statistics.median(s for x in xla_rounds for s in x["epoch_train_s"])
    figures.update({"cpu_kernels": "hx (hx.compile.conv_pool)",
                    "xla_kernels_epoch_train_s (HX_CPU_KERNELS=0, each round)":
                        [s for x in xla_rounds for s in x["epoch_train_s"]],
                    "xla_kernels_sec_per_epoch": round(xla_sec, 3),
                    "xla_kernels_train_loss": xla_rounds[0]["train_loss"],
                    "ratio_xla_kernels (s / s with hx's kernels)": round(xla_sec / sec_per_epoch, 2)})
  else:
    figures["cpu_kernels"] = "XLA's"
  figures.update(_flop_rate(sec_per_epoch / steps, flops))
  if args.peer:
    peers = [p for _, p, _ in rounds]
    torch_sec = statistics.median(s for p in peers for s in p["epoch_train_s"])
    ratios = [round(p["sec_per_epoch"] / hx_figures["sec_per_epoch"], 2) for hx_figures, p, _ in rounds]
    figures.update({
      "torch_epoch_train_s": [s for p in peers for s in p["epoch_train_s"]],
      "torch_sec_per_epoch": round(torch_sec, 3),
      "torch_steps_per_epoch": peers[0]["steps_per_epoch"],
      "torch_images_per_epoch": peers[0]["images_per_epoch"],
      "torch_val_pass_s": round(statistics.median(p["val_pass_s"] for p in peers), 3),
      "torch_train_loss": peers[0]["train_loss"],
      "ratio_per_round (torch s / hx s)": ratios,
      "ratio (torch s / hx s, medians)": round(torch_sec / sec_per_epoch, 2),
      "torch_threads": peers[0]["threads"],
      "torch_device": peers[0]["device"],
      # The authors' schedule (their code scores validation and test every 1% of the iterations) for one
      # candidate of 20 epochs, projected from the peer's figures: 20 epochs + 100 x (val + test pass,
      # the test split being as large as validation's 2100 lists).
      "authors_schedule_projected_s (torch, 20 epochs)": round(
          20 * torch_sec + 200 * statistics.median(p["val_pass_s"] for p in peers), 1),
    })
  if args.authors:
    authors = [a for *_, a in rounds]
    per_round = [(hx_figures["sec_per_epoch"], p["sec_per_epoch"], a["sec_per_epoch"])
                 for hx_figures, p, a in rounds]
    hx_med = statistics.median(h for h, _, _ in per_round)
    authors_med = statistics.median(a for _, _, a in per_round)
    figures.update({
      "side_by_side_per_round (s per epoch: hx, peer, authors)": per_round,
      "hx_sec_per_epoch (median of round medians)": hx_med,
      "peer_sec_per_epoch (median of round medians)": statistics.median(p for _, p, _ in per_round),
      "authors_sec_per_epoch (median of round medians)": authors_med,
      "authors_epoch_train_s": [s for a in authors for s in a["epoch_train_s"]],
      # The harness draws train_lists // 4 lists of each length 2-5, none padded.
      "authors_images_per_epoch": (authors[0]["data"]["train_lists"] // 4
                                   * sum(authors[0]["data"]["train_lengths"])),
      "authors_batches_per_epoch": authors[0]["data"]["batches_per_epoch"],
      "authors_seconds_per_eval_pass (val + test)": authors[0]["seconds_per_eval_pass"],
      "ratio_authors_per_round (authors s / hx s)": [round(a / h, 2) for h, _, a in per_round],
      "ratio_authors (authors s / hx s, medians)": round(authors_med / hx_med, 2),
      **({"ratio_authors_xla_path_per_round (authors s / hx s through XLA's path)":
              [round(a / x["sec_per_epoch"], 2) for (_, _, a), x in zip(per_round, xla_rounds)],
          "ratio_authors_xla_path (authors s / hx s through XLA's path, medians)":
              round(authors_med / statistics.median(x["sec_per_epoch"] for x in xla_rounds), 2)}
         if xla_rounds else {}),
      "authors_harness": authors[0]["harness"],
      "authors_param_count": authors[0]["param_count"],
    })
  figures.update({
    "backend": jax.default_backend(),
    "device": str(jax.devices()[0].device_kind),
    "cpu": cpu_model(), "cpu_count": os.cpu_count(), "cpus_used": cpus,
    # Other processes on the machine slow the figures down: the 1-minute load average before and after.
    "loadavg_1min_start": round(load_start, 2),
    "loadavg_1min_end": round(os.getloadavg()[0], 2),
    "versions": {"python": platform.python_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                 "flax": flax.__version__, "optax": optax.__version__},
    "date": datetime.date.today().isoformat(),
    "images": "random uniform [0,1] 1x28x28 (throughput only)",
  })
  if args.peer:
    figures["versions"]["torch"] = rounds[0][1]["torch"]
  report(figures, args.json)
  return figures


if __name__ == "__main__":
  main()
