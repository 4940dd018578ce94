"""What earlier steps stored for a task, read by the steps after it: the body `scrape` stored
(`<key>.scrape`) and the DOM `render` stored (`<key>.render`)."""

import contextlib
import os
import shutil

from scrapeflow_dagster.engine.errors import RenderError, ScrapeError
from scrapeflow_dagster.engine.run.context import Context


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
