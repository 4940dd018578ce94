"""Test hosts with public addresses: network namespaces joined to this machine by veth pairs,
their side holding a global address (11.x.y.n, DoD space no test ever leaves the machine
through: the route exists only on the veth or the bridge). Processes run inside with
`ip netns exec`.

`public_host` (fixture): one such host, reached from this machine over its own veth.
`lan(names)`: several hosts on one bridge, as machines on one network: each reaches the others
and this machine (the bridge's address) by address, none through loopback.

Both skip without root or `ip netns`, saying so, unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI),
where that is a failure.
"""

import asyncio
import contextlib
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
            self.exec_prefix() + list(command),
            text=True,
            **popen,  # type: ignore[call-overload]
        )
        self.processes.append(proc)
        return proc

    def serve_site(self, log: Path, *, port: int = 8080, pages: int = 10) -> str:
        """Serve the bundled site inside the namespace on `port` (its output to `log`), once it
        answers; its base URL as this machine reaches it."""
        script = (
            "from scrapeflow_dagster.site.server import run_site_forever\n"
            f"run_site_forever('0.0.0.0', {port}, pages={pages}, "
            "on_ready=lambda url: print(url, flush=True))\n"
        )
        self.start([sys.executable, "-c", script], stdout=open(log, "w"))
        base = f"http://{self.address}:{port}"

        def answers() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                    return bool(response.status == 200)
            except OSError:
                return False

        deadline = time.monotonic() + 30
        while not answers():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the bundled site in {self.name} did not answer at {base}")
            time.sleep(0.2)
        return base

    def exec_prefix(self) -> list[str]:
        """The command prefix that runs a program inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def pids(self) -> set[int]:
        """Every process running inside the namespace now (none once it is gone)."""
        done = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True)
        return {int(pid) for pid in done.stdout.split()}

    def lose(self) -> int:
        """SIGKILL every process inside the namespace (the host is gone, power cut), again
        while any is left (one may have forked meanwhile); returns how many there were."""
        killed: set[int] = set()
        for _attempt in range(100):
            found = self.pids()
            if not found:
                break
            for pid in found:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed |= found
            time.sleep(0.05)  # until they are gone from the namespace
        return len(killed)

    def stop_processes(self) -> None:
        """Stop what `start` started: SIGTERM, SIGKILL after 10 s."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


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


def require_namespaces() -> None:
    """Skip the test when namespaces cannot be made here (fail it under
    `SCRAPEFLOW_REQUIRE_SERVICES=1`)."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_SERVICES_ENV}=1)")
        pytest.skip(reason)


def _subnet(tag: str) -> str:
    return f"11.{int(tag[:2], 16)}.{int(tag[2:4], 16)}"


@contextlib.contextmanager
def lan(names: Sequence[str]) -> Iterator[dict[str, PublicHost]]:
    """Hosts `names` on one bridge (a switch): the n-th at `<subnet>.<n + 2>`, this machine at
    `<subnet>.1` (each host's `outside`). Yields them by name; every process started in them is
    stopped and the namespaces, veths and bridge removed afterwards, whatever happened.

    Skips (fails under `SCRAPEFLOW_REQUIRE_SERVICES=1`) when namespaces cannot be made.
    """
    require_namespaces()
    tag = uuid.uuid4().hex[:6]
    subnet, bridge = _subnet(tag), f"sfbr{tag}"
    hosts: dict[str, PublicHost] = {}
    links: list[str] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for n, name in enumerate(names):
            space, outside, inside = f"sflan-{tag}-{n}", f"sfo{tag}{n}", f"sfi{tag}{n}"
            _ip("netns", "add", space)
            hosts[name] = PublicHost(space, f"{subnet}.{n + 2}", f"{subnet}.1")
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            links.append(outside)
            _ip("link", "set", inside, "netns", space)
            _ip("link", "set", outside, "master", bridge)
            _ip("link", "set", outside, "up")
            _ip("-n", space, "addr", "add", f"{subnet}.{n + 2}/24", "dev", inside)
            _ip("-n", space, "link", "set", inside, "up")
            _ip("-n", space, "link", "set", "lo", "up")
        yield hosts
    finally:
        for host in hosts.values():
            try:
                host.lose()  # whatever a test started there by other means
                host.stop_processes()
            except Exception:  # the removals below must still happen
                logging.getLogger(__name__).exception("stopping the processes of %s", host.name)
        for link in links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for host in hosts.values():
            subprocess.run(["ip", "netns", "del", host.name], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


@pytest.fixture
def public_host() -> Iterator[PublicHost]:
    """A namespace with a public address, torn down after the test."""
    require_namespaces()
    tag = uuid.uuid4().hex[:6]
    name, outside, inside = f"sfpub-{tag}", f"sfo{tag}", f"sfi{tag}"
    subnet = _subnet(tag)
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
            host.stop_processes()
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
