"""Secrets and the limits of what is fetched.

Proxy passwords and a proxy service's API key are used for real (a forward proxy that demands
Basic auth, a Webshare fake that demands its key), then everything the runs wrote is searched:
the data folder, every DuckDB table, Dagster's storage (event log, runs, job snapshots, compute
logs), Python logging, stdout/stderr and exception texts. Also: only http(s) is fetched, a body
over the cap is cut, and TLS is verified unless turned off for a resource or a task.
"""

import logging
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from aiohttp import web

from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.status import write_status
from scrapeflow_dagster.engine.tasks.intake import LineError, build_task
from scrapeflow_dagster.lib.partitions import TASKS_PARTITIONS_NAME
from scrapeflow_dagster.lib.resources import ProxyProviderResource, proxy_resource_from_env
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource
from scrapeflow_dagster.site.app import build_site
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.fakes import proxy_services as fake_services
from scrapeflow_dagster_tests.fakes.forward_proxy import ForwardProxy, closed_port_url
from scrapeflow_dagster_tests.fakes.proxy_services import FakeProxyServices
from scrapeflow_dagster_tests.reliability.conftest import Homes
from scrapeflow_dagster_tests.reliability.helpers import (
    BackgroundLoop,
    error_class,
    read_all_statuses,
    scrape_range,
)
from scrapeflow_dagster_tests.support.ledger import current_state, query
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import store_and_add

PROXY_USER, PROXY_PASSWORD = "u53r", "s3cr3t-pw-XYZ"
BAD_PROXY_CREDENTIALS = "bad:s3cr3t-bad-XYZ"
WEBSHARE_KEY = "wskey-SECRET-123"
NEEDLES = ("s3cr3t", "wskey-SECRET")
FAST = {"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05, "request_timeout_seconds": 5.0}


@pytest.fixture
def loop() -> Iterator[BackgroundLoop]:
    with BackgroundLoop() as running:
        yield running


@pytest.fixture
def site() -> Iterator[SiteThread]:
    with SiteThread(pages=100, page_bytes=2000) as running:
        yield running


@pytest.fixture
def forward_proxy(loop: BackgroundLoop) -> Iterator[ForwardProxy]:
    """A real forward proxy demanding Basic auth `u53r:s3cr3t-pw-XYZ`."""
    proxy = ForwardProxy(username=PROXY_USER, password=PROXY_PASSWORD)
    loop.run(proxy.start())
    try:
        yield proxy
    finally:
        loop.run(proxy.close())


@pytest.fixture
def webshare(
    loop: BackgroundLoop, forward_proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeProxyServices]:
    """The Webshare fake with our key, listing the live proxy and a dead one (both with creds)."""
    dead_user, dead_password = BAD_PROXY_CREDENTIALS.split(":")
    dead_port = int(closed_port_url().rsplit(":", 1)[1])
    listed = [
        {
            "username": user,
            "password": password,
            "proxy_address": "127.0.0.1",
            "port": port,
            "country_code": "US",
            "valid": True,
        }
        for user, password, port in (
            (PROXY_USER, PROXY_PASSWORD, forward_proxy.port),
            (dead_user, dead_password, dead_port),
        )
    ]
    monkeypatch.setattr(fake_services, "WEBSHARE_KEY", WEBSHARE_KEY)
    monkeypatch.setattr(fake_services, "WEBSHARE_PROXIES", listed)
    services = FakeProxyServices()
    loop.run(services.start())
    try:
        yield services
    finally:
        loop.run(services.close())


def everything_written(
    homes: Homes, instance: dg.DagsterInstance, caplog: pytest.LogCaptureFixture, capfd: Any
) -> dict[str, str]:
    """Where -> text of every place a secret could have gone."""
    places: dict[str, str] = {}
    for root in (homes.data_dir, homes.dagster_home):
        for path in root.rglob("*"):
            if path.is_file():
                places[str(path)] = path.read_bytes().decode("latin-1")
    conn = duckdb.connect(str(homes.layout.db_path), read_only=True)
    try:
        tables = [
            row[0] for row in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        ]
        for table in tables:
            rows = conn.execute(f"SELECT * FROM {table}").fetchall()
            places[f"duckdb:{table}"] = "\n".join(" | ".join(map(str, row)) for row in rows)
    finally:
        conn.close()
    assert {"tasks", "step_runs"} <= set(tables)
    for run in instance.get_runs():
        places[f"run:{run.run_id}"] = dg.serialize_value(run)
        snapshot = instance.get_job_snapshot(run.job_snapshot_id) if run.job_snapshot_id else None
        places[f"job snapshot:{run.run_id}"] = dg.serialize_value(snapshot)
        for n, entry in enumerate(instance.all_logs(run.run_id)):
            places[f"event:{run.run_id}:{n}"] = dg.serialize_value(entry) + str(entry)
    places["python logging"] = caplog.text
    captured = capfd.readouterr()
    places["stdout"], places["stderr"] = captured.out, captured.err
    return places


def assert_no_secret(places: dict[str, str]) -> None:
    leaks = [
        (where, needle) for where, text in places.items() for needle in NEEDLES if needle in text
    ]
    assert not leaks, leaks[:10]


def test_no_secret_reaches_files_duckdb_dagster_logs_or_errors(
    site: SiteThread,
    forward_proxy: ForwardProxy,
    webshare: FakeProxyServices,
    homes: Homes,
    instance: dg.DagsterInstance,
    caplog: pytest.LogCaptureFixture,
    capfd: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    good = forward_proxy.url
    assert PROXY_PASSWORD in good
    dead = f"http://{BAD_PROXY_CREDENTIALS}@127.0.0.1:{closed_port_url().rsplit(':', 1)[1]}"
    wrong = f"http://{PROXY_USER}:s3cr3t-wrong-XYZ@127.0.0.1:{forward_proxy.port}"
    rows = [(f"page-{n:02d}", site.url(f"/page/{n}")) for n in range(20)]
    rows += [("gone", site.url("/status/404")), ("down", site.url("/status/503"))]
    rows += [("echo", site.url("/echo?token=abc"))]
    keys = store_and_add(homes.layout, instance, rows)
    errors: list[str] = []

    def scrape(proxy: ProxyProviderResource, first: str, last: str) -> dg.ExecuteInProcessResult:
        """A forced `scrape` run through `proxy`; its error texts go to `errors`."""
        result = run_assets(
            instance,
            run_resources(homes.data_dir, proxy=proxy, **FAST),
            ["scrape"],
            range_tags(first, last),
            run_config={"ops": {"executor_chain": {"config": {"force": True}}}},
        )
        found = [e.step_failure_data.error for e in result.get_step_failure_events()]
        errors.extend(error.to_string() for error in found if error is not None)
        return result

    # As in production: the list comes from $SCRAPEFLOW_PROXY_URLS, the key from $WEBSHARE_API_KEY.
    monkeypatch.setenv("SCRAPEFLOW_PROXY_KIND", "list")
    monkeypatch.setenv("SCRAPEFLOW_PROXY_URLS", f"{good} {dead} {wrong}")
    monkeypatch.setenv("WEBSHARE_API_KEY", WEBSHARE_KEY)
    scrape(proxy_resource_from_env(), keys[0], keys[-1])
    # Only an unauthorised and a dead proxy: the task fails as a proxy error after 1 + 3 tries.
    monkeypatch.setenv("SCRAPEFLOW_PROXY_URLS", f"{wrong} {dead}")
    only_bad = scrape(proxy_resource_from_env(), "page-00", "page-00")
    assert not only_bad.success
    # Webshare: the key from the environment, the proxies (with passwords) from the service.
    via_webshare = ProxyProviderResource(
        kind="webshare", api_key=dg.EnvVar("WEBSHARE_API_KEY"), base_url=webshare.base_url
    )
    scrape(via_webshare, keys[0], keys[-1])
    # A wrong key: the service refuses it and the run fails as a whole, saying why.
    monkeypatch.setenv("WEBSHARE_API_KEY", "wskey-SECRET-wrong")
    refused = scrape(via_webshare, "page-00", "page-00")
    (refusal,) = refused.get_step_failure_events()
    assert refusal.step_failure_data.error is not None
    cause = refusal.step_failure_data.error.cause
    assert cause is not None and cause.cls_name == "ProxyServiceError"
    assert "HTTP 401" in cause.message

    # The secrets were really used: requests went through the authenticated proxy, the
    # service was asked with the key, and proxy failures were recorded (host:port only).
    assert len(forward_proxy.forwarded) >= 2 * 20
    assert webshare.requests
    statuses = read_all_statuses(homes.layout.status_dir)
    proxy_failures = query(
        homes.layout.db_path,
        "SELECT status, error_class, error_kind, attempts, proxy_host, message FROM step_runs "
        "WHERE run_id = ?",
        [only_bad.run_id],
    )
    ((*outcome, host, message),) = proxy_failures
    assert outcome == ["ERROR", "ProxyError", "proxy", 4]
    assert host == dead.rsplit("@", 1)[1] and "127.0.0.1" in message
    assert statuses["page-05"]["scrape_status"] == "SUCCESS"
    assert statuses["page-05"]["scrape"]["proxy"] == f"127.0.0.1:{forward_proxy.port}"
    assert error_class(statuses["gone"]["scrape_status"]) == "HttpStatusError"

    places = everything_written(homes, instance, caplog, capfd)
    places["exceptions"] = "\n".join(errors)
    assert_no_secret(places)


def test_only_http_urls_are_fetched(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance
) -> None:
    refused = build_task({"key": "passwd", "url": "file:///etc/passwd"}, Path("t.csv"), 2)
    assert isinstance(refused, LineError) and "only http and https" in refused.message
    marker = homes.root / "local.txt"
    marker.write_text("LOCAL-FILE-CONTENT-7f3a\n")
    layout = homes.layout.ensure()
    # Forced into status files by hand, past the intake's checks.
    forced = {"passwd": "file:///etc/passwd", "local": marker.as_uri(), "ftp": "ftp://127.0.0.1/x"}
    for key, url in forced.items():
        write_status(layout.status_dir, key, {"name": key, "params": {"url": url}})
    instance.add_dynamic_partitions(TASKS_PARTITIONS_NAME, list(forced))
    keys = [*forced, *store_and_add(layout, instance, [("web", site.url("/page/1"))])]

    result = scrape_range(instance, homes.data_dir, "passwd", "web")

    assert not result.success
    statuses = read_all_statuses(layout.status_dir)
    for key in forced:
        assert statuses[key]["scrape_status"].startswith("ERROR ScrapeError::"), key
        assert "only http and https" in statuses[key]["scrape_status"]
        assert statuses[key]["scrape_error_kind"] == "permanent"
        assert not (layout.status_dir / f"{key}.scrape").exists()
    assert statuses["web"]["scrape_status"] == "SUCCESS"
    state = current_state(layout.db_path, "scrape")
    assert {k: state[k]["error_kind"] for k in forced} == dict.fromkeys(forced, "permanent")
    written = b"".join(p.read_bytes() for p in homes.data_dir.rglob("*") if p.is_file())
    assert b"LOCAL-FILE-CONTENT" not in written and b"root:x:0:0" not in written
    assert sorted(keys) == sorted(statuses)


def test_a_body_over_the_cap_is_cut(
    site: SiteThread, homes: Homes, instance: dg.DagsterInstance
) -> None:
    keys = store_and_add(
        homes.layout,
        instance,
        [("small", site.url("/big/90000")), ("big", site.url("/big/5000000"))],
    )

    result = scrape_range(instance, homes.data_dir, keys[0], keys[-1], max_body_bytes=100_000)

    assert not result.success
    statuses = read_all_statuses(homes.layout.status_dir)
    assert statuses["small"]["scrape"]["size"] == 90_000
    assert statuses["big"]["scrape_status"].startswith("ERROR BodyTooLargeError::")
    assert statuses["big"]["scrape_error_kind"] == "permanent"
    assert statuses["big"]["scrape_attempts"] == 1  # not retried
    assert not (homes.layout.status_dir / "big.scrape").exists()


@pytest.fixture
def https_site(loop: BackgroundLoop, work_dir: Path) -> Iterator[str]:
    """The bundled site over HTTPS with a self-signed certificate made for this test."""
    cert, key = work_dir / "cert.pem", work_dir / "key.pem"
    make_self_signed(cert, key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def start() -> web.AppRunner:
        runner = web.AppRunner(build_site(pages=10, page_bytes=2000))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        return runner

    runner = loop.run(start())
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        loop.run(runner.cleanup())


def make_self_signed(cert: Path, key: Path) -> None:
    """A self-signed certificate for 127.0.0.1, made with `openssl` (`cryptography` is not a
    dependency of this project)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a self-signed certificate")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )


def test_tls_is_verified_unless_turned_off_per_resource_or_task(
    https_site: str, homes: Homes, instance: dg.DagsterInstance
) -> None:
    assert ScrapeSettings().verify_tls and ScrapeSettingsResource().verify_tls
    keys = store_and_add(
        homes.layout,
        instance,
        [
            {"key": "tls-checked", "url": f"{https_site}/page/1"},
            {"key": "tls-trusted", "url": f"{https_site}/page/2", "verify_tls": "false"},
        ],
    )

    checked = scrape_range(instance, homes.data_dir, keys[0], keys[-1], **FAST)

    assert not checked.success
    statuses = read_all_statuses(homes.layout.status_dir)
    assert statuses["tls-checked"]["scrape_status"].startswith("ERROR ")
    assert "certificate verify failed" in statuses["tls-checked"]["scrape_status"].lower()
    assert not (homes.layout.status_dir / "tls-checked.scrape").exists()
    assert statuses["tls-trusted"]["scrape_status"] == "SUCCESS"  # off for this task

    unchecked = run_assets(
        instance,
        run_resources(homes.data_dir, verify_tls=False, **FAST),
        ["scrape"],
        range_tags(keys[0], keys[-1]),
    )

    assert unchecked.success
    statuses = read_all_statuses(homes.layout.status_dir)
    assert statuses["tls-checked"]["scrape_status"] == "SUCCESS"  # off for the resource
