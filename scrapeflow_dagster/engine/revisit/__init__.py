"""Revisits that learn: whether a fetched page changed, what changed, and when to fetch it again.

`digest` reduces a page to the digest of its readable text with noise (dates, clock times,
view counters: a setting) left out, so a page whose markup or date line moved has not changed;
`rule` keeps each task's revisit interval (Nutch's AdaptiveFetchSchedule: longer when a fetch
finds the page unchanged, a 304 included, shorter when it changed, within bounds); `diff` says
what changed between two parses (text lines, title, links, extracted fields); `plan` picks the
due tasks a refresh fetches within a request budget per run and per host, those whose fetch buys
the most expected freshness first (Cho and Garcia-Molina's freshness of a Poisson page).

The `pages` step observes each new fetch once (`executors.revisits.observe_page`);
`scrapeflow refresh --due` and the refresh schedule plan from the status files. The modules
are imported by name: `engine.settings` takes `digest` and `rule`, which must not pull in
`plan` (it counts hosts as the politeness does, and politeness reads the settings).
"""
