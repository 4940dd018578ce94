"""Where a data folder keeps its selector sets, and reading them by name.

Sets live in the status folder (`<status>/.extract/<name>.yaml`), beside the status files, so
every process that runs a task (shards, Celery workers on other hosts) reads the same set. A
task names its set in its `extract` param; `--extract FILE` on `tasks add` and `crawl` copies
the file here. A changed file is read again by the next task that uses it.
"""

import threading
from pathlib import Path

from scrapeflow_dagster.engine.extract.selectors import (
    SUFFIXES,
    SelectorSet,
    SelectorSetError,
    read_selector_set,
)
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.params import set_name_error

EXTRACT_PARAM = "extract"  # the task param naming its selector set
FOLDER = ".extract"

_cache: dict[Path, tuple[tuple[int, int], SelectorSet]] = {}
_cache_lock = threading.Lock()


def selectors_dir(status_dir: Path) -> Path:
    """The folder of a data folder's selector sets."""
    return status_dir / FOLDER


def install_selector_set(status_dir: Path, source: Path) -> tuple[SelectorSet, bool]:
    """Validate `source` and copy it into the data folder under its own name.

    Returns:
        The set, and whether the stored copy changed (a new set, or other content than before).

    Raises:
        SelectorSetError: naming `source` when it is not a valid set.
    """
    selector_set = read_selector_set(source)
    data = source.read_bytes()
    folder = selectors_dir(status_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in SUFFIXES:  # one file per name: another suffix would shadow or be shadowed
        other = folder / f"{selector_set.name}{suffix}"
        if suffix != source.suffix and other.exists():
            other.unlink()
    target = folder / f"{selector_set.name}{source.suffix}"
    changed = not target.exists() or target.read_bytes() != data
    if changed:
        write_bytes_atomic(target, data)
    return selector_set, changed


def load_selector_set(status_dir: Path, name: str) -> SelectorSet:
    """The set `name` of the data folder, read again only when its file changed.

    Raises:
        SelectorSetError: naming the set when no file holds it, or it is not valid.
    """
    problem = set_name_error(name)
    if problem:
        raise SelectorSetError(problem)
    folder = selectors_dir(status_dir)
    for suffix in SUFFIXES:
        path = folder / f"{name}{suffix}"
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        with _cache_lock:
            cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        selector_set = read_selector_set(path)
        with _cache_lock:
            _cache[path] = (stamp, selector_set)
        return selector_set
    raise SelectorSetError(
        f"selector set {name!r} is not in {folder} (add it with --extract FILE on "
        "`scrapeflow tasks add` or `scrapeflow crawl`)"
    )
