"""`hand-keys.tsv`: `key<TAB>fingerprint` of tasks whose key was given by hand, the cache
discovery keeps of their request fingerprints (stored params never change, so each is read from
its status file once; `discovery.discovery_memo` reads and fills it).
"""

from scrapeflow_dagster.engine.crawl.frontier.generation import journal_lines
from scrapeflow_dagster.engine.crawl.frontier.journal import append_lines, frontier_dir
from scrapeflow_dagster.engine.state.layout import DataLayout


def hand_key_fingerprints(layout: DataLayout) -> dict[str, str]:
    """The cached short fingerprints of tasks whose keys were given by hand."""
    found = {}
    for line in journal_lines(layout, "hand-keys.tsv"):
        key, _, fingerprint = line.partition("\t")
        found[key] = fingerprint
    return found


def note_hand_keys(layout: DataLayout, fingerprints: dict[str, str]) -> None:
    """Cache the short fingerprints of hand-given keys."""
    append_lines(
        frontier_dir(layout) / "hand-keys.tsv", (f"{k}\t{f}" for k, f in fingerprints.items())
    )
