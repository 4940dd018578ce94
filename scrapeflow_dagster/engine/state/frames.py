"""Status files as pandas frames, the scrapeflow way (`read_status`, `status_summary`)."""

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from scrapeflow_dagster.engine.state.files import iter_statuses
from scrapeflow_dagster.engine.state.schema import SUCCESS, StatusData, executor_names, fields_of

if TYPE_CHECKING:  # pandas costs ~50 MiB: imported only by the functions that build frames
    import pandas as pd


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
            counts.setdefault(name, Counter())[str(status[fields_of(name).status])] += 1
    rows = sorted({s for c in counts.values() for s in c}, key=lambda s: (s != SUCCESS, s))
    data = {name: [c.get(r, 0) for r in rows] for name, c in counts.items()}
    frame = pd.DataFrame(data, index=pd.Index(rows, name="status"), dtype="int64")
    return frame
