"""The machine a benchmark ran on, as its JSON output records it.

`cpu_model()` is `lscpu`'s "Model name" (the name RESULTS.md quotes beside each figure), else
/proc/cpuinfo's "model name", else `platform.processor()`, else "unknown".
"""

import platform
import subprocess

__all__ = ["cpu_model"]


def cpu_model() -> str:
  """The CPU's model name (str), from the first source above that answers."""
  try:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
      if line.startswith("Model name:"):
        return line.split(":", 1)[1].strip()
  except (OSError, subprocess.CalledProcessError):
    pass
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or "unknown"
