"""Advisory regressions (see test_advisories.py): decompression bombs.

Scrapy CVE-2025-6176: a small gzip, deflate or br body inflated whole, far past any size
limit, before the limit was checked. Here a body of about 1 MiB on the wire that inflates to
1 GiB must fail with `BodyTooLargeError` at `max_body_bytes`, quickly, the process never
holding the inflated size. The sitemap reader's own gunzip (a `.xml.gz` file, no
Content-Encoding) is held to the same cap.
"""

import dataclasses
import functools
import resource
import struct
import time
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from scrapeflow_dagster.engine.crawl.sitemaps.reading import read_sitemaps
from scrapeflow_dagster.engine.errors import BodyTooLargeError, ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster_tests.engine.gate.sites import Site
from scrapeflow_dagster_tests.reliability.advisory_sites import one_try

MIB = 1 << 20
INFLATED_MIB = 1024  # 1 GiB once inflated
CAP_BYTES = 4 * MIB
# Far below the inflated size: what the process may grow by while refusing the body.
GROWTH_LIMIT_BYTES = 256 * MIB


@functools.cache
def raw_zeros() -> tuple[bytes, int, int]:
    """A raw deflate stream of `INFLATED_MIB` MiB of zeros (one full-flushed block, repeated:
    every block starts afresh, so the repeats are as valid as compressing it all), its CRC-32
    and Adler-32."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    zeros = bytes(MIB)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    crc, adler = 0, 1
    for _ in range(INFLATED_MIB):
        crc, adler = zlib.crc32(zeros, crc), zlib.adler32(zeros, adler)
    return block * INFLATED_MIB + b"\x03\x00", crc, adler  # an empty final block ends it


@functools.cache
def bomb(encoding: str) -> bytes:
    """The 1 GiB of zeros as a `gzip` or `deflate` (zlib) body."""
    raw, crc, adler = raw_zeros()
    if encoding == "gzip":
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        return header + raw + struct.pack("<II", crc, (INFLATED_MIB * MIB) & 0xFFFFFFFF)
    return b"\x78\xda" + raw + struct.pack(">I", adler)


def capped() -> ScrapeSettings:
    return dataclasses.replace(one_try(), max_body_bytes=CAP_BYTES)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


@pytest.fixture
async def bomb_site() -> AsyncIterator[Site]:
    """A site on loopback serving the bombs: `/gzip`, `/deflate` (Content-Length declared),
    `/gzip-chunked` (no Content-Length), `/br` and `/sitemap.xml.gz` (gzip file, no
    Content-Encoding)."""

    def declared(encoding: str, body: bytes) -> web.Response:
        return web.Response(
            body=body, headers={"Content-Type": "text/html", "Content-Encoding": encoding}
        )

    def chunked(site: Site, request: web.Request) -> web.StreamResponse:
        response = web.Response(
            body=bomb("gzip"), headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )
        response.enable_chunked_encoding()
        return response

    site = Site("127.0.0.1")
    site.routes["/gzip"] = lambda site, request: declared("gzip", bomb("gzip"))
    site.routes["/deflate"] = lambda site, request: declared("deflate", bomb("deflate"))
    site.routes["/gzip-chunked"] = chunked
    # Brotli's own bomb needs a brotli encoder; any br body shows whether one is inflated.
    site.routes["/br"] = lambda site, request: declared("br", b"\x1b\xff\xff" * 1000)
    site.routes["/sitemap.xml.gz"] = lambda site, request: web.Response(
        body=bomb("gzip"), content_type="application/octet-stream"
    )
    bomb("gzip"), bomb("deflate")  # built before any measurement
    await site.start()
    yield site
    await site.stop()


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/gzip-chunked"])
async def test_cve_2025_6176_decompression_bomb_fails_at_the_cap_without_inflating(
    path: str, bomb_site: Site, tmp_path: Path
) -> None:
    before, started = peak_rss_bytes(), time.monotonic()
    async with open_gate(tmp_path, capped()) as context:
        with pytest.raises(BodyTooLargeError) as raised:
            await fetch(context, {"url": f"{bomb_site.base}{path}"})
    seconds, grown = time.monotonic() - started, peak_rss_bytes() - before

    assert str(raised.value) == f"body is over the cap of {CAP_BYTES} bytes (as decoded)"
    assert raised.value.attempts == 1  # permanent: not asked again
    assert seconds < 10, f"{seconds:.1f} s"
    assert grown < GROWTH_LIMIT_BYTES, f"the process grew by {grown / MIB:.0f} MiB"


async def test_cve_2025_6176_brotli_body_is_never_inflated_past_the_cap(
    bomb_site: Site, tmp_path: Path
) -> None:
    """Without a brotli decoder installed aiohttp refuses the encoding; with one, the cap
    applies as for gzip. Either way no body past the cap comes back."""
    async with open_gate(tmp_path, capped()) as context:
        try:
            got = await fetch(context, {"url": f"{bomb_site.base}/br"})
        except ScrapeError as error:
            assert isinstance(error, BodyTooLargeError) or "content-encoding" in str(error), error
        else:
            assert len(got.body) <= CAP_BYTES


async def test_cve_2025_6176_gzipped_sitemap_bomb_is_refused_at_the_cap(
    bomb_site: Site, tmp_path: Path
) -> None:
    before, started = peak_rss_bytes(), time.monotonic()
    async with open_gate(tmp_path, capped()) as context:
        reading = await read_sitemaps(context, [f"{bomb_site.base}/sitemap.xml.gz"])
    seconds, grown = time.monotonic() - started, peak_rss_bytes() - before

    assert reading.pages == [] and reading.files == []
    assert reading.problems == [
        f"{bomb_site.base}/sitemap.xml.gz: gzip body is over the cap of {CAP_BYTES} bytes "
        "decompressed"
    ], reading.problems
    assert seconds < 10, f"{seconds:.1f} s"
    assert grown < GROWTH_LIMIT_BYTES, f"the process grew by {grown / MIB:.0f} MiB"
