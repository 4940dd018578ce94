"""The parts of `python -m bench.bench_render_peer`: rendering, ours against Crawlee's
PlaywrightCrawler on the same script-built pages (issue 44's peer), in 1 or more shards.

- `install`: Crawlee's side installed with npm (no browser downloaded), reused while unchanged.
- `detached_site`: the bundled site held by a helper outside both sides' process trees.
- `processes`: a Node or shard run in a session of its own, and stopping what was started, on
  signals too.
- `shard`: one shard of ours, a process running the engine's chain over its slice.
- `side_memory`: the summed RSS and PSS of one side's processes, and per kind, sampled in a
  thread.
- `kinds`: what kind of process a pid is (python, node, Chromium's browser, renderer...).
- `sides`: each side run in S shards over the same pages, and its pages checked.
- `report`: the rounds summarised, ours over Crawlee, PSS per kind, and the goal as PASS or FAIL.
"""
