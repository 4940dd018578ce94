"""The two sets of marked pages the benchmark scores extractors on.

- `dataset`: the development set of 163 real pages (`../shared/datasets/main-content/`, or
  `SCRAPEFLOW_MAIN_CONTENT_DATASET`): segments only, no whole main text; it flatters
  trafilatura, which was tuned on it.
- `ours`: pages of the kinds this project scrapes (documentation, products, listings, the
  bundled site's pages, articles), written for it and kept with the tests
  (`scrapeflow_dagster_tests/engine/content/pages/`): segments and the whole main text.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

from bench.lib.repo import REPO
from scrapeflow_dagster.engine.executors.pages import decode_html

DATASET_DIR = Path(
    os.environ.get("SCRAPEFLOW_MAIN_CONTENT_DATASET")
    or REPO.parent / "shared" / "datasets" / "main-content"
)
OURS_DIR = REPO / "scrapeflow_dagster_tests" / "engine" / "content" / "pages"


@dataclass(frozen=True)
class MarkedPage:
    """A page, its URL and what of it is main content (`with`) and what is not (`without`);
    `main` is the whole main text when it is known, else None."""

    url: str
    html: str
    with_: tuple[str, ...]
    without: tuple[str, ...]
    main: str | None
    kind: str


def _read(index: Path, html_dir: Path) -> list[MarkedPage]:
    marked = json.loads(index.read_text())
    pages = []
    for url, item in marked.items():
        body = (html_dir / item["file"]).read_bytes()
        pages.append(
            MarkedPage(
                url=url,
                html=decode_html(body).text,
                with_=tuple(item["with"]),
                without=tuple(item["without"]),
                main=item.get("main"),
                kind=item.get("kind", "article"),
            )
        )
    return pages


def load_set(name: str) -> list[MarkedPage]:
    """The pages of the set `name` (`dataset` or `ours`); [] when the dataset is not there."""
    if name == "dataset":
        if not DATASET_DIR.is_dir():
            return []
        return _read(DATASET_DIR / "evaldata.json", DATASET_DIR / "pages")
    return _read(OURS_DIR / "marked.json", OURS_DIR)
