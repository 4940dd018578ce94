"""Which Dagster the batched storage was written against, and what to do on another one."""

import logging
import warnings

import dagster

# The batched writer reproduces the rows Dagster's own SQLite storage writes for asset events
# and leans on its private helpers: both may change in any release.
WRITTEN_AGAINST_DAGSTER = "1.13.27"

logger = logging.getLogger(__name__)
_warned_versions: set[str] = set()


def supports_dagster_version(version: str = dagster.__version__) -> bool:
    """Whether batching is safe on Dagster `version`; warns once per version when it is not.

    Args:
        version: the running Dagster's version (`dagster.__version__` unless testing).
    """
    if version == WRITTEN_AGAINST_DAGSTER:
        return True
    if version not in _warned_versions:
        _warned_versions.add(version)
        message = (
            f"scrapeflow_dagster.storage was written against dagster {WRITTEN_AGAINST_DAGSTER}, "
            f"this is dagster {version}: asset events are written one by one as stock Dagster "
            "does (no batching) until the storage is checked against this version"
        )
        logger.warning(message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return False
