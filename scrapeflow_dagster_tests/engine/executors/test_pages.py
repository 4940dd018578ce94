"""The `pages` executor decodes a page with its charset (header, meta or detected) before parsing.

Against the local site's `/charset/{name}` pages, fetched by `scrape` and parsed by `pages`.
"""

import random
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.executor import Executor, execute_async
from scrapeflow_dagster.engine.executors.pages import (
    DETECT_BYTES,
    collapsed_start,
    decode_html,
    pages,
    parse_html,
)
from scrapeflow_dagster.engine.scrape import scrape
from scrapeflow_dagster.engine.status import StatusData, load_status
from scrapeflow_dagster.site.content.charsets import CHARSET_PAGES, CYRILLIC_TEXT, CYRILLIC_TITLE
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.conftest import fast_settings

# The charset each page is decoded with: WHATWG (so browsers and Scrapy) read iso-8859-1 as
# windows-1252, which decodes every printable latin-1 character the same.
DECODED_AS = {
    "windows-1251": "windows-1251",
    "koi8-r": "koi8-r",
    "utf-8": "utf-8",
    "iso-8859-1": "windows-1252",
}
SOURCE_OF = {"header": "header", "meta": "meta", "http-equiv": "meta", "none": "detected"}


async def run_chain(directory: Path, url: str, executors: list[Executor]) -> StatusData:
    """Run `executors` for one task `t` fetching `url` and return its status."""
    await execute_async(executors, directory, {"t": {"url": url}}, settings=fast_settings())
    status = load_status(directory, "t")
    assert status is not None
    return status


@pytest.mark.parametrize("declared", list(SOURCE_OF))
@pytest.mark.parametrize("charset", list(CHARSET_PAGES))
async def test_title_and_text_come_out_right_in_every_charset(
    site: LocalSite, tmp_path: Path, charset: str, declared: str
) -> None:
    url = site.url(f"/charset/{charset}?declared={declared}")

    status = await run_chain(tmp_path, url, [scrape, pages])

    title, text = CHARSET_PAGES[charset]
    parsed = status["pages"]
    assert parsed["title"] == title
    assert parsed["text_start"] == f"{title} {text}"[:200]
    assert (parsed["charset"], parsed["charset_source"]) == (
        DECODED_AS[charset],
        SOURCE_OF[declared],
    )
    assert parsed["links"] == [site.url("/page/0")]


async def test_windows_1251_page_is_not_mojibake(site: LocalSite, tmp_path: Path) -> None:
    """The finding: the charset was ignored and a Cyrillic title came out as U+FFFD."""
    status = await run_chain(tmp_path, site.url("/charset/windows-1251"), [scrape, pages])

    assert status["scrape"]["response_headers"]["Content-Type"] == "text/html; charset=windows-1251"
    assert status["pages"]["title"] == CYRILLIC_TITLE
    assert "\ufffd" not in status["pages"]["text_start"]
    assert status["pages"]["charset"] == "windows-1251"
    # Body text of the Cyrillic page: two UTF-8 bytes a letter, not three for each U+FFFD.
    assert status["pages"]["text_bytes"] < 3 * len(CYRILLIC_TEXT)


async def test_site_page_is_utf8_from_its_header(site: LocalSite, tmp_path: Path) -> None:
    status = await run_chain(tmp_path, site.url("/page/5"), [scrape, pages])

    assert status["pages"]["title"] == "Page 5"
    assert (status["pages"]["charset"], status["pages"]["charset_source"]) == ("utf-8", "header")


RU = f"<html><head><title>{CYRILLIC_TITLE}</title></head><body><p>{CYRILLIC_TEXT}</p></body></html>"


@pytest.mark.parametrize(
    ("body", "content_type", "charset", "source"),
    [
        # The header wins over the meta, as in browsers.
        (
            RU.replace("<head>", '<head><meta charset="koi8-r">').encode("cp1251"),
            "text/html; charset=windows-1251",
            "windows-1251",
            "header",
        ),
        # Quoted, upper case, with other parameters.
        (RU.encode("koi8-r"), 'text/html; Charset="KOI8-R"; q=1', "koi8-r", "header"),
        # An unknown, a non-text and a non-ASCII-compatible label fall through to the meta.
        *(
            (
                RU.replace("<head>", "<head><meta charset=windows-1251>").encode("cp1251"),
                f"text/html; charset={label}",
                "windows-1251",
                "meta",
            )
            for label in ("x-unknown", "base64", "utf-16")
        ),
        # A byte order mark wins over everything.
        (b"\xef\xbb\xbf" + RU.encode(), "text/html; charset=windows-1251", "utf-8", "bom"),
        (b"\xff\xfe" + RU.encode("utf-16-le"), None, "utf-16-le", "bom"),
    ],
    ids=[
        "header-over-meta",
        "quoted-header",
        "unknown-label",
        "non-text-label",
        "utf16-label",
        "utf8-bom",
        "utf16-bom",
    ],
)
def test_charset_precedence(
    body: bytes, content_type: str | None, charset: str, source: str
) -> None:
    page = decode_html(body, content_type=content_type)

    assert (page.charset, page.source) == (charset, source)
    assert CYRILLIC_TITLE in page.text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        (
            "Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig; poszliśmy na kawę.",
            "cp1250",
        ),
        ("Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και μια από τις αρχαιότερες πόλεις.", "cp1253"),
        ("A educação é a arma mais poderosa. Não há nada como um pão quente de manhã.", "latin-1"),
        (
            "Perché la città è così bella? Lunedì andrò all'università, però non è facile.",
            "latin-1",
        ),
        ("Я могу есть стекло, оно мне не вредит. Широкая электрификация южных губерний.", "koi8-r"),
    ],
    ids=["polish-cp1250", "greek-cp1253", "portuguese-latin1", "italian-latin1", "russian-koi8r"],
)
def test_undeclared_charsets_are_detected(text: str, encoding: str) -> None:
    """Western text reads as windows-1252 (the detector alone took cp1250 and cp1258 for these),
    and text that windows-1252 cannot read keeps the detector's answer."""
    body = f"<html><head><title>T</title></head><body><p>{text}</p></body></html>".encode(encoding)

    page = decode_html(body)

    assert page.source == "detected"
    assert text in page.text


def test_detection_of_a_large_page_reads_a_bounded_sample() -> None:
    paragraph = f"<p>{CYRILLIC_TEXT}</p>\n"
    body = f"<html><body>{paragraph * (2 * DETECT_BYTES // len(paragraph))}</body></html>"

    page = decode_html(body.encode("cp1251"))

    assert (page.charset, page.source) == ("windows-1251", "detected")
    assert page.text == body


def test_ascii_and_binary_bodies_still_decode() -> None:
    assert decode_html(b"<html><title>Plain</title></html>")[1:] == ("utf-8", "detected")
    assert decode_html(b"")[1:] == ("utf-8", "detected")
    assert decode_html(bytes(range(256))).text  # whatever it is, it decodes


SPELLINGS = [
    # (href, base, resolved as a browser resolves it)
    (
        "Salt_%28cryptography%29",
        "http://h.test/wiki/",
        "http://h.test/wiki/Salt_%28cryptography%29",
    ),
    ("?time(3)", "http://h.test/p", "http://h.test/p?time(3)"),
    ("?q=is%3Aissue&b=2&a=1&a=0", "http://h.test/p", "http://h.test/p?q=is%3Aissue&b=2&a=1&a=0"),
    ("/a?x=%2F%3F", "http://h.test/p", "http://h.test/a?x=%2F%3F"),
    ("../up/./x#frag", "http://h.test/a/b/", "http://h.test/a/up/x"),
    ("//Other.TEST:80/q", "http://h.test/", "http://other.test/q"),
    ("https://h.test:443/a b", "http://h.test/", "https://h.test/a%20b"),
    ("http://bücher.test/ä", "http://h.test/", "http://xn--bcher-kva.test/%C3%A4"),
    ("/package/@types/node", "https://npm.test/", "https://npm.test/package/@types/node"),
    ("  /padded  ", "http://h.test/x", "http://h.test/padded"),
]


@pytest.mark.parametrize(("href", "base", "resolved"), SPELLINGS)
def test_links_are_resolved_as_a_browser_resolves_them(href: str, base: str, resolved: str) -> None:
    html = f'<html><body><a href="{href}">x</a></body></html>'.encode()
    assert parse_html(html, base)["links"] == [resolved]


def test_base_href_area_links_and_every_link_of_a_large_page_are_kept() -> None:
    many = "".join(f'<a href="n/{n}">{n}</a>' for n in range(10_000))
    html = (
        '<html><head><base href="/other/"></head><body>'
        '<a href="x">x</a><map><area href="y"></map><a href="#top">t</a><a href="">e</a>'
        '<a href="mailto:a@b.test">m</a><a href="javascript:void(0)">j</a>'
        f"{many}</body></html>"
    ).encode()

    parsed = parse_html(html, "http://h.test/dir/page")

    links = parsed["links"]
    assert links[:2] == ["http://h.test/other/x", "http://h.test/other/y"]
    assert len(links) == 2 + 10_000 == parsed["link_count"]
    assert links[-1] == "http://h.test/other/n/9999"


def test_the_text_start_is_the_start_of_the_whole_text_collapsed() -> None:
    # Texts of words and runs of white space (Unicode's too), long and short, cut anywhere.
    rnd = random.Random(7)
    spaces = [" ", "\n", "\t", "\u00a0", "\u2003", "   ", "\r\n", " " * 300]
    for _ in range(20_000):
        text = "".join(
            rnd.choice(spaces) if rnd.random() < 0.3 else rnd.choice("ab\u00e9")
            for _ in range(rnd.randint(0, 900))
        )
        for chars in (0, 1, 7, 200):
            assert collapsed_start(text, chars) == " ".join(text.split())[:chars], (text, chars)
