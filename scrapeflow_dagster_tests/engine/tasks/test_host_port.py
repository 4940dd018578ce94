"""One spelling of `host:port` for an IPv6 host, bracketed, wherever a host is a unit: robots.txt's
origin, the origin discovery looks robots.txt up by, and the per-host slots."""

import pytest
from yarl import URL

from scrapeflow_dagster.engine.polite.gate import host_of
from scrapeflow_dagster.engine.polite.robots import origin_of
from scrapeflow_dagster.engine.tasks.keys import link_identity
from scrapeflow_dagster.engine.tasks.urls import host_port


@pytest.mark.parametrize(
    ("url", "spelled"),
    [
        ("http://[::1]:8080/a", "[::1]:8080"),
        ("https://[2001:db8::1]/", "[2001:db8::1]:443"),
        ("http://example.com/", "example.com:80"),
        ("http://127.0.0.1:81/", "127.0.0.1:81"),
    ],
)
def test_host_port_brackets_ipv6_and_every_unit_spells_it_so(url: str, spelled: str) -> None:
    parsed = URL(url)
    assert host_port(parsed) == host_of(parsed) == spelled
    assert origin_of(parsed) == link_identity(url).origin == f"{parsed.scheme}://{spelled}"
