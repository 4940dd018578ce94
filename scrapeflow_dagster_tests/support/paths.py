"""Where things are: the repository, and the executables of the venv running the tests."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN_DIR = Path(PYTHON).parent  # `dagster`, `dagster-daemon`, `scrapeflow` are installed here
