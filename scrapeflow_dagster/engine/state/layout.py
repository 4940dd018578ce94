"""Where things live under the data folder (`SCRAPEFLOW_DATA_DIR`, default `data/`)."""

import os
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "SCRAPEFLOW_DATA_DIR"
# Beside the DuckDB file: its `render_choices` as JSON, published by DuckDB's writer for runs
# to read without DuckDB's lock (`history.recording.render_choices`, `render.choice_store`).
RENDER_CHOICES_NAME = "render_choices.json"


@dataclass(frozen=True, slots=True)
class DataLayout:
    """Paths of one data folder: status files and blobs, DuckDB, the inbox."""

    root: Path

    @classmethod
    def from_env(cls, default: str = "data") -> "DataLayout":
        """The layout under `$SCRAPEFLOW_DATA_DIR`, or `default` relative to the current dir."""
        return cls(Path(os.environ.get(DATA_DIR_ENV) or default).resolve())

    @property
    def status_dir(self) -> Path:
        """`<key>.status.json` and `<key>.scrape` files."""
        return self.root / "status"

    @property
    def db_path(self) -> Path:
        """The DuckDB file users query."""
        return self.root / "scrapeflow.duckdb"

    @property
    def render_choices_path(self) -> Path:
        """The published copy of DuckDB's `render_choices` (`RENDER_CHOICES_NAME`)."""
        return self.root / RENDER_CHOICES_NAME

    @property
    def spool_dir(self) -> Path:
        """Ledger rows waiting for DuckDB's single writer."""
        return self.root / "ledger-spool"

    @property
    def inbox_dir(self) -> Path:
        """Task files dropped here are added by the inbox sensor."""
        return self.root / "inbox"

    def ensure(self) -> "DataLayout":
        """Create the folders, with a clear error when the data folder is unusable.

        Raises:
            OSError: naming the data folder when it cannot be created or written.
        """
        for path in (self.status_dir, self.spool_dir, self.inbox_dir):
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OSError(f"data folder {self.root} is not usable: {exc}") from exc
        if not os.access(self.status_dir, os.W_OK):
            raise PermissionError(f"data folder {self.status_dir} is not writable")
        return self
