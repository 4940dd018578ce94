"""The engine benchmark's pieces, run by `python -m bench.bench_engine`.

- `baseline`: variant B, the bare aiohttp loop, and the task stream both variants consume.
- `child`: one measurement in its own process, printed as one JSON line.
- `parent`: starts the children, alternates the variants, prints the figures against targets.
"""
