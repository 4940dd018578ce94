"""Two dynamic-partitioned assets the storage tests run through the real `dagster` CLI.

    python -m dagster asset materialize -m scrapeflow_dagster_tests.storage.partitioned_defs \\
        --select flaky --partition-range k00000...k00299 [--config-json ...]

`flaky` works like `executor_assets.publish()` when some tasks failed: it logs a
materialisation for each succeeded partition, then raises `dg.Failure`, so the others end
FAILED. `trivial` does nothing: Dagster materialises each partition itself (with data version
tags, which the index shard mirrors in `asset_event_tags`).
"""

import os
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

keys_partitions_def = dg.DynamicPartitionsDefinition(name="storage_keys")
FAILING_REMAINDER = 7


def partition_key(number: int) -> str:
    """The key of partition `number` (keys sort in number order)."""
    return f"k{number:05d}"


def fails(key: str, fail_every: int) -> bool:
    """Whether `flaky` fails partition `key` when it fails one partition in `fail_every`."""
    return fail_every > 0 and int(key[1:]) % fail_every == FAILING_REMAINDER


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file renamed into place (a kill leaves no half)."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


class FlakyConfig(dg.Config):
    """How `flaky` behaves in a run."""

    fail_every: int = 30  # one partition in this many fails (0: none)
    label: str = "first"  # written in each materialisation's metadata
    delay_seconds: float = 0.0  # sleep after each materialisation (the kill test)
    progress_file: str = ""  # when set: how many materialisations were logged so far


@dg.asset(
    partitions_def=keys_partitions_def,
    backfill_policy=dg.BackfillPolicy.single_run(),
    output_required=False,
)
def flaky(context: dg.AssetExecutionContext, config: FlakyConfig) -> Iterator[dg.Output]:
    """Materialises the partitions of the run except one in `fail_every`, then fails the step."""
    failed = []
    for logged, key in enumerate(context.partition_keys, start=1):
        if fails(key, config.fail_every):
            failed.append(key)
            continue
        context.log_event(
            dg.AssetMaterialization(
                asset_key=context.asset_key,
                partition=key,
                metadata={"number": int(key[1:]), "label": config.label},
            )
        )
        if config.progress_file:
            write_atomically(Path(config.progress_file), str(logged))
        if config.delay_seconds:
            time.sleep(config.delay_seconds)
    if failed:
        storage = context.instance.event_log_storage
        raise dg.Failure(
            description=f"{len(failed)} partitions failed",
            # How many events this step process still held when it failed (-1: stock storage):
            # shows the materialisations above were buffered, not written one by one.
            metadata={"buffered_events": getattr(storage, "buffered_event_count", -1)},
            allow_retries=False,
        )
    # No output: the materialisations logged above are all this asset's (none from Dagster).
    yield from ()


@dg.asset(partitions_def=keys_partitions_def, backfill_policy=dg.BackfillPolicy.single_run())
def trivial() -> None:
    """Nothing at all, for every partition of the run."""


defs = dg.Definitions(assets=[flaky, trivial])
