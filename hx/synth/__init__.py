"""hx.synth."""
