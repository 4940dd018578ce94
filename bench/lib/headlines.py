"""The rows each benchmark gets in docs/performance.md's current-figures table: benchmark,
figure, baseline or peer, ratio (the date, machine and command are added by `run_all`)."""

from collections.abc import Callable
from typing import Any

from bench.content.summary import head_main_content
from bench.lib.cost_rows import head_cost
from bench.lib.summary_chain import rows_shards
from bench.lib.summary_values import _get, rows_ledger

# A row of the docs table before its date, machine and command: [benchmark, figure, baseline,
# ratio]. The benchmark cell is the row's key in the table.
Headline = list[str]


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
                f"a task list: `tasks add` {_n(_get(s, 'ours task list', 'add_seconds'), 2)} s"
                f" + materialize {_n(_get(s, 'ours task list', 'seconds'), 2)} s",
                f"{scrapy}: {_n(_get(s, 'scrapy task list', 'seconds'), 2)} s",
                f"{_n(s.get('task_list_with_add_ours_over_scrapy'), 2)}x Scrapy's pages/s with"
                f" `tasks add` counted, {_n(s.get('task_list_pages_per_s_ours_over_scrapy'), 2)}x"
                " without (target >= 2 with)",
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
    by_shards = data.get("summary") or {}
    counts = sorted(by_shards, key=int)
    if not counts:
        return []
    s = by_shards[counts[0]]
    ours, theirs = s.get("ours") or {}, s.get("crawlee") or {}
    version = (data.get("versions") or {}).get("crawlee") or ""
    more = "".join(
        f"; {n} shards {_n(by_shards[n].get('pages_per_s_ratio'), 2)}x / "
        f"{_n(by_shards[n].get('peak_pss_ratio'), 2)}x"
        for n in counts[1:]
    )
    return _complete(
        [
            [
                "render-peer",
                f"{counts[0]} shard(s): {_n(ours.get('pages_per_s'), 2)} pages/s, "
                f"peak PSS {_n(ours.get('peak_pss_mib'))} MiB",
                f"Crawlee {version}: {_n(theirs.get('pages_per_s'), 2)} pages/s, "
                f"{_n(theirs.get('peak_pss_mib'))} MiB",
                f"{_n(s.get('pages_per_s_ratio'), 2)}x pages/s, {_n(s.get('peak_pss_ratio'), 2)}x "
                f"memory (goal 0.5x){more}",
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
                f"without retention: {_n(s.get('plain_last_over_first'), 2)}x"
                if s.get("plain_last_over_first") is not None
                else "-",
                f"{_n(s.get('retention_last_over_first'), 2)}x its size after one run (target 1.2);"
                f" data folder {_n(s.get('data_last_over_first'), 2)}x",
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
    "cost": head_cost,
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
    "main-content": head_main_content,
}
