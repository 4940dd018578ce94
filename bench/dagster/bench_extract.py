"""Extraction without code, ours against Scrapy on the same local site, side by side in one run
(`make bench`: "extract").

- ours: a selector set (`products.yaml`: name, price, SKU, tags, image, stars of the site's
  `/products/{n}` pages) and N tasks (`tasks.csv`, `key,url`, default 10,000) added by
  `scrapeflow tasks add tasks.csv --extract products.yaml`; then `dagster asset materialize
  --select scrape,validation,pages --partition-range` on the embedded home (as `bench_peer`'s
  task list), then `scrapeflow export extracted --selectors products -o out.jsonl`: the rows
  are the user's once the export has written them, so its time counts (and is shown apart).
  Adding the tasks is not counted (as in `bench_peer`); its time is shown apart too.
- Scrapy: a spider (`bench/peers/scrapy_extract_spider.py`) fetching the same N URLs and
  taking the same fields by the same CSS and XPath selectors, one item per product page,
  written to a JSON-lines feed.

Both take the site at 8 requests in flight per host; our data dir and Dagster home are on
tmpfs when `/dev/shm` exists (so are both ways' outputs). Each way runs `--rounds` times,
alternated. After every round both ways' rows are checked: exactly N each, joined on URL,
every field the same in both and as the site's `product(n)` shows it; a difference fails the
run, naming the fields and URLs. It prints the median wall time, items/s and CPU seconds of
each, the requests the site answered under `/products/`, and ours / Scrapy items per second
(the issue's goal: at least 2). Scrapy is installed by the bench into its own venv
(`bench.peers.venvs`).

    .venv/bin/python -m bench.dagster.bench_extract [--products 10000] [--rounds 2] [--json PATH]
"""

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.dagster.bench_peer import reset_requests, site_requests
from bench.lib.homes import bench_env, make_home, temp_root
from bench.lib.measured import Measured, run_measured
from bench.lib.repo import PYTHON, REPO
from bench.lib.report import print_table, write_json
from bench.lib.site import Site
from bench.peers.venvs import SCRAPY_REQUIREMENT, scrapy_version, venv_python

SPIDER = REPO / "bench" / "peers" / "scrapy_extract_spider.py"
SET_NAME = "products"
SELECTORS = """urls: "/products/\\\\d+$"
fields:
  name: "h1::text"
  price: {css: "span.price", type: number}
  sku: {xpath: "//*[@itemprop='sku']/text()"}
  tags: {css: ".tags li", all: true}
  image: {css: "img.main", attr: src, type: url}
  stars: {css: ".rating::attr(data-stars)", type: integer}
"""
FIELDS = ("name", "price", "sku", "tags", "image", "stars")
PREFIX = "/products/"
# Differences shown per field when the rows are not identical.
SHOWN = 5


def key_of(n: int) -> str:
    return f"product-{n:06d}"


def write_inputs(root: Path, site_url: str, n: int) -> tuple[Path, Path, Path, list[str]]:
    """The selector set, our task file (`key,url`), Scrapy's URL file, and the keys in
    partition order."""
    selectors = root / f"{SET_NAME}.yaml"
    selectors.write_text(SELECTORS)
    keys = [key_of(i) for i in range(n)]
    urls = [f"{site_url}{PREFIX}{i}" for i in range(n)]
    tasks_file = root / "tasks.csv"
    with tasks_file.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["key", "url"])
        writer.writerows(zip(keys, urls, strict=True))
    urls_file = root / "urls.txt"
    urls_file.write_text("\n".join(urls) + "\n")
    return selectors, tasks_file, urls_file, keys


def remove_outputs(root: Path, tag: str) -> None:
    """Remove what one measured way left (its home, data folder, rows): every round starts
    beside the same files."""
    for path in (
        root / f"home-{tag}",
        root / f"data-{tag}",
        root / f"ours-{tag}.jsonl",
        root / f"scrapy-{tag}.jsonl",
    ):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _timeout(n: int) -> float:
    return max(1800.0, 0.3 * n)


def ours(
    root: Path, site: Site, selectors: Path, tasks_file: Path, keys: list[str], tag: str
) -> tuple[dict[str, Any], Path]:
    """Tasks added with the set (not counted), materialised, then the rows exported."""
    home = make_home(root, f"home-{tag}", ours=True)
    env = bench_env(home, root / f"data-{tag}")
    cli = [PYTHON, "-m", "scrapeflow_dagster.cli"]
    add = [*cli, "tasks", "add", str(tasks_file), "--extract", str(selectors)]
    added = run_measured(
        add, env=env, label="ours tasks add", cwd=root, timeout=_timeout(len(keys))
    )
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m"]
    cmd += ["scrapeflow_dagster.definitions", "--select", "scrape,validation,pages"]
    cmd += ["--partition-range", f"{keys[0]}...{keys[-1]}"]
    reset_requests(site)
    done = run_measured(
        cmd,
        env=env,
        label="ours materialize",
        cwd=root,
        timeout=_timeout(len(keys)),
        extra_cpu=site.cpu_seconds,
    )
    requests = site_requests(site, PREFIX)
    out = root / f"ours-{tag}.jsonl"
    export = [*cli, "export", "extracted", "--selectors", SET_NAME, "-o", str(out)]
    exported = run_measured(export, env=env, label="ours export", cwd=root)
    figures = {
        "seconds": done.seconds + exported.seconds,
        "cpu_seconds": done.cpu_seconds + exported.cpu_seconds,
        "requests": requests,
        "materialize": _figures(done, len(keys)),
        "export": _figures(exported, len(keys)),
        "add": _figures(added, len(keys)),
    }
    return figures, out


def scrapy(python: Path, root: Path, site: Site, urls_file: Path, n: int, tag: str):
    out = root / f"scrapy-{tag}.jsonl"
    cmd = [str(python), str(SPIDER), str(urls_file), str(out)]
    reset_requests(site)
    done = run_measured(
        cmd,
        env=bench_env(root),
        label="scrapy",
        cwd=root,
        timeout=_timeout(n),
        extra_cpu=site.cpu_seconds,
    )
    figures = {
        "seconds": done.seconds,
        "cpu_seconds": done.cpu_seconds,
        "requests": site_requests(site, PREFIX),
        "other_busy_cores": done.other_busy_cores,
    }
    return figures, out


def _figures(done: Measured, items: int) -> dict[str, Any]:
    return {
        "seconds": done.seconds,
        "cpu_seconds": done.cpu_seconds,
        "items": items,
        # Cores other processes kept busy meanwhile: the machine may be shared.
        "other_busy_cores": done.other_busy_cores,
    }


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def expected_rows(site_url: str, n: int) -> dict[str, dict[str, Any]]:
    """What product i's page shows, per URL, as the set's fields."""
    from scrapeflow_dagster.site.content.products import product

    rows = {}
    for i in range(n):
        item = product(i)
        rows[f"{site_url}{PREFIX}{i}"] = {
            "name": item.name,
            "price": None if item.price is None else round(item.price, 2),
            "sku": item.sku,
            "tags": list(item.tags),
            "image": site_url + item.image,
            "stars": item.stars,
        }
    return rows


def _by_url(rows: list[dict[str, Any]], who: str, problems: list[str]) -> dict[str, dict]:
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("url") in found:
            problems.append(f"{who}: two rows of {row.get('url')}")
        found[row.get("url")] = row
    return found


def check_rows(ours_file: Path, scrapy_file: Path, site_url: str, n: int) -> dict[str, Any]:
    """Both ways' rows against each other and against `product(n)`.

    Raises:
        SystemExit: listing every difference (counts per field, the first URLs of each) when
            the rows are not identical.
    """
    expected = expected_rows(site_url, n)
    problems: list[str] = []
    ours_rows, scrapy_rows = read_rows(ours_file), read_rows(scrapy_file)
    for who, rows in (("ours", ours_rows), ("scrapy", scrapy_rows)):
        if len(rows) != n:
            problems.append(f"{who}: {len(rows)} rows, expected {n}")
    ours_by_url = _by_url(ours_rows, "ours", problems)
    scrapy_by_url = _by_url(scrapy_rows, "scrapy", problems)
    for who, by_url in (("ours", ours_by_url), ("scrapy", scrapy_by_url)):
        missing = sorted(set(expected) - set(by_url))
        extra = sorted(set(by_url) - set(expected), key=str)
        if missing:
            problems.append(f"{who}: no row of {len(missing)} URLs, e.g. {missing[:SHOWN]}")
        if extra:
            problems.append(f"{who}: rows of {len(extra)} unexpected URLs, e.g. {extra[:SHOWN]}")
    differences: dict[str, list[str]] = {}

    def differ(what: str, url: str, detail: str) -> None:
        differences.setdefault(what, []).append(f"{url}: {detail}")

    for url, want in expected.items():
        mine, theirs = ours_by_url.get(url), scrapy_by_url.get(url)
        for name in FIELDS:
            if mine is not None and mine.get(name) != want[name]:
                differ(f"ours {name} != product(n)", url, f"{mine.get(name)!r} != {want[name]!r}")
            if theirs is not None and theirs.get(name) != want[name]:
                got = theirs.get(name)
                differ(f"scrapy {name} != product(n)", url, f"{got!r} != {want[name]!r}")
            if mine is not None and theirs is not None and mine.get(name) != theirs.get(name):
                differ(f"ours {name} != scrapy", url, f"{mine.get(name)!r} != {theirs.get(name)!r}")
        if mine is not None:
            n_of = int(url.rsplit("/", 1)[1])
            if mine.get("key") != key_of(n_of):
                differ("ours key", url, f"{mine.get('key')!r} != {key_of(n_of)!r}")
            empty = [f for f in FIELDS if want[f] is None or want[f] == []]
            if (mine.get("missing") or []) != empty:
                differ("ours missing", url, f"{mine.get('missing')!r} != {empty!r}")
            if mine.get("invalid") not in (None, {}):
                differ("ours invalid", url, repr(mine.get("invalid")))
    for what, found in differences.items():
        problems.append(f"{what}: {len(found)} rows, e.g. " + "; ".join(found[:SHOWN]))
    if problems:
        print("rows identical: NO", flush=True)
        for problem in problems:
            print(f"  {problem}", flush=True)
        raise SystemExit(f"the rows differ ({len(problems)} problems, listed above)")
    print(f"rows identical: yes ({n:,} rows each, equal per URL and to product(n))", flush=True)
    return {"rows": n, "identical": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    python = venv_python("scrapy", [SCRAPY_REQUIREMENT])
    version = scrapy_version(python)
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else None
    n = args.products
    found: dict[str, list[dict[str, Any]]] = {"ours": [], "scrapy": []}
    with temp_root("bench-extract-", parent=parent) as root, Site(pages=n) as site:
        selectors, tasks_file, urls_file, keys = write_inputs(root, site.url, n)
        for round_ in range(args.rounds):
            tags = {way: f"{way}-{round_}" for way in found}
            ours_figures, ours_out = ours(root, site, selectors, tasks_file, keys, tags["ours"])
            found["ours"].append(ours_figures)
            print(f"round {round_}: ours: {ours_figures}", flush=True)
            theirs, scrapy_out = scrapy(python, root, site, urls_file, n, tags["scrapy"])
            found["scrapy"].append(theirs)
            print(f"round {round_}: scrapy: {theirs}", flush=True)
            check_rows(ours_out, scrapy_out, site.url, n)
            for tag in tags.values():
                remove_outputs(root, tag)

    def median(runs: list[dict[str, Any]], field: str) -> float:
        return statistics.median(run[field] for run in runs)

    def per_second(seconds: float) -> float | None:
        return n / seconds if seconds else None

    summary: dict[str, Any] = {
        "scrapy_version": version,
        "products": n,
        "rounds": args.rounds,
        "rows_identical": True,
    }
    ways: dict[str, list[dict[str, Any]]] = {
        "ours": found["ours"],
        "ours: materialize": [run["materialize"] for run in found["ours"]],
        "ours: export": [run["export"] for run in found["ours"]],
        "ours: tasks add (not counted)": [run["add"] for run in found["ours"]],
        "scrapy": found["scrapy"],
    }
    for way, runs in ways.items():
        seconds = median(runs, "seconds")
        summary[way] = {
            "seconds": seconds,
            "cpu_seconds": median(runs, "cpu_seconds"),
            "items_per_s": per_second(seconds),
            "requests": (
                statistics.median_low(run["requests"] for run in runs)
                if "requests" in runs[0]
                else None
            ),
        }
    ratio = summary["ours"]["items_per_s"] / summary["scrapy"]["items_per_s"]
    summary["items_per_s_ours_over_scrapy"] = ratio
    with_add = statistics.median(run["seconds"] + run["add"]["seconds"] for run in found["ours"])
    summary["items_per_s_ours_with_add_over_scrapy"] = summary["scrapy"]["seconds"] / with_add
    print_table(
        ["way", "wall s", "items", "items/s", "CPU s", "requests"],
        [
            [
                way,
                round(summary[way]["seconds"], 2),
                n,
                round(summary[way]["items_per_s"] or 0),
                round(summary[way]["cpu_seconds"], 1),
                summary[way]["requests"],
            ]
            for way in ways
        ],
        title=(
            f"extraction, {n:,} product pages: ours (materialize + export) vs Scrapy {version}, "
            f"median of {args.rounds} rounds"
        ),
    )
    print("rows identical: yes")
    print(f"items/s ours / Scrapy: {ratio:.2f} (target >= 2)")
    print(
        "items/s ours, tasks add counted too, / Scrapy: "
        f"{summary['items_per_s_ours_with_add_over_scrapy']:.2f}"
    )
    write_json(args.json, {"summary": summary, "rounds": found})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
