"""Runnable examples: `python -m samebits.examples.rl`."""
