"""Building the code location freezes what the process loaded for it (`defs.long_lived`), once."""

import os
import subprocess
import sys
from pathlib import Path

# In a new interpreter: the test process has frozen its own objects when it built definitions.
FREEZES_ONCE = """
import gc, weakref

assert gc.get_freeze_count() == 0
import scrapeflow_dagster.definitions  # builds the shipped location

frozen = gc.get_freeze_count()
assert frozen > 50_000, frozen


class Node:
    pass


gc.disable()  # the cycle waits for the explicit collection below
a, b = Node(), Node()
a.other, b.other = b, a  # a cycle: garbage only the collector frees
gone = weakref.ref(a)
del a, b

from scrapeflow_dagster.defs.assets import executor_assets
from scrapeflow_dagster.defs.factory import scrapeflow_definitions

scrapeflow_definitions(executor_assets)  # a second location in the same process
gc.collect()
assert gone() is None, "the cycle made after the first build was frozen"
print("ok")
"""


def test_the_first_location_built_freezes_what_was_loaded_and_later_garbage_stays_collectable(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FREEZES_ONCE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


# In a new interpreter: no collection runs while the location loads, and collection resumes
# after it, whether the build succeeded or failed; a collector the process had disabled itself
# stays disabled.
PAUSES_WHILE_LOADING = """
import gc, os, sys

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
assert gc.isenabled()
try:
    import scrapeflow_dagster.definitions
except ValueError as exc:
    assert "SCRAPEFLOW_SHARDS" in str(exc), exc
    print("failed", end=" ")
else:
    # Frozen without a full collection first (it would walk every object the import made).
    assert not [c for c in collections if c["generation"] == 2], collections
    assert gc.get_freeze_count() > 50_000
# Before the pause, the import of the package itself may run one or two (418 without it).
assert len(collections) <= 5, f"{len(collections)} collections while the location loaded"
assert gc.isenabled(), "collection was not resumed"

from scrapeflow_dagster.defs.long_lived import pause_collection, resume_collection

gc.disable()
pause_collection()
resume_collection()
assert not gc.isenabled(), "a collector disabled by the process was enabled"
print("ok")
"""


def test_no_collection_runs_while_the_location_loads_and_it_resumes_after(tmp_path: Path) -> None:
    for shards, expected in (("1", "ok"), ("zero", "failed ok")):
        done = subprocess.run(
            [sys.executable, "-c", PAUSES_WHILE_LOADING],
            cwd=tmp_path,
            env={**os.environ, "SCRAPEFLOW_SHARDS": shards},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip() == expected


# In a new interpreter: `scrapeflow crawl` imports Dagster and the location without
# collections (here it then refuses its arguments), and leaves collection on.
CLI_PAUSES = """
import gc

from scrapeflow_dagster.cli import main

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
assert main(["crawl", "--max-depth", "1"]) == 2  # no seeds: refused after loading
assert len(collections) <= 5, f"{len(collections)} collections while Dagster loaded"
assert gc.isenabled(), "collection was not resumed"

# A location of the user's own, built without `scrapeflow_definitions` (no freeze): resumed.
assert main(["crawl", "--max-depth", "1", "--module", "plain_location"]) == 2
assert gc.isenabled(), "collection was not resumed after a location of the user's own"
print("ok")
"""

PLAIN_LOCATION = """
import dagster as dg

defs = dg.Definitions()
"""


def test_scrapeflow_crawl_loads_dagster_without_collections(tmp_path: Path) -> None:
    (tmp_path / "plain_location.py").write_text(PLAIN_LOCATION)
    done = subprocess.run(
        [sys.executable, "-c", CLI_PAUSES],
        cwd=tmp_path,
        env={
            **os.environ,
            "SCRAPEFLOW_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
    assert "give seed files" in done.stderr
    assert "plain_location has no 'pages' asset" in done.stderr
