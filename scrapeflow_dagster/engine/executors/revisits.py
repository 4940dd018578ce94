"""What `pages` records about each new fetch of a page: its change digest, whether the page
changed since the fetch before (a 304 says unchanged; else the digests differ), the task's
learned revisit state (`engine.revisit.rule`), and, when it changed, what changed
(`engine.revisit.diff`), its text lines diffed against the body kept from the fetch before.

A parse of a fetch already observed (a `pages` run again over the same body) records the same
state again: one fetch is one observation.
"""

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from scrapeflow_dagster.engine.executors.page_text import readable_text
from scrapeflow_dagster.engine.executors.stored_body import read_previous
from scrapeflow_dagster.engine.revisit.diff import page_change
from scrapeflow_dagster.engine.revisit.digest import digest_basis, text_digest
from scrapeflow_dagster.engine.revisit.rule import Revisit, observe
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.state.schema import StatusData, learned_of, parse_stamp, stamp

# Elements whose text a reader never sees.
_UNSEEN = ["script", "style", "noscript", "template"]


def page_digest(tree: LexborHTMLParser, title: str | None, noise: tuple[str, ...]) -> str:
    """The change digest of a parsed page (its tree is changed: unseen elements removed)."""
    tree.strip_tags(_UNSEEN)
    text = tree.body.text(separator=" ") if tree.body is not None else ""
    return text_digest(title, text, noise)


def observe_page(
    context: Context,
    key: str,
    status: StatusData,
    parsed: Mapping[str, Any],
    *,
    body: bytes,
    html: str | None,
    digest: str,
    rendered: bool,
    decode: Callable[[bytes], str],
) -> dict[str, Any]:
    """The fields `pages` adds for this fetch: `text_digest`, `body_md5`, `revisit`, and
    `change` when the page changed since the fetch before.

    Args:
        parsed: this parse's output (`title`, `links`, `extracted`).
        body: the bytes parsed; html: them decoded (None for a file that is not a page).
        digest: their change digest (`page_digest`).
        rendered: whether they are the rendered DOM rather than the fetched body.
        decode: how the previous body is decoded (as this one was).
    """
    settings = context.settings.revisit
    scraped = status.get("scrape") or {}
    fetched_at = parse_stamp(parsed.get("fetched_at"))
    # The fetched body's md5 is `scrape`'s own (`content`); a rendered DOM's is taken here.
    known_md5 = None if rendered else scraped.get("content")
    fields: dict[str, Any] = {
        "text_digest": digest,
        "body_md5": known_md5 if isinstance(known_md5, str) else hashlib.md5(body).hexdigest(),
    }
    if fetched_at is None:
        return fields  # not fetched by the shipped `scrape`: nothing to learn from
    # The last successful parse, or what a failure since kept of it.
    previous = learned_of(status, "pages")
    state = Revisit.from_output(previous.get("revisit"))
    if state is not None and fetched_at <= state.observed_at:
        # This fetch was observed already: the same state, and the same change if it had one.
        fields["revisit"] = state.as_output()
        if previous.get("change") is not None and state.changed:
            fields["change"] = previous["change"]
        return fields
    known_digest = previous.get("text_digest")
    if state is None or not isinstance(known_digest, str):
        changed = False  # a first observation tells nothing about change
        state = None
    else:
        # The same bytes as the last parse (a 304, or an identical body) are no change, even
        # when the digest's settings changed since; other bytes are judged by their digest,
        # unless it is of another basis than the last (`change_digest` changed since).
        changed = (
            fields["body_md5"] != previous.get("body_md5")
            and known_digest != digest
            and digest_basis(known_digest) == digest_basis(digest)
        )
    policy = settings.policy.for_params(status.get("params") or {})
    after = observe(state, changed=changed, fetched_at=fetched_at, policy=policy)
    fields["revisit"] = after.as_output()
    if changed and state is not None:
        text_before = (
            _previous_text(context, key, previous, rendered=rendered, decode=decode)
            if html is not None
            else None
        )
        change = page_change(
            previous,
            parsed,
            text_before=text_before,
            text_after=readable_text(html) if text_before is not None and html else None,
            noise=settings.change_ignore,
        )
        fields["change"] = {
            "detected_at": stamp(fetched_at),
            "previous_fetched_at": stamp(state.observed_at),
            "digest_before": known_digest,
            "digest_after": digest,
            **change,
        }
    return fields


def _previous_text(
    context: Context,
    key: str,
    previous: Mapping[str, Any],
    *,
    rendered: bool,
    decode: Callable[[bytes], str],
) -> str | None:
    """The readable text of the body the previous parse read, when it is still kept (the
    `revisit_bodies_kept` setting) and is that body (its md5 matches); else None."""
    body = read_previous(context, key, rendered=rendered)
    if body is None or hashlib.md5(body).hexdigest() != previous.get("body_md5"):
        return None
    return readable_text(decode(body))
