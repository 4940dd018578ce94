"""`python -m scrapeflow_dagster.cli`: the `scrapeflow` command."""

import sys

from scrapeflow_dagster.cli import main

sys.exit(main())
