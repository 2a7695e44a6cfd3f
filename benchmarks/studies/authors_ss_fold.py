"""SS's fold program trained by the authors' own code (capergroup/houdini), with and without batch norm in
the fold step: does the authors' code reach the paper's 2.15 RMSE with the step's batch norm? (Note
benchmarks/notes/2026-11-26-authors-ss-fold.md.)

    HARNESS/venv/bin/python benchmarks/studies/authors_ss_fold.py --harness HARNESS \
        --mnist PATH/mnist.pkl.gz --stage task1 --t1_pct 10 --t1_epochs 5 --t1_eval_pct 10 --seed 0
    HARNESS/venv/bin/python benchmarks/studies/authors_ss_fold.py --harness HARNESS \
        --mnist PATH/mnist.pkl.gz --stage task2 --prog fold|lstm --seed 0 --pct 10|100 --epochs 30 \
        --threads 1 [--fold_step_norm off]

HARNESS is set up as `the authors' harness` README says (its `src/` holds the authors' repository at its
one commit with the four compatibility patches; a venv with torch 2.13.0 CPU, numpy, pyyaml). Nothing of
the authors' code is copied here: this script imports it from HARNESS/src and drives it.

Task 1 (classify_digit, `compose(nn, nn)`, the program the authors' synthesizer emits first) trains into
`--libdir` (default HARNESS/lib_t1); task 2 (sum_digits) trains one program on that library through the
authors' `Interpreter.evaluate_` (their training loop: batches of one list length each, Adam 1e-3, batch
150, validation and test scored along the way, the best validation state kept): `--prog fold` is the
paper's `fold_l(nn, zeros(1)) . map_l(nn . lib.CNN)` (the map's MLP to `real[1,50]`, or `bool[1,1]` with
`--mid bool1`), `--prog lstm` an LSTM over task 1's whole classifier. `--fold_step_norm off` leaves batch
norm out of the fold step (a `NetMLP` given two inputs), wrapped at run time, everything else the
authors'. The data are the authors' own construction (`get_io_examples_classify_digits`,
`get_io_examples_sum_digits`, `iterate_diff_training_sizes`: 6,000 training lists of lengths 2-5 at
100%, 2,100 validation and 2,100 test lists of lengths 6-8), with their torchvision loader replaced by a
reader of the pickled MNIST (train + valid as the 60,000 training images, pixels x 256 as the raw values).
The last line printed is one JSON object: validation and test RMSE (the authors' `_get_accuracy` returns
minus the RMSE for a real output), the data sizes and wall time. The authors' iterators shuffle with an
unseeded RandomState, so reruns differ in their last digits.
"""
# The authors' modules are imported after their path and shims are set up.
# ruff: noqa: E402

import argparse
import contextlib
import gzip
import json
import os
import pickle
import random
import sys
import time
import types
import warnings

p = argparse.ArgumentParser()
p.add_argument("--harness", required=True, help="the directory whose src/ holds the patched authors' code")
p.add_argument("--mnist", required=True, help="the pickled MNIST (mnist.pkl.gz)")
p.add_argument(
  "--fold_step_norm",
  choices=["on", "off"],
  default="on",
  help="off: no batch norm in a fold step (a NetMLP given two inputs)",
)
p.add_argument("--stage", choices=["task1", "task2", "list2"], required=True)
p.add_argument("--prog", choices=["fold", "lstm"], default="fold")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--data_seed", type=int, default=1337)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--epochs", type=int, default=30)
p.add_argument("--pct", type=int, default=10, help="percentage of training data")
p.add_argument("--t1_epochs", type=int, default=30)
p.add_argument("--t1_pct", type=int, default=10)
p.add_argument("--t1_eval_pct", type=float, default=1.0)
p.add_argument("--libdir", default=None, help="task 1's library (default HARNESS/lib_t1)")
p.add_argument("--json", default=None)
p.add_argument("--cache_cnn", type=int, default=1)
p.add_argument("--mid", choices=["real50", "bool1"], default="real50")
args = p.parse_args()
if args.json:
  args.json = os.path.abspath(args.json)
HERE = os.path.abspath(args.harness)
SRC = os.path.join(HERE, "src")
MNIST = os.path.abspath(args.mnist)
args.libdir = os.path.abspath(args.libdir or os.path.join(HERE, "lib_t1"))

for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
  os.environ[v] = str(args.threads)
sys.path.insert(0, SRC)
os.chdir(SRC)  # load_data checks os.path.exists("Data")

import numpy as np
import torch

torch.set_num_threads(args.threads)
warnings.filterwarnings("ignore")
np.int = (
  int  # SHIM S1: np.int removed in numpy>=1.24 (used by Data/DataProvider.get_images_for_classification)
)


# SHIM S2: stub heavy imports of Data/DataProvider.py and EvaluatorUtils (torchvision, skimage, matplotlib,
# PIL, smallnorb); none is used on the MNIST path once load_data is replaced.
class _Any(types.ModuleType):
  def __getattr__(self, k):
    if k.startswith("__"):
      raise AttributeError(k)
    return lambda *a, **kw: None


for m in [
  "torchvision",
  "skimage",
  "skimage.exposure",
  "skimage.transform",
  "matplotlib",
  "matplotlib.pyplot",
  "PIL",
  "PIL.Image",
  "Data.smallnorb",
  "Data.smallnorb.dataset",
]:
  sys.modules[m] = _Any(m)
sys.modules["Data.smallnorb.dataset"].SmallNORBDataset = object

import Data.DataProvider as DP


def _load_mnist_pkl(self):
  with gzip.open(MNIST) as fh:
    tr, va, te = pickle.load(fh, encoding="latin1")
  # pixel values in the pickle are k/256 exactly; *256 gives the raw uint8 values torchvision would return
  trx = np.concatenate([tr[0], va[0]]).reshape(-1, 1, 28, 28).astype(np.float32) * 256.0
  try_ = np.expand_dims(np.concatenate([tr[1], va[1]]).astype(np.int64), 1)
  tex = te[0].reshape(-1, 1, 28, 28).astype(np.float32) * 256.0
  tey = np.expand_dims(te[1].astype(np.int64), 1)
  return trx, try_, tex, tey


DP.MNISTDataProvider.load_data = _load_mnist_pkl

from HOUDINI.Eval.EvaluatorUtils import (
  get_io_examples_classify_digits,
  get_io_examples_sum_digits,
  iterate_diff_training_sizes,
)
from HOUDINI.FnLibrary import FnLibrary, PPLibItem
from HOUDINI.FnLibraryFunctions import get_items_from_repo
from HOUDINI.Interpreter.Interpreter import Interpreter
from HOUDINI.Interpreter.NeuralModules import NetMLP, SaveableNNModule

if args.fold_step_norm == "off":
  _forward = NetMLP.forward

  def _forward_without_step_norm(self, x, x1=None):
    """A NetMLP given two inputs is a fold step: run it with its batch norm as the identity."""
    if x1 is None or not self.hidden_layer:
      return _forward(self, x, x1)
    bn = self.bn1
    self.bn1 = torch.nn.Identity()
    try:
      return _forward(self, x, x1)
    finally:
      self.bn1 = bn

  NetMLP.forward = _forward_without_step_norm
from HOUDINI.NeuralSynthesizer import NeuralSynthesizer, NeuralSynthesizerSettings
from HOUDINI.Synthesizer import ASTUtils
from HOUDINI.Synthesizer.ASTDSL import mkBoolTensorSort, mkFuncSort, mkListSort, mkRealTensorSort
from HOUDINI.Synthesizer.ReprUtils import repr_py
from HOUDINI.Synthesizer.SymbolicSynthesizer import SymbolicSynthesizer

log = sys.stderr
concrete = [
  mkRealTensorSort([1, 64, 4, 4]),
  mkBoolTensorSort([1, 1]),
  mkRealTensorSort([1, 50]),
]  # Task._mkNSynth


def seed_all(s):
  random.seed(s)
  np.random.seed(s)
  torch.manual_seed(s)


class CachedFrozen(torch.nn.Module):
  """Memoises a frozen library module that stays in eval mode (lib.CNN: conv/pool/relu + Dropout2d, which is
  the identity in eval mode), keyed by the exact bytes of each input image. Its parameters are not trained
  (not in the optimizer); outputs are returned detached, so no gradient flows into it (none would be used)."""

  def __init__(self, mod):
    super().__init__()
    self.mod = mod
    self.cache = {}
    self.hits = 0
    self.misses = 0

  def forward(self, x):
    if isinstance(x, tuple):
      x = x[1]
    assert not self.mod.training
    xn = x.detach().cpu().numpy()
    keys = [r.tobytes() for r in xn]
    miss = [i for i, k in enumerate(keys) if k not in self.cache]
    if miss:
      with torch.no_grad():
        y = self.mod(x[miss])
      for j, i in enumerate(miss):
        self.cache[keys[i]] = y[j].clone()
    self.hits += len(keys) - len(miss)
    self.misses += len(miss)
    return torch.stack([self.cache[k] for k in keys])


def default_lib():
  lib = FnLibrary()
  lib.addItems(get_items_from_repo(["compose", "repeat", "map_l", "fold_l", "conv_l", "zeros"]))
  return lib


def shape_of(prog_str, unk):
  s = prog_str
  for n in unk:
    s = s.replace(n, "nn")
  return s


t_start = time.time()
out = {"stage": args.stage, "seed": args.seed, "threads": args.threads, "torch": torch.__version__}

if args.stage == "task1":
  seed_all(args.data_seed)
  tr, va, te = get_io_examples_classify_digits(6000, 2100)
  out["t1_data"] = {"train_all": int(tr[0].shape[0]), "val": int(va[0].shape[0]), "test": int(te[0].shape[0])}
  # iterate_diff_training_sizes -> take the t1_pct slice
  ((c_tr, n_tr),) = [
    x
    for x, pc in zip(iterate_diff_training_sizes(tr, [2, 10, 20, 50, 100]), [2, 10, 20, 50, 100])
    if pc == args.t1_pct
  ]
  out["t1_data"]["train_used"] = int(n_tr)
  fn_sort = mkFuncSort(mkRealTensorSort([1, 1, 28, 28]), mkBoolTensorSort([1, 10]))  # ClassifyDigitsTask
  lib = default_lib()
  synth = SymbolicSynthesizer(lib, fn_sort, "ss1cd", concrete)
  interp = Interpreter(
    lib, batch_size=150, epochs=args.t1_epochs, lr=0.001, evaluate_every_n_percent=args.t1_eval_pct
  )
  with contextlib.redirect_stdout(log):
    ns = NeuralSynthesizer(interp, synth, lib, fn_sort, True, NeuralSynthesizerSettings(N=100, M=10, K=10))
  cands = [(pr, u) for pr, u in ns.prog_unkinfo_tuples]
  for pr, u in cands:
    print("T1 candidate:", repr_py(pr), {k: str(v) for k, v in u.items()}, file=log)
  pick = [(pr, u) for pr, u in cands if shape_of(repr_py(pr), u) == "lib.compose(nn, nn)"][0]
  prog, unk = pick
  out["t1_program"] = repr_py(prog)
  seed_all(args.seed)
  with contextlib.redirect_stdout(log):
    res = ns.interpret(prog, unk, c_tr, va, te)
  out["t1_val_acc"] = float(res["accuracy"])
  out["t1_test_acc"] = float(res["test_accuracy"])
  # TaskSeq.update_library + lib.save1 equivalent: save modules and their sorts
  os.makedirs(args.libdir, exist_ok=True)
  unk_sort_map = ASTUtils.getUnkNameSortMap(prog)
  sorts = {}
  for name, srt in unk_sort_map.items():
    res["new_fns_dict"][name].save(args.libdir)
    sorts[name] = srt
  with open(os.path.join(args.libdir, "sorts.pickle"), "wb") as fh:
    pickle.dump(sorts, fh)
else:
  with open(os.path.join(args.libdir, "sorts.pickle"), "rb") as fh:
    sorts = pickle.load(fh)
  lib = default_lib()
  for name, srt in sorts.items():  # = loadLibrary1: create_and_load sets eval()
    mod = SaveableNNModule.create_and_load(args.libdir, name)
    if len(srt.rtpe.shape) == 4 and args.cache_cnn:
      mod = CachedFrozen(mod)  # SHIM S3: speed only; frozen eval-mode CNN memoised per image
    lib.addItems([PPLibItem(name, srt, mod)])
  fn_sort = mkFuncSort(
    mkListSort(mkRealTensorSort([1, 1, 28, 28])), mkRealTensorSort([1, 1])
  )  # SumDigitsTask
  synth = SymbolicSynthesizer(lib, fn_sort, "ss1sd", concrete)

  class LogInterp(Interpreter):  # logging only
    def _get_accuracy(self, *a, **k):
      r = Interpreter._get_accuracy(self, *a, **k)
      print("ACC", time.time() - t_start, r, flush=True)
      return r

  interp = LogInterp(lib, batch_size=150, epochs=args.epochs, lr=0.001)
  M = 100 if args.stage == "list2" else 100
  if args.stage == "list2":
    with contextlib.redirect_stdout(log):
      ns = NeuralSynthesizer(
        interp, synth, lib, fn_sort, True, NeuralSynthesizerSettings(N=100000, M=M, K=100)
      )
    cands = ns.prog_unkinfo_tuples
  if args.stage == "list2":
    for i, (pr, u) in enumerate(cands):
      print(i, repr_py(pr), {k: str(v) for k, v in u.items()})
    sys.exit(0)
  cnn = [n for n, s in sorts.items() if len(s.rtpe.shape) == 4][0]
  mlp = [n for n, s in sorts.items() if len(s.rtpe.shape) == 2][0]
  # The synthesizer's enumeration to these programs is too slow here (>5 min for M=100), so the program
  # string and the unknown functions' sorts are written out; they go through the same
  # Interpreter._get_unknown_fns_definitions -> evaluate_ path as Interpreter.evaluate.
  mid = mkRealTensorSort([1, 50]) if args.mid == "real50" else mkBoolTensorSort([1, 1])
  feat = mkRealTensorSort([1, 64, 4, 4])
  r1 = mkRealTensorSort([1, 1])
  if args.prog == "fold":
    prog_str = (f"lib.compose(lib.fold_l(nn_fun_ss1sd_1, lib.zeros(1)), "
                f"lib.map_l(lib.compose(nn_fun_ss1sd_2, lib.{cnn})))")
    unk = {"nn_fun_ss1sd_1": mkFuncSort(r1, mid, r1), "nn_fun_ss1sd_2": mkFuncSort(feat, mid)}
  else:
    prog_str = f"lib.compose(nn_fun_ss1sd_1, lib.map_l(lib.compose(lib.{mlp}, lib.{cnn})))"
    unk = {"nn_fun_ss1sd_1": mkFuncSort(mkListSort(mkBoolTensorSort([1, 10])), r1)}
  from HOUDINI.Interpreter.Interpreter import ProgramOutputType, _get_unknown_fns_definitions

  with contextlib.redirect_stdout(log):
    unk_defs = _get_unknown_fns_definitions(unk, False)
  out["program"] = prog_str
  out["unk_sorts"] = {k: str(v) for k, v in unk.items()}
  out["unk_defs"] = [
    {k: (v if isinstance(v, (int, str)) or v is None else repr(v)) for k, v in d.items()} for d in unk_defs
  ]
  out["fold_step_norm"] = args.fold_step_norm
  seed_all(args.data_seed)
  tr, va, te = get_io_examples_sum_digits(6000, 2100)
  ((c_tr, n_tr),) = [
    x
    for x, pc in zip(iterate_diff_training_sizes(tr, [2, 10, 20, 50, 100]), [2, 10, 20, 50, 100])
    if pc == args.pct
  ]
  out["data"] = {
    "train": [(int(x.shape[0]), int(x.shape[1])) for x, y in c_tr],
    "val": [(int(x.shape[0]), int(x.shape[1])) for x, y in va],
    "test": [(int(x.shape[0]), int(x.shape[1])) for x, y in te],
    "train_total": int(n_tr),
    "epochs": args.epochs,
  }
  seed_all(args.seed)
  t0 = time.time()
  with contextlib.redirect_stdout(log):
    res = interp.evaluate_(
      program=prog_str,
      output_type=ProgramOutputType.INTEGER,
      unknown_fns_def=unk_defs,
      io_examples_tr=c_tr,
      io_examples_val=va,
      io_examples_test=te,
    )
  out["train_wall_s"] = round(time.time() - t0, 1)
  ev = res["evaluations_np"]
  out["val_rmse"] = -float(res["accuracy"])
  out["test_rmse"] = -float(res["test_accuracy"])
  out["n_evals"] = int(ev.shape[0])
  best = int(np.argmax(ev[:, 1]))
  out["best_eval_iter"] = int(ev[best, 0])
  out["last_eval_val_rmse"] = -float(ev[-1, 1])
  out["last_eval_test_rmse"] = -float(ev[-1, 2])
  out["min_test_rmse_seen"] = -float(ev[:, 2].max())
  if args.json:
    np.save(args.json.replace(".json", "_evals.npy"), ev)
out["wall_s"] = round(time.time() - t_start, 1)
line = json.dumps(out)
print(line)
if args.json:
  with open(args.json, "w") as fh:
    fh.write(line + "\n")
