"""Run shards of Dagster's SQLite event log, opened and created without Dagster's fixed costs.

Stock `SqliteEventLogStorage._connect` builds a new SQLAlchemy engine for every query (the
dialect set up again each time: ~0.3 ms, four or five times per stored event), and the first
connection of a process to each shard runs `_initdb`, which loads Dagster's ~180 alembic
migration scripts to compare revisions (~25 ms per shard and process, twice for a new shard:
check, then stamp). A run on the embedded home stores ~45 such events and opens its shard from
every step process: ~0.1-0.2 s of each run's fixed cost.

Here:
- `ShardEngines` keeps one engine per shard (still `NullPool`: every query opens and closes
  its own SQLite connection as stock does, so locking between processes is unchanged); its
  connections keep SQLite's temporary files in memory (`temp_store`: statement journals,
  and the sorts of long-lived readers such as the webserver, no longer spill to disk).
- `ShardEngines.keep_open` holds an idle connection to a shard. When the last connection to
  a WAL database closes, SQLite checkpoints it and deletes its `-wal` and `-shm` files, which
  the next connection creates again: with `NullPool`, that is every query (the index shard:
  ~80 times in a 305-task chain run, each a checkpoint and two new files, ~0.7 ms here on
  disk). The idle connection holds no transaction (it never blocks a writer or a
  checkpoint), only the shared lock every open WAL connection holds. Run shards are not held
  open: the webserver follows a run's events by watching its `.db` file, which only a
  checkpoint writes.
  None is held across a fork (closed before, opened again when next asked for): SQLite's
  locks belong to the process, so a child would take none of its own on the shard and the
  parent's close would checkpoint and delete the WAL under the child's writes.
- `is_stamped` skips `_initdb` for a shard whose `alembic_version` holds a revision: stock
  `_initdb` does nothing then either.
- `ShardTemplate` creates a new shard as a copy of one that stock `_initdb` made in this
  process, put in place with a create-only link: the same schema, WAL mode and revision, for
  the price of a file copy; a shard another process is creating at the same time is left to
  stock `_initdb` and its retries.
"""

import atexit
import os
import shutil
import sqlite3
import tempfile
import threading
import urllib.parse
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as db
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite import create_db_conn_string
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

from scrapeflow_dagster.engine.state.atomic import process_alive

MAX_ENGINES = 32  # a long-lived process (the daemon, the webserver) reads many runs


class ShardEngines:
    """One `NullPool` engine per shard path, the least recently used dropped past `MAX_ENGINES`,
    and idle connections kept open on the shards asked for (`keep_open`)."""

    def __init__(self, max_engines: int = MAX_ENGINES) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._kept: dict[str, sqlite3.Connection] = {}
        self._max = max_engines
        self._lock = threading.Lock()
        _ALL.add(self)

    def get(self, conn_string: str) -> Engine:
        with self._lock:
            engine = self._engines.get(conn_string)
            if engine is None:
                engine = db.create_engine(
                    conn_string,
                    poolclass=NullPool,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
                )
                db.event.listen(engine, "connect", _keep_temp_files_in_memory)
                self._engines[conn_string] = engine
                while len(self._engines) > self._max:
                    dropped_string, dropped = self._engines.popitem(last=False)
                    dropped.dispose()
                    _close_quietly(self._kept.pop(dropped_string, None))
            else:
                self._engines.move_to_end(conn_string)
            return engine

    def keep_open(self, conn_string: str) -> None:
        """Hold an idle connection to the shard of `conn_string` (an engine `get` made), so
        that its WAL files outlive each query's connection; at once when held already. Never
        creates the file: a shard that does not exist (yet) is left alone."""
        if conn_string in self._kept:  # the common case, without the lock
            return
        with self._lock:
            engine = self._engines.get(conn_string)
            if engine is None or conn_string in self._kept:
                return
            path = engine.url.database
            if not path or path == ":memory:" or not os.path.exists(path):
                return
            try:
                # A URI, for `mode=rw` (never create); `?`, `#` and `%` in the path escaped.
                uri = f"file:{urllib.parse.quote(path)}?mode=rw"
                kept = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=1.0)
            except sqlite3.Error:
                return
            try:
                # A first read opens the WAL and its index; it ends at once (autocommit).
                kept.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            except sqlite3.Error:  # busy or not a database: stock behaviour, nothing kept
                _close_quietly(kept)
                return
            self._kept[conn_string] = kept

    def forget(self) -> None:
        """Drop every engine and close every idle connection (after `wipe` or `dispose`)."""
        with self._lock:
            self._engines = OrderedDict()
            kept, self._kept = self._kept, {}
        for connection in kept.values():
            _close_quietly(connection)

    def _close_kept_for_fork(self) -> None:
        # SQLite's locks belong to a process, its record of them to the connection: a child
        # inheriting an open connection would take no lock of its own on the shard, and the
        # parent's later close would checkpoint and delete the WAL under the child's writes.
        # So none is open across a fork; each process opens its own again when it next asks.
        self._lock.acquire()
        kept, self._kept = self._kept, {}
        for connection in kept.values():
            _close_quietly(connection)

    def _after_fork(self, *, child: bool) -> None:
        if child:
            self._lock = threading.Lock()  # held by the forking thread, gone in the child
            self._engines = OrderedDict()
        else:
            self._lock.release()


# Every ShardEngines of the process, for the fork handlers; those the forking thread locked.
_ALL: "weakref.WeakSet[ShardEngines]" = weakref.WeakSet()
_LOCKED_FOR_FORK: list[ShardEngines] = []


def _before_fork() -> None:
    _LOCKED_FOR_FORK[:] = list(_ALL)
    for engines in _LOCKED_FOR_FORK:
        engines._close_kept_for_fork()


def _after_fork_in_parent() -> None:
    for engines in _LOCKED_FOR_FORK:
        engines._after_fork(child=False)
    _LOCKED_FOR_FORK.clear()


def _after_fork_in_child() -> None:
    for engines in _LOCKED_FOR_FORK:
        engines._after_fork(child=True)
    _LOCKED_FOR_FORK.clear()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)


def _close_quietly(connection: sqlite3.Connection | None) -> None:
    if connection is None:
        return
    try:
        connection.close()
    except sqlite3.Error:
        pass


def _keep_temp_files_in_memory(dbapi_connection: Any, _record: Any) -> None:
    # A batch goes in as multi-row INSERT ... RETURNING statements inside one transaction;
    # SQLite spills their statement journals to files in /var/tmp (on disk even when the home
    # is on tmpfs): ~11,000 writes in the demo's 305-task chain run. In memory, none.
    dbapi_connection.execute("PRAGMA temp_store = MEMORY")


def is_stamped(engine: Engine) -> bool:
    """Whether the shard of `engine` exists with an alembic revision (stock `_initdb` then does
    nothing). Never creates the file."""
    path = engine.url.database
    if not path or not os.path.exists(path):
        return False
    try:
        with engine.connect() as conn:
            revision = conn.execute(db.text("SELECT version_num FROM alembic_version")).first()
    except db.exc.OperationalError:  # no such table: empty or half made by another process
        return False
    return revision is not None and bool(revision[0])


class ShardTemplate:
    """New run shards as copies of one made by stock `_initdb` in this process."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._lock = threading.Lock()

    def _template(self, stock_initdb: Callable[[Engine], None]) -> Path:
        if self._dir is not None and not self._dir.is_dir():
            self._dir = None  # removed under us (another PID namespace sharing the temp dir)
        if self._dir is None:
            _remove_templates_of_dead_processes()
            prefix = f"{_TEMPLATE_PREFIX}{os.getpid()}-"
            self._dir = Path(tempfile.mkdtemp(prefix=prefix))
            atexit.register(_remove_in, os.getpid(), self._dir)
        path = self._dir / "template.db"
        if not path.exists():
            made = self._dir / f"making-{os.getpid()}.db"
            engine = db.create_engine(
                create_db_conn_string(str(self._dir), made.stem), poolclass=NullPool
            )
            # In WAL mode from the start (as stock `_initdb` leaves it) and held open, so that
            # its ~20 transactions share one WAL file instead of a new journal file each.
            keeper = sqlite3.connect(made)
            try:
                keeper.execute("PRAGMA journal_mode=WAL")
                stock_initdb(engine)
            finally:
                engine.dispose()
                keeper.close()  # the last connection closed: the WAL is checkpointed
            os.replace(made, path)
        return path

    def create(self, target: str, stock_initdb: Callable[[Engine], None]) -> bool:
        """Create the shard file `target` from the template; False when it exists already (made
        by another process, perhaps not finished: the caller initialises it as stock does)."""
        with self._lock:
            template = self._template(stock_initdb)
            staged = f"{target}.{os.getpid()}.{threading.get_ident()}.staged"
            shutil.copyfile(template, staged)
            try:
                os.link(staged, target)
            except FileExistsError:
                return False
            finally:
                os.unlink(staged)
            return True

    def forget(self) -> None:
        """After a fork: the child makes a template of its own when it needs one."""
        self._dir = None
        self._lock = threading.Lock()


# The template folder of process 1234: `<temp dir>/scrapeflow-shard-template-1234-<random>`.
_TEMPLATE_PREFIX = "scrapeflow-shard-template-"


def _remove_templates_of_dead_processes() -> None:
    """Remove the template folders of processes that no longer run: a process killed outright
    (SIGKILL, `os._exit`) never reaches its exit handler, and left one behind each time."""
    parent = Path(tempfile.gettempdir())
    try:
        entries = list(parent.glob(f"{_TEMPLATE_PREFIX}*-*"))
    except OSError:
        return
    for folder in entries:
        pid = folder.name[len(_TEMPLATE_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _remove_in(pid: int, folder: Path) -> None:
    # Forked children inherit the exit handler: only the process that made the folder removes it.
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)
