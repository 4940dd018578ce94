"""`scrapeflow crawl FILE --max-depth N [--max-pages M] [--scope host|domain]`: FILE's tasks are
seeds; each round materialises `scrape`, `validation` and `pages` over the tasks not parsed yet
(the real `dagster asset materialize`, as `scrapeflow materialize` runs it), then turns the links
of the parsed pages into new tasks (`engine.crawl.discover`), until no new task is in scope or
the budget is spent. One line per round. Exit 0 when the crawl finished, even if some pages
failed (see `scrapeflow status`); killed and run again, it goes on where it stopped: pages
whose scrape completed are not fetched again, discovered tasks not yet run are run. Run again
with other crawl settings (a deeper `--max-depth`, a wider `--scope`, a larger budget), the
crawl grows in place: its stored pages' links are judged again and only new pages are fetched.
"""

import argparse
import asyncio
import dataclasses
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from scrapeflow_dagster.cli import common, materialize
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.crawl import discover, finish_batch, pending_batches
from scrapeflow_dagster.engine.crawl.journal import frontier_dir, note_lastmods
from scrapeflow_dagster.engine.crawl.regrow import regrow
from scrapeflow_dagster.engine.crawl.sitemaps import read_sitemaps
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.history import Ledger
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import SCOPES, normalise_crawl_params
from scrapeflow_dagster.engine.state.schema import executor_names, fields_of, is_success
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import (
    Item,
    LineError,
    TaskSpec,
    build_task,
    read_task_file,
)

SUMMARY = "crawl from the tasks of a file: follow links within a depth, scope and budget"
LINKS_ASSET = "pages"
_SYNC_LOCK_TIMEOUT_SECONDS = 1.0


def add_crawl_options(parser: argparse.ArgumentParser, *, depth_required: bool) -> None:
    """The crawl settings as options; they apply to the lines that do not set them."""
    parser.add_argument(
        "--max-depth",
        type=int,
        required=depth_required,
        metavar="N",
        help="follow links up to N hops from each seed (0: do not follow)",
    )
    parser.add_argument("--max-pages", type=int, metavar="M", help="tasks per crawl, seed included")
    parser.add_argument("--scope", choices=SCOPES, help="the seed's host (default) or domain")
    parser.add_argument("--allow", action="append", metavar="REGEX", help="follow only matches")
    parser.add_argument("--deny", action="append", metavar="REGEX", help="never follow matches")


def crawl_options(args: argparse.Namespace) -> dict[str, Any]:
    """The crawl params the options give, validated.

    Raises:
        UsageError: naming the option (a negative depth, a bad regex).
    """
    given = {
        "max_depth": args.max_depth,
        "max_pages": args.max_pages,
        "scope": args.scope,
        "allow": args.allow,
        "deny": args.deny,
    }
    given = {name: value for name, value in given.items() if value is not None}
    try:
        normalise_crawl_params(given)
    except ValueError as exc:
        raise common.UsageError(f"--{str(exc).replace('_', '-')}") from None
    return given


def with_options(items: Iterable[Item], options: dict[str, Any]) -> Iterator[Item]:
    """`items` with the option params set where a line does not set them."""
    for item in items:
        if isinstance(item, TaskSpec) and options:
            params = normalise_crawl_params({**options, **item.params})
            item = dataclasses.replace(item, params=params)
        yield item


def add_parser(sub: common.Subparsers, parent: argparse.ArgumentParser) -> None:
    """`crawl FILE --max-depth N [--max-pages M] [--scope host|domain] [--allow/--deny RE]`."""
    crawl = common.add_command(
        sub, parent, "crawl", cmd_crawl, summary=SUMMARY, description=__doc__
    )
    crawl.formatter_class = argparse.RawDescriptionHelpFormatter
    crawl.add_argument("files", nargs="*", metavar="FILE", help="seeds (.txt, .csv, .jsonl)")
    crawl.add_argument(
        "--sitemap",
        action="append",
        default=[],
        metavar="URL",
        help="the pages of this sitemap (an index, gzip, text) are seeds too (repeatable)",
    )
    crawl.add_argument(
        "--no-robots-sitemaps",
        dest="robots_sitemaps",
        action="store_false",
        help="do not read the sitemaps the seeds' robots.txt announce (read by default)",
    )
    add_crawl_options(crawl, depth_required=True)
    crawl.add_argument("--module", "-m", default=DEFINITIONS_MODULE, help="the code location")


def cmd_crawl(args: argparse.Namespace) -> int:
    """Add the seeds, then run rounds until the crawl is done; exit 0 when it finished (1 when
    some seed lines were refused, 2 when none could be read)."""
    options = crawl_options(args)
    assets = materialize.executor_asset_names(args.module)
    if LINKS_ASSET not in assets:
        raise common.UsageError(f"{args.module} has no {LINKS_ASSET!r} asset: nothing lists links")
    if not args.files and not args.sitemap:
        raise common.UsageError("give seed files, --sitemap URL, or both")
    layout = common.layout(args).ensure()
    sitemap_items, dated = _sitemap_seeds(args.files, args.sitemap, robots=args.robots_sitemaps)
    seeds, regrown, refused = _add_seeds(layout, args.files, options, extra=sitemap_items)
    # Kept for `scrapeflow refresh`: a page dated after its last fetch is due again.
    note_lastmods(layout, dated)
    if not seeds:
        if refused:
            common.say_error(
                f"every seed line was refused ({refused}, see above): nothing to crawl; a URL "
                "already stored as a task keeps its request (URL, method, body, headers)"
            )
        else:
            common.say_error("no seed could be read: nothing to crawl")
        return 2
    log_path = frontier_dir(layout) / "crawl.log"
    print(f"crawl of {common.plural(len(seeds), 'seed')}; dagster output in {log_path}", flush=True)
    with log_path.open("a") as log:
        seen, ran = _rounds(layout, seeds, regrown, assets, module=args.module, log=log)
    if ran:
        print(
            f"crawl finished: {common.plural(ran, 'task')} run of {seen} in the crawl; "
            "see `scrapeflow status`"
        )
    else:
        print("crawl finished: nothing to do, every task of the crawl was parsed already")
    return 1 if refused else 0


def _sitemap_seeds(
    files: Sequence[str], sitemaps: Sequence[str], *, robots: bool
) -> tuple[list[Item], list[tuple[str, datetime]]]:
    """The pages of `sitemaps` and (with `robots`) of those the robots.txt of the files' seeds
    announce, as task lines (each page as the sitemap writes it), and `(key, lastmod)` of
    those the sitemap dates."""
    seed_urls = []
    if robots:
        for name in files:
            seed_urls += [
                i.params["url"] for i in read_task_file(Path(name)) if isinstance(i, TaskSpec)
            ]
    if not sitemaps and not seed_urls:
        return [], []
    reading = asyncio.run(read_sitemaps(sitemaps, robots_of=seed_urls))
    for problem in reading.problems:
        print(f"sitemap: {problem}", file=sys.stderr)
    if reading.files:
        dated = sum(1 for page in reading.pages if page.lastmod is not None)
        print(
            f"sitemaps: {common.plural(len(reading.files), 'file')} read, "
            f"{common.plural(len(reading.pages), 'page')} ({dated} with lastmod)",
            flush=True,
        )
    items: list[Item] = []
    dated: list[tuple[str, datetime]] = []
    for line, page in enumerate(reading.pages, start=1):
        item = build_task({"url": page.url}, Path(page.sitemap), line)
        items.append(item)
        if isinstance(item, TaskSpec) and page.lastmod is not None:
            # A date without a zone is taken as UTC (the sitemaps protocol's W3C format).
            when = page.lastmod
            dated.append((item.key, when if when.tzinfo else when.replace(tzinfo=UTC)))
    return items, dated


def _add_seeds(
    layout: DataLayout,
    files: Sequence[str],
    options: dict[str, Any],
    *,
    extra: Sequence[Item] = (),
) -> tuple[list[str], list[str], int]:
    """Store the seeds; a stored seed (or discovered page) given other crawl settings takes
    them, and its crawl grows in place (`engine.crawl.regrow`). Returns the seed keys, the
    parsed pages of grown crawls to take in again, and how many lines were refused."""
    keys: list[str] = []
    updated: list[str] = []
    refused = 0
    sources: list[Iterable[Item]] = [read_task_file(Path(name)) for name in files]
    if extra:
        sources.append(extra)
    with Ledger(layout.db_path, spool_dir=layout.spool_dir) as ledger:
        for items in sources:
            report = add_tasks(
                layout,
                with_options(items, options),
                ledger=ledger,
                take_crawl_settings=True,
            )
            for error in report.errors:
                print(
                    f"refused: {error}" if isinstance(error, LineError) else error,
                    file=sys.stderr,
                )
            refused += len(report.errors)
            keys += report.keys
            updated += report.updated
        updated = list(dict.fromkeys(updated))
        reopened = regrow(layout, updated, ledger=ledger) if updated else []
    if updated:
        print(
            f"grown in place: {common.plural(len(updated), 'seed')} took new crawl settings; "
            f"{common.plural(len(reopened), 'parsed page')} of their crawls to take in again",
            flush=True,
        )
    return list(dict.fromkeys(keys)), reopened, refused


def _rounds(
    layout: DataLayout,
    seeds: list[str],
    reopened: list[str],
    assets: list[str],
    *,
    module: str,
    log: IO[str],
) -> tuple[int, int]:
    """Run rounds until no task of the crawl is left to run, the first over the seeds and
    the `reopened` pages; returns the tasks of the crawl seen and how many of them were run
    (not already parsed)."""
    crawls = set(seeds)
    attempted: set[str] = set()
    ran = 0
    todo = [*seeds, *reopened]
    number = 0
    while True:
        batches = [b for b in pending_batches(layout) if crawls & set(b.crawls)]
        todo += [k for b in batches for k in b.keys]
        todo = [k for k in dict.fromkeys(todo) if k not in attempted]
        if not todo:
            return len(attempted), ran
        to_run, _ = _materialise(layout, todo, assets, module=module, log=log)
        ran += len(to_run)
        attempted.update(todo)
        ledger = Ledger(layout.db_path, spool_dir=layout.spool_dir)
        try:
            found = discover(layout, todo, ledger=ledger, executor=LINKS_ASSET)
        finally:
            # DuckDB held by a user's session: the rows wait in the spool, the crawl goes on.
            ledger.close(lock_timeout_seconds=_SYNC_LOCK_TIMEOUT_SECONDS)
        for batch in batches:
            finish_batch(layout, batch.id)  # its tasks have run
        outcome = _round_outcome(layout, todo, to_run)
        links = ", ".join(f"{n} {what}" for what, n in Counter(found.outcomes).most_common())
        print(
            f"round {number}: {outcome}; links: {links or 'none'}; "
            f"{common.plural(len(found.keys), 'new task')}",
            flush=True,
        )
        for url, reason in _failed(layout, to_run)[:_FAILURES_SHOWN]:
            print(f"  failed: {url}: {reason}", flush=True)
        todo = []
        number += 1


# How many failed tasks a round line names (the rest: `scrapeflow status`, DuckDB).
_FAILURES_SHOWN = 3


def _round_outcome(layout: DataLayout, todo: list[str], to_run: list[str]) -> str:
    """`12 tasks (3 already parsed): 8 parsed, 1 failed` in tasks, never in Dagster runs."""
    parsed = sum(_parsed(layout, k) for k in to_run)
    failed = len(_failed(layout, to_run))
    earlier = len(todo) - len(to_run)
    text = common.plural(len(todo), "task")
    if earlier:
        text += f" ({earlier} already parsed)"
    if not to_run:
        return text + ": nothing to run"
    text += f": {common.plural(parsed, 'page')} parsed"
    if failed:
        text += f", {failed} failed"
    rest = len(to_run) - parsed - failed
    return text + (f", {rest} not run to the end" if rest else "")


def _failed(layout: DataLayout, keys: list[str]) -> list[tuple[str, str]]:
    """(URL, the failed step's status) of the tasks of `keys` whose last run failed."""
    found = []
    for key in keys:
        try:
            status = load_status(layout.status_dir, key)
        except StatusFileError as exc:
            found.append((key, str(exc)))
            continue
        if status is None:
            continue
        for name in executor_names(status):
            text = str(status.get(fields_of(name).status) or "")
            if text.startswith("ERROR"):
                url = redact(str(status.get("params", {}).get("url", key)))
                found.append((url, f"{name} {text}"))
                break
    return found


def _parsed(layout: DataLayout, key: str) -> bool:
    try:
        status = load_status(layout.status_dir, key)
    except StatusFileError:
        return False
    return status is not None and is_success(status, LINKS_ASSET)


def _materialise(
    layout: DataLayout, keys: list[str], assets: list[str], *, module: str, log: IO[str]
) -> tuple[list[str], int]:
    """Add `keys` as partitions (discovered tasks are not yet), then run one `dagster asset
    materialize` of every executor asset per range of those not parsed yet (each task goes
    down the chain in one pass); returns the keys run and how many runs failed.

    A task parsed by a run that was killed before Dagster stored its events is run again too
    (every step is skipped, its partitions are materialised): its partitions would otherwise
    stay "in progress" for good.
    """
    import dagster as dg

    from scrapeflow_dagster.defs.partitions import (
        TASKS_PARTITIONS_NAME,
        add_task_partitions,
        tasks_partitions_def,
    )
    from scrapeflow_dagster.instance import get_instance

    instance = get_instance()
    try:
        add_task_partitions(instance, keys)
        ordered = list(instance.get_dynamic_partitions(TASKS_PARTITIONS_NAME))
        states = instance.get_status_by_partition(
            dg.AssetKey(LINKS_ASSET), keys, tasks_partitions_def
        )
    finally:
        instance.dispose()
    done = {
        k for k, state in (states or {}).items() if state == dg.AssetPartitionStatus.MATERIALIZED
    }
    to_run = [k for k in keys if k not in done or not _parsed(layout, k)]
    if not to_run:
        return [], 0
    _, failed = materialize.run_ranges(
        ",".join(assets), ordered, to_run, module=module, data_dir=str(layout.root), log=log
    )
    return to_run, failed
