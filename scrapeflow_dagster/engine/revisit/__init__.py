"""Revisits that learn: whether a fetched page changed, what changed, and when to fetch it again.

`digest` reduces a page to the digest of its readable text with noise (dates, clock times,
view counters: a setting) left out, so a page whose markup or date line moved has not changed;
`rule` keeps each task's revisit interval (Nutch's AdaptiveFetchSchedule: longer when a fetch
finds the page unchanged, a 304 included, shorter when it changed, within bounds); `diff` says
what changed between two parses (text lines, title, links, extracted fields); `plan` picks the
due tasks a refresh fetches within a request budget per run and per host, those whose fetch buys
the most expected freshness first (Cho and Garcia-Molina's freshness of a Poisson page).

The `pages` step observes each new fetch once (`observe.observe_fetch`); `scrapeflow refresh
--due` and the refresh schedule plan from the status files.
"""

from scrapeflow_dagster.engine.revisit.digest import DEFAULT_NOISE, text_digest
from scrapeflow_dagster.engine.revisit.plan import DueTask, plan_refresh
from scrapeflow_dagster.engine.revisit.rule import Revisit, RevisitPolicy

__all__ = [
    "DEFAULT_NOISE",
    "DueTask",
    "Revisit",
    "RevisitPolicy",
    "plan_refresh",
    "text_digest",
]
