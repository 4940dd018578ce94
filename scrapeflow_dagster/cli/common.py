"""What every `scrapeflow` command shares: the data folder option, usage errors, plain tables."""

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeAlias

from scrapeflow_dagster.engine.state.layout import DataLayout

DATA_DIR_HELP = "data folder (default $SCRAPEFLOW_DATA_DIR or data/)"

# How long a command waits for another process to let go of DuckDB: with interpreter start-up,
# a held file is reported within about 10 s.
LOCK_TIMEOUT_SECONDS = 8.0

# What `add_subparsers` returns; each command module adds its parsers to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """What the command was given cannot be used; `main` says why and exits 2."""


def data_dir_parent() -> argparse.ArgumentParser:
    """The parent parser of every subcommand: `--data-dir` also after the subcommand.

    Its default is SUPPRESS, so a subcommand without it keeps the value given before it.
    """
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    return parent


def add_command(
    sub: Subparsers,
    parent: argparse.ArgumentParser,
    name: str,
    run: Callable[[argparse.Namespace], int],
    *,
    summary: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add the subcommand `name` (it takes `--data-dir` too), run by `run(args)`.

    Args:
        summary: its line in the parent's help.
        description: its own `--help` text (default `summary`).
    """
    parser = sub.add_parser(
        name, parents=[parent], help=summary, description=description or summary
    )
    parser.set_defaults(func=run)
    return parser


def layout(args: argparse.Namespace) -> DataLayout:
    """The data folder of `--data-dir`, else `$SCRAPEFLOW_DATA_DIR`, else `data/`."""
    data_dir = getattr(args, "data_dir", None)
    return DataLayout(Path(data_dir).resolve()) if data_dir else DataLayout.from_env()


def say_error(message: object) -> None:
    """`scrapeflow: message` on stderr."""
    print(f"scrapeflow: {message}", file=sys.stderr)


def plural(count: int, word: str) -> str:
    """`1 task`, `2 tasks`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows (the first one a header) as lines of left-aligned columns, two spaces apart.

    The last column is not padded, so a long last value (a URL) leaves the others aligned.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]


def look_in_working_directory() -> None:
    """Let a code location named by `--module` be found in the current folder, as `dagster -m`
    finds it: the folder goes first on this process's path and on its step processes'
    (`PYTHONPATH`)."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([here, *paths])


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def parse_duration(text: str, option: str = "--older-than") -> float:
    """Seconds of a duration such as `90`, `30m`, `12h`, `7d`, `2w` (no unit: seconds).

    Raises:
        UsageError: naming the value when it is not such a duration.
    """
    found = _DURATION.fullmatch(text.strip().lower())
    if found is None:
        raise UsageError(
            f"{option} {text!r}: expected a number with an optional unit s, m, h, d or w"
        )
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]
