"""How long the UI's partition health bar takes with 100,000 task partitions.

    .venv/bin/python -m bench.bench_graphql                     # 100k partitions, 2k materialised
    .venv/bin/python -m bench.bench_graphql --partitions 20000 --materialized 500 --json g.json

In a fresh DAGSTER_HOME (SQLite): N keys are added to the `tasks` dynamic partitions with
`instance.add_dynamic_partitions` in chunks of 10,000; M of them, spread over the range, get a
materialisation of `scrape` and of the floor's `trivial` asset (same partitions definition) through
`instance.report_runless_asset_event`. Then `python -m dagster_webserver` serves a workspace with
both code locations (`scrapeflow_dagster.definitions`, `bench.floor_defs`) and we time:

  health    the UI's own `PartitionHealthQuery` (asset page and partitions tab: partition keys
            plus `assetPartitionStatuses`), first call (builds Dagster's asset status cache)
            then warm calls;
  statuses  only `assetPartitionStatuses`;
  keys      only `partitionKeysByDimension`.

For `scrape` (ours) and `trivial` (floor: the same query on a trivial asset over the same
partitions). Target printed: the health query under 3 s, first call included.

With `--cold-rounds K` (K > 1) the health query's first call is timed K times more, each in a
webserver started anew after both assets' stored status caches are wiped (so each call
computes the cache, as the first visit after a run does), the asset asked first alternating
between ours and the floor (the first asked pays the webserver's own warm-up: the dynamic
partitions' keys read once per process). Printed: each round and the median of ours / floor.
"""

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.local_http import free_port, graphql, http_ok, wait_until
from bench.lib.repo import PYTHON, REPO
from bench.lib.report import machine_info, print_table, write_json
from bench.lib.service import Service

TARGET_SECONDS = 3.0
CHUNK = 10_000

# As in dagster-webserver's bundled UI (PartitionHealthQuery), verbatim in what it selects.
HEALTH_QUERY = """
query PartitionHealthQuery($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      id
      partitionKeysByDimension { name type partitionKeys }
      assetPartitionStatuses {
        ... on TimePartitionStatuses {
          ranges { status startTime endTime startKey endKey }
        }
        ... on DefaultPartitionStatuses {
          materializedPartitions
          materializingPartitions
          failedPartitions
        }
        ... on MultiPartitionStatuses {
          primaryDimensionName
          ranges {
            primaryDimStartKey
            primaryDimEndKey
            primaryDimStartTime
            primaryDimEndTime
            secondaryDim {
              ... on TimePartitionStatuses {
                ranges { status startTime endTime startKey endKey }
              }
              ... on DefaultPartitionStatuses {
                materializedPartitions
                materializingPartitions
                failedPartitions
              }
            }
          }
        }
      }
    }
  }
}
"""

STATUSES_QUERY = """
query Statuses($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      assetPartitionStatuses {
        ... on DefaultPartitionStatuses {
          materializedPartitions
          materializingPartitions
          failedPartitions
        }
      }
    }
  }
}
"""

KEYS_QUERY = """
query Keys($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode { partitionKeysByDimension { name partitionKeys } }
  }
}
"""

ASSET_PRESENT = """
query Asset($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { __typename }
}
"""

WORKSPACE = """load_from:
  - python_module:
      module_name: scrapeflow_dagster.definitions
      location_name: scrapeflow
      working_directory: {repo}
  - python_module:
      module_name: bench.floor_defs
      location_name: floor
      working_directory: {repo}
"""

ASSETS = {"ours": "scrape", "floor": "trivial"}


def populate(home: Path, n: int, m: int) -> dict[str, Any]:
    """Add `n` partitions and report `m` materialisations of each asset; returns timings."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    keys = [f"task-{i:07d}" for i in range(n)]
    step = max(1, n // m) if m else n + 1
    chosen = keys[::step][:m]
    out: dict[str, Any] = {"partitions": n, "materialized": len(chosen)}
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        t0 = time.perf_counter()
        for start in range(0, n, CHUNK):
            instance.add_dynamic_partitions("tasks", keys[start : start + CHUNK])
        out["add_partitions_seconds"] = time.perf_counter() - t0
        for asset in ASSETS.values():
            t0 = time.perf_counter()
            for key in chosen:
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(asset_key=asset, partition=key)
                )
            out[f"report_{asset}_seconds"] = time.perf_counter() - t0
    return out


def wipe_status_caches(home: Path) -> None:
    """Drop both assets' stored partition status caches (the next health query builds them)."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        for asset in ASSETS.values():
            instance.event_log_storage.wipe_asset_cached_status(dg.AssetKey(asset))


@contextlib.contextmanager
def webserver(root: Path, home: Path, log_name: str) -> Iterator[dict[str, Any]]:
    """A webserver over both code locations, up with both assets loaded; yields a dict of its
    GraphQL `url` and the `startup` seconds it took, given `rss_by_role` at the end."""
    workspace = root / "workspace.yaml"
    workspace.write_text(WORKSPACE.format(repo=REPO))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = base + "/graphql"
    cmd = [PYTHON, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(port)]
    cmd += ["-w", str(workspace)]
    with Service(cmd, env=bench_env(home), log_path=root / log_name) as web:
        try:
            t0 = time.perf_counter()
            wait_until(
                lambda: not web.alive() or http_ok(base + "/server_info"),
                timeout=180,
                interval=0.5,
                what="webserver",
            )

            def loaded() -> bool:
                try:
                    return all(
                        graphql(url, ASSET_PRESENT, {"key": {"path": [a]}})["assetNodeOrError"][
                            "__typename"
                        ]
                        == "AssetNode"
                        for a in ASSETS.values()
                    )
                except (OSError, RuntimeError):
                    return False

            wait_until(loaded, timeout=180, interval=0.5, what="both code locations")
            served: dict[str, Any] = {"url": url, "startup": time.perf_counter() - t0}
            yield served
            if web.sampler is not None:
                web.sampler.sample()
                served["rss_by_role"] = web.sampler.by_role()
        except Exception:
            print(f"--- webserver log tail\n{web.log_tail()}", file=sys.stderr)
            raise


def cold_rounds(root: Path, home: Path, rounds: int) -> list[dict[str, float]]:
    """The health query's first call per asset in `rounds` fresh webservers (see the module)."""
    found: list[dict[str, float]] = []
    for number in range(rounds):
        wipe_status_caches(home)
        order = ["ours", "floor"] if number % 2 == 0 else ["floor", "ours"]
        with webserver(root, home, f"webserver-cold-{number}.log") as served:
            url = served["url"]
            seconds = {name: timed_query(url, HEALTH_QUERY, ASSETS[name])[0] for name in order}
        found.append({**seconds, "ours_first": float(order[0] == "ours")})
        print(
            f"cold round {number + 1} ({order[0]} asked first): ours {seconds['ours']:.2f} s,"
            f" floor {seconds['floor']:.2f} s,"
            f" ours / floor {seconds['ours'] / seconds['floor']:.2f}",
            flush=True,
        )
    return found


def timed_query(url: str, query: str, asset: str) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    data = graphql(url, query, {"assetKey": {"path": [asset]}})
    return time.perf_counter() - t0, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--materialized", type=int, default=2_000)
    parser.add_argument("--warm", type=int, default=5, help="warm calls after the first")
    parser.add_argument("--tmp-dir", default=None)
    parser.add_argument(
        "--cold-rounds",
        type=int,
        default=1,
        help="time the health query's first call in this many fresh webservers (see above)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "config": {
            "partitions": args.partitions,
            "materialized": args.materialized,
            "warm": args.warm,
            **machine_info(),
        }
    }
    with temp_root("bench-graphql-", args.tmp_dir) as root:
        home = make_home(root, "home")
        print(
            f"populating: {args.partitions:,} partitions, {args.materialized:,} materialised"
            " per asset ...",
            flush=True,
        )
        report["setup"] = populate(home, args.partitions, args.materialized)
        s = report["setup"]
        print(
            f"  add_dynamic_partitions {s['add_partitions_seconds']:.1f} s; runless reports:"
            f" {s['report_scrape_seconds']:.1f} s + {s['report_trivial_seconds']:.1f} s",
            flush=True,
        )
        results: dict[str, Any] = {}
        with webserver(root, home, "webserver.log") as served:
            url = served["url"]
            report["webserver_startup_seconds"] = served["startup"]
            for name, asset in ASSETS.items():
                res: dict[str, Any] = {"asset": asset}
                for qname, query in (
                    ("health", HEALTH_QUERY),
                    ("statuses", STATUSES_QUERY),
                    ("keys", KEYS_QUERY),
                ):
                    first, data = timed_query(url, query, asset)
                    warm = [timed_query(url, query, asset)[0] for _ in range(args.warm)]
                    res[qname] = {
                        "first": first,
                        "warm_median": statistics.median(warm) if warm else None,
                        "warm_max": max(warm) if warm else None,
                    }
                    if qname == "health":
                        node = data["assetNodeOrError"]
                        statuses = node["assetPartitionStatuses"]
                        res["keys_returned"] = len(
                            node["partitionKeysByDimension"][0]["partitionKeys"]
                        )
                        res["materialized_returned"] = len(statuses["materializedPartitions"])
                    print(
                        f"{name} {qname}: first {first:.2f} s, warm median"
                        f" {res[qname]['warm_median']:.2f} s",
                        flush=True,
                    )
                results[name] = res
        report["rss_by_role"] = served.get("rss_by_role", {})
        if args.cold_rounds > 1:
            report["cold_rounds"] = cold_rounds(root, home, args.cold_rounds)
        report["results"] = results

    rows = []
    for name, res in results.items():
        for qname in ("health", "statuses", "keys"):
            q = res[qname]
            floor_q = results["floor"][qname]
            rows.append(
                [
                    f"{name} ({res['asset']})",
                    qname,
                    q["first"],
                    q["warm_median"],
                    q["warm_max"],
                    q["first"] / floor_q["first"],
                    (q["warm_median"] or 0) / (floor_q["warm_median"] or 1),
                ]
            )
    print_table(
        ["asset", "query", "first s", "warm median s", "warm max s", "first/floor", "warm/floor"],
        rows,
        title=(
            f"GraphQL over {args.partitions:,} partitions, {args.materialized:,} materialised"
            f" (webserver up in {report['webserver_startup_seconds']:.1f} s)"
        ),
    )
    ours = results["ours"]["health"]
    worst = max(ours["first"], ours["warm_max"] or 0.0)
    report["target_ok"] = worst < TARGET_SECONDS
    print(
        f"\nPartitionHealthQuery on scrape: first {ours['first']:.2f} s, warm"
        f" {ours['warm_median']:.2f} s (target < {TARGET_SECONDS:.0f} s):"
        f" {'PASS' if report['target_ok'] else 'FAIL'}"
    )
    cold = report.get("cold_rounds")
    if cold:
        ratios = [r["ours"] / r["floor"] for r in cold]
        report["cold_ours_over_floor_median"] = statistics.median(ratios)
        print(
            f"health query, first call in {len(cold)} fresh webservers: ours / floor median"
            f" {statistics.median(ratios):.2f} (rounds: {', '.join(f'{r:.2f}' for r in ratios)};"
            " target: no slower than the floor)"
        )
    roles = report.get("rss_by_role", {})
    if roles:
        print(
            "peak RSS: "
            + ", ".join(f"{k} {v['peak_rss_mib']:.0f} MiB" for k, v in sorted(roles.items()))
        )
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
