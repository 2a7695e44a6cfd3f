"""hx.bin."""
