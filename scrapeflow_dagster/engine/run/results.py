"""What one executor did for one task: handed to callers (DuckDB ledger, Dagster metadata)."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

StepOutcome = Literal["SUCCESS", "ERROR", "SKIPPED"]


@dataclass(frozen=True, slots=True)
class StepResult:
    """The outcome of one executor on one task; `message` is already free of credentials."""

    key: str
    executor: str
    outcome: StepOutcome
    started: datetime
    ended: datetime
    error_class: str | None = None
    error_kind: str | None = None
    message: str | None = None
    attempts: int = 0
    http_status: int | None = None
    size: int | None = None
    md5: str | None = None
    proxy_host: str | None = None
    url: str | None = None
    # The executor's output after a SUCCESS (for rows such as `pages`); not kept by reports.
    output: Mapping[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True for SUCCESS and SKIPPED (a skip means an earlier success still stands)."""
        return self.outcome != "ERROR"

    @property
    def elapsed_seconds(self) -> float:
        """Wall time of the step."""
        return (self.ended - self.started).total_seconds()
