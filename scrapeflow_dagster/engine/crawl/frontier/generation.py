"""Whose the frontier's files are: the identity of the status folder they belong to, and the
retirement of the files of a status folder that is gone.

These files name tasks of one status folder. When that folder is made anew (deleted and
created again), its tasks are new too, and files that say "these pages' links were taken in"
would hide every link of the new crawl. So the status folder carries an identity
(`status/.generation`, made once), and the first discovery that finds the frontier's
`generation` naming another one (or a status folder without one) moves the files to
`retired/` (kept, not deleted) and starts over; until it does, reads see an empty frontier.
Frontier files from before identities existed are taken as the current folder's, unless none
of the tasks discovery added is stored (a status folder made anew before this version): those
are retired too. Deleting the status files but not the folder keeps its identity (`rm
status/*` leaves `.generation`): start over by deleting the folder.
"""

import logging
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from scrapeflow_dagster.engine.crawl.frontier.journal import (
    ADDED_NAME,
    JOURNAL_NAMES,
    frontier_dir,
    whole_lines,
)
from scrapeflow_dagster.engine.state.atomic import create_bytes_atomic, write_bytes_atomic
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX

STATUS_GENERATION_NAME = ".generation"  # in the status folder (no status file's name)
GENERATION_NAME = "generation"
RETIRED_DIR_NAME = "retired"

logger = logging.getLogger(__name__)


def _read_generation(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def status_generation(layout: DataLayout) -> str:
    """The identity of the data folder's status folder, made on the first ask (the first of
    concurrent makers wins; each folder gets one for its life)."""
    path = layout.status_dir / STATUS_GENERATION_NAME
    found = _read_generation(path)
    if found is None:
        layout.status_dir.mkdir(parents=True, exist_ok=True)
        create_bytes_atomic(path, f"{uuid.uuid4().hex}\n".encode())  # never replaces one
        found = _read_generation(path)
    if found is None:
        raise OSError(f"{path} is empty: remove it, and the next discovery makes another")
    return found


def _own_generation(layout: DataLayout) -> str | None:
    return _read_generation(frontier_dir(layout) / GENERATION_NAME)


def is_stale(layout: DataLayout) -> bool:
    """Whether the frontier's files belong to a status folder that is gone (read only: a
    status folder without its identity is a new one, which the next discovery names)."""
    own = _own_generation(layout)
    return own is not None and own != _read_generation(layout.status_dir / STATUS_GENERATION_NAME)


def settle_generation(layout: DataLayout) -> None:
    """Under the frontier lock: retire the files of a status folder that is gone, and note
    whose files these are."""
    current = status_generation(layout)
    own = _own_generation(layout)
    if own == current:
        return
    if own is not None or _added_none_stored(layout):
        _retire(layout, own or "unnamed")
    write_bytes_atomic(frontier_dir(layout) / GENERATION_NAME, f"{current}\n".encode())


def _added_none_stored(layout: DataLayout) -> bool:
    """For frontier files from before identities (once per data folder): whether discovery
    added tasks, none of which is stored (the status folder was made anew before this version
    could tell; where some are stored, the files are taken as the folder's). The tasks added,
    not the pages taken in: a crawl started over stores its seed again before discovering."""
    keys = [line.partition("\t")[2] for line in whole_lines(frontier_dir(layout) / ADDED_NAME)]
    status_dir = layout.status_dir
    return bool(keys) and not any(
        os.path.exists(os.path.join(status_dir, key + STATUS_SUFFIX)) for key in keys
    )


def _retire(layout: DataLayout, own: str) -> None:
    folder = frontier_dir(layout)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    retired = folder / RETIRED_DIR_NAME / f"{stamp}-{own}"
    retired.mkdir(parents=True)
    for name in JOURNAL_NAMES:
        if (folder / name).exists():
            os.replace(folder / name, retired / name)  # (`frontier_dir` makes `batches/` anew)
    logger.warning(
        "the status folder %s was made anew since the last discovery: the frontier's files "
        "of the old one were moved to %s, and discovery starts over",
        layout.status_dir,
        retired,
    )


def journal_lines(layout: DataLayout, name: str) -> Iterator[str]:
    """The whole lines of the journal file `name`; none while the frontier is stale."""
    if is_stale(layout):
        return iter(())
    return whole_lines(frontier_dir(layout) / name)
