"""The `validation` executor: block pages fail, pages that merely carry a captcha widget pass.

Against the local site's `/captcha`, `/blocked/{kind}` and `/widget-captcha` pages, then
`check_page` on bodies written here.
"""

import re
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.errors import BlockedError
from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.validation import (
    BLOCK_PHRASE_PATTERNS,
    check_page,
    validation,
)
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.site.content.bot_checks import BLOCK_PAGES, WIDGET_PAGE_TITLE, WIDGETS
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.executors.test_pages import run_chain

CHAIN = [scrape, validation, pages]
FILLER = "<p>" + "Our shop sells shoes, boots and sandals in every size. " * 3 + "</p>"


@pytest.mark.parametrize("widget", list(WIDGETS))
async def test_page_with_a_captcha_widget_passes(
    site: LocalSite, tmp_path: Path, widget: str
) -> None:
    """The finding: "captcha" matched inside "recaptcha" (and `captcha_token`, `h-captcha`)."""
    status = await run_chain(tmp_path, site.url(f"/widget-captcha?widget={widget}"), CHAIN)

    assert status["validation_status"] == "SUCCESS"
    assert status["validation"]["verdict"] == "ok"
    assert status["pages"]["title"] == WIDGET_PAGE_TITLE


# What validation reports for each block page of the site.
FOUND_ON = {
    "/captcha": "verify you are a human",
    "/blocked/access-denied": "access denied",
    "/blocked/unusual-traffic": "unusual traffic",  # it has a reCAPTCHA widget too
    "/blocked/verify-human": "verify you are human",
    "/blocked/cloudflare-blocked": "you have been blocked",
}


def test_every_block_page_of_the_site_is_checked() -> None:
    assert {f"/blocked/{kind}" for kind in BLOCK_PAGES} == {
        path for path in FOUND_ON if path.startswith("/blocked/")
    }


@pytest.mark.parametrize(("path", "found"), list(FOUND_ON.items()))
async def test_block_pages_fail_and_stop_the_chain(
    site: LocalSite, tmp_path: Path, path: str, found: str
) -> None:
    status = await run_chain(tmp_path, site.url(path), CHAIN)

    assert status["scrape_status"] == "SUCCESS"
    assert status["validation_status"] == f"ERROR BlockedError::block page: found {found!r}"
    assert status["validation_error_kind"] == "blocked"
    assert "pages_status" not in status


def page(head: str = "", body: str = "") -> bytes:
    """A page big enough to pass the size check, with `head` and `body` added."""
    return (
        f"<html><head><title>Shoes</title>{head}</head><body>{body}{FILLER}</body></html>".encode()
    )


@pytest.mark.parametrize(
    "body",
    [
        page('<script src="https://www.google.com/recaptcha/api.js" async defer></script>'),
        page(body='<div class="g-recaptcha" data-sitekey="k"></div>'),
        page(body='<div class="h-captcha" data-sitekey="k"></div>'),
        page('<script src="https://challenges.cloudflare.com/turnstile/v0/api.js"></script>'),
        page(body="<p>This site is protected by reCAPTCHA and hCaptcha.</p>"),
        page(body='<input type="hidden" name="captcha" value="">'),
        page(body='<a href="/help/access-denied">Help</a><img alt="Access denied icon">'),
        page("<script>if (unusualTraffic) { alert('access denied'); }</script>"),
        page("<style>.captcha, .access-denied { display: none }</style>"),
        page(body="<!-- verify you are human: disabled --><p>Welcome</p>"),
        page(body="<p>Unusualtraffic and accessdenied are not words.</p>"),
    ],
    ids=[
        "recaptcha-script",
        "g-recaptcha-div",
        "h-captcha-div",
        "turnstile-script",
        "recaptcha-in-text",
        "captcha-attribute",
        "phrase-in-url-and-alt",
        "phrase-in-script",
        "words-in-style",
        "phrase-in-comment",
        "not-whole-words",
    ],
)
def test_check_page_lets_normal_pages_through(body: bytes) -> None:
    check_page(body)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html>tiny</html>",
        page(body="<h1>Access Denied</h1>"),
        page(body="<p>Our systems have detected unusual traffic from your network.</p>"),
        page(body="<p>Please verify you are human.</p>"),
        page(body="<p>Please verify that you are a human</p>"),
        page(body="<p>Sorry, we just need to make sure you're not a robot.</p>"),
        page(body="<p>Access <b>denied</b></p>"),
        page(body="<p>unusual\n   traffic</p>"),
        page().replace(b"<title>Shoes", b"<title>Captcha"),
        page().replace(b"<title>Shoes", b"<title>Attention Required! | Cloudflare"),
        page().replace(b"<title>Shoes", b"<title>Just a moment..."),
    ],
    ids=[
        "empty",
        "tiny",
        "access-denied",
        "unusual-traffic",
        "verify-human",
        "verify-that-a-human",
        "not-a-robot",
        "across-a-tag",
        "across-a-line-break",
        "captcha-title",
        "cloudflare-title",
        "challenge-title",
    ],
)
def test_check_page_rejects_tiny_and_block_pages(body: bytes) -> None:
    with pytest.raises(BlockedError):
        check_page(body)


def test_only_a_bounded_prefix_is_scanned() -> None:
    padding = "<p>" + "shoes " * 20_000 + "</p>"

    check_page(page(body=padding + "<p>Access denied</p>"))
    with pytest.raises(BlockedError):
        check_page(page(body="<p>Access denied</p>" + padding))


@pytest.mark.parametrize(
    "said",
    [
        "Access Denied",
        "We have detected unusual traffic from your network",
        "Verify that you are a human",
        "verify you are human",
        "Are you a robot?",
        "are you human",
        "I am not a robot",
        "Sorry, you have been blocked",
        "Checking if the site connection is secure",
        "Checking your browser before accessing",
    ],
)
def test_every_form_of_every_block_phrase_is_found_past_the_quick_test(said: str) -> None:
    # The search runs only on pages holding one of BLOCK_PHRASE_WORDS: each form of each
    # phrase (its optional words and alternatives) must hold one, or it would pass unseen.
    assert {pattern for pattern in BLOCK_PHRASE_PATTERNS if re.search(pattern, said.lower())}
    with pytest.raises(BlockedError, match="block page: found"):
        check_page(page(body=f"<p>{said}</p>"))
