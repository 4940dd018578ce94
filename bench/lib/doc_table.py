"""The current-figures table of docs/performance.md, written in place between its markers."""

from pathlib import Path
from typing import Any

from bench.lib.repo import REPO

Row = list[Any]

DOC = REPO / "docs" / "performance.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
TABLE_HEADER = [
    "| benchmark | figure | baseline or peer | ratio | date | machine | command |",
    "|---|---|---|---|---|---|---|",
]


def _row_key(line: str) -> str | None:
    """The benchmark cell of a table row (None for other lines)."""
    if not line.startswith("|") or line.startswith("|---"):
        return None
    return line.strip("|").split("|", 1)[0].strip()


def _belongs(key: str, bench: str) -> bool:
    """Whether the table row keyed `key` is one of `bench`'s (`peer`, `peer (crawl)`, ...)."""
    return key == bench or key.startswith(f"{bench} (")


def write_table(doc: Path, fresh: dict[str, list[Row]]) -> list[str]:
    """Replace the rows of each benchmark in `fresh` (bench -> full rows) in `doc`'s table
    between the markers, in place; other rows stay. Returns the benchmarks written.

    Raises:
        ValueError: `doc` has no table markers.
    """
    text = doc.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        raise ValueError(f"{doc} has no {TABLE_START} ... {TABLE_END} markers")
    head, rest = text.split(TABLE_START, 1)
    table, tail = rest.split(TABLE_END, 1)
    lines = [line for line in table.strip("\n").splitlines() if _row_key(line)]
    lines = [line for line in lines if _row_key(line) != "benchmark"]
    for bench, rows in fresh.items():
        cells = [
            "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows
        ]
        at = next(
            (i for i, line in enumerate(lines) if _belongs(_row_key(line) or "", bench)), None
        )
        lines = [line for line in lines if not _belongs(_row_key(line) or "", bench)]
        if at is None:
            lines += cells
        else:
            lines[at:at] = cells
    body = "\n".join([*TABLE_HEADER, *lines])
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(f"{head}{TABLE_START}\n{body}\n{TABLE_END}{tail}")
    tmp.replace(doc)
    return sorted(fresh)


def _command(module: str, extra: list[str]) -> str:
    """The command a figure came from, as a reader would type it (without the --json file)."""
    shown: list[str] = []
    skip = False
    for arg in extra:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        else:
            shown.append(arg)
    return "`" + " ".join(["python -m", module, *shown]) + "`"
