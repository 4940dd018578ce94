"""Which Dagster versions the batched storages (and the few other uses of Dagster internals) are
verified on, and what happens on others.

A version is verified when the storage contract tests and the asset tests have passed on it:
`make test` on the versions `pyproject.toml` resolves to with every extra, `make compat` on the
newest verified patch without them, or on a candidate (`make compat DAGSTER=1.13.N`;
docs/compatibility.md: adding a verified version). `pyproject.toml` pins Dagster to `VERIFIED`
(`storage/test_version_pins.py`), so the fallback below runs only where a user forced another.
"""

import functools
import logging
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from importlib import metadata

import dagster

# The batched writers reproduce the rows Dagster's own SQL storages write for asset events and
# lean on their private helpers: both may change in any release.
VERIFIED: dict[str, tuple[str, ...]] = {
    "dagster": ("1.13.27", "1.13.28"),
    # The UI reads partition states through it (GraphQL): checked in the contract test.
    "dagster-webserver": ("1.13.27", "1.13.28"),
    # 0.29.27 requires dagster 1.13.27 exactly: a Postgres home runs on that one.
    "dagster-postgres": ("0.29.27",),
}
# Set (to 1) by `make compat` only: treat the installed versions as verified, to find out
# whether they are (the contract tests fail loudly on what moved).
ADMIT_INSTALLED_ENV = "SCRAPEFLOW_ADMIT_INSTALLED_DAGSTER"
# What each batched storage leans on.
SQLITE_PACKAGES = ("dagster", "dagster-webserver")
POSTGRES_PACKAGES = ("dagster", "dagster-webserver", "dagster-postgres")
STORAGE_FALLBACK = "asset events are written one by one as stock Dagster does (no batching)"

logger = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()


@functools.cache
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
    wanted = "; ".join(f"{name} {', '.join(VERIFIED[name])}" for name in VERIFIED)
    message = (
        f"scrapeflow_dagster is verified on {wanted}; this is {found}: {fallback} until"
        " `make compat` passes on it (docs/compatibility.md)"
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _unverified(
    packages: Sequence[str], installed: Mapping[str, str | None] | None = None
) -> list[str]:
    """`name version` of each package of `packages` at a version not verified (none when `make
    compat` admits the installed ones); `installed` stands in for them in tests."""
    if installed is None and os.environ.get(ADMIT_INSTALLED_ENV) == "1":
        return []
    found = {
        name: (installed[name] if installed is not None else installed_version(name))
        for name in packages
    }
    return [
        f"{name} {found[name] or '(not installed)'}"
        for name in packages
        if found[name] not in VERIFIED[name]
    ]


def supports_installed_versions(
    packages: Sequence[str],
    *,
    fallback: str = STORAGE_FALLBACK,
    installed: Mapping[str, str | None] | None = None,
) -> bool:
    """Whether every package of `packages` has a verified version (or `make compat` admits the
    installed ones); warns once per set of versions found and fallback when one is not.

    Args:
        packages: distribution names among `VERIFIED`.
        fallback: what happens instead, for the warning.
        installed: the versions to check (default: the installed ones; for tests).
    """
    differing = _unverified(packages, installed)
    if differing:
        _warn_once(", ".join(differing), fallback)
    return not differing


def unverified_versions(packages: Sequence[str] = SQLITE_PACKAGES) -> str | None:
    """The packages of `packages` installed at a version not verified (`dagster 1.13.29`), or
    None when all are verified (or `make compat` admits them): what a run's log and its
    `no_failed_tasks` check name, so that a fallback is seen where users look."""
    differing = _unverified(packages)
    if not differing:
        return None
    verified = "; ".join(f"{name} {', '.join(VERIFIED[name])}" for name in packages)
    return f"{', '.join(differing)} is not verified (verified: {verified}): {STORAGE_FALLBACK}"


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
    if version == dagster.__version__:
        return supports_installed_versions(["dagster"], fallback=fallback)
    return supports_installed_versions(
        ["dagster"], fallback=fallback, installed={"dagster": version}
    )


def main() -> None:
    """Print the installed Dagster packages and whether each is verified (`make compat`)."""
    for name, versions in VERIFIED.items():
        found = installed_version(name)
        state = "verified" if found in versions else "NOT verified"
        line = f"{name} {found or '(not installed)'}: {state} (verified: {', '.join(versions)})"
        sys.stdout.write(line + "\n")


if __name__ == "__main__":
    main()
