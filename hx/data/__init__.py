"""hx.data."""
