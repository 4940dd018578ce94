"""The parts of `python -m bench.bench_refresh`: the learned revisit schedule against the fixed
refresh age over a simulated week on the bundled site's `/changing/` pages (issue 45).

- `model`: the policies' names, a policy's stored copies and tallies, and what a fetch records.
- `picks`: what each policy fetches in a round within its budget.
- `optimum`: Cho and Garcia-Molina's steady-state optimum for the mix, computed, not simulated.
- `simulate`: one scenario over real HTTP: the seed crawl, then the hourly rounds; the figures.
- `show`: a scenario's tables and goal lines.
"""
