"""Which Dagster packages the batched storages were written against, and what to do on others."""

import logging
import warnings
from collections.abc import Mapping, Sequence
from importlib import metadata

import dagster

# The batched writers reproduce the rows Dagster's own SQL storages write for asset events and
# lean on their private helpers: both may change in any release.
WRITTEN_AGAINST_DAGSTER = "1.13.27"
WRITTEN_AGAINST = {
    "dagster": WRITTEN_AGAINST_DAGSTER,
    # The UI reads partition states through it (GraphQL): checked in the contract test.
    "dagster-webserver": "1.13.27",
    "dagster-postgres": "0.29.27",
}
# What each batched storage leans on.
SQLITE_PACKAGES = ("dagster", "dagster-webserver")
POSTGRES_PACKAGES = ("dagster", "dagster-webserver", "dagster-postgres")
STORAGE_FALLBACK = "asset events are written one by one as stock Dagster does (no batching)"

logger = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()


def installed_version(package: str) -> str | None:
    """The installed version of the distribution `package`, None when it is not installed."""
    if package == "dagster":
        return dagster.__version__
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _warn_once(found: str, fallback: str) -> None:
    if (found, fallback) in _warned:
        return
    _warned.add((found, fallback))
    wanted = ", ".join(f"{name} {WRITTEN_AGAINST[name]}" for name in WRITTEN_AGAINST)
    message = (
        f"scrapeflow_dagster was written against {wanted}; this is {found}: {fallback} until it"
        " is checked against these versions"
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def supports_installed_versions(
    packages: Sequence[str],
    *,
    fallback: str = STORAGE_FALLBACK,
    installed: Mapping[str, str | None] | None = None,
) -> bool:
    """Whether every package of `packages` has the version written against; warns once per set
    of versions found and fallback when one differs.

    Args:
        packages: distribution names among `WRITTEN_AGAINST`.
        fallback: what happens instead, for the warning.
        installed: the versions to check (default: the installed ones; for tests).
    """
    found = {
        name: (installed[name] if installed is not None else installed_version(name))
        for name in packages
    }
    differing = [name for name in packages if found[name] != WRITTEN_AGAINST[name]]
    if not differing:
        return True
    _warn_once(
        ", ".join(f"{name} {found[name] or '(not installed)'}" for name in differing), fallback
    )
    return False


def supports_dagster_version(
    version: str = dagster.__version__,
    *,
    fallback: str = STORAGE_FALLBACK,
) -> bool:
    """Whether code that leans on Dagster internals may run on Dagster `version`; warns once per
    version and fallback when it may not.

    Args:
        version: the running Dagster's version (`dagster.__version__` unless testing).
        fallback: what happens instead, for the warning.
    """
    return supports_installed_versions(
        ["dagster"], fallback=fallback, installed={"dagster": version}
    )
