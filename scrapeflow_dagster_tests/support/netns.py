"""A test host with a public address: a network namespace joined to this machine by a veth
pair, its side holding a global address (11.x.y.2, DoD space no test ever leaves the machine
through: the route exists only on the veth). Processes run inside with `ip netns exec`.

`public_host` (fixture) skips without root or `ip netns`, saying so, unless
`SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where that is a failure.
"""

import asyncio
import contextlib
import os
import queue
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class PublicHost:
    """The namespace `name`, reachable from here at `address`; this machine is `outside` to
    it (the veth's other end)."""

    name: str
    address: str
    outside: str
    processes: list[subprocess.Popen[str]] = field(default_factory=list)

    def start(self, command: Sequence[str], **popen: object) -> subprocess.Popen[str]:
        """Start `command` inside the namespace (stopped when the fixture ends)."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.name, *command],
            text=True,
            **popen,  # type: ignore[call-overload]
        )
        self.processes.append(proc)
        return proc


@contextlib.contextmanager
def forwarded(listen_host: str, target_port: int) -> Iterator[int]:
    """A TCP forwarder on `listen_host` (a free port, yielded) to 127.0.0.1:`target_port`, so
    a service that listens on loopback only (the machine's Postgres, Redis) is reachable from
    a namespace, over the veth, as from another machine."""
    loop = asyncio.new_event_loop()
    ready: queue.Queue[int] = queue.Queue()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def serve() -> None:
        server = await asyncio.start_server(handle, listen_host, 0)
        ready.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    async def shutdown() -> None:
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop)
    try:
        yield ready.get(timeout=10)
    finally:
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    return None


@pytest.fixture
def public_host() -> Iterator[PublicHost]:
    """A namespace with a public address, torn down after the test."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_SERVICES_ENV}=1)")
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:6]
    name, outside, inside = f"sfpub-{tag}", f"sfo{tag}", f"sfi{tag}"
    subnet = f"11.{int(tag[:2], 16)}.{int(tag[2:4], 16)}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("addr", "add", f"{subnet}.1/24", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", name, "addr", "add", f"{subnet}.2/24", "dev", inside)
        _ip("-n", name, "link", "set", inside, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        host = PublicHost(name, f"{subnet}.2", f"{subnet}.1")
        try:
            yield host
        finally:
            for proc in host.processes:
                proc.terminate()
            for proc in host.processes:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
