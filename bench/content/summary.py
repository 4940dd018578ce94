"""`make bench`'s summary rows of the main-content benchmark (`bench.bench_main_content`): per
set and extractor its F1 (precision and recall named beside it) and pages per second, and the
change digests' false and missed changes, from the JSON the benchmark wrote."""

from typing import Any

Row = list[Any]
# Issue 62's targets: F1 on real articles, recall of the main text on pages of our own kinds.
F1_TARGET = 0.97
RECALL_TARGET = 0.98
OURS = "scrapeflow"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def rows_main_content(data: dict[str, Any], _out: str) -> list[Row]:
    """The summary rows (bench, figure, value, target, verdict) of one run's JSON."""
    rows: list[Row] = []
    for set_name in ("dataset", "ours"):
        for row in data.get(set_name) or []:
            name = f"{set_name} {row['extractor']}"
            ours = row["extractor"] == OURS
            p, r, f1 = row["precision"], row["recall"], row["f1"]
            if ours and set_name == "ours":
                rows.append(
                    [
                        "main-content",
                        f"{name}: recall (P {p:.3f}, F1 {f1:.3f})",
                        r,
                        f">= {RECALL_TARGET}",
                        _verdict(r >= RECALL_TARGET),
                    ]
                )
            else:
                target = f">= {F1_TARGET}" if ours else ""
                verdict = _verdict(f1 >= F1_TARGET) if ours else "-"
                rows.append(
                    ["main-content", f"{name}: F1 (P {p:.3f}, R {r:.3f})", f1, target, verdict]
                )
            rows.append(["main-content", f"{name}: pages/s", row["pages_per_second"], "", "-"])
    for row in data.get("digests") or []:
        name = f"digest of {row['digest']}, pages {row['variant']}"
        wrong = row["false_changes"] + row["missed_changes"]
        rows.append(
            [
                "main-content",
                f"{name}: false + missed changes of {row['pairs']} pairs",
                wrong,
                "",
                "-",
            ]
        )
    return rows


def head_main_content(data: dict[str, Any], _out: str) -> list[list[str]]:
    """The `main-content` row of docs/performance.md's table: ours on both sets against
    trafilatura as it ships on the development set (none when a figure is missing)."""
    dataset = {row["extractor"]: row for row in data.get("dataset") or []}
    ours_set = {row["extractor"]: row for row in data.get("ours") or []}
    ours, shipped, own = dataset.get(OURS), dataset.get("trafilatura"), ours_set.get(OURS)
    if ours is None or shipped is None or own is None:
        return []
    return [
        [
            "main-content",
            f"development set: F1 {ours['f1']:.3f} at {ours['pages_per_second']:.1f} pages/s;"
            f" our set: recall {own['recall']:.3f}",
            f"trafilatura as it ships: F1 {shipped['f1']:.3f}",
            f"F1 {ours['f1']:.3f} (target >= {F1_TARGET}); recall {own['recall']:.3f}"
            f" (target >= {RECALL_TARGET})",
        ]
    ]
