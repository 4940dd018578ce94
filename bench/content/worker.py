"""One extractor over pages, in whatever venv has it: run as a script (it imports nothing of
this repository but, for `whole_page` and `scrapeflow`, the package installed in its venv).

    python worker.py EXTRACTOR < pages.json > texts.json

stdin: `[{"url": ..., "html": ...}, ...]` (decoded once by the bench, so every extractor reads
the same text); stdout: `{"version": ..., "texts": [...], "seconds": ...}`, where `seconds`
sums the extraction calls alone (parsing included, reading and JSON not) over `--rounds`
passes, and `texts` are the first pass's outputs ('' when the extractor returned nothing).
"""

import json
import sys
import time
from collections.abc import Callable
from importlib.metadata import version

Extract = Callable[[str, str], str]


def _whole_page() -> tuple[Extract, str]:
    # The baseline: what `pages` stores today as the page's text.
    from scrapeflow_dagster.engine.executors.page_text import readable_text

    return (lambda html, url: readable_text(html)), "html-text " + version("html-text")


def _scrapeflow() -> tuple[Extract, str]:
    from scrapeflow_dagster.engine.content import main_content

    return (lambda html, url: main_content(html, url).text), "trafilatura " + version("trafilatura")


def _trafilatura() -> tuple[Extract, str]:
    import trafilatura

    def run(html: str, url: str) -> str:
        return trafilatura.extract(html, url=url, with_metadata=False) or ""

    return run, version("trafilatura")


def _readability() -> tuple[Extract, str]:
    import lxml.html
    from readability import Document

    def run(html: str, url: str) -> str:
        summary = Document(html, url=url).summary(html_partial=True)
        return lxml.html.fromstring(summary).text_content() if summary.strip() else ""

    return run, version("readability-lxml")


def _resiliparse() -> tuple[Extract, str]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    def run(html: str, url: str) -> str:
        return extract_plain_text(HTMLTree.parse(html), main_content=True)

    return run, version("resiliparse")


def _rs_trafilatura() -> tuple[Extract, str]:
    import rs_trafilatura

    def run(html: str, url: str) -> str:
        return rs_trafilatura.extract(html, url=url).main_content or ""

    return run, version("rs-trafilatura")


EXTRACTORS = {
    "whole_page": _whole_page,
    "scrapeflow": _scrapeflow,
    "trafilatura": _trafilatura,
    "readability": _readability,
    "resiliparse": _resiliparse,
    "rs_trafilatura": _rs_trafilatura,
}


def main() -> None:
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    extract, made_by = EXTRACTORS[name]()
    pages = json.load(sys.stdin)
    texts: list[str] = []
    seconds = 0.0
    for round_ in range(rounds):
        for page in pages:
            started = time.perf_counter()
            try:
                text = extract(page["html"], page["url"])
            except Exception as error:  # one page's failure is that page's empty text
                text = ""
                print(f"{name}: {page['url']}: {error!r}", file=sys.stderr)
            seconds += time.perf_counter() - started
            if round_ == 0:
                texts.append(text)
    json.dump({"version": made_by, "texts": texts, "seconds": seconds}, sys.stdout)


if __name__ == "__main__":
    main()
