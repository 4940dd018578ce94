"""Where things are: the repository, and the executables of the venv running the tests."""

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
BIN_DIR = Path(PYTHON).parent  # `dagster`, `dagster-daemon`, `scrapeflow` are installed here
# Where tests start `dagster` commands (never the repository: Dagster loads `.env` from the
# folder it starts in, and a developer's `.env` there must not reach a test's runs).
COMMAND_CWD = Path(tempfile.mkdtemp(prefix="scrapeflow-tests-cwd-"))
# Gone with the process that made it (each test process makes its own; they piled up in /tmp).
atexit.register(shutil.rmtree, COMMAND_CWD, ignore_errors=True)
