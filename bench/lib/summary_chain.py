"""The console summary's rows of the chain, peers, rendering, status, retention, refresh and
shard benchmarks (see `summary_values`)."""

from typing import Any

from bench.lib.summary_values import Row, _get, _verdict


def rows_discovery(data: dict[str, Any], _out: str) -> list[Row]:
    r = data.get("result") or data
    links, added = r.get("links", 0), r.get("added", 0)
    return [
        [
            "discovery",
            f"{links:,} links -> {added:,} new tasks: s",
            r.get("seconds"),
            "< 10",
            _verdict(r.get("target_ok")),
        ],
        ["discovery", "CPU seconds", r.get("cpu_seconds"), "", "-"],
        ["discovery", "/ add_tasks of the same tasks", r.get("ratio_to_baseline"), "", "-"],
        ["discovery", "/ as many plain file creations", r.get("ratio_to_files_floor"), "", "-"],
    ]


def rows_chain(data: dict[str, Any], _out: str) -> list[Row]:
    s = data.get("summary") or {}
    events = _get(s, "events", "chain, one run") or {}
    per_partition = s.get("tasks") and all(n == s["tasks"] for n in events.values())
    return [
        [
            "chain",
            "chain in one run / scrape alone (wall)",
            s.get("chain_over_scrape_alone"),
            "",
            "-",
        ],
        [
            "chain",
            "chain in one run / three runs (wall)",
            s.get("chain_over_three_runs"),
            "< 1",
            _verdict(
                None if s.get("chain_over_three_runs") is None else s["chain_over_three_runs"] < 1
            ),
        ],
        [
            "chain",
            "one materialisation per (asset, partition)",
            None,
            "",
            _verdict(per_partition if events else None),
        ],
        [
            "chain",
            "home bytes per task (chain run)",
            _get(s, "home_bytes_per_task", "chain, one run"),
            "",
            "-",
        ],
    ]


def rows_peer(data: dict[str, Any], _out: str) -> list[Row]:
    s = data.get("summary") or {}
    crawl = s.get("crawl_wall_ours_over_scrapy")
    tasks = s.get("task_list_with_add_ours_over_scrapy")
    return [
        [
            "peer",
            f"crawl wall ours / Scrapy {s.get('scrapy')}",
            crawl,
            "<= 1.0",
            _verdict(None if crawl is None else crawl <= 1.0),
        ],
        [
            "peer",
            "task list pages/s ours (`tasks add` counted) / Scrapy",
            tasks,
            ">= 2.0",
            _verdict(None if tasks is None else tasks >= 2.0),
        ],
    ]


def rows_extract(data: dict[str, Any], _out: str) -> list[Row]:
    s = data.get("summary") or {}
    ratio = s.get("items_per_s_ours_over_scrapy")
    n = s.get("products") or 0
    return [
        [
            "extract",
            f"{n:,} products: items/s ours / Scrapy {s.get('scrapy_version')}",
            ratio,
            ">= 2.0",
            _verdict(None if ratio is None else ratio >= 2.0),
        ],
        ["extract", f"{n:,} products: ours items/s", _get(s, "ours", "items_per_s"), "", "-"],
        ["extract", f"{n:,} products: Scrapy items/s", _get(s, "scrapy", "items_per_s"), "", "-"],
        ["extract", "ours export seconds", _get(s, "ours: export", "seconds"), "", "-"],
        [
            "extract",
            "rows identical to Scrapy's and product(n)",
            None,
            "",
            _verdict(s.get("rows_identical")),
        ],
    ]


def rows_render(data: dict[str, Any], _out: str) -> list[Row]:
    r = data.get("render") or {}
    auto = data.get("auto") or {}
    n = r.get("pages") or 0
    flat = r.get("last_over_first")
    rows: list[Row] = [
        ["render", f"{n:,} pages: pages/s", r.get("pages_per_s"), "", "-"],
        [
            "render",
            "browser tree PSS, last quarter's peak / first's",
            flat,
            "<= 1.25",
            _verdict(r.get("flat")),
        ],
    ]
    if auto:
        needed, rendered = auto.get("needed_browser"), auto.get("needed_rendered")
        rows.append(
            [
                "render",
                f"auto: pages needing a browser rendered ({rendered} of {needed})",
                None,
                "all",
                _verdict(None if needed is None else rendered == needed),
            ]
        )
        rows.append(
            [
                "render",
                f"auto: other pages rendered (of {auto.get('static')})",
                auto.get("static_rendered"),
                "",
                "-",
            ]
        )
    return rows


def rows_render_peer(data: dict[str, Any], _out: str) -> list[Row]:
    """Per shard count (`--shards`), ours / Crawlee in pages/s and in peak PSS."""
    versions = data.get("versions") or {}
    rows: list[Row] = []
    for shards, s in sorted((data.get("summary") or {}).items(), key=lambda kv: int(kv[0])):
        speed, memory = s.get("pages_per_s_ratio"), s.get("peak_pss_ratio")
        rows += [
            [
                "render-peer",
                f"{shards} shard(s): pages/s ours / Crawlee {versions.get('crawlee')}",
                speed,
                ">= 1.0",
                _verdict(None if speed is None else speed >= 1.0),
            ],
            [
                "render-peer",
                f"{shards} shard(s): peak PSS ours / Crawlee",
                memory,
                "<= 0.5",
                _verdict(None if memory is None else memory <= 0.5),
            ],
        ]
    return rows


def rows_status(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    for r in data.get("sizes", []):
        n = r["tasks"]
        target = "< 5" if n == 1_000_000 else ""
        worst = max(_get(r, "idle", "seconds") or 0, _get(r, "live", "seconds") or 0)
        rows += [
            ["status", f"{n:,} tasks: idle s", _get(r, "idle", "seconds"), "", "-"],
            ["status", f"{n:,} tasks: a run going on s", _get(r, "live", "seconds"), "", "-"],
            ["status", f"{n:,} tasks: worst s", worst, target, _verdict(r.get("target_ok"))],
            ["status", f"{n:,} tasks: old summary / idle", r.get("ratio_old_over_idle"), "", "-"],
            ["status", f"{n:,} tasks: peak RSS MiB", _get(r, "live", "peak_rss_mib"), "", "-"],
        ]
    return rows


def rows_retention(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    for r in data.get("results", []):
        per = r["bytes_per_task"]
        name = r["name"]
        rows.append(["retention", f"{name}: KB/task after 1 run", per[0] / 1024, "", "-"])
        rows.append(
            ["retention", f"{name}: KB/task after {len(per)} runs", per[-1] / 1024, "", "-"]
        )
    for backend, s in (data.get("summary") or {}).items():
        rows.append(
            [
                "retention",
                f"{backend}: last / first run, with retention",
                s["retention_last_over_first"],
                "<= 1.2",
                _verdict(s["target_ok"]),
            ]
        )
        for mode in ("plain", "retention"):
            paced = s.get(f"{mode}_paced_over_all_before")
            if paced:
                rows.append(
                    [
                        "retention",
                        f"{backend} {mode}: planned rows paced / all before, last run",
                        paced[-1],
                        "",
                        "-",
                    ]
                )
        rows.append(
            [
                "retention",
                f"{backend}: retention / plain, last run",
                s["retention_over_plain"],
                "",
                "-",
            ]
        )
    return rows


def rows_chain_scale(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    for r in data.get("sizes", []):
        n = r["tasks"]
        rows.append(["chain scale", f"{n:,} tasks: run s", _get(r, "run", "seconds"), "", "-"])
        rate = _get(r, "run", "tasks_per_second")
        rows.append(["chain scale", f"{n:,} tasks: tasks/s", rate, "", "-"])
    # bench_chain_scale lists its targets as {figure, value, target, ok}, per size.
    for t in data.get("targets", []):
        rows.append(["chain scale", t["figure"], t["value"], t["target"], _verdict(t["ok"])])
    return rows


def rows_refresh(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    for name, s in (data.get("summary") or {}).items():
        b = s.get("budget")
        best = max(s.get("ratio_learned") or 0, s.get("ratio_fill") or 0)
        rows += [
            [
                "refresh",
                f"{name} {b}/h: learned / fixed freshness",
                best,
                ">= 1.5",
                _verdict(s.get("goal_ok")),
            ],
            ["refresh", f"{name} {b}/h: ceiling (1 / fixed)", s.get("ratio_ceiling"), "", "-"],
            ["refresh", f"{name} {b}/h: oracle greedy / fixed", s.get("ratio_oracle"), "", "-"],
            [
                "refresh",
                f"{name} {b}/h: steady-state optimum / uniform",
                s.get("ratio_optimum"),
                "",
                "-",
            ],
            [
                "refresh",
                f"{name} {b}/h: every change recorded, none false",
                None,
                "all",
                _verdict(bool(s.get("all_recorded") and s.get("no_false_reports"))),
            ],
        ]
    return rows


def rows_shards(_data: dict[str, Any], out: str) -> list[Row]:
    # bench_shards prints "<two> / <one>: 1.56x pages/s (target >= 1.6)" per comparison.
    rows: list[Row] = []
    for line in out.splitlines():
        if "x pages/s (target" in line:
            label, _, rest = line.partition(": ")
            ratio = float(rest.split("x", 1)[0])
            rows.append(["shards", label, ratio, ">= 1.6", _verdict(ratio >= 1.6)])
    return rows
