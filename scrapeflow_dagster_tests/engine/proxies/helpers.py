"""Helpers of the proxy tests: the secrets no output may hold."""

from scrapeflow_dagster_tests.fakes.proxy_services import IPROYAL_KEY, PROXY_PASSWORD, WEBSHARE_KEY

SECRETS = (WEBSHARE_KEY, IPROYAL_KEY, PROXY_PASSWORD, "s3cr3t-pw")


def assert_no_secret(text: str) -> None:
    """Fail when `text` holds any of `SECRETS` (an API key or a proxy password)."""
    for secret in SECRETS:
        assert secret not in text
