"""Which Dagster the batched storage was written against, and what to do on another one."""

import logging
import warnings

import dagster

# The batched writer reproduces the rows Dagster's own SQLite storage writes for asset events
# and leans on its private helpers: both may change in any release.
WRITTEN_AGAINST_DAGSTER = "1.13.27"

logger = logging.getLogger(__name__)
_warned_versions: set[tuple[str, str]] = set()


def supports_dagster_version(
    version: str = dagster.__version__,
    *,
    fallback: str = "asset events are written one by one as stock Dagster does (no batching)",
) -> bool:
    """Whether code that leans on Dagster internals may run on Dagster `version`; warns once per
    version and fallback when it may not.

    Args:
        version: the running Dagster's version (`dagster.__version__` unless testing).
        fallback: what happens instead, for the warning.
    """
    if version == WRITTEN_AGAINST_DAGSTER:
        return True
    if (version, fallback) not in _warned_versions:
        _warned_versions.add((version, fallback))
        message = (
            f"scrapeflow_dagster was written against dagster {WRITTEN_AGAINST_DAGSTER}, this is "
            f"dagster {version}: {fallback} until it is checked against this version"
        )
        logger.warning(message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return False
