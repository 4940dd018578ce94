"""Plain helpers shared by the test tiers (`defs/`, `reliability/`, `fakes/`); fixtures stay in
each tier's conftest.py.

- `paths`: the repository root, the venv's `bin/` and its Python.
- `ports`: a free TCP port on 127.0.0.1.
- `processes`: temp Dagster homes and the environment of child processes on them, process-group
  stop and kill, waiting for a condition or for a process's output.
- `sites`: the bundled site in a child process, shaped (latency, stamped answers), and its
  control routes.
- `partitions`: Dagster's partition statuses and the tags of a run over a partition range.
- `ledger`: read-only queries of the DuckDB ledger.
- `tasks`: tasks stored through the engine's intake, and added as partitions.
- `runs`: in-process runs of the executor assets with their resources.
- `sensors`: a sensor evaluation context wired as the definitions wire it.

Imports the packages under test only; the tiers and the fakes import it, never the reverse.
"""
