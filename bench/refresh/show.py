"""A scenario's figures printed: per policy, per rate class, the share fresh after each day,
and the goal lines as PASS or FAIL."""

from typing import Any

from bench.lib.report import print_table
from bench.refresh.model import CLASSES, FILL, FIXED, GOAL_RATIO, LEARNED, POLICIES


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def show(result: dict[str, Any], title: str) -> None:
    policies = result["policies"]
    print(
        f"\n== {title}: {result['pages']} pages, budget {result['budget']} per round, fixed age "
        f"{result['fixed_age_hours']:.1f} h, {result['rounds']} hourly rounds over "
        f"{result['days']:g} days ({result['seconds']:.1f} s)"
    )
    print(
        f"site change events in the week: {result['site_change_events']:,} (truth endpoint; "
        f"change_times: {result['change_times_events']:,}); requests to /changing/ counted by "
        f"the site {result['site_requests']:,}, sent {result['our_requests']:,}"
    )
    print_table(
        [
            "policy",
            "requests",
            "304s",
            "freshness",
            "vs fixed",
            "made",
            "recorded",
            "missed",
            "false",
        ],
        [
            [
                name,
                p["requests"],
                p["not_modified"],
                f"{p['freshness']:.3f}",
                f"{p['ratio_to_fixed']:.2f}x",
                p["changes_made"],
                p["changes_recorded"],
                p["missed"],
                p["false_reports"],
            ]
            for name, p in policies.items()
        ],
    )
    rows = []
    for cls in CLASSES:
        c = {name: p["classes"][cls] for name, p in policies.items()}
        if not c[FIXED]["pages"]:
            continue
        learned = c[LEARNED]
        rows.append(
            [
                cls,
                c[FIXED]["pages"],
                *(f"{c[name]['freshness']:.3f}" for name in POLICIES),
                *(c[name]["requests"] for name in POLICIES),
                f"{learned['mean_interval_hours']:.1f}",
                f"{learned['mean_estimated_rate_per_hour']:.3f}",
            ]
        )
    print_table(
        [
            "class",
            "pages",
            "fresh: fixed",
            "learned",
            "fill",
            "oracle",
            "requests: fixed",
            "learned",
            "fill",
            "oracle",
            "learned interval h",
            "est. changes/h",
        ],
        rows,
        title="per rate class (interval and estimated rate: the learned policy's, at the end)",
    )
    per_day = []
    for name, p in policies.items():
        series = dict(p["fresh_after_round"])
        marks = [h for h in range(24, result["rounds"] + 1, 24)]
        if result["rounds"] not in marks:
            marks.append(result["rounds"])
        per_day.append([name, *(f"{series[h]:.2f}" for h in marks)])
    print_table(
        ["share fresh after hour", *(str(h) for h in marks)],
        per_day,
    )
    for name in (LEARNED, FILL):
        ratio = policies[name]["ratio_to_fixed"]
        print(
            f"goal: {name} freshness / fixed = {ratio:.2f}x (>= {GOAL_RATIO}x): "
            f"{verdict(ratio >= GOAL_RATIO)}"
        )
    print(
        f"ceiling: every page fresh all week = 1 / fixed's freshness = "
        f"{result['ratio_ceiling']:.2f}x"
    )
    best = result["optimum"]
    fetches = ", ".join(f"{cls} {f:.2f}" for cls, f in best["fetches_per_day"].items())
    print(
        f"steady-state optimum (Cho & Garcia-Molina, analytic, {result['budget']} fetches/h): "
        f"mean freshness {best['freshness']:.3f}, uniform (B/N each) "
        f"{best['uniform_freshness']:.3f}, optimum / uniform = {best['ratio']:.2f}x; "
        f"optimal fetches per page per day: {fetches}"
    )
    print(f"goal at this mix's optimum: optimum/uniform = {best['ratio']:.2f}x")
    print(f"goal: every change recorded (no misses): {verdict(result['all_recorded'])}")
    print(f"goal: no change reported that did not happen: {verdict(result['no_false_reports'])}")
