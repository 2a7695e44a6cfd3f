"""Every CNN block the presets train on the paper's sequences, and the path hx's default takes for each.

    python benchmarks/studies/cnn_block_paths.py [--presets paper,quick] [--rows 128]

For each image type of the paper's seven sequences' tasks (lists' and graphs' elements included) and
each preset's module sizes, walks the CNN's blocks (conv k x k, 2x2 max-pool: the first without its input
gradient, the later ones with it) and prints one JSON line per block: whether hx's CPU kernels can run it
(`hx.compile.conv_pool.usable`), and where they can, both paths timed as hx's default times them
(`hx.compile.conv_pool_choice.time_block`, `--rows` random images: the best of five alternated calls
each) and the path the default takes (the faster). The blocks the kernels cannot run train through XLA's
path under the default and under HX_CPU_KERNELS=0 alike. Times the blocks afresh: the kept choices
(~/.cache/hx/kernels/choices) are neither read nor written. Run on an idle machine.
"""

from __future__ import annotations

import argparse
import json


def image_shapes() -> list[tuple[int, int, int]]:
  """The (C, H, W) of every image type in the paper's sequences' tasks, sorted."""
  from hx.data.sequences import SEQUENCES, sequence
  from hx.lang.types import GraphType, ListType, TensorType, function_parts, is_image

  def images(t):
    if isinstance(t, (ListType, GraphType)):
      return images(t.elem)
    return [tuple(t.shape)] if isinstance(t, TensorType) and is_image(t) else []

  return sorted({s for name in SEQUENCES for spec in sequence(name).tasks
                 for a in function_parts(spec.type)[0] for s in images(a)})


def main(argv: list[str] | None = None) -> list[dict]:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--presets", default="paper,quick", help="comma-separated preset names")
  parser.add_argument("--rows", type=int, default=128, help="images per timed call")
  args = parser.parse_args(argv)
  if args.rows < 1:
    parser.error("--rows must be positive")

  import jax.numpy as jnp

  import hx  # noqa: F401  (XLA's own convolutions, as hx trains)
  from hx.compile import conv_pool
  from hx.compile import conv_pool_choice as cc
  from hx.presets import EVALUATION_PRESETS

  presets = args.presets.split(",")
  unknown = [p for p in presets if p not in EVALUATION_PRESETS]
  if unknown:
    parser.error(f"--presets: unknown {', '.join(unknown)}; the presets are {', '.join(EVALUATION_PRESETS)}")
  lines = []
  for preset in presets:
    mc = EVALUATION_PRESETS[preset].module_config
    for c, h, w in image_shapes():
      shape, channels = (h, w, c), c
      for i, out in enumerate(mc.cnn_channels):
        block = cc.Block(shape, (mc.cnn_kernel, mc.cnn_kernel, channels, out), i > 0)
        can = conv_pool.usable((args.rows, *block.image), block.kernel, mc.cnn_pool, jnp.float32,
                               input_gradient=block.input_gradient)
        line = {"preset": preset, "block": block.name, "kernels_can_run": can}
        if can:
          choice = cc.time_block(block, rows=args.rows)
          line |= {"kernels_ms": choice.kernels_ms, "xla_ms": choice.xla_ms,
                   "default": "hx's kernels" if choice.kernels else "XLA's path"}
        else:
          line["default"] = "XLA's path"
        print(json.dumps(line), flush=True)
        lines.append(line)
        side = [(s - mc.cnn_kernel + 1) // mc.cnn_pool for s in shape[:2]]
        shape, channels = (side[0], side[1], out), out
  return lines


if __name__ == "__main__":
  main()
