"""How the benchmarks show their figures: padded tables, JSON reports, the machine's description."""

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """Print rows under headers, columns padded; floats with 2 decimals, None as '-'."""

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:,.2f}"
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value:,}"
        return str(value)

    texts = [[cell(v) for v in row] for row in rows]
    left = [[isinstance(v, str) for v in row] for row in rows]
    widths = [
        max([len(h)] + [len(r[i]) for r in texts if i < len(r)]) for i, h in enumerate(headers)
    ]
    if title:
        print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r, lefts in zip(texts, left, strict=True):
        print(
            "  ".join(
                v.ljust(w) if lefts[i] else v.rjust(w)
                for i, (v, w) in enumerate(zip(r, widths, strict=False))
            ).rstrip()
        )
    sys.stdout.flush()


def mib_text(value: float | None) -> str:
    """A size in MiB as '123 MiB', or '?' when it was not measured."""
    return "?" if value is None else f"{value:.0f} MiB"


def write_json(path: str | None, report: Mapping[str, Any]) -> None:
    """Write `report` to `path` as indented JSON when a path is given."""
    if path:
        Path(path).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"\nfigures written to {path}")


def machine_info() -> dict[str, Any]:
    """Python version, CPUs and load average, for the JSON reports."""
    try:
        load = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        load = []
    return {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg": load,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
