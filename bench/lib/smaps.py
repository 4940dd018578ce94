"""Rss and Pss of one process from /proc/<pid>/smaps_rollup (Linux)."""


def smaps_rollup_kib(pid: int) -> dict[str, int]:
    """Rss and Pss (KiB) of process `pid` from /proc/<pid>/smaps_rollup ({} once it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("Rss", "Pss"):
                    out[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out
