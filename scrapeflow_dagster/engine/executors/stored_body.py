"""What earlier steps stored for a task, read by the steps after it: the body `scrape` stored
(`<key>.scrape`), the DOM `render` stored (`<key>.render`) and the URL they came from."""

import contextlib
import os
import shutil
from collections.abc import Mapping
from typing import Any

from scrapeflow_dagster.engine.errors import RenderError, ScrapeError
from scrapeflow_dagster.engine.redact import MASK, redact
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.tasks.urls import request_url


def page_url(params: Mapping[str, Any], stored_url: str | None) -> str:
    """The real URL a task's stored page came from, to resolve its links against.

    A final URL is stored redacted (`token=***`, `***@host`): a link resolved against it
    would carry the mask into the URL it makes (`http://***@host/next`, `?token=***`), a URL
    the page never linked. When the stored URL is the task's own URL redacted (no redirect),
    the task's URL is the real one; a redirect into a URL holding a credential stays as
    stored (the real one is kept nowhere; `render.final_url` asks for it again).

    Args:
        params: the task's params (its `url` as given).
        stored_url: the final URL `scrape` or `render` stored, if any.
    """
    task_url = str(params["url"])
    if not stored_url:
        return task_url
    if MASK not in stored_url:
        return stored_url
    if redact(task_url) == stored_url:
        return task_url
    with contextlib.suppress(ValueError):
        if redact(str(request_url(task_url))) == stored_url:  # the URL as the gate sent it
            return task_url
    return stored_url


def read_body(context: Context, key: str) -> bytes:
    """The stored body of `key`.

    Raises:
        ScrapeError: when there is none (`scrape` has not succeeded for this task).
    """
    try:
        return (context.dir / f"{key}.scrape").read_bytes()
    except FileNotFoundError:
        raise ScrapeError(f"no stored body for task {key!r}: run scrape first") from None


RENDERED_SUFFIX = ".render"


def rendered_path(context: Context, key: str) -> str:
    """Where the rendered DOM of `key` is stored."""
    return os.path.join(context.dir, f"{key}{RENDERED_SUFFIX}")


def read_rendered(context: Context, key: str) -> bytes:
    """The rendered DOM of `key`.

    Raises:
        RenderError: when there is none (removed since `render` stored it).
    """
    try:
        with open(rendered_path(context, key), "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise RenderError(f"the rendered page of task {key!r} is gone: run render again") from None


def previous_path(context: Context, key: str, *, rendered: bool = False, back: int = 1) -> str:
    """Where the body (or rendered DOM) `back` fetches before the current one is kept."""
    suffix = RENDERED_SUFFIX if rendered else ".scrape"
    return os.path.join(context.dir, f"{key}{suffix}.{back}")


def keep_previous(path: str, kept: int) -> None:
    """Before `path` is replaced by a different body: keep it as `path.1`, the one before as
    `path.2`, ... up to `kept` bodies (0: none kept). Links and renames: each step is atomic,
    and a crash between them loses at most the oldest kept body."""
    if kept <= 0 or not os.path.exists(path):
        return
    for back in range(kept - 1, 0, -1):
        if os.path.exists(f"{path}.{back}"):
            os.replace(f"{path}.{back}", f"{path}.{back + 1}")
    # A second name for the body, then `.1` made it: `path` stays whole until the new body
    # replaces it (a crash in between leaves the old body, never none).
    linking = f"{path}.1.linking"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(linking)
    try:
        os.link(path, linking)
    except OSError:  # a file system without hard links
        shutil.copyfile(path, linking)
    os.replace(linking, f"{path}.1")


def read_previous(context: Context, key: str, *, rendered: bool = False) -> bytes | None:
    """The body (or rendered DOM) kept from the fetch before the current one, or None."""
    try:
        with open(previous_path(context, key, rendered=rendered), "rb") as file:
            return file.read()
    except FileNotFoundError:
        return None
