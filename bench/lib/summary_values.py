"""The console summary's rows of each benchmark (`make bench`'s "summary" table), from the
JSON (and output) each script wrote: engine, ledger, add, graphql, dagster, postgres, scale."""

import re
from typing import Any

Row = list[Any]


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
