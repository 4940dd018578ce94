"""Freed heap memory given back to the system (`storage/planned/freed_memory.py`), in a fresh
process: blocks freed below blocks still in use stay counted in its RSS until they are given
back."""

import json
import subprocess
import sys

import pytest

_HOLES_THEN_TRIM = """
import json
from scrapeflow_dagster.storage.planned.freed_memory import give_back_freed_memory

def rss_mib():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) // 1024

kept, freed = [], []
for n in range(200_000):
    freed.append(bytearray(2000))  # from malloc (larger than pymalloc's blocks)
    if n % 50 == 0:
        kept.append(bytearray(2000))  # still in use above the freed ones: they are holes
filled = rss_mib()
del freed
after_free = rss_mib()
returned = give_back_freed_memory()
print(json.dumps({"filled": filled, "after_free": after_free, "after": rss_mib(),
                  "returned": returned}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim: Linux")
def test_freed_blocks_below_live_ones_go_back_to_the_system() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HOLES_THEN_TRIM], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    # ~390 MiB freed: the allocator keeps it mapped, then gives nearly all of it back.
    assert figures["after_free"] > figures["filled"] - 50, figures
    assert figures["returned"] is True
    assert figures["after"] < figures["after_free"] - 300, figures
