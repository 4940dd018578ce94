"""Building the code location freezes what the process loaded for it (`defs.long_lived`), once."""

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
