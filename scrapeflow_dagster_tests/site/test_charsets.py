"""`/charset/{name}`: a page encoded in `name`, its charset named where `?declared=` says."""

import aiohttp
import pytest

from scrapeflow_dagster.site.content.charsets import CHARSET_PAGES, DECLARED_IN, charset_body
from scrapeflow_dagster.site.server import LocalSite


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[int, str, bytes]:
    async with session.get(url) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.read()


@pytest.mark.parametrize("charset", list(CHARSET_PAGES))
async def test_page_is_encoded_in_its_charset(
    site: LocalSite, session: aiohttp.ClientSession, charset: str
) -> None:
    status, content_type, body = await fetch(session, site.url(f"/charset/{charset}"))

    title, text = CHARSET_PAGES[charset]
    assert (status, content_type) == (200, f"text/html; charset={charset}")
    assert body == charset_body(charset, "header")
    decoded = body.decode(charset)
    assert f"<title>{title}</title>" in decoded and text in decoded
    if charset != "utf-8":
        with pytest.raises(UnicodeDecodeError):
            body.decode("utf-8")


@pytest.mark.parametrize(
    ("declared", "content_type", "meta"),
    [
        ("header", "text/html; charset=koi8-r", None),
        ("meta", "text/html", b'<meta charset="koi8-r">'),
        (
            "http-equiv",
            "text/html",
            b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">',
        ),
        ("none", "text/html", None),
    ],
)
async def test_charset_is_declared_where_asked(
    site: LocalSite,
    session: aiohttp.ClientSession,
    declared: str,
    content_type: str,
    meta: bytes | None,
) -> None:
    url = site.url(f"/charset/koi8-r?declared={declared}")

    status, served_type, body = await fetch(session, url)

    assert (status, served_type) == (200, content_type)
    assert (b"<meta" in body) == (meta is not None)
    assert meta is None or meta in body
    assert body == charset_body("koi8-r", declared)


def test_every_declaration_is_tested() -> None:
    assert DECLARED_IN == ("header", "meta", "http-equiv", "none")


@pytest.mark.parametrize("path", ["/charset/shift_jis", "/charset/utf-8?declared=bom"])
async def test_unknown_charset_or_declaration_is_404(
    site: LocalSite, session: aiohttp.ClientSession, path: str
) -> None:
    status, _, body = await fetch(session, site.url(path))

    assert status == 404
    assert b"windows-1251" in body and b"http-equiv" in body
