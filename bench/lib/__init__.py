"""Measuring code shared by the benchmarks; it imports only the standard library and `bench.lib`.

- `repo`: where the repository is and which Python runs the measured commands.
- `local_http`: a free port, waiting for a local server, GraphQL POSTs.
- `site`: the bundled local site in its own process.
- `homes`: temporary Dagster homes and the environment of a measured command.
- `proc_stats`: CPU of one process, of the whole machine, and a process tree, from /proc.
- `tree_sampler`: peak RSS and CPU of every process of a tree, sampled in a thread.
- `measured`: one command run to its end with its wall time, CPU and peak RSS.
- `service`: a long-lived command (dagster dev, the webserver) in its own process group.
- `report`: tables, JSON reports and the machine's description.
- `smaps`: a process's proportional set size (PSS) from /proc.
- `summary_values`, `summary_chain`, `cost_rows`: `make bench`'s console summary rows.
- `headlines`, `doc_table`: the rows of docs/performance.md's current-figures table, written in
  place.
"""
