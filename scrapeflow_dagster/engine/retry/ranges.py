"""Grouping due tasks into runs of contiguous key ranges (orchestrator runs take ranges): few
runs for scattered keys, a large range cut so that several runs can share it."""

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


def split_ranges(
    ordered_keys: Sequence[str],
    ranges: Sequence[tuple[str, str]],
    *,
    max_runs: int | None,
    min_partitions_per_run: int = 500,
) -> list[tuple[str, str]]:
    """Cut large `ranges` into roughly equal contiguous ranges, so that up to `max_runs` runs
    share the work (e.g. as many as the run queue starts at a time).

    The largest range (per run) is cut first; a range is never cut into ranges shorter than
    `min_partitions_per_run`, and `ranges` that already number `max_runs` or more are left as
    they are. The result depends only on the arguments: a plan evaluated again is cut again
    the same way (run keys are built from the ranges).

    Args:
        ordered_keys: every partition key, in partition order.
        ranges: `(first_key, last_key)` pairs of `ordered_keys`, in partition order.
        max_runs: how many ranges to aim for in all; None (no limit known) keeps `ranges`.
        min_partitions_per_run: the fewest keys a cut range may span.

    Returns:
        `(first_key, last_key)` pairs in partition order, together spanning exactly the keys
        `ranges` span.

    Raises:
        ValueError: when `min_partitions_per_run` is below 1.
    """
    if min_partitions_per_run < 1:
        raise ValueError(f"min_partitions_per_run must be at least 1, not {min_partitions_per_run}")
    if max_runs is None or len(ranges) >= max_runs:
        return list(ranges)
    position = {key: index for index, key in enumerate(ordered_keys)}
    spans = [(position[first], position[last]) for first, last in ranges]
    sizes = [last - first + 1 for first, last in spans]
    pieces = [1] * len(spans)
    for _ in range(max_runs - len(spans)):
        cuttable = [
            i for i, size in enumerate(sizes) if size // (pieces[i] + 1) >= min_partitions_per_run
        ]
        if not cuttable:
            break
        # Ties go to the earlier range, so the cut is the same on every evaluation.
        widest = max(cuttable, key=lambda i: (sizes[i] / pieces[i], -i))
        pieces[widest] += 1
    split: list[tuple[str, str]] = []
    for (first, _last), size, count in zip(spans, sizes, pieces, strict=True):
        bounds = [first + size * n // count for n in range(count + 1)]
        split.extend(
            (ordered_keys[start], ordered_keys[end - 1])
            for start, end in zip(bounds, bounds[1:], strict=False)
        )
    return split
