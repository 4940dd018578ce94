"""Range planning, one row per case: which due keys share a run and which keys are swept in,
and how a large range is cut so that several runs share it."""

import pytest

from scrapeflow_dagster.engine.retry.ranges import plan_ranges, split_ranges

KEYS = [f"k{n}" for n in range(10)]

CASES = [
    # (case, due, passable, max_gap, max_partitions_per_run, ranges)
    ("nothing due", [], set(), 200, 100, []),
    ("one key", ["k3"], set(), 200, 100, [("k3", "k3")]),
    ("adjacent keys share a run", ["k3", "k4", "k5"], set(), 200, 100, [("k3", "k5")]),
    (
        "a gap of succeeded keys is swept in",
        ["k1", "k4"],
        {"k2", "k3"},
        200,
        100,
        [("k1", "k4")],
    ),
    ("a waiting key splits the run", ["k1", "k4"], {"k2"}, 200, 100, [("k1", "k1"), ("k4", "k4")]),
    (
        "a gap longer than max_gap splits",
        ["k1", "k4"],
        {"k2", "k3"},
        1,
        100,
        [("k1", "k1"), ("k4", "k4")],
    ),
    (
        "runs are cut at max_partitions_per_run",
        KEYS,
        set(),
        200,
        4,
        [("k0", "k3"), ("k4", "k7"), ("k8", "k9")],
    ),
    (
        "order follows the partitions, not the due list",
        ["k5", "k2"],
        set(),
        200,
        100,
        [("k2", "k2"), ("k5", "k5")],
    ),
    ("trailing succeeded keys are not swept in", ["k7"], {"k8", "k9"}, 200, 100, [("k7", "k7")]),
]


@pytest.mark.parametrize(
    ("due", "passable", "max_gap", "max_run", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_plan_ranges(
    due: list[str], passable: set[str], max_gap: int, max_run: int, expected: list
) -> None:
    found = plan_ranges(
        KEYS, due, passable=passable, max_gap=max_gap, max_partitions_per_run=max_run
    )
    assert found == expected


LONG = [f"n{n:03d}" for n in range(100)]
ALL = [("n000", "n099")]

SPLIT_CASES = [
    # (case, ranges, max_runs, min_partitions_per_run, split)
    ("no limit known keeps the ranges", ALL, None, 10, ALL),
    ("a limit of one keeps the ranges", ALL, 1, 10, ALL),
    ("nothing to cut", [], 4, 10, []),
    (
        "one range is cut into equal runs",
        ALL,
        4,
        10,
        [("n000", "n024"), ("n025", "n049"), ("n050", "n074"), ("n075", "n099")],
    ),
    (
        "uneven sizes differ by one key at most",
        ALL,
        3,
        10,
        [("n000", "n032"), ("n033", "n065"), ("n066", "n099")],
    ),
    (
        "never below the minimum per run",
        ALL,
        8,
        30,
        [("n000", "n032"), ("n033", "n065"), ("n066", "n099")],
    ),
    ("a range below twice the minimum stays whole", [("n000", "n018")], 4, 10, [("n000", "n018")]),
    (
        "exactly twice the minimum is cut",
        [("n000", "n019")],
        4,
        10,
        [("n000", "n009"), ("n010", "n019")],
    ),
    (
        "ranges that already fill the limit stay",
        [("n000", "n049"), ("n050", "n059"), ("n060", "n099")],
        3,
        10,
        [("n000", "n049"), ("n050", "n059"), ("n060", "n099")],
    ),
    (
        "the widest range is cut first, small ones stay",
        [("n000", "n004"), ("n010", "n069"), ("n080", "n099")],
        5,
        10,
        [
            ("n000", "n004"),
            ("n010", "n029"),
            ("n030", "n049"),
            ("n050", "n069"),
            ("n080", "n099"),
        ],
    ),
    (
        "cuts go where each run gets the most keys",
        [("n000", "n059"), ("n060", "n079")],
        4,
        10,
        [("n000", "n019"), ("n020", "n039"), ("n040", "n059"), ("n060", "n079")],
    ),
    (
        "equal ranges: the earlier one is cut first",
        [("n000", "n019"), ("n020", "n039")],
        3,
        10,
        [("n000", "n009"), ("n010", "n019"), ("n020", "n039")],
    ),
    (
        "a limit above what the minimum allows",
        [("n000", "n099")],
        1000,
        1,
        [(key, key) for key in LONG],
    ),
]


@pytest.mark.parametrize(
    ("ranges", "max_runs", "min_run", "expected"),
    [case[1:] for case in SPLIT_CASES],
    ids=[case[0] for case in SPLIT_CASES],
)
def test_split_ranges(
    ranges: list[tuple[str, str]], max_runs: int | None, min_run: int, expected: list
) -> None:
    found = split_ranges(LONG, ranges, max_runs=max_runs, min_partitions_per_run=min_run)
    assert found == expected
    assert spanned(found) == spanned(ranges), "a key was lost or added"
    assert split_ranges(LONG, ranges, max_runs=max_runs, min_partitions_per_run=min_run) == found


def spanned(ranges: list[tuple[str, str]]) -> list[str]:
    """Every key the ranges span, in order (a key twice if two ranges overlap)."""
    return [k for first, last in ranges for k in LONG[LONG.index(first) : LONG.index(last) + 1]]


def test_split_ranges_refuses_a_minimum_below_one() -> None:
    with pytest.raises(ValueError, match="min_partitions_per_run"):
        split_ranges(LONG, ALL, max_runs=4, min_partitions_per_run=0)
