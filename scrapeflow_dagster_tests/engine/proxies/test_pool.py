"""Proxy pools: rotation, country fallback, scores and cooldown."""

import pytest

from scrapeflow_dagster.engine.errors import ErrorKind
from scrapeflow_dagster.engine.proxies import (
    ProxyHealth,
    ProxyProvider,
    ProxyProviderFromDict,
    ProxyProviderFromList,
)
from scrapeflow_dagster_tests.engine.proxies.helpers import assert_no_secret


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_list_provider_keeps_proxies_under_empty_country() -> None:
    provider = ProxyProviderFromList(["http://10.0.0.1:80", "10.0.0.2:8080"])
    assert provider.proxies == {"": ["http://10.0.0.1:80", "http://10.0.0.2:8080"]}
    assert provider.bad_proxies == set()
    assert ProxyProvider.default_retries == 5


def test_get_one_proxy_rotates_round_robin() -> None:
    proxies = ["http://10.0.0.1:80", "http://10.0.0.2:80", "http://10.0.0.3:80"]
    provider = ProxyProviderFromList(proxies)
    assert [provider.get_one_proxy() for _ in range(6)] == proxies + proxies


def test_country_falls_back_to_star_then_empty() -> None:
    provider = ProxyProviderFromDict(
        {"US": ["http://us:1"], "*": ["http://star:1"], "": ["http://none:1"]}
    )
    assert provider.get_one_proxy("US") == "http://us:1"
    assert provider.get_one_proxy("FR") == "http://star:1"
    assert provider.get_one_proxy() == "http://star:1"
    del provider.proxies["*"]
    assert provider.get_one_proxy("FR") == "http://none:1"
    assert provider.get_one_proxy(None) == "http://none:1"


def test_country_with_every_proxy_benched_falls_back() -> None:
    provider = ProxyProviderFromDict({"US": ["http://us:1"], "*": ["http://star:1"]})
    provider.bad_proxies.add("http://us:1")
    assert provider.get_one_proxy("US") == "http://star:1"


def test_no_country_without_default_lists_uses_any_proxy() -> None:
    provider = ProxyProviderFromDict({"US": ["http://us:1"], "DE": ["http://de:1"]})
    assert {provider.get_one_proxy(), provider.get_one_proxy()} == {"http://us:1", "http://de:1"}
    assert provider.get_one_proxy("FR") is None


def test_empty_provider_has_no_proxy() -> None:
    assert ProxyProvider().get_one_proxy() is None
    assert ProxyProvider().get_one_proxy("US") is None


def test_proxy_is_benched_at_threshold_and_skipped() -> None:
    provider = ProxyProviderFromList(["http://a:1", "http://b:1"], error_threshold=3.0)
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_failure("http://a:1", ErrorKind.BLOCKED)
    assert provider.bad_proxies == set()
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    assert provider.bad_proxies == {"http://a:1"}
    assert [provider.get_one_proxy() for _ in range(3)] == ["http://b:1"] * 3
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    provider.report_failure("http://b:1", ErrorKind.PROXY)
    assert provider.get_one_proxy() is None


def test_failure_kinds_weigh_differently() -> None:
    provider = ProxyProviderFromList(["http://a:1"], error_threshold=3.0)
    for _ in range(20):
        provider.report_failure("http://a:1", ErrorKind.PERMANENT)
    assert provider.bad_proxies == set()
    for _ in range(11):
        provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == set()
    assert provider.health()["a:1"].score == pytest.approx(2.75)
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == {"http://a:1"}


def test_success_halves_the_score() -> None:
    provider = ProxyProviderFromList(["http://a:1"])
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_failure("http://a:1", ErrorKind.PROXY)
    provider.report_success("http://a:1")
    health = provider.health()["a:1"]
    assert health == ProxyHealth(
        score=1.0, benched=False, benched_until=None, failures=2, successes=1
    )


def test_benched_proxy_comes_back_half_open_after_cooldown() -> None:
    clock = FakeClock()
    provider = ProxyProviderFromList(
        ["http://a:1"], error_threshold=3.0, cooldown_seconds=300.0, clock=clock
    )
    for _ in range(3):
        provider.report_failure("http://a:1", ErrorKind.PROXY)
    assert provider.health()["a:1"].benched_until == 1300.0
    clock.now += 299.9
    assert provider.get_one_proxy() is None
    clock.now += 0.1
    assert provider.get_one_proxy() == "http://a:1"
    assert provider.bad_proxies == set()
    assert provider.health()["a:1"].score == pytest.approx(2.75)
    # Half-open: a single failure of any charged kind benches it again.
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.bad_proxies == {"http://a:1"}
    assert provider.get_one_proxy() is None
    clock.now += 300.0
    provider.report_success("http://a:1")
    provider.report_failure("http://a:1", ErrorKind.TRANSIENT)
    assert provider.get_one_proxy() == "http://a:1"


def test_state_is_per_instance() -> None:
    first = ProxyProviderFromList(["http://a:1"])
    second = ProxyProviderFromList(["http://a:1"])
    for _ in range(3):
        first.report_failure("http://a:1", ErrorKind.PROXY)
    assert first.bad_proxies == {"http://a:1"}
    assert second.bad_proxies == set()
    assert second.get_one_proxy() == "http://a:1"
    assert ProxyProvider().proxies is not ProxyProvider().proxies
    assert ProxyProvider().bad_proxies is not ProxyProvider().bad_proxies


def test_health_is_keyed_by_host_port_without_credentials() -> None:
    provider = ProxyProviderFromList(
        ["http://alice:s3cr3t-pw@gw:8000", "http://bob:s3cr3t-pw@gw:8000", "http://c:1"]
    )
    provider.report_failure("http://alice:s3cr3t-pw@gw:8000", ErrorKind.PROXY)
    health = provider.health()
    assert list(health) == ["gw:8000", "gw:8000#2", "c:1"]
    assert health["gw:8000"].failures == 1
    assert_no_secret(repr(health))
    assert "alice" not in repr(health)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="error_threshold"):
        ProxyProvider(error_threshold=0)
    with pytest.raises(ValueError, match="cooldown_seconds"):
        ProxyProvider(cooldown_seconds=-1)


@pytest.mark.parametrize(
    ("proxies", "said"),
    [
        (["socks5://u:s3cr3t-pw@10.0.0.1:1080"], "proxy_urls[0] (socks5://10.0.0.1:1080): only"),
        (
            ["http://10.0.0.1:80", "http://u:s3cr3t-pw@10.0.0.2:notaport"],
            "proxy_urls[1] (http://10.0.0.2:notaport) is not a valid proxy URL",
        ),
        (["http://u:s3cr3t-pw@:8080"], "proxy_urls[0] (http://:8080) is not a valid proxy URL"),
        (["  "], "proxy_urls[0] must be a proxy URL like http://host:port"),
    ],
)
def test_unusable_proxy_urls_are_refused_by_position_without_credentials(
    proxies: list[str], said: str
) -> None:
    with pytest.raises(ValueError) as refused:
        ProxyProviderFromList(proxies)
    assert said in str(refused.value)
    assert_no_secret(str(refused.value))
    with pytest.raises(ValueError, match=r"proxies_by_country\['de'\]\[0\]"):
        ProxyProviderFromDict({"de": ["ftp://10.0.0.1:21"]})


def test_a_password_holding_a_slash_is_redacted_too() -> None:
    from scrapeflow_dagster.engine.redact import redact

    message = "InvalidURL: http://u:s3c/r3t-pw@127.0.0.1:1080 and https://x.test/a?q=1"
    assert redact(message) == "InvalidURL: http://***@127.0.0.1:1080 and https://x.test/a?q=1"
