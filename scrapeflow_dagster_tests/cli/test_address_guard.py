"""The address guard, with a real public host: the bundled site in a network namespace at a
global address, and an "internal" site on this machine's loopback. Through the real `scrapeflow
tasks add` and `dagster asset materialize`: a public task redirected to a loopback literal, to a
name that resolves to loopback, or to the cloud metadata address is refused (nothing reaches
the internal site); a task whose own URL is internal (an intranet list) is fetched; an allowed
network lets the refused one through."""

import json
import urllib.request
from pathlib import Path
from urllib.parse import quote

from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import Run, add_through_the_cli
from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401

PORT = 8080
ALLOW_LOOPBACK = {
    "resources": {"scrape_settings": {"config": {"address_guard_allow": ["127.0.0.0/8"]}}}
}


def requested(site: SiteThread) -> dict[str, int]:
    with urllib.request.urlopen(site.url("/control/requests"), timeout=10) as response:
        return json.load(response)["paths"]


def test_public_tasks_never_reach_internal_addresses_and_intranet_tasks_do(
    public_host: PublicHost,  # noqa: F811
    run_command: Run,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    public = public_host.serve_site(tmp_path / "site.log", port=PORT)
    with SiteThread(pages=10) as internal:
        port = int(internal.base_url.rsplit(":", 1)[1])

        def via(url: str) -> str:
            return f"{public}/hostile/r/to?url={url}"

        rows = [
            ("to-loopback", via(f"http://127.0.0.1:{port}/page/1")),
            ("to-localhost", via(f"http://localhost:{port}/page/2")),
            ("to-metadata", via("http://169.254.169.254/latest/meta-data/")),
            ("intranet", f"http://127.0.0.1:{port}/page/3"),
            ("public", f"{public}/page/4"),
        ]
        keys = add_through_the_cli(run_command, tmp_path, rows)
        select = ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
        module = ["asset", "materialize", "-m", "scrapeflow_dagster.definitions"]

        guarded = run_command("dagster", *module, *select, timeout_seconds=300)
        reached = requested(internal)
        outcome = {
            key: (status["scrape_status"], status.get("scrape_error_kind"))
            for key in keys
            if (status := load_status(layout.status_dir, key)) is not None
        }

        allowed = run_command(
            "dagster",
            *module,
            "--select",
            "scrape",
            "--partition",
            "to-loopback",
            "--config-json",
            json.dumps(ALLOW_LOOPBACK),
            timeout_seconds=300,
        )
        reached_after = requested(internal)

    assert guarded.returncode == 1, guarded.stdout + guarded.stderr
    # Only the intranet task (and its robots.txt) reached the internal site.
    assert reached == {"/robots.txt": 1, "/page/3": 1}
    refused = "ERROR AddressRefusedError::redirect to "
    assert outcome["intranet"] == ("SUCCESS", None)
    assert outcome["public"] == ("SUCCESS", None)
    assert outcome["to-loopback"] == (
        f"{refused}http://127.0.0.1:{port}/page/1: 127.0.0.1 is a loopback address, refused "
        "for a task whose URL is public (address guard)",
        "permanent",
    )
    assert outcome["to-localhost"][0].startswith(
        f"{refused}http://localhost:{port}/page/2: localhost resolves to 127.0.0.1 (loopback)"
    ), outcome
    assert outcome["to-metadata"][0].startswith(
        f"{refused}http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a link-local "
        "address"
    ), outcome
    assert {outcome[k][1] for k in ("to-localhost", "to-metadata")} == {"permanent"}

    # An allowed network lets a public task's redirect in.
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert reached_after.get("/page/1") == 1


def test_an_intranet_task_redirected_through_a_public_site_is_not_led_back_inside(
    public_host: PublicHost,  # noqa: F811
    run_command: Run,
    layout: DataLayout,
    tmp_path: Path,
) -> None:
    """A redirect is a URL learned from the answer that sent it: an intranet task whose own
    server sends it to a public site may follow it there, but the public site's redirect back
    inside is refused (and the task's page, had it been answered publicly, would be public)."""
    public = public_host.serve_site(tmp_path / "site.log", port=PORT)
    with SiteThread(pages=10) as internal:
        port = int(internal.base_url.rsplit(":", 1)[1])
        back_inside = f"{public}/hostile/r/to?url=" + quote(f"http://127.0.0.1:{port}/page/5")
        out_and_back = f"http://127.0.0.1:{port}/hostile/r/to?url=" + quote(back_inside)
        rows = [("out-and-back", out_and_back), ("out", f"{public}/page/6")]
        keys = add_through_the_cli(run_command, tmp_path, rows)
        select = ["--select", "scrape", "--partition-range", f"{keys[0]}...{keys[-1]}"]
        module = ["asset", "materialize", "-m", "scrapeflow_dagster.definitions"]
        done = run_command("dagster", *module, *select, timeout_seconds=300)
        reached = requested(internal)
        status = load_status(layout.status_dir, "out-and-back")

    assert done.returncode == 1, done.stdout + done.stderr
    assert "/page/5" not in reached, reached
    assert status is not None
    assert status["scrape_status"].startswith(
        f"ERROR AddressRefusedError::redirect to http://127.0.0.1:{port}/page/5: 127.0.0.1 is a "
        "loopback address"
    ), status["scrape_status"]
