"""Every benchmark in sequence at its default sizes, then one summary table (`make bench`).

    .venv/bin/python -m bench.run_all                    # engine, ledger, add, graphql, dagster,
                                                         # postgres (needs 127.0.0.1:5432), ...
    .venv/bin/python -m bench.run_all --with-settings    # plus bench_dagster --instance-settings
    .venv/bin/python -m bench.run_all --with-scale       # plus peak RSS at 100k tasks
    .venv/bin/python -m bench.run_all --with-chain-scale # plus the chain at 10k and 100k tasks
    .venv/bin/python -m bench.run_all --quick            # small sizes: checks the scripts run
    .venv/bin/python -m bench.run_all --only engine --only add --json-dir out/

Each script runs as its own subprocess (its output is shown as it comes) and writes its figures
as JSON into --json-dir (a temporary folder by default); the summary reads them back. Figures
are ratios against baselines measured in the same run; nothing is asserted, but a script that
fails is reported and the others still run.

Then each benchmark that succeeded gets its row(s) of the current-figures table in
docs/performance.md (between `<!-- bench-table:start -->` and `<!-- bench-table:end -->`)
written again: figure, baseline or peer, ratio, date, machine, command. Rows of benchmarks
that did not run (or failed) stay as they were. `--quick` and `--no-doc` write nothing.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.lib.repo import PYTHON, REPO
from bench.lib.report import machine_info, print_table

Row = list[Any]
# A row of the docs table before its date, machine and command: [benchmark, figure, baseline,
# ratio]. The benchmark cell is the row's key in the table.
Headline = list[str]
DOC = REPO / "docs" / "performance.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
TABLE_HEADER = [
    "| benchmark | figure | baseline or peer | ratio | date | machine | command |",
    "|---|---|---|---|---|---|---|",
]


def _get(data: Any, *path: Any) -> Any:
    for part in path:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and -len(data) <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def _verdict(ok: Any) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def rows_engine(data: dict[str, Any], _out: str) -> list[Row]:
    s = data.get("summary") or {}
    a = s.get("A") or {}
    return [
        [
            "engine",
            "execute_async / bare aiohttp pages/s",
            s.get("ratio_a_over_b"),
            ">= 0.90",
            _verdict(s.get("ratio_ok")),
        ],
        ["engine", "engine pages/s (median)", a.get("median_pages_per_s"), "", "-"],
        [
            "engine",
            "engine peak RSS MiB",
            a.get("peak_rss_mib"),
            "<= 150",
            _verdict(s.get("rss_ok")),
        ],
    ]


def rows_ledger(_data: dict[str, Any], out: str) -> list[Row]:
    rows: list[Row] = []
    found = re.search(r"record\+flush\+sync\s+([\d,]+) rows/s", out)
    if found:
        rate = float(found.group(1).replace(",", ""))
        rows.append(["ledger", "record+flush+sync rows/s", rate, "", "-"])
    found = re.search(r"peak RSS\s+([\d,.]+) MiB", out)
    if found:
        rows.append(["ledger", "peak RSS MiB", float(found.group(1).replace(",", "")), "", "-"])
    return rows


def rows_add(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    for r in data.get("sizes", []):
        n = r["tasks"]
        ok = r.get("target_ok")
        target = "< 30" if n == 100_000 else ""
        rows.append(
            ["add tasks", f"{n:,} tasks: seconds", r["ours"]["seconds"], target, _verdict(ok)]
        )
        rows.append(
            [
                "add tasks",
                f"{n:,} tasks: / floor (partitions only)",
                r["ours"]["seconds"] / r["floor"]["seconds"],
                "",
                "-",
            ]
        )
        rows.append(
            ["add tasks", f"{n:,} tasks: peak RSS MiB", r["ours"]["tree_peak_rss_mib"], "", "-"]
        )
    return rows


def rows_graphql(data: dict[str, Any], _out: str) -> list[Row]:
    ours = _get(data, "results", "ours", "health") or {}
    floor = _get(data, "results", "floor", "health") or {}
    n = _get(data, "config", "partitions") or 0
    ok = data.get("target_ok")
    first, warm = ours.get("first"), ours.get("warm_median")
    return [
        ["graphql", f"health query, {n:,} partitions: first s", first, "< 3", _verdict(ok)],
        ["graphql", "health query: warm s", warm, "< 3", _verdict(ok)],
        [
            "graphql",
            "health query first: scrape / trivial",
            first / floor["first"] if first and floor.get("first") else None,
            "",
            "-",
        ],
    ]


def rows_dagster(data: dict[str, Any], _out: str) -> list[Row]:
    rows: list[Row] = []
    m = _get(data, "materialize", "summary")
    n = _get(data, "materialize", "tasks") or 0
    if m:
        rows += [
            [
                "dagster",
                f"{n:,}: SQLite materialize, x faster than the stock floor",
                m.get("speedup"),
                ">= 8",
                _verdict(m.get("speedup_ok")),
            ],
            ["dagster", f"{n:,}: SQLite ours pages/s", n / m["ours_mat"], "", "-"],
            ["dagster", f"{n:,}: SQLite ours events/s", m.get("ours_events_per_second"), "", "-"],
            [
                "dagster",
                f"{n:,}: SQLite floor events/s",
                m.get("floor_events_per_second"),
                "",
                "-",
            ],
            ["dagster", f"{n:,}: materialize ours / floor", m["ratio_materialize"], "", "-"],
            [
                "dagster",
                f"{n:,}: end to end (add + materialize) ours / floor",
                m["ratio_end_to_end"],
                "<= 1.15",
                _verdict(m.get("end_to_end_ok")),
            ],
            [
                "dagster",
                f"{n:,}: end to end, event-normalised, ours / floor",
                m.get("ratio_end_to_end_event_normalised"),
                "",
                "-",
            ],
            ["dagster", f"{n:,}: ours end to end pages/s", n / m["ours_e2e"], "", "-"],
            ["dagster", f"{n:,}: ours materialize seconds", m["ours_mat"], "", "-"],
            ["dagster", f"{n:,}: floor materialize seconds", m["floor_mat"], "", "-"],
            [
                "dagster",
                f"{n:,}: ours largest process peak RSS MiB",
                m["ours_tree_peak_rss_mib"],
                "<= 250" if n == 10_000 else "",
                _verdict(m.get("rss_ok")),
            ],
        ]
    b = _get(data, "backfill", "summary")
    nb = _get(data, "backfill", "tasks") or 0
    if b:
        rows += [
            ["dagster", f"{nb:,}: daemon backfill ours / floor", b["ratio"], "", "-"],
            ["dagster", f"{nb:,}: daemon backfill ours seconds", b["ours_seconds"], "", "-"],
        ]
    variants = _get(data, "settings", "variants") or []
    if variants:
        base = variants[0]["materialize"]["seconds"]
        for v in variants[1:]:
            rows.append(
                [
                    "dagster",
                    f"setting: {v['variant']} (x default)",
                    v["materialize"]["seconds"] / base,
                    "",
                    "-",
                ]
            )
    return rows


def rows_postgres(data: dict[str, Any], _out: str) -> list[Row]:
    m = _get(data, "postgres", "summary")
    n = _get(data, "postgres", "tasks") or 0
    if not m:
        return []
    return [
        [
            "postgres",
            f"{n:,}: materialize, x faster than the stock floor",
            m["speedup"],
            ">= 15",
            _verdict(m.get("speedup_ok")),
        ],
        ["postgres", f"{n:,}: ours materialize seconds", m["ours_mat"], "", "-"],
        ["postgres", f"{n:,}: floor materialize seconds", m["floor_mat"], "", "-"],
        ["postgres", f"{n:,}: ours pages/s", m["ours_pages_per_second"], "", "-"],
        ["postgres", f"{n:,}: ours events/s", m["ours_events_per_second"], "", "-"],
        ["postgres", f"{n:,}: floor events/s", m["floor_events_per_second"], "", "-"],
    ]


def rows_scale(data: dict[str, Any], _out: str) -> list[Row]:
    scale = data.get("scale") or {}
    rows: list[Row] = []
    for name in ("ours", "floor"):
        part = scale.get(name) or {}
        runs = part.get("runs") or {}
        for n, r in sorted(runs.items(), key=lambda kv: int(kv[0])):
            label = f"{name} {int(n):,}: largest process peak RSS MiB"
            rows.append(["scale", label, r["tree_peak_rss_mib"], "", "-"])
        if runs:
            ok = scale.get("rss_growth_ok") if name == "ours" else None
            target = "< 2" if name == "ours" else ""
            label = f"{name} peak RSS growth, {' / '.join(sorted(runs, key=int, reverse=True))}"
            rows.append(["scale", label, part.get("rss_growth"), target, _verdict(ok)])
    return rows


SHM = "/dev/shm"


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
    tasks = s.get("task_list_pages_per_s_ours_over_scrapy")
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
            "task list pages/s ours / Scrapy",
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
    s = data.get("summary") or {}
    speed, memory = s.get("pages_per_s_ratio"), s.get("peak_pss_ratio")
    versions = data.get("versions") or {}
    return [
        [
            "render-peer",
            f"pages/s ours / Crawlee {versions.get('crawlee')}",
            speed,
            ">= 1.0",
            _verdict(None if speed is None else speed >= 1.0),
        ],
        [
            "render-peer",
            "peak PSS ours / Crawlee",
            memory,
            "<= 0.5",
            _verdict(None if memory is None else memory <= 0.5),
        ],
    ]


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


def _n(value: Any, digits: int = 0) -> str:
    """A number as the docs write it (thousands separated), or "?" when absent."""
    if not isinstance(value, int | float):
        return "?"
    return f"{value:,.{digits}f}"


def _complete(rows: list[Headline]) -> list[Headline]:
    """Only rows whose cells all came out of the JSON: a partial row never replaces a whole one."""
    return [row for row in rows if not any("?" in cell for cell in row)]


def head_engine(data: dict[str, Any], _out: str) -> list[Headline]:
    s = data.get("summary") or {}
    a, b = s.get("A") or {}, s.get("B") or {}
    return _complete(
        [
            [
                "engine",
                f"{_n(a.get('median_pages_per_s'))} pages/s (median of rounds), peak RSS "
                f"{_n(a.get('peak_rss_mib'), 1)} MiB",
                f"bare aiohttp loop doing the same work: {_n(b.get('median_pages_per_s'))} pages/s",
                f"{_n(s.get('ratio_a_over_b'), 2)} (target >= 0.90)",
            ]
        ]
    )


def head_ledger(data: dict[str, Any], out: str) -> list[Headline]:
    rows = rows_ledger(data, out)
    if not rows:
        return []
    rate = rows[0][2]
    rss = rows[1][2] if len(rows) > 1 else None
    return _complete(
        [
            [
                "ledger",
                f"{_n(rate)} step rows/s recorded, spooled and synced; peak RSS {_n(rss)} MiB",
                "-",
                "-",
            ]
        ]
    )


def head_add(data: dict[str, Any], _out: str) -> list[Headline]:
    sizes = data.get("sizes") or []
    if not sizes:
        return []
    r = sizes[-1]
    ours, floor = r.get("ours") or {}, r.get("floor") or {}
    seconds, floor_seconds = ours.get("seconds"), floor.get("seconds")
    ratio = seconds / floor_seconds if seconds and floor_seconds else None
    return _complete(
        [
            [
                "add",
                f"{_n(r.get('tasks'))} tasks added in {_n(seconds, 1)} s, peak RSS "
                f"{_n(ours.get('tree_peak_rss_mib'))} MiB",
                f"the keys added as partitions alone: {_n(floor_seconds, 1)} s",
                _n(ratio, 2),
            ]
        ]
    )


def head_graphql(data: dict[str, Any], _out: str) -> list[Headline]:
    ours = _get(data, "results", "ours", "health") or {}
    floor = _get(data, "results", "floor", "health") or {}
    first, base = ours.get("first"), floor.get("first")
    ratio = first / base if isinstance(first, float | int) and base else None
    return _complete(
        [
            [
                "graphql",
                f"UI partition health query, {_n(_get(data, 'config', 'partitions'))} partitions: "
                f"first {_n(first, 2)} s, warm {_n(ours.get('warm_median'), 2)} s",
                f"the same query on a trivial asset: first {_n(base, 2)} s",
                _n(ratio, 2),
            ]
        ]
    )


def head_dagster(data: dict[str, Any], _out: str) -> list[Headline]:
    m = _get(data, "materialize", "summary") or {}
    n = _get(data, "materialize", "tasks")
    if not m:
        return []
    return _complete(
        [
            [
                "dagster",
                f"{_n(n)} tasks of `scrape` through `dagster asset materialize`, SQLite home: "
                f"{_n(m.get('ours_mat'), 1)} s",
                "Dagster's stock floor (a trivial asset, stock home): "
                f"{_n(m.get('floor_mat'), 1)} s",
                f"{_n(m.get('speedup'), 1)}x faster (target 8x)",
            ]
        ]
    )


def head_postgres(data: dict[str, Any], _out: str) -> list[Headline]:
    m = _get(data, "postgres", "summary") or {}
    n = _get(data, "postgres", "tasks")
    if not m:
        return []
    return _complete(
        [
            [
                "postgres",
                f"{_n(n)} tasks of `scrape`, Postgres home: {_n(m.get('ours_mat'), 1)} s",
                f"Dagster's stock floor on Postgres: {_n(m.get('floor_mat'), 1)} s",
                f"{_n(m.get('speedup'), 1)}x faster (target 15x)",
            ]
        ]
    )


def head_discovery(data: dict[str, Any], _out: str) -> list[Headline]:
    r = data.get("result") or data
    seconds, ratio = r.get("seconds"), r.get("ratio_to_files_floor")
    floor = seconds / ratio if isinstance(seconds, float | int) and ratio else None
    return _complete(
        [
            [
                "discovery",
                f"{_n(r.get('links'))} links -> {_n(r.get('added'))} new tasks: {_n(seconds, 1)} s",
                f"as many plain file creations: {_n(floor, 1)} s",
                _n(ratio, 2),
            ]
        ]
    )


def head_chain(data: dict[str, Any], _out: str) -> list[Headline]:
    s = data.get("summary") or {}
    wall = s.get("median_seconds") or {}
    return _complete(
        [
            [
                "chain",
                f"{_n(s.get('tasks'))} tasks, `scrape,validation,pages` in one run: "
                f"{_n(wall.get('chain, one run'), 1)} s",
                f"`scrape` alone: {_n(wall.get('scrape alone'), 1)} s",
                f"{_n(s.get('chain_over_scrape_alone'), 2)} (target <= 1.3)",
            ]
        ]
    )


def head_peer(data: dict[str, Any], _out: str) -> list[Headline]:
    s = data.get("summary") or {}
    scrapy = f"Scrapy {s.get('scrapy') or ''}".strip()
    return _complete(
        [
            [
                "peer (crawl)",
                "depth-3 crawl of the bundled docs tree: "
                f"{_n(_get(s, 'ours crawl', 'seconds'), 2)} s",
                f"{scrapy}: {_n(_get(s, 'scrapy crawl', 'seconds'), 2)} s",
                f"{_n(s.get('crawl_wall_ours_over_scrapy'), 2)} (target <= 1)",
            ],
            [
                "peer (task list)",
                f"a task list: {_n(_get(s, 'ours task list', 'seconds'), 2)} s",
                f"{scrapy}: {_n(_get(s, 'scrapy task list', 'seconds'), 2)} s",
                f"{_n(s.get('task_list_pages_per_s_ours_over_scrapy'), 2)}x Scrapy's pages/s "
                "(target >= 2)",
            ],
        ]
    )


def head_extract(data: dict[str, Any], _out: str) -> list[Headline]:
    s = data.get("summary") or {}
    return _complete(
        [
            [
                "extract",
                f"{_n(s.get('products'))} products' fields: {_n(_get(s, 'ours', 'items_per_s'))} "
                "items/s",
                f"Scrapy {s.get('scrapy_version') or ''}: {_n(_get(s, 'scrapy', 'items_per_s'))} "
                "items/s",
                f"{_n(s.get('items_per_s_ours_over_scrapy'), 2)}x (target >= 2)",
            ]
        ]
    )


def head_render(data: dict[str, Any], _out: str) -> list[Headline]:
    r = data.get("render") or {}
    return _complete(
        [
            [
                "render",
                f"{_n(r.get('pages'))} script-built pages: {_n(r.get('pages_per_s'), 1)} pages/s",
                "browser PSS, first quarter's peak",
                f"{_n(r.get('last_over_first'), 2)} last quarter / first (target <= 1.25)",
            ]
        ]
    )


def head_render_peer(data: dict[str, Any], _out: str) -> list[Headline]:
    s = data.get("summary") or {}
    ours, theirs = s.get("ours") or {}, s.get("crawlee") or {}
    version = (data.get("versions") or {}).get("crawlee") or ""
    return _complete(
        [
            [
                "render-peer",
                f"{_n(ours.get('pages_per_s'), 2)} pages/s, "
                f"peak PSS {_n(ours.get('peak_pss_mib'))} MiB",
                f"Crawlee {version}: {_n(theirs.get('pages_per_s'), 2)} pages/s, "
                f"{_n(theirs.get('peak_pss_mib'))} MiB",
                f"{_n(s.get('pages_per_s_ratio'), 2)}x pages/s, {_n(s.get('peak_pss_ratio'), 2)}x "
                "memory (goal 0.5x)",
            ]
        ]
    )


def head_shards(data: dict[str, Any], out: str) -> list[Headline]:
    rows = rows_shards(data, out)
    if not rows:
        return []
    ratios = "; ".join(f"{row[1]}: {row[2]:.2f}x" for row in rows)
    return [["shards", "pages/s with more shards or workers", "one shard or worker", ratios]]


def head_status(data: dict[str, Any], _out: str) -> list[Headline]:
    sizes = data.get("sizes") or []
    if not sizes:
        return []
    r = sizes[-1]
    idle, live = _get(r, "idle", "seconds"), _get(r, "live", "seconds")
    return _complete(
        [
            [
                "status",
                f"`scrapeflow status` at {_n(r.get('tasks'))} tasks: {_n(live, 2)} s with a run "
                f"going on, {_n(idle, 2)} s idle",
                "the old summary (every status file read)",
                f"{_n(r.get('ratio_old_over_idle'), 1)}x faster idle (target < 5 s)",
            ]
        ]
    )


def head_retention(data: dict[str, Any], _out: str) -> list[Headline]:
    rows: list[Headline] = []
    names = {"sqlite": "SQLite", "pg": "Postgres"}
    homes = {r.get("name"): r for r in data.get("results", [])}
    tasks = _get(data, "config", "tasks")
    for backend, s in (data.get("summary") or {}).items():
        kept = (homes.get(f"{backend}-retention") or {}).get("bytes_per_task") or []
        first, last = (kept[0] / 1024, kept[-1] / 1024) if kept else (None, None)
        rows.append(
            [
                f"retention ({names.get(backend, backend)})",
                f"{_n(tasks)} tasks, 1 run then {max(len(kept) - 1, 0)} forced refreshes, a "
                f"prune after each: {_n(first, 2)} -> {_n(last, 2)} KB/task",
                f"without retention: {_n(s.get('plain_last_over_first'), 2)}x",
                f"{_n(s.get('retention_last_over_first'), 2)}x its size after one run (target 1.2)",
            ]
        )
    return _complete(rows)


def head_scale(data: dict[str, Any], _out: str) -> list[Headline]:
    ours = _get(data, "scale", "ours") or {}
    runs = ours.get("runs") or {}
    if len(runs) < 2:
        return []
    small, large = sorted(runs, key=int)[0], sorted(runs, key=int)[-1]
    return _complete(
        [
            [
                "scale",
                f"{_n(int(large))} tasks in one CLI run: largest process peak RSS "
                f"{_n(runs[large].get('tree_peak_rss_mib'))} MiB",
                f"{_n(int(small))} tasks: {_n(runs[small].get('tree_peak_rss_mib'))} MiB",
                f"{_n(ours.get('rss_growth'), 2)}x (target < 2)",
            ]
        ]
    )


def head_chain_scale(data: dict[str, Any], _out: str) -> list[Headline]:
    sizes = data.get("sizes") or []
    if len(sizes) < 2:
        return []
    base, top = sizes[0], sizes[-1]
    rate, base_rate = _get(top, "run", "tasks_per_second"), _get(base, "run", "tasks_per_second")
    ratio = rate / base_rate if isinstance(rate, float | int) and base_rate else None
    return _complete(
        [
            [
                "chain-scale",
                f"{_n(top.get('tasks'))} tasks through the chain in one run: "
                f"{_n(_get(top, 'run', 'seconds'))} s ({_n(rate)} tasks/s), first page "
                f"{_n(_get(top, 'run', 'first_page_seconds'), 1)} s",
                f"{_n(base.get('tasks'))} tasks: {_n(base_rate)} tasks/s",
                f"{_n(ratio, 2)} (target >= 0.9)",
            ]
        ]
    )


def head_refresh(data: dict[str, Any], _out: str) -> list[Headline]:
    rows: list[Headline] = []
    for name, s in (data.get("summary") or {}).items():
        best = max(s.get("ratio_learned") or 0, s.get("ratio_fill") or 0)
        rows.append(
            [
                "refresh" if not rows else f"refresh ({name})",
                f"{name}: freshness of the learned schedule, {s.get('budget')} requests/h",
                "a fixed age spending the same budget",
                f"{best:.2f}x (goal 1.5x; optimum {_n(s.get('ratio_optimum'), 2)}x)",
            ]
        )
    return _complete(rows)


HEADLINES: dict[str, Callable[[dict[str, Any], str], list[Headline]]] = {
    "engine": head_engine,
    "ledger": head_ledger,
    "add": head_add,
    "graphql": head_graphql,
    "dagster": head_dagster,
    "postgres": head_postgres,
    "discovery": head_discovery,
    "chain": head_chain,
    "peer": head_peer,
    "extract": head_extract,
    "render": head_render,
    "render-peer": head_render_peer,
    "shards": head_shards,
    "status": head_status,
    "retention": head_retention,
    "scale": head_scale,
    "chain-scale": head_chain_scale,
    "refresh": head_refresh,
}


def _row_key(line: str) -> str | None:
    """The benchmark cell of a table row (None for other lines)."""
    if not line.startswith("|") or line.startswith("|---"):
        return None
    return line.strip("|").split("|", 1)[0].strip()


def _belongs(key: str, bench: str) -> bool:
    """Whether the table row keyed `key` is one of `bench`'s (`peer`, `peer (crawl)`, ...)."""
    return key == bench or key.startswith(f"{bench} (")


def write_table(doc: Path, fresh: dict[str, list[Row]]) -> list[str]:
    """Replace the rows of each benchmark in `fresh` (bench -> full rows) in `doc`'s table
    between the markers, in place; other rows stay. Returns the benchmarks written.

    Raises:
        ValueError: `doc` has no table markers.
    """
    text = doc.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        raise ValueError(f"{doc} has no {TABLE_START} ... {TABLE_END} markers")
    head, rest = text.split(TABLE_START, 1)
    table, tail = rest.split(TABLE_END, 1)
    lines = [line for line in table.strip("\n").splitlines() if _row_key(line)]
    lines = [line for line in lines if _row_key(line) != "benchmark"]
    for bench, rows in fresh.items():
        cells = [
            "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows
        ]
        at = next(
            (i for i, line in enumerate(lines) if _belongs(_row_key(line) or "", bench)), None
        )
        lines = [line for line in lines if not _belongs(_row_key(line) or "", bench)]
        if at is None:
            lines += cells
        else:
            lines[at:at] = cells
    body = "\n".join([*TABLE_HEADER, *lines])
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(f"{head}{TABLE_START}\n{body}\n{TABLE_END}{tail}")
    tmp.replace(doc)
    return sorted(fresh)


def _command(module: str, extra: list[str]) -> str:
    """The command a figure came from, as a reader would type it (without the --json file)."""
    shown: list[str] = []
    skip = False
    for arg in extra:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        else:
            shown.append(arg)
    return "`" + " ".join(["python -m", module, *shown]) + "`"


BENCHES: list[tuple[str, str, Callable[[dict[str, Any], str], list[Row]], bool]] = [
    # (name, module, summary rows, accepts --json)
    ("engine", "bench.bench_engine", rows_engine, True),
    ("ledger", "bench.bench_ledger", rows_ledger, False),
    ("add", "bench.bench_add_tasks", rows_add, True),
    ("graphql", "bench.bench_graphql", rows_graphql, True),
    ("dagster", "bench.bench_dagster", rows_dagster, True),
    ("postgres", "bench.dagster.postgres", rows_postgres, True),
    ("discovery", "bench.engine.bench_discovery", rows_discovery, True),
    ("chain", "bench.dagster.bench_chain", rows_chain, True),
    ("peer", "bench.dagster.bench_peer", rows_peer, True),
    ("extract", "bench.dagster.bench_extract", rows_extract, True),
    ("render", "bench.bench_render", rows_render, True),
    ("render-peer", "bench.bench_render_peer", rows_render_peer, True),
    ("shards", "bench.scaleout.bench_shards", rows_shards, False),
    ("status", "bench.bench_status", rows_status, True),
    ("retention", "bench.bench_retention", rows_retention, True),
    ("scale", "bench.bench_dagster", rows_scale, True),
    ("chain-scale", "bench.bench_chain_scale", rows_chain_scale, True),
    ("refresh", "bench.bench_refresh", rows_refresh, True),
]
# Run only when asked for (--with-scale or --only scale): ~30 min at 100k even on tmpfs;
# chain-scale (--with-chain-scale or --only chain-scale): the chain at 100k, ~3 GB of disk.
OPT_IN = {"scale", "chain-scale"}
BASE_ARGS = {
    # Postgres keeps its own disk; the homes and scrapeflow's data go to tmpfs.
    "postgres": ["--tmp-dir", SHM] if Path(SHM).is_dir() else [],
    "scale": ["--only", "scale"] + (["--tmp-dir", SHM] if Path(SHM).is_dir() else []),
}

QUICK_ARGS = {
    "engine": ["--tasks", "1000", "--rounds", "1", "--warmup", "200"],
    "ledger": ["--rows", "10000"],
    "add": ["--sizes", "1000"],
    "graphql": ["--partitions", "5000", "--materialized", "100", "--warm", "2"],
    "dagster": ["--tasks", "200", "--backfill-tasks", "200", "--settings-tasks", "200"],
    "scale": ["--scale-tasks", "1000"],
    "postgres": ["--tasks", "200"],
    "discovery": ["--pages", "500"],
    "chain": ["--tasks", "300", "--rounds", "1"],
    "shards": ["--tasks", "400"],
    "peer": ["--tasks", "1000", "--rounds", "1"],
    "extract": ["--products", "1000", "--rounds", "1"],
    "render": ["--pages", "200", "--auto-pages", "200"],
    "render-peer": ["--pages", "200"],
    "status": ["--sizes", "2000", "--rounds", "1"],
    "retention": ["--tasks", "60", "--refreshes", "2"],
    "chain-scale": ["--sizes", "2000", "--status-rounds", "1"],
    "refresh": ["--pages", "50", "--days", "2"],
}


def run_one(module: str, args: list[str]) -> tuple[int, str, float]:
    """Run `python -m module args`, echoing its output; returns (exit code, output, seconds)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", module, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    code = proc.wait()
    return code, "".join(lines), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", choices=[b[0] for b in BENCHES], help="repeatable"
    )
    parser.add_argument("--with-settings", action="store_true", help="dagster settings variants")
    parser.add_argument(
        "--with-scale", action="store_true", help="also peak RSS at 100k tasks (~30 min)"
    )
    parser.add_argument(
        "--with-chain-scale",
        action="store_true",
        help="also the whole chain in one run at 10k and 100k tasks (issue 42)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json-dir", default=None, help="keep each script's JSON here")
    parser.add_argument(
        "--no-doc", action="store_true", help="leave docs/performance.md's table as it is"
    )
    parser.add_argument("--doc", type=Path, default=DOC, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    json_dir = Path(args.json_dir or tempfile.mkdtemp(prefix="bench-all-"))
    json_dir.mkdir(parents=True, exist_ok=True)
    opted_in = {"scale": args.with_scale, "chain-scale": args.with_chain_scale}
    selected = [
        b
        for b in BENCHES
        if (b[0] in args.only if args.only else b[0] not in OPT_IN or opted_in[b[0]])
    ]
    info = machine_info()
    print(f"bench.run_all: {', '.join(b[0] for b in selected)} (JSON in {json_dir})")
    print(f"python {info['python']}, {info['cpus']} CPUs, load average {info['loadavg']}")
    started = time.perf_counter()
    rows: list[Row] = []
    timings: list[Row] = []
    fresh: dict[str, list[Row]] = {}
    date = time.strftime("%Y-%m-%d")
    machine = f"{info['cpus']} cores, Python {info['python']}"
    for name, module, summarise, has_json in selected:
        extra = BASE_ARGS.get(name, []) + (list(QUICK_ARGS[name]) if args.quick else [])
        if name == "dagster" and args.with_settings:
            extra.append("--instance-settings")
        path = json_dir / f"{name}.json"
        if has_json:
            extra += ["--json", str(path)]
        print(f"\n{'=' * 100}\n== {module} {' '.join(extra)}\n{'=' * 100}", flush=True)
        code, out, seconds = run_one(module, extra)
        timings.append([name, seconds, code])
        data: dict[str, Any] = {}
        if has_json and path.exists():
            data = json.loads(path.read_text())
        try:
            rows += summarise(data, out)
        except (KeyError, TypeError, ZeroDivisionError) as exc:
            rows.append([name, f"summary unavailable ({exc!r})", None, "", "-"])
        if code != 0:
            rows.append([name, f"FAILED with exit code {code}", None, "", "FAIL"])
        else:
            try:
                heads = HEADLINES[name](data, out)
            except (KeyError, TypeError, ZeroDivisionError, ValueError):
                heads = []
            if heads:
                fresh[name] = [[*h, date, machine, _command(module, extra)] for h in heads]
    total = time.perf_counter() - started
    print(f"\n{'=' * 100}")
    print_table(["bench", "figure", "value", "target", "verdict"], rows, title="summary")
    print_table(["bench", "seconds", "exit code"], timings, title="time per script")
    print(f"\nall benchmarks took {total / 60:.1f} min; JSON figures in {json_dir}")
    if fresh and not (args.quick or args.no_doc):
        written = write_table(args.doc, fresh)
        print(f"{args.doc}: rows of {', '.join(written)} written")
    return 0 if all(t[2] == 0 for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
