"""Dagster's record constructors compiled before a run's creation can lend them its frame
(`storage/dagster_internals/record_constructors.py`).

- In this process: once the storage is imported, each record a run's creation builds first is
  compiled, and building one in a frame that holds a large object no longer keeps the object.
- Through the real `dagster asset materialize` (its own `main`, run from a script that looks at
  the process at exit): after a chain run, no compiled record constructor of the process holds
  the run, its plan or its planned events.
"""

import gc
import importlib
import json
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

import scrapeflow_dagster.storage.batches.buffer  # noqa: F401 - compiles the records as it is imported
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.dagster_internals.record_constructors import (
    RUN_RECORDS,
    is_compiled,
)
from scrapeflow_dagster_tests.storage.retention_homes import ChainHome, write_chain_home

# Runs the real Dagster CLI in this interpreter and, at exit, lists what each compiled record
# constructor's namespace holds of a run (a run, a plan, a list of events). Guarded: the
# forkserver of step processes imports the main module again.
_CLI_AND_LOOK = """
import atexit, gc, json, sys

def look(report):
    gc.unfreeze()  # the run's steps froze what came before them
    from dagster_shared.record import JitCheckedNew
    held = []
    for cls in [o for o in gc.get_objects() if isinstance(o, type)]:
        new = cls.__dict__.get("__new__")
        names = getattr(new, "__globals__", None)
        if names is None or isinstance(new, JitCheckedNew) or new.__name__ != "__checked_new__":
            continue
        for name, value in names.items():
            kind = type(value).__name__
            if kind in ("DagsterRun", "ExecutionPlanSnapshot") or name == "events":
                held.append([cls.__qualname__, name, kind])
    with open(report, "w") as out:
        json.dump(held, out)

if __name__ == "__main__":
    atexit.register(look, sys.argv[1])
    from dagster._cli import main
    sys.argv = ["dagster", *sys.argv[2:]]
    main()
"""


class _Held:
    """An object whose life a weak reference can watch."""


def _record_built_beside(cls: type, arguments: dict[str, Any]) -> weakref.ref[_Held]:
    held = _Held()  # a local of the frame that builds the record, as a run's events are
    watched = weakref.ref(held)
    cls(**arguments)
    return watched


def _arguments() -> dict[str, dict[str, Any]]:
    from dagster._core.definitions.partitions.snap import PartitionsSnap

    snap = PartitionsSnap.from_def(dg.DynamicPartitionsDefinition(name="tasks"))
    return {
        "AssetCheckEvaluationPlanned": {"asset_key": dg.AssetKey("a"), "check_name": "c"},
        "DagsterRun": {"job_name": "job"},
        "KeyRangesPartitionsSubset": {
            "key_ranges": [dg.PartitionKeyRange("a", "b")],
            "partitions_snap": snap,
        },
    }


def test_the_run_records_are_compiled_once_the_storage_is_imported() -> None:
    for module, name, _ in RUN_RECORDS:
        assert is_compiled(getattr(importlib.import_module(module), name)), name


@pytest.mark.parametrize("name", [name for _, name, _ in RUN_RECORDS])
def test_building_a_record_keeps_nothing_of_the_frame_that_built_it(name: str) -> None:
    module = next(module for module, record, _ in RUN_RECORDS if record == name)
    watched = _record_built_beside(
        getattr(importlib.import_module(module), name), _arguments()[name]
    )
    gc.collect()
    assert watched() is None, f"{name}'s constructor keeps its first caller's locals"


def test_a_real_cli_run_leaves_no_run_in_a_record_constructor(tmp_path: Path) -> None:
    script = tmp_path / "cli_and_look.py"
    script.write_text(_CLI_AND_LOOK)
    report = tmp_path / "held.json"
    cwd = tmp_path / "cwd"  # Dagster reads .env from the working directory: never the repo's
    cwd.mkdir()
    with SiteThread(pages=50, page_bytes=1000) as site:
        rows = [(f"t-{n:03d}", site.url(f"/page/{n}")) for n in range(20)]
        home = ChainHome(write_chain_home(tmp_path / "home"), tmp_path / "data", rows)
        command = home.run_command(forced=False)
        assert command[1:3] == ["-m", "dagster"], command
        done = subprocess.run(
            [sys.executable, str(script), str(report), *command[3:]],
            env=home.env(),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert report.exists(), done.stderr[-4000:]
    assert json.loads(report.read_text()) == []
