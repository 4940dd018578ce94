"""Where the repository is and which Python runs the measured commands."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PYTHON = sys.executable
