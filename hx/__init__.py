"""hx: HOUDINI in JAX."""
