"""Grouping due tasks into few runs: orchestrator runs take contiguous ranges of keys."""

from collections.abc import Iterable, Sequence


def plan_ranges(
    ordered_keys: Sequence[str],
    due: Iterable[str],
    *,
    passable: set[str],
    max_gap: int = 200,
    max_partitions_per_run: int = 10_000,
) -> list[tuple[str, str]]:
    """Group `due` keys into contiguous ranges of `ordered_keys` (Dagster runs take ranges).

    Two due keys share a range when the keys between them are all in `passable` (already
    succeeded: the run skips them cheaply) and there are at most `max_gap` of them; a key that
    is waiting or given up is never swept into a range.

    Returns:
        `(first_key, last_key)` pairs in partition order.
    """
    due_set = set(due)
    ranges: list[tuple[str, str]] = []
    start: int | None = None
    last_due = -1
    for index, key in enumerate(ordered_keys):
        if key in due_set:
            too_long = start is not None and index - start + 1 > max_partitions_per_run
            if start is None or too_long:
                if start is not None:
                    ranges.append((ordered_keys[start], ordered_keys[last_due]))
                start = index
            last_due = index
        elif start is not None and (key not in passable or index - last_due > max_gap):
            ranges.append((ordered_keys[start], ordered_keys[last_due]))
            start = None
    if start is not None:
        ranges.append((ordered_keys[start], ordered_keys[last_due]))
    return ranges
