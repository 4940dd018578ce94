"""What a test does when something it needs is not on this machine: skips, saying what is
missing, or fails under `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI, where `.ci/run` installs it)."""

import os
from typing import NoReturn

import pytest

REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"


def skip_or_fail(missing: str, what: str) -> NoReturn:
    """Skip the test (`what` skipped: `missing`), or fail it when the environment requires
    every service."""
    if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
        pytest.fail(f"{missing}, and {REQUIRE_SERVICES_ENV}=1 requires it")
    pytest.skip(f"{what} skipped: {missing}")
