"""The parts of `python -m bench.bench_chain_scale`: the whole chain over 10,000 to 1,000,000
tasks in one run (issue 42).

- `memory`: the summed RSS and PSS of a measured command's tree, sampled; a tree's figures.
- `site_watch`: the site's request counts: when the first page was served, each page once.
- `outcome`: what a run left: the run and its materialisations, `scrapeflow status`, bytes.
- `measure`: one size end to end: add the tasks, run the chain, check and size what it left.
- `targets`: issue 42's targets, judged against the sizes measured.
- `leftovers`: whatever the measured commands left running, stopped on the way out.
"""
