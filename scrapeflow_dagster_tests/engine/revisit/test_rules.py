"""The revisit rule, the change digest, the diff and the budget, on their own (pure functions):
what the chain's tests (`test_changes.py`) and the refresh CLI's rely on."""

import math
import random
import re
from datetime import datetime, timedelta

import pytest

from scrapeflow_dagster.engine.revisit.diff import page_change, text_diff
from scrapeflow_dagster.engine.revisit.digest import (
    DEFAULT_NOISE,
    normalised,
    text_digest,
    without_noise,
)
from scrapeflow_dagster.engine.revisit.plan import (
    EARLY,
    LASTMOD,
    DueTask,
    change_rate,
    freshness_gain,
    host_of,
    plan_refresh,
)
from scrapeflow_dagster.engine.revisit.rule import Revisit, RevisitPolicy, observe
from scrapeflow_dagster.engine.settings import RevisitSettings

T0 = datetime(2026, 11, 1)


def test_the_digest_ignores_markup_spacing_dates_clock_times_and_counters() -> None:
    base = text_digest("Prices", "Blue widget $12.50\nServed Sun, 29 Nov 2026 12:34:56 GMT")
    assert base == text_digest(
        "Prices", "Blue  widget   $12.50 Served Mon, 30 Nov 2026 08:00:01 GMT"
    )
    assert text_digest("P", "Updated 2026-11-29 10:00:00, 1,234 views") == text_digest(
        "P", "Updated 2026-11-30 11:12:13, 1,240 views"
    )
    assert text_digest("P", "Nov 29, 2026 and 29 November 2026") == text_digest(
        "P", "Dec 1, 2026 and 1 December 2026"
    )
    # What a reader would call a change is one: a price, a word, the title.
    assert base != text_digest("Prices", "Blue widget $12.75\nServed Sun, 29 Nov 2026 12:34:56")
    assert base != text_digest("Prices", "Red widget $12.50\nServed Sun, 29 Nov 2026 12:34:56")
    assert base != text_digest("Sale", "Blue widget $12.50\nServed Sun, 29 Nov 2026 12:34:56 GMT")
    # A price next to a counter is not swallowed with it.
    assert text_digest("P", "$12.50 1,234 views") != text_digest("P", "$12.75 1,234 views")
    # The patterns are a setting: none, and the date counts.
    assert text_digest("P", "2026-11-29", ()) != text_digest("P", "2026-11-30", ())


def test_a_bad_ignore_pattern_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"change_ignore pattern '\(unclosed'"):
        RevisitSettings(change_ignore=("(unclosed",))


def test_the_interval_grows_when_unchanged_shrinks_when_changed_within_bounds() -> None:
    policy = RevisitPolicy(min_seconds=100, max_seconds=1000, initial_seconds=500)
    state = observe(None, changed=False, fetched_at=T0, policy=policy)
    assert (state.interval_seconds, state.due_at) == (500, T0 + timedelta(seconds=500))
    assert state.changed is None and state.fetches == 1
    later = T0 + timedelta(seconds=500)
    grown = observe(state, changed=False, fetched_at=later, policy=policy)
    assert grown.interval_seconds == pytest.approx(700) and grown.changed is False
    assert (grown.fetches, grown.changes, grown.observed_seconds) == (2, 0, 500)
    capped = observe(grown, changed=False, fetched_at=later + timedelta(hours=1), policy=policy)
    assert capped.interval_seconds == pytest.approx(980)
    top = observe(capped, changed=False, fetched_at=later + timedelta(hours=2), policy=policy)
    assert top.interval_seconds == 1000
    shrunk = observe(grown, changed=True, fetched_at=later + timedelta(seconds=700), policy=policy)
    assert shrunk.interval_seconds == pytest.approx(560) and shrunk.changes == 1
    assert shrunk.last_changed_at == later + timedelta(seconds=700)
    floor = shrunk
    for step in range(1, 20):
        floor = observe(
            floor, changed=True, fetched_at=later + timedelta(hours=step), policy=policy
        )
    assert floor.interval_seconds == 100
    # The same fetch parsed again is not a second observation.
    assert observe(shrunk, changed=True, fetched_at=shrunk.observed_at, policy=policy) is shrunk
    # The state reads back from the output it is stored as.
    assert Revisit.from_output(shrunk.as_output()) == shrunk


def test_a_task_s_params_set_its_own_bounds_and_bad_ones_are_named() -> None:
    policy = RevisitPolicy().for_params({"revisit_min_seconds": "5", "revisit_initial_seconds": 9})
    assert (policy.min_seconds, policy.initial_seconds) == (5, 9)
    with pytest.raises(ValueError, match="revisit_max_seconds must be a positive number"):
        RevisitPolicy().for_params({"revisit_max_seconds": "soon"})
    with pytest.raises(ValueError, match=r"revisit_min_seconds \(10\) must not be more than"):
        RevisitPolicy().for_params({"revisit_min_seconds": 10, "revisit_max_seconds": 5})
    # One bound of a task's own wins over the settings' other: never a policy that cannot be.
    short = RevisitPolicy(min_seconds=60).for_params({"revisit_max_seconds": 30})
    assert (short.min_seconds, short.max_seconds) == (30, 30)
    long = RevisitPolicy(max_seconds=3600).for_params({"revisit_min_seconds": 7200})
    assert (long.min_seconds, long.max_seconds) == (7200, 7200)


def test_the_change_rate_estimate_follows_what_the_fetches_saw() -> None:
    never = Revisit(T0, 3600, fetches=11, changes=0, observed_seconds=36000)
    always = Revisit(T0, 3600, fetches=11, changes=10, observed_seconds=36000)
    half = Revisit(T0, 3600, fetches=11, changes=5, observed_seconds=36000)
    # Never seen changing: a small rate, not none (the prior: it may yet change).
    assert 0 < change_rate(never) < change_rate(half) / 10
    assert change_rate(always) > change_rate(half) > 0
    # Half the hourly fetches changed: about ln 2 changes per hour (a Poisson page).
    assert change_rate(half) * 3600 == pytest.approx(math.log(2), rel=0.01)


def test_a_fetch_is_worth_most_for_pages_changing_about_as_often_as_they_are_fetched() -> None:
    day = 86400.0
    age = horizon = day
    never, daily, every_minute = (freshness_gain(r, age, horizon) for r in (0, 1 / day, 1 / 60))
    assert never == 0 and daily > every_minute > 0
    assert freshness_gain(1 / day, 0, horizon) == 0  # fetched just now: nothing to gain


def _due(key: str, host: str, gain: float, reason: str = "learned") -> DueTask:
    return DueTask(key, host, T0, T0, 1.0, gain, reason)


def test_the_budget_takes_the_best_fetches_and_caps_each_host() -> None:
    due = [
        _due("a1", "a", 5),
        _due("a2", "a", 4),
        _due("a3", "a", 3),
        _due("b1", "b", 2),
        _due("b2", "b", 1),
        _due("c1", "c", 0, LASTMOD),
    ]
    assert [t.key for t in plan_refresh(due)] == ["c1", "a1", "a2", "a3", "b1", "b2"]
    assert [t.key for t in plan_refresh(due, budget=3)] == ["c1", "a1", "a2"]
    assert [t.key for t in plan_refresh(due, budget=4, host_budget=1)] == ["c1", "a1", "b1"]
    # Candidates not yet due take a budget's spare requests only when they buy freshness.
    early = [_due("e1", "e", 3.5, EARLY), _due("e2", "e", 0, EARLY)]
    assert [t.key for t in plan_refresh(due + early, budget=4)] == ["c1", "a1", "a2", "e1"]
    assert [t.key for t in plan_refresh(early, budget=4)] == ["e1"]
    with pytest.raises(ValueError, match="the host budget must be"):
        plan_refresh(due, host_budget=-1)


def test_the_diff_names_lines_title_links_and_fields() -> None:
    before = {
        "title": "Shop",
        "links": ["http://s/a", "http://s/b"],
        "extracted": {"fields": {"price": 12.5, "name": "Lamp"}},
    }
    after = {
        "title": "Shop (sale)",
        "links": ["http://s/b", "http://s/c"],
        "extracted": {"fields": {"price": 9.99, "name": "Lamp"}},
    }
    change = page_change(
        before,
        after,
        text_before="Lamp\nWas 12.50\nServed 2026-11-29 10:00\nSame line",
        text_after="Lamp\nNow 9.99\nServed 2026-11-30 11:00\nSame line",
    )
    assert change["title"] == {"before": "Shop", "after": "Shop (sale)"}
    assert (change["links_added"], change["links_removed"]) == (["http://s/c"], ["http://s/a"])
    assert (change["text_added"], change["text_removed"]) == (["Now 9.99"], ["Was 12.50"])
    assert change["fields"] == {"price": {"before": 12.5, "after": 9.99}}
    unknown = page_change(before, after, text_before=None, text_after="x")
    assert unknown["text_added"] is None and unknown["text_added_count"] is None
    assert (
        page_change({"title": "x"}, {"title": "x"}, text_before="", text_after="")["fields"] is None
    )
    added, _, count, _ = text_diff("", "\n".join(f"line {n}" for n in range(150)))
    assert len(added) == 100 and count == 150


def test_looking_for_noise_only_near_digits_finds_what_looking_everywhere_finds() -> None:
    rng = random.Random(45)
    pieces = [
        "Served Sun, 29 Nov 2026 12:34:56 GMT", "2026-11-29T10:00:00Z", "29 November 2026",
        "Nov 29, 2026", "10:30 pm", "1,234 views", "word", "x2026-11-29", "12:5", "price 12.50",
        "Mon,", "views", "  ", "\n", "a" * 70, "Dec 1,", "2026", "7 visits", "ab12:34cd",
    ]  # fmt: skip
    pattern = re.compile("|".join(f"(?:{p})" for p in DEFAULT_NOISE))
    spaces = [" ", "  ", "\n", " \n\t  ", "\n" + " " * 12]
    for _ in range(500):
        text = "".join(rng.choice(pieces) + rng.choice(spaces) for _ in range(rng.randint(0, 40)))
        everywhere = " ".join(pattern.sub(" ", " ".join(text.split())).split())
        assert normalised(text) == everywhere, text
        # The digest's own cut keeps the text's whitespace, and finds the same noise.
        assert " ".join(without_noise(text).split()) == everywhere, text


def test_a_host_is_its_name_and_port_without_credentials() -> None:
    assert host_of("https://user:token@Example.COM:8443/a?b=1") == "example.com:8443"
    # An IPv6 host bracketed, as the host slots and robots.txt's origin spell it (unbracketed,
    # its colons read as a port: issue 59's review).
    assert host_of("http://[::1]:8080/") == "[::1]:8080"
    assert (host_of("not a url"), host_of(None)) == ("", "")
