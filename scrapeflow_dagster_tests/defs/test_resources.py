"""Resource config that cannot work is refused at run start, naming the field; proxies that
are configured are never silently left off."""

import dagster as dg
import pytest

from scrapeflow_dagster.lib.resources import AutomationSettingsResource, ProxyProviderResource
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

PASSWORD = "s3cr3t-pw-RES"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_parallelism", 0),
        ("request_timeout_seconds", 0),
        ("executor_timeout_seconds", -1),
        ("max_body_bytes", 0),
        ("backoff_base_seconds", -1),
    ],
)
def test_scrape_settings_out_of_bounds_fail_the_run_naming_the_field(
    field: str, value: float
) -> None:
    @dg.asset
    def uses(scrape_settings: ScrapeSettingsResource) -> None:
        scrape_settings.build()

    result = dg.materialize(
        [uses],
        resources={"scrape_settings": ScrapeSettingsResource()},
        run_config={"resources": {"scrape_settings": {"config": {field: value}}}},
        raise_on_error=False,
    )

    assert not result.success
    [failure] = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error is not None
    assert f"ScrapeSettingsResource.{field} must be" in error.to_string()


def test_automation_settings_refuse_a_cap_of_zero_failed_runs() -> None:
    with pytest.raises(ValueError, match=r"retry_max_failed_runs must be > 0, got 0"):
        AutomationSettingsResource(retry_max_failed_runs=0).retry_rules()
    with pytest.raises(ValueError, match=r"retry_backoff_seconds must be >= 0, got -1"):
        AutomationSettingsResource(retry_backoff_seconds=-1).retry_rules()
    with pytest.raises(ValueError, match=r"refresh_max_age_hours must be >= 0, got -1"):
        AutomationSettingsResource(refresh_max_age_hours=-1).refresh_max_age_seconds()
    # 0 is a setting: every success counts as stale (refresh all on each tick).
    assert AutomationSettingsResource(refresh_max_age_hours=0).refresh_max_age_seconds() == 0


def test_bounds_hold_for_fields_wired_to_environment_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dg.EnvVar.int holds a placeholder until resolved: bounds are checked on the values used.
    monkeypatch.setenv("SF_TEST_FAILED_RUNS", "0")
    resource = AutomationSettingsResource(
        retry_max_failed_runs=dg.EnvVar.int("SF_TEST_FAILED_RUNS")
    )
    with pytest.raises(ValueError, match="retry_max_failed_runs must be > 0"):
        resource.process_config_and_initialize().retry_rules()


def test_proxies_given_with_kind_none_are_refused_not_left_off() -> None:
    urls = f"http://u:{PASSWORD}@10.0.0.1:3128"
    for fields in ({"proxy_urls_text": urls}, {"webshare_api_key": "wskey"}):
        with pytest.raises(ValueError) as refused:
            ProxyProviderResource(**fields).build()
        assert "kind 'none'" in str(refused.value) and next(iter(fields)) in str(refused.value)
        assert PASSWORD not in str(refused.value)
    assert ProxyProviderResource().build() is None  # nothing given: direct, as configured
    with pytest.raises(ValueError, match="kind 'list' has no proxies"):
        ProxyProviderResource(kind="list").build()
    with pytest.raises(ValueError, match=r"proxy_urls\[0\] \(socks5://10.0.0.1:1080\)"):
        ProxyProviderResource(
            kind="list", proxy_urls=[f"socks5://u:{PASSWORD}@10.0.0.1:1080"]
        ).build()
