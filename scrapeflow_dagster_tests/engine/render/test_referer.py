"""The Referer a rendered page's requests carry through the gate: the page is rendered at its
real URL, which may hold the task's credentials, so another site sees the page's origin alone
(the browsers' default policy, whatever policy the page sets)."""

import pytest

from scrapeflow_dagster.engine.render.routing import referer_for

PAGE = "https://shop.example/list?token=s3cret&page=2"


@pytest.mark.parametrize(
    ("url", "sent"),
    [
        ("https://shop.example/api/items", PAGE),  # its own origin: whole
        ("https://cdn.example/app.js", "https://shop.example/"),  # another: the origin alone
        ("https://shop.example:8443/x", "https://shop.example/"),  # another port: another origin
        ("http://shop.example/x", None),  # https to http: none
        ("http://tracker.example/p", None),
    ],
)
def test_another_origin_never_sees_the_pages_whole_url(url: str, sent: str | None) -> None:
    assert referer_for(PAGE, url) == sent


def test_a_referer_that_is_no_url_is_dropped() -> None:
    assert referer_for("about:blank", "https://shop.example/") is None
