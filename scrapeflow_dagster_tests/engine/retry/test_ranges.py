"""Range planning, one row per case: which due keys share a run and which keys are swept in."""

import pytest

from scrapeflow_dagster.engine.retry.ranges import plan_ranges

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
