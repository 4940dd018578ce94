"""The `validation` executor: reject block and captcha pages that answered 200.

A block page is known by what it tells a person: phrases of its title and visible text, matched
as whole words. Scripts, styles, comments and tags (with their URLs and class names) are cut out
first, so a page that merely carries a captcha widget (reCAPTCHA's `api.js` and `g-recaptcha`,
hCaptcha's `h-captcha`, Cloudflare Turnstile) passes. Only the first `_SCAN_BYTES` are read:
block pages are short, and it keeps the check cheap on large pages. The markers are ASCII, so
any ASCII-compatible charset is read as is.
"""

import re

from scrapeflow_dagster.engine.errors import BlockedError
from scrapeflow_dagster.engine.executors.stored_body import read_body
from scrapeflow_dagster.engine.run.context import (
    Context,
    ExecutorOutput,
    reads_stored_only,
    taskify,
)
from scrapeflow_dagster.engine.state.schema import StatusData

_SCAN_BYTES = 64 * 1024
# An unclosed script or comment runs to the end of the scanned bytes, as in a browser.
_HIDDEN = re.compile(rb"<(script|style|template)\b.*?(?:</\1\s*>|\Z)|<!--.*?(?:-->|\Z)", re.DOTALL)
# `[^<>]` rather than `[^>]`: a stray '<' ends the attempt there, so the scan stays linear.
_TAG = re.compile(rb"<[^<>]*>")
_TITLE = re.compile(rb"<title\b[^>]*>([^<]*)")


def _whole_words(*phrases: str) -> re.Pattern[bytes]:
    """One pattern for lowercase `phrases` (regexes), each a whole word or words; a space in a
    phrase matches any run of whitespace, such as a line break or a tag cut out."""
    alternatives = "|".join(phrase.replace(" ", r"\s+") for phrase in phrases)
    return re.compile(rf"\b(?:{alternatives})\b".encode())


# What block pages say: Google's "unusual traffic", Akamai's "Access Denied", Cloudflare's
# "Sorry, you have been blocked" and "Verify you are human", PerimeterX, Amazon's "not a robot".
BLOCK_PHRASE_PATTERNS = (
    "access denied",
    "unusual traffic",
    "verify (?:that )?you are (?:a )?human",
    "are you (?:a )?(?:human|robot)",
    "not a robot",
    "you have been blocked",
    "checking (?:if the site connection is secure|your browser)",
)
BLOCK_PHRASES = _whole_words(*BLOCK_PHRASE_PATTERNS)
# Every phrase holds one of these words as written: a page holding none of them cannot match,
# and is passed without the search, which tries every position of the text (225 us of a
# 20 KB page's 271 us; the six `in` tests take ~70 us together).
BLOCK_PHRASE_WORDS = (b"denied", b"traffic", b"human", b"robot", b"blocked", b"checking")
# Words of a block page's title that normal pages only use in their text ("protected by
# reCAPTCHA", "solve the captcha below").
BLOCK_TITLE_WORDS = _whole_words("captcha", "attention required", "just a moment")


def check_page(body: bytes, *, min_bytes: int = 64) -> None:
    """Raise `BlockedError` for an empty, tiny, captcha or block page.

    Args:
        body: the page as fetched.
        min_bytes: smaller bodies are rejected whatever they say.

    Raises:
        BlockedError: naming the size or the phrase found.
    """
    if len(body) < min_bytes:
        raise BlockedError(f"page is only {len(body)} bytes")
    # Lowercased once: patterns without IGNORECASE run about twice as fast.
    shown = _HIDDEN.sub(b" ", body[:_SCAN_BYTES].lower())
    text = _TAG.sub(b" ", shown)
    match = BLOCK_PHRASES.search(text) if _may_say_blocked(text) else None
    if match:
        raise BlockedError(f"block page: found {_readable(match.group())!r}")
    title = _TITLE.search(shown)
    match = BLOCK_TITLE_WORDS.search(title.group(1)) if title else None
    if match:
        raise BlockedError(f"block page: found {_readable(match.group())!r} in the title")


def _may_say_blocked(text: bytes) -> bool:
    return any(word in text for word in BLOCK_PHRASE_WORDS)


def _readable(found: bytes) -> str:
    return " ".join(found.decode(errors="replace").split())


@reads_stored_only
@taskify
async def validation(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Reject block and captcha pages that answered 200 (a failed validation is a block)."""
    body = read_body(context, key)
    check_page(body)
    return {"checked_bytes": min(len(body), _SCAN_BYTES), "verdict": "ok"}
