"""`context.fetch`: a request an executor makes for its task, through the gate.

The request is a task's of its own: it gets the running task's trust (`run.task_session`), so a
URL read from a public page stays public whatever name it uses, and the task's `country` and
`verify_tls`; not its headers or cookies (those were for its own URL).
"""

from typing import Any

from scrapeflow_dagster.engine.gate.answer import Fetched, ResponseCallback
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.run.task_session import (
    current_task,
    task_is_intranet,
    trust_for_task,
)
from scrapeflow_dagster.engine.state.trust import TRUST

# Params of the running task a request made for it inherits.
_INHERITED = ("country", "verify_tls")


async def fetch_for_task(
    context: Context,
    url: str,
    *,
    method: str | None = None,
    headers: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
    json: Any = None,
    data: bytes | None = None,
    validate: ResponseCallback | None = None,
) -> Fetched:
    """Fetch `url` through the gate for the task whose step is running (`Context.fetch`).

    Raises:
        ScrapeError: as `gate.fetch.fetch`.
    """
    status = current_task.get()
    own = (status or {}).get("params") or {}
    guard = context.guard if context.guard is not None and context.guard.enabled else None
    intranet = await task_is_intranet(guard, status) if guard is not None else False
    params: dict[str, Any] = {"url": url, TRUST: trust_for_task(intranet)}
    params.update((name, own[name]) for name in _INHERITED if name in own)
    if headers is not None:
        params["headers"] = headers
    if cookies is not None:
        params["cookies"] = cookies
    if json is not None:
        params["post_payload"] = json
    return await fetch(context, params, method=method, data=data, validate=validate)
