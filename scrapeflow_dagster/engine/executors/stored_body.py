"""The body `scrape` stored for a task (`<key>.scrape`), read by the steps after it."""

from scrapeflow_dagster.engine.errors import ScrapeError
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
