"""`/widget-captcha` (a normal page carrying a captcha widget) and `/blocked/{kind}` pages."""

import aiohttp
import pytest

from scrapeflow_dagster.site.content.bot_checks import BLOCK_PAGES, WIDGET_PAGE_TITLE, WIDGETS
from scrapeflow_dagster.site.server import LocalSite


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[int, str, str]:
    async with session.get(url) as response:
        return response.status, response.content_type, await response.text()


@pytest.mark.parametrize(
    ("query", "script", "div"),
    [
        ("", "https://www.google.com/recaptcha/api.js", 'class="g-recaptcha"'),
        ("?widget=recaptcha", "https://www.google.com/recaptcha/api.js", 'class="g-recaptcha"'),
        ("?widget=hcaptcha", "https://js.hcaptcha.com/1/api.js", 'class="h-captcha"'),
        (
            "?widget=turnstile",
            "https://challenges.cloudflare.com/turnstile/v0/api.js",
            'class="cf-turnstile"',
        ),
    ],
)
async def test_widget_page_loads_the_widget_script_and_has_its_div(
    site: LocalSite, session: aiohttp.ClientSession, query: str, script: str, div: str
) -> None:
    status, content_type, html = await fetch(session, site.url(f"/widget-captcha{query}"))

    assert (status, content_type) == (200, "text/html")
    assert f'<script src="{script}"' in html
    assert div in html
    assert f"<title>{WIDGET_PAGE_TITLE}</title>" in html
    assert '<a href="/page/0">' in html


def test_every_widget_is_tested() -> None:
    assert set(WIDGETS) == {"recaptcha", "hcaptcha", "turnstile"}


@pytest.mark.parametrize("kind", list(BLOCK_PAGES))
async def test_block_page_answers_200(
    site: LocalSite, session: aiohttp.ClientSession, kind: str
) -> None:
    status, content_type, html = await fetch(session, site.url(f"/blocked/{kind}"))

    assert (status, content_type) == (200, "text/html")
    assert html == BLOCK_PAGES[kind]


async def test_google_block_page_carries_a_recaptcha_widget(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    _, _, html = await fetch(session, site.url("/blocked/unusual-traffic"))

    assert 'class="g-recaptcha"' in html and "unusual traffic" in html


async def test_unknown_widget_or_block_page_is_404_naming_the_known_ones(
    site: LocalSite, session: aiohttp.ClientSession
) -> None:
    widget = await fetch(session, site.url("/widget-captcha?widget=funcaptcha"))
    block = await fetch(session, site.url("/blocked/nope"))

    assert widget == (404, "text/plain", "widgets: recaptcha, hcaptcha, turnstile")
    assert block[:2] == (404, "text/plain")
    assert all(kind in block[2] for kind in BLOCK_PAGES)
