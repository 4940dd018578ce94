"""A run in a process of its own, for the status-count tests (`status_helpers.start_child`).

    python -m scrapeflow_dagster_tests.engine.history.status_child DATA_DIR BATCH_ROWS JOURNAL

reads one JSON line of steps from stdin, plays them as the runner does (status file, then the
Ledger's row), prints `ready <rows still buffered>` and waits; when its stdin closes it closes
its Ledger without a sync (the rows then wait in the spool).
"""

import sys
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.engine.history.status_helpers import Step, play_step


def main() -> None:
    layout = DataLayout(Path(sys.argv[1]))
    steps = [Step(*fields) for fields in orjson.loads(sys.stdin.readline())]
    ledger = Ledger(
        layout.db_path,
        spool_dir=layout.spool_dir,
        batch_rows=int(sys.argv[2]),
        journal=sys.argv[3] == "1",
    )
    for step in steps:
        play_step(layout, ledger, step)
    print(f"ready {ledger.buffered_rows}", flush=True)
    sys.stdin.read()
    ledger.close(sync=False)


if __name__ == "__main__":
    main()
