"""Main-content extraction (issue 62): precision, recall and F1 of each extractor on two sets of
marked pages, and pages per second, on the same pages.

    .venv/bin/python -m bench.bench_main_content                 # every extractor, 3 rounds
    .venv/bin/python -m bench.bench_main_content --only scrapeflow whole_page --rounds 1
    .venv/bin/python -m bench.bench_main_content --no-digest     # extraction only

Sets (`bench.content.sets`): `dataset`, the 163 real pages of the development set (segments
only; it flatters trafilatura, tuned on it), and `ours`, pages of the kinds this project scrapes
(documentation, products, listings, the bundled site's pages, a few articles) with their whole
main text known. Scores (`bench.content.scoring`): segment precision, recall and F1 pooled over
pages, and on `ours` the per-page mean of 4-token shingle F1 and recall (the issue's metric; the
development set has no whole bodies to score it on).

Then the change digest (`bench.content.digests`): false and missed changes of the whole
text's digest and the main content's on the bundled site's changing pages, as served and in
noisy chrome (docs/refresh.md).

Extractors: `scrapeflow` (`engine.content.main_content`, ours: trafilatura and what this
project adds) and `whole_page` (the text `pages` stores today) run in this venv; `trafilatura`
(as it ships), `readability` (readability-lxml), `resiliparse` (`main_content=True`) and
`rs_trafilatura` (a Rust port, CPython 3.12 wheels only) each in a venv the benchmark builds
(`bench.content.venvs`), or skipped with a note. Each runs in a process of its own
(`bench/content/worker.py`) on the same decoded pages; pages/s is pages over the seconds of the
extraction calls alone, summed over `--rounds` passes.
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench.content.digests import measure_digests, print_digests
from bench.content.scoring import Counts, shingle_scores
from bench.content.sets import MarkedPage, load_set
from bench.content.venvs import PEERS, peer_python

WORKER = Path(__file__).resolve().parent / "content" / "worker.py"
OURS = ("scrapeflow", "whole_page")


def _run(python: Path | str, name: str, pages: list[MarkedPage], rounds: int) -> dict:
    payload = json.dumps([{"url": page.url, "html": page.html} for page in pages])
    done = subprocess.run(
        [str(python), str(WORKER), name, str(rounds)],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _row(name: str, result: dict, pages: list[MarkedPage], rounds: int) -> dict:
    counts = Counts()
    shingles = []
    for page, text in zip(pages, result["texts"], strict=True):
        counts.add(text, page.with_, page.without)
        if page.main is not None:
            shingles.append(shingle_scores(text, page.main))
    return {
        "extractor": name,
        "version": result["version"],
        "precision": counts.precision,
        "recall": counts.recall,
        "f1": counts.f1,
        "shingle_f1": statistics.mean(s[2] for s in shingles) if shingles else None,
        "shingle_recall": statistics.mean(s[1] for s in shingles) if shingles else None,
        "pages_per_second": len(pages) * rounds / result["seconds"],
    }


def _print(set_name: str, count: int, rows: list[dict]) -> None:
    print(f"\n{set_name} ({count} pages)")
    print(
        f"{'extractor':15} {'version':22} {'P':>6} {'R':>6} {'F1':>6} {'sh.F1':>6} "
        f"{'sh.R':>6} {'pages/s':>8}"
    )
    for row in rows:
        shingle = [row["shingle_f1"], row["shingle_recall"]]
        shown = [f"{v:6.3f}" if v is not None else f"{'-':>6}" for v in shingle]
        print(
            f"{row['extractor']:15} {row['version']:22} {row['precision']:6.3f} "
            f"{row['recall']:6.3f} {row['f1']:6.3f} {shown[0]} {shown[1]} "
            f"{row['pages_per_second']:8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="extractors to run (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="passes timed per extractor")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    parser.add_argument("--no-digest", action="store_true", help="skip the change digests")
    parser.add_argument("--digest-pages", type=int, default=20, help="changing pages fetched")
    parser.add_argument("--digest-days", type=float, default=7.0, help="site days they span")
    parser.add_argument(
        "--digest-every-hours", type=float, default=12.0, help="site hours between fetches"
    )
    args = parser.parse_args()
    names = args.only or [*OURS, *PEERS]
    pythons: dict[str, Path | str] = {name: sys.executable for name in OURS if name in names}
    for name in names:
        if name in PEERS:
            pythons[name] = peer_python(name)
    report: dict[str, list[dict]] = {}
    for set_name in ("dataset", "ours"):
        pages = load_set(set_name)
        if not pages:
            print(f"\n{set_name}: skipped, the development set is not there")
            continue
        rows = []
        for name, python in pythons.items():
            if isinstance(python, str) and python.startswith("skipped"):
                continue
            rows.append(_row(name, _run(python, name, pages, args.rounds), pages, args.rounds))
        report[set_name] = rows
        _print(set_name, len(pages), rows)
    for name, python in pythons.items():
        if isinstance(python, str) and python.startswith("skipped"):
            print(f"{name}: {python}")
    digests = []
    if not args.no_digest:
        digests = measure_digests(
            pages=args.digest_pages, days=args.digest_days, every_hours=args.digest_every_hours
        )
        print_digests(digests)
    if args.json:
        args.json.write_text(json.dumps({**report, "digests": digests}, indent=1))


if __name__ == "__main__":
    main()
