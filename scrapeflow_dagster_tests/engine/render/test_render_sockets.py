"""What a rendered page opens by itself, outside requests the gate sees: WebRTC's UDP (STUN)
and TCP (TURN), a WebSocket, preconnects, DNS prefetches, prefetches and speculation rules. A
public page (served from a network namespace) aims them all at listeners on this machine's
loopback, and the listeners hear nothing.
"""

import asyncio
import contextlib
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.render import render
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.execute import execute_async
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401

CHAIN = [scrape, render, pages]
PORT = 8080
# The page: every door at once, then its network kept busy through the gate (a request every
# 100 ms for about 1.5 s) so that the page stays open while ICE gathers (STUN packets go out
# within milliseconds of `setLocalDescription`, measured: 5 without the WebRTC policy).
PAGE = """<!doctype html><title>Doors</title>
<link rel=preconnect href="http://127.0.0.1:{tcp}">
<link rel=dns-prefetch href="http://127.0.0.1:{tcp}">
<link rel=prefetch href="http://127.0.0.1:{tcp}/prefetched">
<script type=speculationrules>
{{"prefetch": [{{"source": "list", "urls": ["http://127.0.0.1:{tcp}/speculated"]}}]}}
</script>
<p id=out>webrtc:</p>
<script>
const out = document.getElementById('out');
const pc = new RTCPeerConnection({{iceServers: [
  {{urls: 'stun:127.0.0.1:{udp}'}},
  {{urls: 'turn:127.0.0.1:{tcp}?transport=tcp', username: 'u', credential: 'p'}},
]}});
pc.createDataChannel('probe');
const ws = new WebSocket('ws://127.0.0.1:{tcp}/socket');
ws.onerror = () => {{ out.textContent += ' ws-failed'; }};
pc.createOffer()
  .then(offer => pc.setLocalDescription(offer))
  .then(() => {{ out.textContent += ' offered'; }}, e => {{ out.textContent += ' ' + e; }});
let ticks = 0;
const tick = () => {{ if (ticks++ < 15) fetch('tick.txt').finally(() => setTimeout(tick, 100)); }};
tick();
</script>"""


@contextlib.contextmanager
def _listeners() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A UDP and a TCP socket on loopback (free ports), non-blocking: the kernel queues what
    reaches them (datagrams, completed connections) for `_heard` to count afterwards."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        udp.bind(("127.0.0.1", 0))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(16)
        for sock in (udp, tcp):
            sock.setblocking(False)
        yield udp, tcp
    finally:
        udp.close()
        tcp.close()


def _heard(udp: socket.socket, tcp: socket.socket) -> tuple[int, int]:
    """Datagrams and connections queued at the listeners."""
    datagrams = connections = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            udp.recvfrom(65536)
            datagrams += 1
    with contextlib.suppress(BlockingIOError):
        while True:
            tcp.accept()[0].close()
            connections += 1
    return datagrams, connections


def _serve_folder(host: PublicHost, folder: Path, log: Path) -> str:
    """`folder` served by Python's file server inside the namespace, once it answers; its URL."""
    command = [sys.executable, "-m", "http.server", str(PORT), "--bind", "0.0.0.0"]
    host.start([*command, "--directory", str(folder)], stderr=open(log, "w"))
    base = f"http://{host.address}:{PORT}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{base}/tick.txt", timeout=2):
                return base
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


async def test_a_public_pages_webrtc_and_preconnects_reach_nothing(
    public_host: PublicHost,  # noqa: F811
    tmp_path: Path,
) -> None:
    with _listeners() as (udp, tcp):
        folder = tmp_path / "site"
        folder.mkdir()
        ports = {"udp": udp.getsockname()[1], "tcp": tcp.getsockname()[1]}
        (folder / "index.html").write_text(PAGE.format(**ports))
        (folder / "tick.txt").write_text("tick")
        base = await asyncio.to_thread(_serve_folder, public_host, folder, tmp_path / "site.log")
        tasks = {"doors": {"url": f"{base}/index.html", "render": True}}

        assert await execute_async(CHAIN, tmp_path / "data", tasks) == ["doors"]
        await asyncio.sleep(0.5)  # what was sent as the page closed has arrived
        heard = _heard(udp, tcp)

    status = load_status(tmp_path / "data", "doors")
    assert status is not None
    # The page did gather: its offer was made and set (the WebRTC code ran, the door was tried).
    assert "offered" in status["pages"]["text_start"]
    assert "ws-failed" in status["pages"]["text_start"]  # the WebSocket was tried, and failed
    assert status["render"]["fetched"] >= 10  # the ticks, through the gate
    # The prefetch is a request like any other: the gate refused it (a public page, loopback).
    assert [r["url"] for r in status["render"]["refusals"]] == [
        f"http://127.0.0.1:{ports['tcp']}/prefetched"
    ]
    assert heard == (0, 0)
