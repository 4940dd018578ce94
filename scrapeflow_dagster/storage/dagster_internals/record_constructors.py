"""Dagster's record constructors compiled where no run's data is in sight.

A Dagster `@record` class compiles its checked constructor the first time it is called, and
compiles it into a namespace that copies the calling frame's globals and locals
(`dagster_shared.record.JitCheckedNew`, `EvalContext.update_from_frame`, Dagster 1.13). The
compiled function keeps that namespace, so whatever the first caller's frame held stays alive
for the life of the process. Three records are first built while a run is created, in frames
that hold the run's data:

- `AssetCheckEvaluationPlanned`, in `_log_asset_planned_events`: its frame holds `events`, the
  run's planned events, each with the run's partitions resolved to a set of keys: at a million
  tasks three sets of a million keys (a profile put them at ~126 bytes per task) kept after
  the run started;
- `DagsterRun` and `KeyRangesPartitionsSubset`, in frames holding the execution plan's snapshot.

`compile_run_records` has each compile in this module's frame first: calling a record with no
arguments compiles its constructor, which then refuses the missing fields, so nothing is
built (a `DagsterRun` of no job is built and dropped: its own constructor needs a job name
before it reaches the compiled one). A record the call cannot compile here (a forward
reference this frame cannot resolve) is left to compile as Dagster compiles it. Leans on
Dagster internals: on a Dagster version the guard does not admit, nothing is done.
"""

import importlib
import logging
from typing import Any

from scrapeflow_dagster.storage.dagster_internals.version_guard import supports_dagster_version

logger = logging.getLogger(__name__)

# (module, class, arguments): the records a run's creation builds first in a frame holding the
# run, and the least each is called with here. `DagsterRun` has a constructor of its own that
# reaches the compiling one only with its required fields: that one is built (and dropped).
RUN_RECORDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "dagster._core.definitions.asset_checks.asset_check_evaluation",
        "AssetCheckEvaluationPlanned",
        {},
    ),
    ("dagster._core.storage.dagster_run", "DagsterRun", {"job_name": "record_constructors"}),
    ("dagster._core.definitions.partitions.subset.key_ranges", "KeyRangesPartitionsSubset", {}),
)


def is_compiled(cls: type) -> bool:
    """Whether the record class `cls` has compiled its checked constructor: until then the
    `__new__` of a class in its MRO is the object that compiles it (`JitCheckedNew` in
    dagster_shared 1.13); once compiled, that class holds the compiled function."""
    from dagster_shared.record import JitCheckedNew

    return not any(isinstance(c.__dict__.get("__new__"), JitCheckedNew) for c in cls.__mro__)


def compile_run_records() -> list[str]:
    """Compile the constructors of `RUN_RECORDS` now (see the module); the names of those that
    are compiled afterwards. Does nothing on a Dagster version the guard does not admit."""
    if not supports_dagster_version(fallback="Dagster's record constructors compile as it does"):
        return []
    compiled = []
    for module_name, class_name, arguments in RUN_RECORDS:
        cls = getattr(importlib.import_module(module_name), class_name)
        if not is_compiled(cls):
            try:
                cls(**arguments)  # compiles, then (most) refuse the missing fields
            except Exception:  # the refusal expected, or a compile that failed here
                pass
        if is_compiled(cls):
            compiled.append(class_name)
        else:
            logger.debug("%s compiles its constructor at its first use", class_name)
    return compiled
