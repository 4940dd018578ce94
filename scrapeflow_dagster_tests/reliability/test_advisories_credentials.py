"""Advisory regressions (see test_advisories.py): a task's credentials after a redirect.

Scrapy CVE-2024-1968: the Authorization header was kept on a redirect to another scheme or
port of the same host. Here the task's own headers (`params["headers"]`) and cookies
(`params["cookies"]`) must reach its own origin only (or its http->https upgrade on the default
ports), and a proxy's credentials the proxy only. The servers are real aiohttp sites on
loopback (https with a throwaway self-signed certificate) that record every request's headers.
"""

import base64
import ssl
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from scrapeflow_dagster.engine.gate.fetch import Fetched, fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster.engine.proxies import ProxyProviderFromList
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy
from scrapeflow_dagster_tests.reliability.advisory_sites import one_try

TOKEN = "Bearer task-secret-token"
COOKIE_VALUE = "session-secret-cookie"
Answer = Callable[[web.Request], web.StreamResponse]


@dataclass
class Seen:
    """One request a `Recorder` got."""

    host: str
    path: str
    headers: dict[str, str]


@dataclass
class Recorder:
    """A real aiohttp site on 127.0.0.1 (https with `certificate`) whose routes a test sets,
    recording each request's Host, path and headers."""

    certificate: tuple[Path, Path] | None = None
    routes: dict[str, Answer] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"{'https' if self.certificate else 'http'}://127.0.0.1:{self.port}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(Seen(request.host, request.path, dict(request.headers)))
        answer = self.routes.get(request.path)
        return answer(request) if answer else web.Response(status=404)

    async def __aenter__(self) -> "Recorder":
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        context = None
        if self.certificate is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*self.certificate)
        await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def pages(self) -> list[Seen]:
        """The requests besides robots.txt."""
        return [seen for seen in self.seen if seen.path != "/robots.txt"]


def moved(location: str) -> Answer:
    return lambda request: web.Response(status=302, headers={"Location": location})


def page(request: web.Request) -> web.Response:
    return web.Response(text="landed", content_type="text/html")


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def credentials_params(url: str, **extra: Any) -> dict[str, Any]:
    """A task for `url` carrying an Authorization header and a cookie."""
    return {
        "url": url,
        "headers": {"Authorization": TOKEN},
        "cookies": {"session": COOKIE_VALUE},
        **extra,
    }


def carries_credentials(seen: Seen) -> bool:
    """Whether a request carried the task's Authorization header or cookie, in any header."""
    return any(TOKEN in value or COOKIE_VALUE in value for value in seen.headers.values())


async def fetch_once(folder: Path, params: dict[str, Any], **gate: Any) -> Fetched:
    async with open_gate(folder, one_try(), **gate) as context:
        return await fetch(context, params)


async def test_cve_2024_1968_authorization_dropped_on_scheme_change(tmp_path: Path) -> None:
    async with (
        Recorder(certificate=self_signed(tmp_path)) as secure,
        Recorder() as plain,
    ):
        plain.routes["/landing"] = page
        secure.routes["/start"] = moved(f"{plain.base}/landing")
        params = credentials_params(f"{secure.base}/start", verify_tls=False)
        got = await fetch_once(tmp_path / "gate", params)

    assert (got.status, got.final_url) == (200, f"{plain.base}/landing")
    # The first request, to the task's own origin, carried them (the control) ...
    assert [(s.path, carries_credentials(s)) for s in secure.pages()] == [("/start", True)]
    # ... the hop from https to http did not.
    assert [(s.path, carries_credentials(s)) for s in plain.pages()] == [("/landing", False)]
    assert "Authorization" not in plain.pages()[0].headers
    assert "Cookie" not in plain.pages()[0].headers


async def test_cve_2024_1968_authorization_dropped_on_port_change(tmp_path: Path) -> None:
    async with Recorder() as first, Recorder() as other_port:
        other_port.routes["/landing"] = page
        first.routes["/start"] = moved(f"{other_port.base}/landing")
        got = await fetch_once(tmp_path, credentials_params(f"{first.base}/start"))

    assert (got.status, got.final_url) == (200, f"{other_port.base}/landing")
    assert [(s.path, carries_credentials(s)) for s in first.pages()] == [("/start", True)]
    assert [(s.path, carries_credentials(s)) for s in other_port.pages()] == [("/landing", False)]


async def test_cve_2024_1968_authorization_dropped_on_host_change(tmp_path: Path) -> None:
    """The same server under another name (127.0.0.1 -> localhost, same port): another host."""
    async with Recorder() as site:
        site.routes["/landing"] = page
        site.routes["/start"] = moved(f"http://localhost:{site.port}/landing")
        got = await fetch_once(tmp_path, credentials_params(f"{site.base}/start"))

    assert got.status == 200
    assert [(s.host, s.path, carries_credentials(s)) for s in site.pages()] == [
        (f"127.0.0.1:{site.port}", "/start", True),
        (f"localhost:{site.port}", "/landing", False),
    ]


async def test_cve_2024_1968_authorization_kept_on_a_same_origin_redirect(
    tmp_path: Path,
) -> None:
    """The control: a redirect within the task's origin keeps them (the test above would see
    them if they were sent)."""
    async with Recorder() as site:
        site.routes["/landing"] = page
        site.routes["/start"] = moved("/landing")
        got = await fetch_once(tmp_path, credentials_params(f"{site.base}/start"))

    assert got.status == 200
    assert [(s.path, carries_credentials(s)) for s in site.pages()] == [
        ("/start", True),
        ("/landing", True),
    ]
    assert site.pages()[1].headers["Authorization"] == TOKEN


async def test_cve_2024_1968_proxy_authorization_goes_to_the_proxy_only(tmp_path: Path) -> None:
    user, password = "proxy-user", "proxy-secret-password"
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    async with (
        ForwardProxy(username=user, password=password) as proxy,
        Recorder() as first,
        Recorder() as other_port,
    ):
        other_port.routes["/landing"] = page
        first.routes["/start"] = moved(f"{other_port.base}/landing")
        provider = ProxyProviderFromList([proxy.url])
        got = await fetch_once(tmp_path, {"url": f"{first.base}/start"}, proxy_provider=provider)

    assert (got.status, got.final_url) == (200, f"{other_port.base}/landing")
    # The proxy demands the credentials (407 otherwise): it got them, and forwarded every
    # request the targets saw.
    targets = first.seen + other_port.seen
    assert sorted(proxy.forwarded) == sorted(
        f"http://{seen.host}{seen.path}" for seen in targets
    ), proxy.forwarded
    for seen in targets:
        assert "Proxy-Authorization" not in seen.headers, seen
        assert not any(encoded in value or password in value for value in seen.headers.values()), (
            seen
        )
