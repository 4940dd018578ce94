"""What changed between two parses of a page: its text lines added and removed, its title, its
links added and removed, and its extracted fields that differ.

Lines are compared as the change digest compares text (`digest.normalised`: noise removed,
spaces collapsed), so a line whose only difference is its date is not reported; the lines are
reported as the page shows them. Long diffs are cut (`MAX_LINES` per side, `MAX_LINE_CHARS` per
line) with their full counts kept.
"""

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from scrapeflow_dagster.engine.revisit.digest import DEFAULT_NOISE, normalised

MAX_LINES = 100
MAX_LINE_CHARS = 500


def _lines(text: str, noise: Sequence[str]) -> list[tuple[str, str]]:
    """(normalised, as shown) for each line of `text` that has more than noise."""
    pairs = []
    for line in text.splitlines():
        key = normalised(line, noise)
        if key:
            pairs.append((key, " ".join(line.split())))
    return pairs


def text_diff(
    before: str, after: str, noise: Sequence[str] = DEFAULT_NOISE
) -> tuple[list[str], list[str], int, int]:
    """`(added, removed, added_count, removed_count)`: the lines of `after` not in `before` and
    the reverse, in page order (cut as the module says), and how many there were."""
    old, new = _lines(before, noise), _lines(after, noise)
    matcher = difflib.SequenceMatcher(
        None, [k for k, _ in old], [k for k, _ in new], autojunk=False
    )
    added: list[str] = []
    removed: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(shown for _, shown in old[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(shown for _, shown in new[j1:j2])
    return (
        [line[:MAX_LINE_CHARS] for line in added[:MAX_LINES]],
        [line[:MAX_LINE_CHARS] for line in removed[:MAX_LINES]],
        len(added),
        len(removed),
    )


def _fields(output: Mapping[str, Any]) -> Mapping[str, Any] | None:
    extracted = output.get("extracted")
    if isinstance(extracted, Mapping) and isinstance(extracted.get("fields"), Mapping):
        return extracted["fields"]
    return None


def page_change(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    text_before: str | None,
    text_after: str | None,
    noise: Sequence[str] = DEFAULT_NOISE,
) -> dict[str, Any]:
    """What differs between the parse `before` and the parse `after` (`pages` outputs: `title`,
    `links`, `extracted`), with the readable texts of both bodies when both are at hand.

    Returns:
        `title` (`{"before", "after"}`, or None when the same), `links_added`/`links_removed`,
        `text_added`/`text_removed` and their `_count`s (None when a body is not at hand:
        the previous body was not kept), and `fields` (field -> `{"before", "after"}`, None
        when neither parse extracted fields).
    """
    change: dict[str, Any] = {}
    title_before, title_after = before.get("title"), after.get("title")
    change["title"] = (
        None if title_before == title_after else {"before": title_before, "after": title_after}
    )
    links_before = list(before.get("links") or [])
    links_after = list(after.get("links") or [])
    known_before, known_after = set(links_before), set(links_after)
    change["links_added"] = [link for link in links_after if link not in known_before]
    change["links_removed"] = [link for link in links_before if link not in known_after]
    if text_before is not None and text_after is not None:
        added, removed, added_count, removed_count = text_diff(text_before, text_after, noise)
        change.update(
            text_added=added,
            text_removed=removed,
            text_added_count=added_count,
            text_removed_count=removed_count,
        )
    else:
        change.update(
            text_added=None, text_removed=None, text_added_count=None, text_removed_count=None
        )
    fields_before, fields_after = _fields(before), _fields(after)
    if fields_before is None and fields_after is None:
        change["fields"] = None
    else:
        old, new = fields_before or {}, fields_after or {}
        change["fields"] = {
            name: {"before": old.get(name), "after": new.get(name)}
            for name in dict.fromkeys([*old, *new])
            if old.get(name) != new.get(name)
        }
    return change
