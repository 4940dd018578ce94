"""Dagster's migration scripts read once per process, not once per database opened.

As each of Dagster's SQLite storages opens its database it checks the database's alembic
revision against the head of Dagster's migrations (`check_alembic_revision`), and stamps a new
database with that head (`stamp_alembic_rev`). Each check and each stamp builds an alembic
`ScriptDirectory` from a new config, and each new `ScriptDirectory` loads (executes) every one of
Dagster's ~90 migration scripts to find the head: ~30 ms each time on the 2-core machine, 5 times
in a process that opens an existing home and makes a run shard (runs, schedules, the index
shard, the run shard template twice), 8 times on a new home. The scripts are files of the
installed Dagster, which does not change under a running process: `keep_dagster_migrations`
makes alembic hand the first `ScriptDirectory` of Dagster's migrations (per set of options,
its scripts read as it is made) to the later ones. Any other script location (a user's own
migrations) is built as alembic builds it, and so is everything on a Dagster version the
storages are not verified on, or with an alembic whose `ScriptDirectory` takes other options.
"""

import inspect
import os
import threading
from collections.abc import Hashable
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory
from dagster._core.storage.sql import ALEMBIC_SCRIPTS_LOCATION

from scrapeflow_dagster.storage.dagster_internals.version_guard import supports_dagster_version

# alembic's own `from_config` (a classmethod object), called for whatever is not kept.
_ALEMBIC_FROM_CONFIG = ScriptDirectory.__dict__["from_config"]
# What a `ScriptDirectory` is made of in the alembic versions this was read against (1.20):
# `_dagster_options` keys on each of them. An alembic whose constructor takes anything else
# may read an option the key lacks: there nothing is kept.
_KNOWN_PARAMETERS = (
    "self",
    "dir",
    "file_template",
    "truncate_slug_length",
    "version_locations",
    "sourceless",
    "output_encoding",
    "timezone",
    "hooks",
    "recursive_version_locations",
    "messaging_opts",
)
_kept: dict[Hashable, ScriptDirectory] = {}
_asked = 0
_lock = threading.Lock()
_installed = False


def dagster_migration_reads() -> tuple[int, int]:
    """How many times this process asked for a `ScriptDirectory` of Dagster's migrations since
    they are kept, and how many it built (read the scripts for)."""
    return _asked, len(_kept)


def keep_dagster_migrations() -> bool:
    """From now on, build a `ScriptDirectory` of Dagster's migrations once per process (see
    the module); returns whether it is on (not on an unverified Dagster version)."""
    global _installed
    with _lock:
        if _installed:
            return True
        if not supports_dagster_version(fallback="Dagster's migration scripts are read anew"):
            return False
        if tuple(inspect.signature(ScriptDirectory.__init__).parameters) != _KNOWN_PARAMETERS:
            return False
        ScriptDirectory.from_config = classmethod(_from_config)  # type: ignore[method-assign, assignment]
        _installed = True
        return True


def _from_config(cls: type[ScriptDirectory], config: Config) -> ScriptDirectory:
    key = _dagster_options(config) if cls is ScriptDirectory else None
    if key is None:
        return _ALEMBIC_FROM_CONFIG.__func__(cls, config)  # type: ignore[no-any-return]
    global _asked
    with _lock:
        _asked += 1
        script = _kept.get(key)
        if script is None:
            script = _ALEMBIC_FROM_CONFIG.__func__(cls, config)
            script.revision_map.heads  # noqa: B018  (read the scripts now, under the lock)
            _kept[key] = script
        return script


def _dagster_options(config: Config) -> Hashable | None:
    """Everything alembic's `from_config` reads from `config`, when it names Dagster's own
    migrations and adds nothing to `sys.path`; None otherwise (and on an alembic without
    these accessors)."""
    try:
        if config.get_alembic_option("script_location") != ALEMBIC_SCRIPTS_LOCATION:
            return None
        if config.get_prepend_sys_paths_list():
            return None  # alembic prepends them on each build: let it
        options: tuple[Any, ...] = (
            ALEMBIC_SCRIPTS_LOCATION,
            config.get_alembic_option("file_template"),
            config.get_alembic_option("truncate_slug_length"),
            config.get_alembic_boolean_option("sourceless"),
            config.get_alembic_option("output_encoding"),
            tuple(config.get_version_locations_list() or ()),
            config.get_alembic_option("timezone"),
            repr(config.get_hooks_list()),
            config.get_alembic_boolean_option("recursive_version_locations"),
            repr(sorted(config.messaging_opts.items())),
        )
    except AttributeError:
        return None
    return options


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)
