"""What earlier steps stored for a task, read by the steps after it: the body `scrape` stored
(`<key>.scrape`) and the DOM `render` stored (`<key>.render`)."""

import os

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
