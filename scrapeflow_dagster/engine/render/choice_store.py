"""What earlier runs learned of `render: auto`'s URL patterns, as a run reads it at its first
`render: auto` page: the copy of DuckDB's `render_choices` that the database's writer publishes
beside it after each ingest (`engine.history.recording.render_choices`; both name it by
`DataLayout.render_choices_path`).

Read from that file, not from DuckDB: DuckDB locks its file for a reader as for a writer, so a
run reading it would wait for another shard's sync, and hold up the next. A missing file (no
`render: auto` run synced yet, a data folder without DuckDB) is nothing learned; an unreadable
one is logged and taken as nothing learned (the run samples, as a first run does).
"""

import logging
from pathlib import Path
from typing import Any

import orjson

from scrapeflow_dagster.engine.render.choice import Known
from scrapeflow_dagster.engine.state.layout import RENDER_CHOICES_NAME, DataLayout
from scrapeflow_dagster.engine.state.schema import parse_stamp

logger = logging.getLogger(__name__)

SNAPSHOT_NAME = RENDER_CHOICES_NAME


def snapshot_of(status_dir: Path) -> Path:
    """The published `render_choices` of the data folder whose status folder is `status_dir`."""
    return DataLayout(Path(status_dir).parent).render_choices_path


def load_known(path: Path) -> dict[str, Known]:
    """The patterns `path` (a published `render_choices`) holds, by pattern; {} when it is
    missing or unreadable (logged, naming the file)."""
    try:
        data = orjson.loads(path.read_bytes())
        rows = data["render_choices"]
        if not isinstance(rows, list):
            raise TypeError("render_choices is not a list")
        return dict(_known(row) for row in rows)
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        logger.warning("render choices in %s not read (%s): every pattern is sampled", path, exc)
        return {}


def _known(row: Any) -> tuple[str, Known]:
    """One row of the file as (pattern, evidence).

    Raises:
        TypeError: when the row is not an object with a string pattern and integer counts.
    """
    if not isinstance(row, dict) or not isinstance(row.get("pattern"), str):
        raise TypeError(f"not a pattern's row: {row!r:.200}")
    found = [row.get(name) for name in ("pages_sampled", "pages_browser_needed", "pages_seen")]
    counts = [n for n in found if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if len(counts) != len(found):
        raise TypeError(f"counts of {row['pattern']!r} are not whole numbers: {found}")
    checked_by = row.get("checked_by")
    return row["pattern"], Known(
        sampled=counts[0],
        needed=counts[1],
        seen=counts[2],
        checked_at=parse_stamp(row.get("checked_at")),
        checked_by=checked_by if isinstance(checked_by, str) else None,
    )
