"""Counters inside every measured Python process, written to a file at its exit.

Copied as `sitecustomize.py` into a folder put first on PYTHONPATH for the measured commands
only (never imported by the package or the harness). It imports nothing heavy itself: it patches
`sqlite3`, `duckdb` and `aiohttp.client` as the process imports them, so the modules counted at
the first request are the ones the command loads anyway.

- every SQL statement SQLite starts, per database file (its trace callback: SQLAlchemy's and
  Dagster's statements included, one per row of an `executemany`);
- every statement sent through a DuckDB connection's `execute`, `executemany`, `sql` or `query`,
  per database file (the connection is wrapped: DuckDB's own is a C type);
- at the process's first aiohttp client request: `len(sys.modules)` and the wall clock.

The counts go to `$COST_LEDGER_OUT/<pid>.json` at exit (a process ended by `os._exit` writes
none: the harness counts the files it finds).
"""

import atexit
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

OUT_ENV = "COST_LEDGER_OUT"
_OUT = os.environ.get(OUT_ENV)
_sqlite: Counter[str] = Counter()
_duckdb: Counter[str] = Counter()
_first_request: dict[str, float] = {}


def _verb(sql: object) -> str:
    words = str(sql).split(None, 1)
    return words[0].upper().strip("(;") if words else "?"


def _db_path(database: str) -> str:
    if database in (":memory:", ""):
        return ":memory:"
    if database.startswith("file:"):  # a URI: `file:/path?mode=ro`
        database = database[len("file:") :].split("?", 1)[0]
    return os.path.abspath(database)


def _patch_sqlite(module: Any) -> None:
    connect = module.connect

    def counting_connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        conn = connect(database, *args, **kwargs)
        path = _db_path(os.fsdecode(database))

        def trace(statement: str) -> None:
            _sqlite[f"{path}\t{_verb(statement)}"] += 1

        conn.set_trace_callback(trace)
        return conn

    module.connect = counting_connect


class _CountingDuckDB:
    """A DuckDB connection that counts the statements sent through it."""

    def __init__(self, conn: Any, path: str) -> None:
        self._conn = conn
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _count(self, query: object) -> None:
        _duckdb[f"{self._path}\t{_verb(query)}"] += 1

    def _same(self, result: Any) -> Any:
        return self if result is self._conn else result

    def execute(self, query: object, *args: Any, **kwargs: Any) -> Any:
        self._count(query)
        return self._same(self._conn.execute(query, *args, **kwargs))

    def executemany(self, query: object, *args: Any, **kwargs: Any) -> Any:
        self._count(query)
        return self._same(self._conn.executemany(query, *args, **kwargs))

    def sql(self, query: object, *args: Any, **kwargs: Any) -> Any:
        self._count(query)
        return self._conn.sql(query, *args, **kwargs)

    def query(self, query: object, *args: Any, **kwargs: Any) -> Any:
        self._count(query)
        return self._conn.query(query, *args, **kwargs)

    def cursor(self) -> "_CountingDuckDB":
        return _CountingDuckDB(self._conn.cursor(), self._path)

    def __enter__(self) -> "_CountingDuckDB":
        self._conn.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)


def _patch_duckdb(module: Any) -> None:
    connect = module.connect

    def counting_connect(database: Any = ":memory:", *args: Any, **kwargs: Any) -> Any:
        path = _db_path(os.fsdecode(database))
        return _CountingDuckDB(connect(database, *args, **kwargs), path)

    module.connect = counting_connect


def _patch_aiohttp(module: Any) -> None:
    request = module.ClientSession._request

    async def first_request_noted(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _first_request:
            _first_request["wall"] = time.time()
            _first_request["modules"] = float(len(sys.modules))
        return await request(self, *args, **kwargs)

    module.ClientSession._request = first_request_noted


_PATCHES: dict[str, Callable[[Any], None]] = {
    "sqlite3.dbapi2": _patch_sqlite,
    "duckdb": _patch_duckdb,
    "aiohttp.client": _patch_aiohttp,
}


class _PatchingLoader:
    def __init__(self, inner: Any, patch: Callable[[Any], None]) -> None:
        self._inner = inner
        self._patch = patch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        self._patch(module)


class _PatchingFinder:
    """Finds the patched modules with the other finders, then patches them once executed."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is cls or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


def _write() -> None:
    if not _OUT:
        return
    data = {
        "pid": os.getpid(),
        "argv": sys.argv[:6],
        "sqlite": dict(_sqlite),
        "duckdb": dict(_duckdb),
        "first_request": _first_request or None,
    }
    temp = os.path.join(_OUT, f".{os.getpid()}.tmp")
    with open(temp, "w") as out:
        json.dump(data, out)
    os.replace(temp, os.path.join(_OUT, f"{os.getpid()}.json"))


if _OUT:
    sys.meta_path.insert(0, _PatchingFinder)  # type: ignore[arg-type]
    atexit.register(_write)
