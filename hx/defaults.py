"""Settings fields added after runs were saved: written only where they differ from their defaults.

A run resumes only where its saved settings (`hx.synth.jsonfiles.jsonable`) and its checkpoints' keys
(`hx.compile.ModuleConfig`'s repr) equal what the code writes now. A field added later is marked
`dataclasses.field(default=..., metadata={OMIT_DEFAULT: True})` and left out of both where it holds its
default, so the earlier runs' settings and keys still match. Any layer may import this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["OMIT_DEFAULT", "omit_defaults"]

OMIT_DEFAULT = "hx_omit_default"
"""The field metadata key that marks a field added after runs were saved."""


def omit_defaults(settings: Any) -> list[tuple[str, Any]]:
  """A dataclass instance's (field name, value) pairs, in field order, without the fields marked
  `OMIT_DEFAULT` that hold their defaults."""
  return [(f.name, getattr(settings, f.name)) for f in dataclasses.fields(settings)
          if not (f.metadata.get(OMIT_DEFAULT) and getattr(settings, f.name) == f.default)]
