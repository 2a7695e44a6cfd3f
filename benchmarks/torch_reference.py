"""The paper's count_digit candidate written directly in PyTorch: the peer of train_throughput.py.

    python benchmarks/train_throughput.py --peer        # both, one invocation, same data, the ratio
    python benchmarks/torch_reference.py [--epochs 3]   # this peer alone, on the same random data

`compose(nn_a, map_l(compose(nn_b, nn_c)))` at the paper's sizes (appendix C), our own code (nothing
copied from the authors'), with the layers and their order of `hx.compile.modules`:

  nn_c  CNN, image 1x28x28 -> 1024 features: conv 5x5 x32 -> ReLU -> 2x2 max-pool -> conv 5x5 x64 -> ReLU
        -> 2x2 max-pool -> spatial dropout (Dropout2d, 0.5: whole feature maps) -> flatten (64*4*4).
  nn_b  MLP, 1024 -> Tensor<bool>[1]: Linear(1024) -> BatchNorm1d -> ReLU -> Dropout(0.5) -> Linear(1)
        -> sigmoid.
  nn_a  LSTM, List<Tensor<bool>[1]> -> Tensor<real>[1]: LSTM(hidden 100) over the list, Linear(1) of its
        last hidden state.

Trained the way the authors' code trains list tasks: every batch holds lists of ONE length (the training
lists are bucketed by length, each bucket shuffled and cut into batches of at most `batch_size`, the
batches of all buckets shuffled together), so no element is padding; Adam (learning rate 1e-3), MSE.
The images are gathered from one table by index per batch, as hx gathers them inside its step.

Differences from hx that do not change the work: torch flattens the features in (C, H, W) order and hx
in (H, W, C) (a fixed permutation of nn_b's first weight matrix), and hx drops whole channels after the
last pooling where a torch user might put Dropout2d before it; both orders give the same values, as
max-pooling commutes with scaling a channel by 0 or 2.

hx itself never imports torch: this file needs the optional `bench` extra (`pip install -e '.[bench]'`,
torch's CPU wheel).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.throughput_data import random_data  # noqa: E402  (the data train_throughput.py uses)

__all__ = ["CountDigit", "length_batches", "train_epoch", "evaluate", "run"]


class CountDigit(nn.Module):
  """compose(nn_a, map_l(compose(nn_b, nn_c))) on a batch of lists of one length."""

  def __init__(self, image_shape: tuple[int, int, int] = (1, 28, 28), channels: tuple[int, ...] = (32, 64),
               kernel: int = 5, pool: int = 2, cnn_dropout: float = 0.5, mlp_hidden: int = 1024,
               mlp_dropout: float = 0.5, lstm_hidden: int = 100):
    super().__init__()
    c, h, w = image_shape
    layers: list[nn.Module] = []
    for c_out in channels:
      layers += [nn.Conv2d(c, c_out, kernel), nn.ReLU(), nn.MaxPool2d(pool)]
      c, h, w = c_out, (h - kernel + 1) // pool, (w - kernel + 1) // pool
    layers += [nn.Dropout2d(cnn_dropout), nn.Flatten()]
    self.features = c * h * w
    self.nn_c = nn.Sequential(*layers)
    self.nn_b = nn.Sequential(nn.Linear(self.features, mlp_hidden), nn.BatchNorm1d(mlp_hidden), nn.ReLU(),
                              nn.Dropout(mlp_dropout), nn.Linear(mlp_hidden, 1), nn.Sigmoid())
    self.nn_a_lstm = nn.LSTM(1, lstm_hidden, batch_first=True)
    self.nn_a_out = nn.Linear(lstm_hidden, 1)

  def forward(self, images: torch.Tensor) -> torch.Tensor:
    """images (B, L, C, H, W), every list of length L -> (B, 1) counts."""
    b, length = images.shape[:2]
    digits = self.nn_b(self.nn_c(images.reshape((b * length,) + tuple(images.shape[2:]))))  # map_l
    _, (h_last, _) = self.nn_a_lstm(digits.reshape(b, length, 1))
    return self.nn_a_out(h_last[-1])


def length_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
  """One epoch's batches: example indices, each batch of one list length, in a shuffled order."""
  batches = []
  for length in np.unique(lengths):
    members = rng.permutation(np.flatnonzero(lengths == length))
    batches += [members[i:i + batch_size] for i in range(0, len(members), batch_size)]
  return [batches[i] for i in rng.permutation(len(batches))]


def _images(table: torch.Tensor, idx: np.ndarray, lengths: np.ndarray, batch: np.ndarray) -> torch.Tensor:
  length = int(lengths[batch[0]])
  return table[torch.from_numpy(idx[batch, :length].astype(np.int64)).to(table.device)]


def train_epoch(model: CountDigit, opt: torch.optim.Optimizer, table: torch.Tensor, idx: np.ndarray,
                lengths: np.ndarray, targets: torch.Tensor, batch_size: int,
                rng: np.random.Generator) -> tuple[float, int, int]:
  """One epoch of training; (mean loss, steps, images through the CNN)."""
  model.train()
  loss_fn = nn.MSELoss()
  total, steps, images = 0.0, 0, 0
  for batch in length_batches(lengths, batch_size, rng):
    x = _images(table, idx, lengths, batch)
    loss = loss_fn(model(x), targets[torch.from_numpy(batch).to(targets.device)])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += float(loss.detach())
    steps += 1
    images += x.shape[0] * x.shape[1]
  return total / max(steps, 1), steps, images


@torch.no_grad()
def evaluate(model: CountDigit, table: torch.Tensor, idx: np.ndarray, lengths: np.ndarray,
             targets: torch.Tensor, batch_size: int) -> float:
  """RMSE over a split in inference mode (running statistics, no dropout), batches of one length."""
  model.eval()
  sq = 0.0
  for batch in length_batches(lengths, batch_size, np.random.default_rng(0)):
    y = model(_images(table, idx, lengths, batch))
    sq += float(torch.sum((y - targets[torch.from_numpy(batch).to(targets.device)]) ** 2))
  return (sq / len(lengths)) ** 0.5


def run(table: np.ndarray, train_idx: np.ndarray, train_mask: np.ndarray, train_targets: np.ndarray,
        val_idx: np.ndarray, val_mask: np.ndarray, val_targets: np.ndarray, *, epochs: int = 3,
        batch_size: int = 150, eval_batch_size: int = 1024, threads: int = 2, seed: int = 0,
        small: bool = False, device: str = "cpu") -> dict:
  """Trains the candidate for `epochs` and scores validation after each; the timings.

  Args:
    table: (num_images, 1, 28, 28) float32 images.
    train_idx, train_mask: (n, L) int32 indices into `table` and bool masks (a prefix of each row real);
      the same arrays hx's ListBatch holds.
    train_targets: (n, 1) float32.
    val_idx, val_mask, val_targets: the validation split, likewise.
    epochs, batch_size, eval_batch_size, threads, seed: as named (threads: torch.set_num_threads).
    small: tiny sizes (a smoke test), as train_throughput.py --small.
    device: torch's device ("cpu", or "cuda" where torch has a GPU build: the table, targets and model
      live there; every step reads its loss back to the host, as on the CPU, which also makes the
      epoch's wall time include the GPU's work).

  Returns:
    {"epoch_train_s": [...], "sec_per_epoch": median, "steps_per_epoch", "images_per_epoch",
     "val_pass_s": median over epochs, "train_loss": [...], "val_rmse": [...], "threads", "torch"}.
  """
  torch.set_num_threads(threads)
  torch.manual_seed(seed)
  rng = np.random.default_rng(seed)
  sizes = {} if not small else dict(channels=(4, 8), mlp_hidden=32, lstm_hidden=16)
  model = CountDigit(tuple(table.shape[1:]), **sizes).to(device)
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)
  table_t = torch.from_numpy(np.ascontiguousarray(table, np.float32)).to(device)
  train_len, val_len = train_mask.sum(1), val_mask.sum(1)
  train_y = torch.from_numpy(np.asarray(train_targets, np.float32).reshape(-1, 1)).to(device)
  val_y = torch.from_numpy(np.asarray(val_targets, np.float32).reshape(-1, 1)).to(device)
  epoch_s, val_s, losses, rmses = [], [], [], []
  steps = images = 0
  for _ in range(epochs):
    t0 = time.perf_counter()
    loss, steps, images = train_epoch(model, opt, table_t, train_idx, train_len, train_y, batch_size, rng)
    t1 = time.perf_counter()
    rmses.append(evaluate(model, table_t, val_idx, val_len, val_y, eval_batch_size))
    val_s.append(time.perf_counter() - t1)
    epoch_s.append(t1 - t0)
    losses.append(loss)
  return {"epoch_train_s": [round(s, 3) for s in epoch_s],
          "sec_per_epoch": round(statistics.median(epoch_s), 3),
          "steps_per_epoch": steps, "images_per_epoch": images,
          "val_pass_s": round(statistics.median(val_s), 3), "train_loss": [round(v, 4) for v in losses],
          "val_rmse": [round(v, 4) for v in rmses], "threads": threads, "device": device,
          "torch": torch.__version__}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--small", action="store_true")
  parser.add_argument("--device", default="cpu", help="torch device: cpu, or cuda with a GPU build of torch")
  args = parser.parse_args()
  table, train, val = random_data(6000, 2100, 10000)
  train, val = (*train.inputs, train.targets), (*val.inputs, val.targets)
  for k, v in run(table, *train, *val, epochs=args.epochs, threads=args.threads, small=args.small,
                  device=args.device).items():
    print(f"{k:<18} {v}")


if __name__ == "__main__":
  main()
