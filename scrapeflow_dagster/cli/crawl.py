"""`scrapeflow crawl FILE --max-depth N [--max-pages M] [--scope host|domain]`: FILE's tasks are
seeds; the crawl is one real Dagster run of the executor chain (`scrape`, `validation`,
`pages`: each task down the chain in one pass), started in this process against the instance
(`crawling.rounds`), whose step takes in the links of each page it parses and runs the new
tasks in the same run (`lib.run_growth`, the discovery the frontier sensor runs too), until
no new task is in scope or the budget is spent. One line per depth ("round"). Exit 0
when the crawl finished, even if some pages failed (see `scrapeflow status`); killed and run
again, it goes on where it stopped: pages whose scrape completed are not fetched again,
discovered tasks not yet run are run. Run again with other crawl settings (a deeper
`--max-depth`, a wider `--scope`, a larger budget), the crawl grows in place: its stored
pages' links are judged again and only new pages are fetched.
"""

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapeflow_dagster.cli import common, materialize
from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE
from scrapeflow_dagster.engine.state.params import SCOPES, normalise_crawl_params
from scrapeflow_dagster.engine.tasks.intake import (
    Item,
    read_task_file,
)

# The crawl's engine (aiohttp, parsel, the proxies: ~0.3 s) is imported by the commands that
# crawl, not by `scrapeflow tasks list|show|find`, whose module builds its parsers with this
# module's options.
if TYPE_CHECKING:
    from scrapeflow_dagster.crawling.rounds import Round

SUMMARY = "crawl from the tasks of a file: follow links within a depth, scope and budget"
# The executor whose output lists a page's links (the shipped `pages`: `crawl.discover`'s
# PAGES_EXECUTOR, which a test holds equal).
LINKS_ASSET = "pages"


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
    parser.add_argument(
        "--extract",
        metavar="SELECTORS",
        help="a selector set (.yaml/.json: named CSS/XPath fields) whose fields `pages` takes "
        "from each page; copied into the data folder, named after the file",
    )
    parser.add_argument(
        "--render",
        nargs="?",
        const="true",
        choices=("true", "auto"),
        help="run each page in a browser before `pages` reads it (pages built by scripts); "
        "`auto`: only pages of URL patterns where a sample shows the browser finds more. "
        "Needs the browser extra and SCRAPEFLOW_RENDER=1",
    )


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
        "render": args.render,
    }
    given = {name: value for name, value in given.items() if value is not None}
    try:
        normalise_crawl_params(given)
    except ValueError as exc:
        raise common.UsageError(f"--{str(exc).replace('_', '-')}") from None
    if args.extract is not None:
        given["extract"] = _install_selectors(args, Path(args.extract))
    return given


def _install_selectors(args: argparse.Namespace, path: Path) -> str:
    """Copy the selector set at `path` into the data folder; its name for the tasks' params.

    Raises:
        UsageError: naming the file and field when it is not a valid set.
    """
    from scrapeflow_dagster.engine.extract import SelectorSetError, install_selector_set

    status_dir = common.layout(args).status_dir
    try:
        selector_set, changed = install_selector_set(status_dir, path)
    except SelectorSetError as exc:
        raise common.UsageError(f"--extract {exc}") from None
    fields = ", ".join(field.name for field in selector_set.fields)
    state = "stored" if changed else "unchanged"
    print(f"selector set {selector_set.name!r} {state} ({fields})", file=sys.stderr)
    return selector_set.name


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
    crawl.add_argument(
        "--reread-sitemaps",
        action="store_true",
        help="ask every sitemap again (conditionally), also one read within robots.txt's "
        "max age (24 h by default), whose copy is used otherwise",
    )
    add_crawl_options(crawl, depth_required=True)
    crawl.add_argument(
        "--page-text",
        type=int,
        metavar="CHARS",
        help="keep each page's readable text up to CHARS characters (the `page_text` table; "
        "the runs' `page_text_max_chars`)",
    )
    crawl.add_argument(
        "--markdown",
        action="store_true",
        help="with --page-text, each page's Markdown too (the `markdown` extra)",
    )
    crawl.add_argument(
        "--main-content",
        action="store_true",
        help="keep each page's main content (menus, footers, banners left out) as text and "
        "Markdown, with its metadata (the `main_content` table; the runs' `page_main_content`; "
        "the `content` extra)",
    )
    crawl.add_argument(
        "--config-json",
        metavar="JSON",
        help="run config for the crawl's runs, as `dagster` takes it (e.g. any scrape_settings "
        'field: {"resources": {"scrape_settings": {"config": {...}}}})',
    )
    crawl.add_argument("--module", "-m", default=DEFINITIONS_MODULE, help="the code location")


def run_config(args: argparse.Namespace) -> dict[str, Any]:
    """The run config the options give the crawl's runs (`--config-json`, then `--page-text`,
    `--markdown` and `--main-content` over its `scrape_settings`).

    Raises:
        UsageError: naming the option (JSON that is no object, a negative length, Markdown
            without text, main content without its extra).
    """
    config: dict[str, Any] = {}
    if args.config_json is not None:
        try:
            config = json.loads(args.config_json)
        except json.JSONDecodeError as exc:
            raise common.UsageError(f"--config-json is not JSON: {exc}") from None
        if not isinstance(config, dict):
            raise common.UsageError("--config-json must be a JSON object (run config)")
    if args.markdown and not args.page_text:
        raise common.UsageError("--markdown needs --page-text CHARS (the Markdown of the text)")
    settings: dict[str, Any] = {}
    if args.page_text is not None:
        if args.page_text < 0:
            raise common.UsageError(
                f"--page-text must be 0 or more characters, got {args.page_text}"
            )
        settings["page_text_max_chars"] = args.page_text
    if args.markdown:
        settings["page_markdown"] = True
    if args.main_content:
        _check_content_extra()
        settings["page_main_content"] = True
    if not settings:
        return config
    resources = config.setdefault("resources", {})
    scrape = resources.setdefault("scrape_settings", {}).setdefault("config", {})
    scrape.update(settings)
    return config


def _check_content_extra() -> None:
    """Refuse `--main-content` before any run when its extractor is not installed.

    Raises:
        UsageError: naming the `content` extra.
    """
    import importlib.util

    from scrapeflow_dagster.engine.content import CONTENT_EXTRA

    if importlib.util.find_spec("trafilatura") is None:
        raise common.UsageError(f"--main-content needs trafilatura: {CONTENT_EXTRA}")


def cmd_crawl(args: argparse.Namespace) -> int:
    """Add the seeds, then run rounds until the crawl is done; exit 0 when it finished (1 when
    some seed lines were refused, 2 when none could be read)."""
    options = crawl_options(args)
    config = run_config(args)
    assets = materialize.executor_asset_names(args.module)
    if LINKS_ASSET not in assets:
        raise common.UsageError(f"{args.module} has no {LINKS_ASSET!r} asset: nothing lists links")
    if not args.files and not args.sitemap:
        raise common.UsageError("give seed files, --sitemap URL, or both")
    from scrapeflow_dagster.cli.location_settings import gate_settings
    from scrapeflow_dagster.engine.crawl.frontier.journal import frontier_dir
    from scrapeflow_dagster.engine.crawl.seeding.seeds import add_seeds, sitemap_seeds

    layout = common.layout(args).ensure()
    settings, proxies = gate_settings(args.module)
    found = sitemap_seeds(
        layout,
        args.files,
        args.sitemap,
        robots=args.robots_sitemaps,
        settings=settings,
        proxy_provider=proxies,
        reread=args.reread_sitemaps,
    )
    for problem in found.problems:
        print(f"sitemap: {problem}", file=sys.stderr)
    if found.files:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(found.skipped.items()))
        print(
            f"sitemaps: {common.plural(found.files, 'file')} read, "
            f"{common.plural(len(found.items), 'page')} ({len(found.dated)} with lastmod)"
            + (f"; skipped: {skipped}" if skipped else ""),
            flush=True,
        )
    sources: list[Iterable[Item]] = [read_task_file(Path(name)) for name in args.files]
    # Their DuckDB rows wait in the spool: the crawl syncs as it ends (`run_crawl`).
    added = add_seeds(
        layout,
        [*sources, found.items],
        options,
        dated=found.dated,
        frontier=found.rows,
        sync=False,
    )
    for error in added.errors:
        print(f"refused: {error}", file=sys.stderr)
    if added.regrown:
        print(
            f"grown in place: {common.plural(len(added.regrown), 'seed')} took new crawl "
            f"settings; {common.plural(len(added.reopened), 'parsed page')} of their crawls to "
            "take in again",
            flush=True,
        )
    seeds, regrown, refused = added.keys, added.reopened, len(added.errors)
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
    # Imported here: `scrapeflow --help` and the other commands do not load Dagster.
    from scrapeflow_dagster.crawling.rounds import run_crawl
    from scrapeflow_dagster.crawling.runs import LocationRuns
    from scrapeflow_dagster.instance import get_instance

    instance = get_instance()
    try:
        runs = LocationRuns(instance, args.module)
        with log_path.open("a") as log:
            done = run_crawl(
                layout,
                runs,
                seeds,
                reopened=regrown,
                assets=assets,
                log=log,
                on_round=_print_round,
                run_config=config,
            )
    finally:
        instance.dispose()
    seen, ran = done.seen, done.ran
    if ran:
        print(
            f"crawl finished: {common.plural(ran, 'task')} run of {seen} in the crawl; "
            "see `scrapeflow status`"
        )
    else:
        print("crawl finished: nothing to do, every task of the crawl was parsed already")
    return 1 if refused else 0


def _print_round(done: "Round") -> None:
    """`round 2: 310 tasks (3 already parsed): 300 pages parsed, 7 failed; links: ...; N new
    tasks`, then the first failed URLs with their reason."""
    links = ", ".join(f"{n} {what}" for what, n in done.links.most_common())
    print(
        f"round {done.number}: {_round_outcome(done)}; links: {links or 'none'}; "
        f"{common.plural(done.new_tasks, 'new task')}",
        flush=True,
    )
    for url, reason in done.failed[:_FAILURES_SHOWN]:
        print(f"  failed: {url}: {reason}", flush=True)


# How many failed tasks a round line names (the rest: `scrapeflow status`, DuckDB).
_FAILURES_SHOWN = 3


def _round_outcome(done: "Round") -> str:
    """`12 tasks (3 already parsed): 8 parsed, 1 failed` in tasks, never in Dagster runs."""
    earlier = done.tasks - done.ran
    text = common.plural(done.tasks, "task")
    if earlier:
        text += f" ({earlier} already parsed)"
    if not done.ran:
        return text + ": nothing to run"
    text += f": {common.plural(done.parsed, 'page')} parsed"
    if done.failed:
        text += f", {len(done.failed)} failed"
    rest = done.ran - done.parsed - len(done.failed)
    return text + (f", {rest} not run to the end" if rest else "")
