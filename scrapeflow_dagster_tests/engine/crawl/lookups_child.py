"""A sitemap reading whose DNS lookups are counted, for `test_sitemap_public_doors.py`: run inside
a network namespace whose `resolv.conf` names 127.0.0.1 (`ip netns exec` mounts it), where this
process answers DNS itself.

`python -m scrapeflow_dagster_tests.engine.crawl.lookups_child ADDRESS NAMES CAP` serves, on
ADDRESS (the namespace's public address), `/pages.xml`: a urlset of one page of its own and one
page on each of NAMES names `h{i}.lookups.test` (other origins, never cross-submitted). It
answers every DNS query on 127.0.0.1:53 with NXDOMAIN, noting the name asked, then reads the
sitemap through the gate with `max_other_origins_per_reading` CAP, and prints one JSON line:
`names` (every name a DNS query asked, sorted), `skipped` (entries by outcome), `pages`.
"""

import asyncio
import dataclasses
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import cast

from scrapeflow_dagster.engine.crawl.sitemaps.reading import read_sitemaps
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.settings import SitemapSettings
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, text, urlset

DOMAIN = "lookups.test"
_NXDOMAIN_FLAGS = 0x8183  # a response, recursion desired and available, NXDOMAIN


def _question(packet: bytes) -> tuple[str, int]:
    """The name the query in `packet` asks, and where its question section ends."""
    labels, at = [], 12
    while packet[at]:
        length = packet[at]
        labels.append(packet[at + 1 : at + 1 + length].decode("ascii", "replace"))
        at += 1 + length
    return ".".join(labels).lower(), at + 5  # the zero byte, QTYPE and QCLASS


class NxDomain(asyncio.DatagramProtocol):
    """A DNS server that knows no name: every query answered NXDOMAIN, its name noted."""

    def __init__(self) -> None:
        self.asked: set[str] = set()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        name, end = _question(data)
        self.asked.add(name)
        header = data[:2] + _NXDOMAIN_FLAGS.to_bytes(2, "big") + (1).to_bytes(2, "big")
        assert self.transport is not None
        self.transport.sendto(header + bytes(6) + data[12:end], addr)


async def main(address: str, names: int, cap: int) -> None:
    loop = asyncio.get_running_loop()
    transport, dns = await loop.create_datagram_endpoint(NxDomain, local_addr=("127.0.0.1", 53))
    site = Site(address)
    await site.start()
    own = f"{site.base}/a"
    others = [f"http://h{i}.{DOMAIN}/p" for i in range(names)]
    site.routes["/robots.txt"] = text("")
    site.routes["/pages.xml"] = urlset(own, *others)
    given = fast_settings()
    settings = dataclasses.replace(
        given, sitemaps=SitemapSettings(max_other_origins_per_reading=cap)
    )
    try:
        with tempfile.TemporaryDirectory() as folder:
            async with open_gate(Path(folder), settings) as context:
                reading = await read_sitemaps(context, [f"{site.base}/pages.xml"])
    finally:
        await site.stop()
        transport.close()
    outcomes = Counter(skipped.outcome for skipped in reading.skipped)
    answer = {
        "names": sorted(dns.asked),
        "skipped": dict(outcomes),
        "pages": [page.url for page in reading.pages],
        "own": own,
    }
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
