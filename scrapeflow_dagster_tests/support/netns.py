"""A test host with a public address: a network namespace joined to this machine by a veth
pair, its side holding a global address (11.x.y.2, DoD space no test ever leaves the machine
through: the route exists only on the veth). Processes run inside with `ip netns exec`.

`public_host` (fixture) skips without root or `ip netns`, saying so, unless
`SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where that is a failure.
"""

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class PublicHost:
    """The namespace `name`, reachable from here at `address`."""

    name: str
    address: str
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
        host = PublicHost(name, f"{subnet}.2")
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
