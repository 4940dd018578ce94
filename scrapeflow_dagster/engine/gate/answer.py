"""What a fetch through the gate answers (`Fetched`), apart from the gate's code so that the
`Context` an executor gets can name it without importing the gate (which imports the Context)."""

from collections.abc import Callable
from typing import NamedTuple

# Called with a body; raising `RuntimeError` marks it a block page.
ResponseCallback = Callable[[bytes], None]


class Fetched(NamedTuple):
    """A successful answer (a NamedTuple: built once per page, cheaper than a dataclass)."""

    body: bytes
    status: int
    headers: dict[str, str]
    final_url: str
    attempts: int
    proxy: str | None
    # The answer came from an internal address on an intranet route: links it holds may lead
    # inside (see `trust`).
    intranet: bool = False
