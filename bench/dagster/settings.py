"""`scrape` materialisations under instance and run-config variants, as ratios against the default.

Run by `bench_dagster --instance-settings` or `--only settings`, at --settings-tasks partitions,
one run per variant.
"""

import argparse
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import measure_ours, write_tasks
from bench.lib.homes import temp_root
from bench.lib.report import print_table
from bench.lib.site import Site

Variant = tuple[str, dict[str, Any], dict[str, str], bool]


def settings_variants(max_parallelism: int) -> list[Variant]:
    """(name, run config, extra env, home on /dev/shm)."""

    def resources(p: int) -> dict[str, Any]:
        return {"resources": {"scrape_settings": {"config": {"max_parallelism": p}}}}

    in_process = {"execution": {"config": {"in_process": {}}}}
    variants: list[Variant] = [
        ("default (multiprocess, max_parallelism 100)", {}, {}, False),
        ("DAGSTER_EVENT_BATCH_SIZE=200", {}, {"DAGSTER_EVENT_BATCH_SIZE": "200"}, False),
        ("in_process executor", in_process, {}, False),
        ("max_parallelism 50", resources(50), {}, False),
        (f"max_parallelism {max_parallelism}", resources(max_parallelism), {}, False),
    ]
    # One planned event for the run's whole partition subset instead of one per partition
    # (SQLite storage otherwise writes N of them when the run is created). Caveat, checked with
    # failing tasks: partitions of a failed run then show as missing, not failed, so the
    # retry sensor and the UI's "failed" filter no longer see them.
    subset = {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "1"}
    variants.append(("DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS=1 (*)", {}, subset, False))
    if Path("/dev/shm").is_dir():
        variants.append(("DAGSTER_HOME on tmpfs (no fsync; not durable)", {}, {}, True))
    return variants


def part_settings(args: argparse.Namespace, root: Path, report: dict[str, Any]) -> None:
    """`scrape` over --settings-tasks partitions once per variant, against the first (default)."""
    n = args.settings_tasks
    print(f"\n== instance and run-config settings: scrape over {n:,} partitions")
    rows_out: list[dict[str, Any]] = []
    with Site(pages=n, page_bytes=args.page_bytes) as site:
        sub = root / "settings"
        sub.mkdir()
        tasks_file, _keys_file, keys = write_tasks(sub, site.url, n)
        for i, (name, config, env, shm) in enumerate(settings_variants(200)):
            with temp_root("bench-shm-", "/dev/shm" if shm else str(sub)) as parent:
                m = measure_ours(
                    sub,
                    site,
                    tasks_file,
                    keys,
                    f"s{i}",
                    config=config or None,
                    extra_env=env,
                    home_parent=parent,
                )
            print(f"{name}: materialize {m['materialize']['seconds']:.1f} s", flush=True)
            rows_out.append({"variant": name, "config": config, "env": env, **m})
    base = rows_out[0]["materialize"]["seconds"]
    rows = [
        [
            r["variant"],
            r["add"]["seconds"],
            r["materialize"]["seconds"],
            n / r["materialize"]["seconds"],
            r["materialize"]["seconds"] / base,
            r["analysis"].get("phases", {}).get("planned_events"),
            r["analysis"].get("phases", {}).get("step_compute"),
            r["analysis"].get("phases", {}).get("materialization_events"),
            r["materialize"]["tree_peak_rss_mib"],
            r["materialize"]["other_busy_cores"],
        ]
        for r in rows_out
    ]
    print_table(
        [
            "variant",
            "add s",
            "materialize s",
            "pages/s",
            "x default",
            "planned ev. s",
            "compute s",
            "mat. events s",
            "peak MiB",
            "others",
        ],
        rows,
        title=f"settings variants, scrape over {n:,} partitions (one run each)",
    )
    print(
        "(*) failed tasks then end as missing partitions, not failed ones: the retry sensor and"
        " the UI's failed filter stop seeing them"
    )
    report["settings"] = {"tasks": n, "variants": rows_out}
