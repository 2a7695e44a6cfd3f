"""hx.compile."""
