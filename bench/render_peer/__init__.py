"""The parts of `python -m bench.bench_render_peer`: rendering, ours against Crawlee's
PlaywrightCrawler on the same script-built pages (issue 44's peer).

- `install`: Crawlee's side installed with npm (no browser downloaded), reused while unchanged.
- `detached_site`: the bundled site held by a helper outside both sides' process trees.
- `processes`: a Node run in a session of its own, and stopping what was started, on signals too.
- `side_memory`: the summed RSS and PSS of one side's processes, sampled in a thread.
- `sides`: each side run over the same pages, and its pages checked.
- `report`: the rounds summarised, ours over Crawlee, and the goal as PASS or FAIL.
"""
