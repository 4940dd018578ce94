"""The politeness settings: engine defaults, their checks, and the settings resource's fields
(its config schema is what the UI shows as resource config)."""

import pytest

from scrapeflow_dagster.engine.settings import PoliteSettings, ScrapeSettings
from scrapeflow_dagster.lib.scrape_settings import ScrapeSettingsResource

POLITE_FIELDS = {
    "respect_robots_txt": True,
    "robots_max_age_seconds": 24 * 3600.0,
    "max_per_host": 8,
    "per_host_delay_seconds": 0.0,
}


def test_politeness_is_on_by_default() -> None:
    polite = ScrapeSettings().polite
    assert {name: getattr(polite, name) for name in POLITE_FIELDS} == POLITE_FIELDS


@pytest.mark.parametrize(
    "name", ["robots_max_age_seconds", "max_per_host", "per_host_delay_seconds"]
)
def test_negative_numbers_are_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must not be negative"):
        PoliteSettings(**{name: -1})


def test_the_resource_shows_the_fields_with_the_engine_defaults_and_builds_them() -> None:
    fields = ScrapeSettingsResource.to_config_schema().as_field().config_type.fields
    assert {name: fields[name].default_value for name in POLITE_FIELDS} == POLITE_FIELDS
    built = ScrapeSettingsResource(
        respect_robots_txt=False,
        robots_max_age_seconds=60.0,
        max_per_host=2,
        per_host_delay_seconds=0.5,
    ).build()
    assert built.polite == PoliteSettings(
        respect_robots_txt=False,
        robots_max_age_seconds=60.0,
        max_per_host=2,
        per_host_delay_seconds=0.5,
    )
    with pytest.raises(ValueError, match="per_host_delay_seconds must not be negative"):
        ScrapeSettingsResource(per_host_delay_seconds=-2.0).build()
