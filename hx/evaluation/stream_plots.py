"""The plots of a long stream's run (`hx.evaluation.stream_metrics`): each task's test score and transfer,
its cost, and the memory after it, against the task's index (`plot_stream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from hx.atomic import write_atomically
from hx.evaluation.config import method_label
from hx.evaluation.stream_memory import LibraryPoint, MemoryPoint
from hx.evaluation.stream_metrics import TaskRow, _method_rank

if TYPE_CHECKING:
  import os
  import types

  from matplotlib.axes import Axes
  from matplotlib.figure import Figure

__all__ = ["plot_stream"]


def plot_stream(directory: os.PathLike | str, rows: Sequence[TaskRow], memory: Sequence[MemoryPoint],
                library: Sequence[LibraryPoint] = ()) -> list[Path]:
  """Writes plots/stream_scores.png (test scores and transfer against the task's index),
  plots/stream_cost.png (wall seconds, candidates considered and trained) and plots/stream_memory.png
  (library functions; every method's bytes) into `directory`; returns their paths."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  out_dir = Path(directory) / "plots"
  out_dir.mkdir(parents=True, exist_ok=True)
  methods = sorted({r.method for r in rows}, key=_method_rank)
  # One colour and marker per method in every panel (the baselines' memory curves can coincide).
  style = {m: dict(color=f"C{i}", marker="osd^v"[i % 5]) for i, m in enumerate(methods)}
  paths = []
  for name, draw in (("stream_scores.png", _plot_scores), ("stream_cost.png", _plot_cost),
                     ("stream_memory.png", _plot_memory)):
    fig = draw(plt, methods, style, rows, memory, library)
    fig.tight_layout()
    paths.append(out_dir / name)
    write_atomically(paths[-1], lambda f, fig=fig: fig.savefig(f, format="png", dpi=100))
    plt.close(fig)
  return paths


def _legends(axes: Iterable[Axes]) -> None:
  for ax in axes:
    if ax.get_legend_handles_labels()[0]:
      ax.legend(fontsize=7)


def _plot_scores(plt: types.ModuleType, methods: list[str], style: dict, rows: Sequence[TaskRow],
                 memory: Sequence[MemoryPoint], library: Sequence[LibraryPoint]) -> Figure:
  fig, axes = plt.subplots(3, 1, figsize=(9, 8.5), sharex=True)
  for method in methods:
    mine = [r for r in rows if r.method == method]
    for ax, metric in zip(axes[:2], ("error", "rmse")):
      pts = [(r.index, r.test) for r in mine if r.metric == metric and r.test is not None]
      if pts:
        ax.plot(*zip(*pts), ls="none", ms=3.5, alpha=0.8, label=method_label(method), **style[method])
    pts = [(r.index, r.transfer) for r in mine if r.transfer is not None]
    if pts and method != "standalone":
      axes[2].plot(*zip(*pts), ls="none", ms=3.5, alpha=0.8, label=method_label(method), **style[method])
  axes[0].set_ylabel("test error (%)")
  axes[1].set_ylabel("test RMSE")
  axes[2].set_ylabel("transfer (÷ standalone)")
  axes[2].axhline(1.0, color="grey", lw=0.8)
  axes[2].set_xlabel("task")
  _legends(axes)
  fig.suptitle("Each task's test score and forward transfer", fontsize=10)
  return fig


def _plot_cost(plt: types.ModuleType, methods: list[str], style: dict, rows: Sequence[TaskRow],
               memory: Sequence[MemoryPoint], library: Sequence[LibraryPoint]) -> Figure:
  fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
  for method in methods:
    mine = [r for r in rows if r.method == method and not r.same_as]
    axes[0].plot([r.index for r in mine], [r.wall_seconds for r in mine], ms=3, lw=0.8,
                 label=method_label(method), **style[method])
    if method.startswith("houdini_"):
      axes[1].plot([r.index for r in mine], [r.candidates for r in mine], "o-", ms=3, lw=0.8,
                   label=f"{method_label(method)}: considered")
      axes[1].plot([r.index for r in mine], [r.trained for r in mine], "s--", ms=3, lw=0.8,
                   label=f"{method_label(method)}: trained")
  axes[0].set_ylabel("wall seconds")
  axes[1].set_ylabel("candidates")
  axes[1].set_xlabel("task")
  _legends(axes)
  fig.suptitle("Each task's cost", fontsize=10)
  return fig


def _plot_memory(plt: types.ModuleType, methods: list[str], style: dict, rows: Sequence[TaskRow],
                 memory: Sequence[MemoryPoint], library: Sequence[LibraryPoint]) -> Figure:
  fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
  if library:
    axes[0].plot([p.index for p in library], [p.functions for p in library], "o-", ms=3, lw=0.8)
  axes[0].set_ylabel("library functions")
  for method in methods:
    pts = sorted((p.index, p.bytes / 1e6) for p in memory if p.method == method)
    if pts:
      axes[1].plot(*zip(*pts), ms=3, lw=0.8, alpha=0.8, label=method_label(method), **style[method])
  axes[1].set_ylabel("memory (MB)")
  axes[1].set_xlabel("task")
  _legends(axes[1:])
  fig.suptitle("Memory after each task: HOUDINI's library, the baselines' networks", fontsize=10)
  return fig
