"""Status files: one `<key>.status.json` per task, the scrapeflow format, written atomically.

A status file holds `name`, `params`, and per executor `<name>` (its output),
`<name>_status` (`SUCCESS` or `ERROR <ExceptionClass>::<message>`) and `<name>_last_run`.
This project adds `<name>_attempts`, `<name>_error_kind`, `<name>_failures` (failed runs in a
row), `<name>_started` and `<name>_proxy` (host:port only); files written by scrapeflow load.
"""

import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from scrapeflow_dagster.engine.atomic import write_json_atomic
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.keys import url_to_key, validate_key

if TYPE_CHECKING:  # pandas costs ~50 MiB: imported only by the functions that build frames
    import pandas as pd

logger = logging.getLogger(__name__)

StatusData = dict[str, Any]
Params = dict[str, Any]

STATUS_SUFFIX = ".status.json"
SUCCESS = "SUCCESS"


class StatusModel(BaseModel):
    """The part of a status file every reader relies on; executor fields pass through."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    params: dict[str, Any]


def status_path(directory: Path, key: str) -> Path:
    """Where the status file of `key` lives."""
    return Path(directory) / f"{key}{STATUS_SUFFIX}"


def now_string() -> str:
    """A timestamp in scrapeflow's `_last_run` format (UTC, `YYYY-MM-DD HH:MM:SS.ffffff`)."""
    return str(datetime.now(UTC).replace(tzinfo=None))


def parse_status_bytes(data: bytes, path: Path) -> StatusData:
    """Parse and validate a status file's bytes.

    Raises:
        StatusFileError: naming `path`, for truncated, non-JSON or foreign content.
    """
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StatusFileError(f"status file {path} is not valid JSON (truncated?): {exc}") from None
    try:
        StatusModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise StatusFileError(
            f"status file {path} is not a scrapeflow status ({where}: {first['msg']})"
        ) from None
    status: StatusData = raw
    return status


def load_status(directory: Path, key: str) -> StatusData | None:
    """Read the status of `key`, or None when it has none yet.

    Raises:
        StatusFileError: when the file exists but is corrupt or foreign.
    """
    # Plain strings and os.open(): this runs once per task per step, and pathlib parsing showed
    # up in profiles of 10,000-task runs.
    path = os.path.join(directory, key + STATUS_SUFFIX)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):  # status files are small: one read, then EOF
            chunks.append(chunk)
    finally:
        os.close(fd)
    return parse_status_bytes(b"".join(chunks), Path(path))


def write_status(directory: Path, key: str, status: StatusData) -> None:
    """Write the status of `key` atomically (temp file, then rename)."""
    write_json_atomic(os.path.join(directory, key + STATUS_SUFFIX), status)


def executor_names(status: StatusData) -> list[str]:
    """The executors a status file has a record of, in file order."""
    return [
        k[: -len("_status")]
        for k, v in status.items()
        if k.endswith("_status") and isinstance(v, str) and (v == SUCCESS or v.startswith("ERROR"))
    ]


def is_success(status: StatusData, name: str) -> bool:
    """True when `name` last succeeded and its output is present (scrapeflow's skip rule)."""
    return name in status and status.get(f"{name}_status") == SUCCESS


def iter_status_files(directory: Path) -> Iterator[Path]:
    """Every status file in `directory` (not recursive), in no particular order."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(STATUS_SUFFIX) and not entry.name.startswith("."):
                yield Path(entry.path)


def iter_statuses(
    directory: Path, *, errors: list[tuple[Path, str]] | None = None
) -> Iterator[tuple[str, StatusData]]:
    """Yield `(key, status)` for every readable status file; bad files are logged and skipped.

    Args:
        directory: the status folder.
        errors: if given, `(path, message)` of each unreadable file is appended to it.
    """
    for path in iter_status_files(directory):
        key = path.name[: -len(STATUS_SUFFIX)]
        try:
            yield key, parse_status_bytes(path.read_bytes(), path)
        except (StatusFileError, OSError) as exc:
            logger.warning("%s", exc)
            if errors is not None:
                errors.append((path, str(exc)))


def read_status(directory: Path) -> "pd.DataFrame":
    """All status files in `directory` as a DataFrame indexed by key (one row per task).

    Unreadable files are skipped with a warning; `df.attrs["errors"]` lists them.
    """
    import pandas as pd

    errors: list[tuple[Path, str]] = []
    keys: list[str] = []
    rows: list[StatusData] = []
    for key, status in iter_statuses(Path(directory), errors=errors):
        keys.append(key)
        rows.append(status)
    frame = pd.DataFrame.from_records(rows, index=pd.Index(keys, name="key"))
    frame = frame.sort_index()
    frame.attrs["errors"] = [(str(p), m) for p, m in errors]
    return frame


def status_summary(directory: Path) -> "pd.DataFrame":
    """Counts of each status string (rows) per executor (columns), as int64.

    The shape is the same whatever the pandas version: rows sorted with `SUCCESS` first,
    executors in the order first seen, zeros where an executor never had that status.
    """
    import pandas as pd

    counts: dict[str, Counter[str]] = {}
    for _, status in iter_statuses(Path(directory)):
        for name in executor_names(status):
            counts.setdefault(name, Counter())[str(status[f"{name}_status"])] += 1
    rows = sorted({s for c in counts.values() for s in c}, key=lambda s: (s != SUCCESS, s))
    data = {name: [c.get(r, 0) for r in rows] for name, c in counts.items()}
    frame = pd.DataFrame(data, index=pd.Index(rows, name="status"), dtype="int64")
    return frame


def urls_to_tasks(urls: Iterable[str]) -> dict[str, Params]:
    """scrapeflow's helper: `{url_to_key(url): {"url": url}}` for each URL."""
    return {url_to_key(url): {"url": url} for url in urls}


def new_status(key: str, params: Params) -> StatusData:
    """A fresh status for a task that has none yet."""
    return {"name": validate_key(key), "params": dict(params)}
