"""The floor of the Dagster benchmarks: a trivial asset over the same dynamic partitions.

    python -m dagster asset materialize -m bench.floor_defs --select trivial \\
        --partition-range FIRST...LAST          # what Dagster alone costs for N partitions
    python -m bench.floor_defs add KEYS_FILE    # add the keys (one a line) as partitions

The asset does nothing, so a run of it measures Dagster's own per-run and per-partition costs
(run and step events, one materialisation event per partition in SQLite) on the same
partitions definition name (`tasks`), backfill policy and keys as `scrape`.
"""

import os
import sys
import time
from pathlib import Path

import dagster as dg

# The same name as scrapeflow's, in its own (fresh) Dagster home.
tasks_partitions_def = dg.DynamicPartitionsDefinition(name="tasks")
ADD_CHUNK_KEYS = 10_000  # as scrapeflow_dagster.lib.partitions


# When set, the asset's body writes there, once, the time it started and the modules loaded by
# then: Dagster's own time from the command to the first line of an asset (`bench.ledger`).
BODY_STARTED_ENV = "FLOOR_BODY_STARTED_FILE"


@dg.asset(partitions_def=tasks_partitions_def, backfill_policy=dg.BackfillPolicy.single_run())
def trivial(context) -> None:  # type: ignore[no-untyped-def]
    """Nothing at all, for every partition of the run."""
    noted = os.environ.get(BODY_STARTED_ENV)
    if noted and not os.path.exists(noted):
        Path(noted).write_text(f"{time.time()} {len(sys.modules)}\n")


defs = dg.Definitions(assets=[trivial])


def add_keys(path: Path) -> int:
    """Add the keys of `path` as `tasks` partitions, the way `scrapeflow tasks add` does
    (new keys only, chunks of 10,000), without storing any params."""
    keys = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    instance = dg.DagsterInstance.get()
    existing = set(instance.get_dynamic_partitions(tasks_partitions_def.name or "tasks"))
    new = [k for k in dict.fromkeys(keys) if k not in existing]
    for start in range(0, len(new), ADD_CHUNK_KEYS):
        instance.add_dynamic_partitions("tasks", new[start : start + ADD_CHUNK_KEYS])
    return len(new)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "add":
        sys.exit("usage: python -m bench.floor_defs add KEYS_FILE")
    t0 = time.perf_counter()
    added = add_keys(Path(sys.argv[2]))
    print(f"{added} new partitions in {time.perf_counter() - t0:.2f} s")
