"""A daemon-run backfill launched through GraphQL, ours against the floor (part c of bench_dagster).

`python -m dagster dev` (daemon + webserver) on a fresh home, tasks added, a partition backfill of
all keys launched through GraphQL (launchPartitionBackfill) and polled (partitionBackfillOrError)
until it completes; the same for the floor asset.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.dagster.cli_runs import FLOOR_MODULE, OURS_MODULE, cleanup, write_tasks
from bench.dagster.event_log import open_instance
from bench.lib.homes import bench_env, make_home
from bench.lib.local_http import free_port, graphql, http_ok, wait_until
from bench.lib.measured import run_measured
from bench.lib.repo import PYTHON
from bench.lib.report import mib_text, print_table
from bench.lib.service import Service
from bench.lib.site import Site

LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on InvalidStepError { invalidStepKey }
    ... on InvalidOutputError { stepKey invalidOutputName }
    ... on UnauthorizedError { message }
    ... on PartitionSetNotFoundError { message }
    ... on InvalidSubsetError { message }
    ... on RunConflict { message }
  }
}
"""

BACKFILL_STATUS = """
query Backfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { id status numPartitions endTimestamp error { message } }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}
"""

ASSET_PRESENT = """
query Asset($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { __typename ... on AssetNode { id } }
}
"""

BACKFILL_DONE = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def backfill_once(
    root: Path,
    *,
    name: str,
    module: str,
    asset: str,
    add_cmd: list[str],
    keys: list[str],
    data: Path | None,
    timeout: float,
    extra_cpu: Any = None,
) -> dict[str, Any]:
    """dagster dev on a fresh home; add the partitions; backfill them all; time it."""
    # Ours on the home `scrapeflow home init` writes; the floor on Dagster's stock home.
    home = make_home(root, f"dev-{name}", ours=name.startswith("ours"))
    env = bench_env(home, data)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [PYTHON, "-m", "dagster", "dev", "-h", "127.0.0.1", "-p", str(port), "-m", module]
    result: dict[str, Any] = {"name": name, "partitions": len(keys)}
    with Service(cmd, env=env, log_path=root / f"dev-{name}.log") as dev:
        t0 = time.perf_counter()
        try:
            wait_until(
                lambda: not dev.alive() or http_ok(url + "/server_info"),
                timeout=180,
                interval=0.5,
                what="dagster dev webserver",
            )
            if not dev.alive():
                raise RuntimeError("dagster dev exited")

            def asset_loaded() -> bool:
                try:
                    data_ = graphql(url + "/graphql", ASSET_PRESENT, {"key": {"path": [asset]}})
                except (OSError, RuntimeError):
                    return False
                return bool(data_["assetNodeOrError"]["__typename"] == "AssetNode")

            wait_until(asset_loaded, timeout=180, interval=0.5, what=f"asset {asset} loaded")
            result["startup_seconds"] = time.perf_counter() - t0
            add = run_measured(add_cmd, env=env, label=f"{name} add", extra_cpu=extra_cpu)
            result["add_seconds"] = add.seconds
            params = {"partitionNames": keys, "assetSelection": [{"path": [asset]}]}
            launched_wall = time.time()
            t1 = time.perf_counter()
            answer = graphql(url + "/graphql", LAUNCH_BACKFILL, {"params": params})
            launch = answer["launchPartitionBackfill"]
            if launch["__typename"] != "LaunchBackfillSuccess":
                raise RuntimeError(f"backfill not launched: {json.dumps(launch)[:2000]}")
            backfill_id = launch["backfillId"]
            result["launch_call_seconds"] = time.perf_counter() - t1
            status = ""
            deadline = t1 + timeout
            while True:
                info = graphql(url + "/graphql", BACKFILL_STATUS, {"id": backfill_id})
                node = info["partitionBackfillOrError"]
                status = node.get("status", node["__typename"])
                if status in BACKFILL_DONE:
                    break
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"backfill {backfill_id} still {status} after {timeout} s")
                time.sleep(0.5)
            result["backfill_seconds"] = time.perf_counter() - t1
            result["status"] = status
            result["backfill_id"] = backfill_id
            result.update(_backfill_runs(home, backfill_id, launched_wall, asset))
            if dev.sampler is not None:
                result["rss_by_role"] = dev.sampler.by_role()
        except Exception:
            print(f"--- dagster dev log tail ({name})\n{dev.log_tail()}", file=sys.stderr)
            raise
    cleanup(home, *([data] if data else []))
    return result


def _backfill_runs(home: Path, backfill_id: str, launched: float, asset: str) -> dict[str, Any]:
    import dagster as dg

    with open_instance(home) as instance:
        records = instance.get_run_records(
            filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id})
        )
        materialized = len(instance.get_materialized_partitions(dg.AssetKey(asset)))
    out: dict[str, Any] = {"runs": len(records), "materialized": materialized}
    if records:
        created = min(r.create_timestamp.timestamp() for r in records)
        starts = [r.start_time for r in records if r.start_time]
        ends = [r.end_time for r in records if r.end_time]
        out["launch_to_run_created"] = created - launched
        if starts:
            out["run_created_to_start"] = min(starts) - created
        if starts and ends:
            out["runs_start_to_end"] = max(ends) - min(starts)
            out["run_end_wall"] = max(ends)
    return out


def _role_peak(result: dict[str, Any], prefixes: tuple[str, ...]) -> float | None:
    roles = result.get("rss_by_role") or {}
    peaks = [v["peak_rss_mib"] for k, v in roles.items() if k.startswith(prefixes)]
    return max(peaks) if peaks else None


def part_backfill(args: argparse.Namespace, root: Path, report: dict[str, Any]) -> None:
    """Daemon-run backfills of --backfill-tasks partitions, floor then ours, --rounds times."""
    n = args.backfill_tasks
    print(f"\n== daemon backfill through GraphQL (dagster dev): {n:,} partitions")
    results = []
    with Site(pages=n, page_bytes=args.page_bytes) as site:
        sub = root / "backfill"
        sub.mkdir()
        tasks_file, keys_file, keys = write_tasks(sub, site.url, n)
        for i in range(args.rounds):
            floor: dict[str, Any] | None = None
            if not args.backfill_ours_only:
                floor = backfill_once(
                    sub,
                    name=f"floor-r{i}",
                    module=FLOOR_MODULE,
                    asset="trivial",
                    add_cmd=[PYTHON, "-m", FLOOR_MODULE, "add", str(keys_file)],
                    keys=keys,
                    data=None,
                    timeout=args.backfill_timeout,
                )
                seconds = floor["backfill_seconds"]
                print(f"round {i + 1} floor: backfill {seconds:.1f} s", flush=True)
            ours = backfill_once(
                sub,
                name=f"ours-r{i}",
                module=OURS_MODULE,
                asset="scrape",
                add_cmd=[PYTHON, "-m", "scrapeflow_dagster.cli", "tasks", "add", str(tasks_file)],
                keys=keys,
                data=sub / f"data-r{i}",
                timeout=args.backfill_timeout,
                extra_cpu=site.cpu_seconds,
            )
            print(f"round {i + 1} ours:  backfill {ours['backfill_seconds']:.1f} s", flush=True)
            results.append({"floor": floor, "ours": ours})
    rows = []
    for i, r in enumerate(results):
        for name in ("floor", "ours"):
            b = r[name]
            if b is None:
                continue
            rows.append(
                [
                    f"r{i + 1} {name}",
                    b.get("startup_seconds"),
                    b.get("add_seconds"),
                    b.get("launch_call_seconds"),
                    b.get("launch_to_run_created"),
                    b.get("run_created_to_start"),
                    b.get("runs_start_to_end"),
                    b["backfill_seconds"],
                    b.get("runs"),
                    b.get("materialized"),
                    _role_peak(b, ("step worker", "run worker")),
                    b.get("status"),
                ]
            )
    print_table(
        [
            "run",
            "dev startup s",
            "add s",
            "launch call s",
            "->run created",
            "->run start",
            "run s",
            "backfill s",
            "runs",
            "materialized",
            "worker MiB",
            "status",
        ],
        rows,
        title=f"backfill of {n:,} partitions launched through GraphQL, daemon-run",
    )
    ours_s = statistics.median(r["ours"]["backfill_seconds"] for r in results)
    if args.backfill_ours_only:
        # Peak RSS per process of the daemon-launched run, without the floor's time.
        for role, peak in sorted(results[0]["ours"].get("rss_by_role", {}).items()):
            print(f"ours peak RSS {role}: {mib_text(peak.get('peak_rss_mib'))}")
        report["backfill"] = {"tasks": n, "rounds": results, "summary": {"ours_seconds": ours_s}}
        return
    floor_s = statistics.median(r["floor"]["backfill_seconds"] for r in results)
    summary = {
        "floor_seconds": floor_s,
        "ours_seconds": ours_s,
        "ratio": ours_s / floor_s,
        "ours_pages_per_s": n / ours_s,
    }
    print(
        f"\nours/floor backfill {summary['ratio']:.3f} ({ours_s:.1f} s vs {floor_s:.1f} s;"
        f" ours {n / ours_s:.0f} pages/s from launch to COMPLETED)"
    )
    report["backfill"] = {"tasks": n, "rounds": results, "summary": summary}
