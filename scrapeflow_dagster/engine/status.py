"""scrapeflow's `status` module (compatibility): status files, their summary, task helpers.

The status file format is owned by `engine.state.schema`; this module keeps scrapeflow's
import path (`from scrapeflow_dagster.engine.status import read_status, ...`) working.
"""

from collections.abc import Iterable

from scrapeflow_dagster.engine.state.files import (
    iter_status_files,
    iter_statuses,
    load_status,
    parse_status_bytes,
    status_path,
    write_status,
)
from scrapeflow_dagster.engine.state.frames import read_status, status_summary
from scrapeflow_dagster.engine.state.schema import (
    STATUS_SUFFIX,
    SUCCESS,
    Params,
    StatusData,
    StatusModel,
    executor_names,
    is_success,
    stamp,
)
from scrapeflow_dagster.engine.state.schema import new_status as _new_status
from scrapeflow_dagster.engine.tasks.keys import url_to_key, validate_key


def now_string() -> str:
    """A timestamp in scrapeflow's `_last_run` format (UTC, `YYYY-MM-DD HH:MM:SS.ffffff`)."""
    return stamp()


def new_status(key: str, params: Params) -> StatusData:
    """A fresh status for a task that has none yet.

    Raises:
        InvalidTaskError: when `key` is not a safe task key.
    """
    return _new_status(validate_key(key), params)


def urls_to_tasks(urls: Iterable[str]) -> dict[str, Params]:
    """scrapeflow's helper: `{url_to_key(url): {"url": url}}` for each URL."""
    return {url_to_key(url): {"url": url} for url in urls}


__all__ = [
    "STATUS_SUFFIX",
    "SUCCESS",
    "Params",
    "StatusData",
    "StatusModel",
    "executor_names",
    "is_success",
    "iter_status_files",
    "iter_statuses",
    "load_status",
    "new_status",
    "now_string",
    "parse_status_bytes",
    "read_status",
    "status_path",
    "status_summary",
    "url_to_key",
    "urls_to_tasks",
    "write_status",
]
