"""The `validation` executor: reject block and captcha pages that answered 200."""

import re

from scrapeflow_dagster.engine.errors import BlockedError
from scrapeflow_dagster.engine.executors.stored_body import read_body
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.schema import StatusData

# Phrases of block and captcha pages; matched case-insensitively in the first bytes only.
BLOCK_MARKERS = re.compile(
    rb"captcha|i'?m not a robot|unusual traffic|access denied|are you a human|verify you are human",
    re.IGNORECASE,
)
_SCAN_BYTES = 64 * 1024


def check_page(body: bytes, *, min_bytes: int = 64) -> None:
    """Raise `BlockedError` for an empty, tiny, captcha or block page."""
    if len(body) < min_bytes:
        raise BlockedError(f"page is only {len(body)} bytes")
    match = BLOCK_MARKERS.search(body[:_SCAN_BYTES])
    if match:
        raise BlockedError(f"block page: found {match.group().decode(errors='replace')!r}")


@taskify
async def validation(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Reject block and captcha pages that answered 200 (a failed validation is a block)."""
    body = read_body(context, key)
    check_page(body)
    return {"checked_bytes": min(len(body), _SCAN_BYTES), "verdict": "ok"}
