"""Redirect hops that pass through a public server, with a real public host (the bundled site
in a network namespace at a global address): an intranet task's robots.txt redirected out to
it is not let back inside by its redirect, as the task's own redirects are not (the page path
is shown by `cli/test_address_guard.py`)."""

from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest

from scrapeflow_dagster.engine.errors import ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.opening import open_gate
from scrapeflow_dagster_tests.conftest import fast_settings
from scrapeflow_dagster_tests.engine.gate.sites import Site, redirect, text
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401


async def test_an_intranet_robots_txt_sent_out_is_not_let_back_inside(
    public_host: PublicHost,  # noqa: F811
    tmp_path: Path,
) -> None:
    public = public_host.serve_site(tmp_path / "site.log")
    intranet = Site("127.0.0.1")
    await intranet.start()
    try:
        secret = f"{intranet.base}/secret"
        intranet.routes["/robots.txt"] = redirect(f"{public}/hostile/r/to?url={quote(secret)}")
        intranet.routes["/secret"] = text("User-agent: *\nDisallow:\n")
        intranet.routes["/page"] = text("intranet page")
        async with open_gate(tmp_path, fast_settings()) as context:
            with pytest.raises(ScrapeError, match="robots.txt redirect to .*loopback"):
                await fetch(context, {"url": f"{intranet.base}/page"})
    finally:
        await intranet.stop()
    host = f"127.0.0.1:{intranet.port}"
    assert intranet.seen == Counter({(host, "/robots.txt"): 1})
