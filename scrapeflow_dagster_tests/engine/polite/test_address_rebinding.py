"""DNS rebinding, for real: a name that resolves to a public address and then, for the next
connection, to loopback is refused the second time by the guarded session (`GuardedResolver`,
no DNS cache), while a plain session follows it to loopback.

The site and the client run in one child process inside a network namespace with a global
address (`support.netns`), the name mapped by the namespace's own hosts file, which the test
rewrites between the requests (`support.netns_hosts`). Skipped without root or `ip netns`
(a failure under `SCRAPEFLOW_REQUIRE_SERVICES=1`), as the other namespace tests.
"""

import subprocess
import sys

import pytest

from scrapeflow_dagster_tests.support.netns import PublicHost, public_host  # noqa: F401
from scrapeflow_dagster_tests.support.netns_hosts import namespace_hosts, rewrite_hosts
from scrapeflow_dagster_tests.support.paths import REPO_ROOT
from scrapeflow_dagster_tests.support.processes import ask

CHILD = "scrapeflow_dagster_tests.engine.polite.rebind_child"
NAME = "rebind.test"


@pytest.mark.timeout(120)
def test_a_name_rebound_from_public_to_loopback_is_refused(
    public_host: PublicHost,  # noqa: F811
) -> None:
    public = f"{public_host.address} {NAME}\n"
    with namespace_hosts(public_host.name, public) as hosts:
        child = public_host.start(
            [sys.executable, "-m", CHILD, NAME],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip().isdigit()  # serving

        assert ask(child, "guarded") == {"status": 200}

        rewrite_hosts(hosts, f"127.0.0.1 {NAME}\n")
        refused = ask(child, "guarded")
        assert refused.keys() == {"refused"}, refused
        assert f"{NAME} resolves to 127.0.0.1 (loopback)" in refused["refused"]
        assert "address guard" in refused["refused"]

        # The control: unguarded, the name now leads to the site on loopback.
        assert ask(child, "plain") == {"status": 200}
        # The guarded requests reached the site on its public address only.
        assert ask(child, "served") == {"served": [public_host.address, "127.0.0.1"]}
        assert child.stdin is not None
        child.stdin.close()  # the end of its commands: it stops its site and exits
        assert child.wait() == 0
