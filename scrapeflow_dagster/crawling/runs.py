"""Runs of a code location's executor assets, started in this process against the Dagster
instance: the code location is imported once and each run costs what Dagster's run costs,
not a new `dagster asset materialize` process (imports, instance load, code load: ~2.5-3.5 s
each on 2 cores).

A run of one shard (the shipped assets unsharded, or too few tasks to split) executes in this
process (`execute_in_process`), as `dagster asset materialize` does for it (the in-process
executor). A run that needs its executor (several shards side by side, Celery, a code
location of your own) goes through `dagster.execute_job` with the job reconstructed from the
module, so its steps run where the location's executor puts them.
"""

import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import dagster as dg

from scrapeflow_dagster.broker import configured_broker
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.lib.partitions import RANGE_END_TAG, RANGE_START_TAG, TASKS_PARTITIONS_NAME
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.scaleout.sizing import one_shard_run


def location_definitions(module: str) -> dg.Definitions:
    """The `Definitions` object of `module` (the first one it holds).

    Raises:
        ValueError: naming the module when it holds none.
    """
    with warnings.catch_warnings():  # the asset decorators warn about beta parameters
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        loaded = importlib.import_module(module)
    for value in vars(loaded).values():
        if isinstance(value, dg.Definitions):
            return value
    raise ValueError(f"{module} holds no dagster Definitions")


# The job of every asset of a location, as `asset_job` names it: Dagster's own implicit job
# (`__ASSET_JOB`) is a reserved name that a reconstructed job may not carry.
LOCATION_JOB = "scrapeflow_location_assets"


def asset_job(module: str) -> dg.JobDefinition:
    """The job of every asset of `module`'s definitions (what `dagster asset materialize`
    selects from), with its resources and executor; module-level, so that step processes can
    rebuild it."""
    definitions = location_definitions(module)
    job = dg.define_asset_job(LOCATION_JOB, selection=dg.AssetSelection.all())
    return dg.Definitions.merge(definitions, dg.Definitions(jobs=[job])).get_job_def(LOCATION_JOB)


class LocationRuns:
    """Runs of the executor assets of the code location `module`, against `instance`."""

    def __init__(self, instance: dg.DagsterInstance, module: str = DEFINITIONS_MODULE):
        self.instance = instance
        self.module = module
        self.definitions = location_definitions(module)
        self.job = self.definitions.resolve_implicit_global_asset_job_def()

    def scrape_settings(self) -> ScrapeSettings | None:
        """The settings the runs' `scrape_settings` resource builds (None when the location
        replaced it with a resource of its own kind)."""
        resource = (self.definitions.resources or {}).get("scrape_settings")
        return resource.build() if isinstance(resource, ScrapeSettingsResource) else None

    def in_this_process(self, tasks: int) -> bool:
        """Whether a run of `tasks` tasks executes in this process (see the module's doc)."""
        return (
            self.module == DEFINITIONS_MODULE
            and configured_broker() is None
            and one_shard_run(tasks)
        )

    def run_range(
        self,
        assets: Sequence[str],
        first: str,
        last: str,
        *,
        tasks: int,
        config: Mapping[str, Any] | None = None,
        log: IO[str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> bool:
        """Run `assets` over the `tasks` partitions `first...last`; True when the run succeeded.

        Args:
            config: run config (`ops: {...}`), as `dagster asset materialize --config-json`.
            log: a file that takes Dagster's output of the run (its console log), as the
                output of a `dagster` command would (default: this process's stderr).
        """
        selection = {dg.AssetKey.from_user_string(name) for name in assets}
        run_tags = {RANGE_START_TAG: first, RANGE_END_TAG: last, **(tags or {})}
        with _output_to(log):
            if self.in_this_process(tasks):
                result = self.job.get_subset(asset_selection=selection).execute_in_process(
                    run_config=dict(config or {}),
                    instance=self.instance,
                    tags=run_tags,
                    raise_on_error=False,
                )
                return result.success
            recon = dg.build_reconstructable_job(__name__, asset_job.__name__, (self.module,))
            with dg.execute_job(
                recon,
                instance=self.instance,
                run_config=dict(config or {}),
                tags=run_tags,
                asset_selection=sorted(selection),
                raise_on_error=False,
            ) as executed:
                return executed.success

    def partitions(self) -> list[str]:
        """The `tasks` partitions in order."""
        return list(self.instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))


@contextlib.contextmanager
def _output_to(log: IO[str] | None) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors too: step processes inherit
    them) to `log` for the block."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    log.flush()
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        log.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
