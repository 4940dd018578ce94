"""A task's extraction: its selector set (the `extract` param) run on its decoded page.

`pages` runs it on every page it parses (one decode, one step: no event more per task); the
`extract` executor runs it as a step of its own. Either way the output holds `extracted`
(`Extraction.as_output`) and the run's ledger makes it a row of the `extracted` table.
"""

from typing import Any

from scrapeflow_dagster.engine.errors import ExtractionError
from scrapeflow_dagster.engine.extract import (
    EXTRACT_PARAM,
    SelectorSetError,
    load_selector_set,
)
from scrapeflow_dagster.engine.extract import extract as run_selectors
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.state.schema import StatusData


def extraction_of(
    context: Context, status: StatusData, html: str, base_url: str
) -> dict[str, Any] | None:
    """The task's extraction from its decoded page (`Extraction.as_output`); None when the task
    names no selector set or its set's `urls` do not match the task's URL.

    Raises:
        ExtractionError: naming the set and fields: the set is missing or invalid, or a
            required field matched nothing (its message lists every missing field).
    """
    params = status.get("params") or {}
    name = params.get(EXTRACT_PARAM)
    if not name:
        return None
    try:
        selector_set = load_selector_set(context.dir, name)
    except SelectorSetError as exc:
        raise ExtractionError(str(exc)) from None
    if not selector_set.applies_to(params.get("url") or ""):
        return None
    extraction = run_selectors(html, base_url, selector_set)
    required = [f.name for f in selector_set.fields if f.required and f.name in extraction.missing]
    if required:
        raise ExtractionError(
            f"selector set {name!r}: required field(s) {', '.join(required)} matched nothing "
            f"(missing: {', '.join(extraction.missing)})"
        )
    return extraction.as_output(name)
