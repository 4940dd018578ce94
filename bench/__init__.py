"""Benchmarks (scripts, not tests): run them with `python -m bench.<name>`."""
