"""Peers installed into their own venvs (never into ours), built once and reused:
`~/.cache/scrapeflow-bench/<name>` unless `SCRAPEFLOW_BENCH_VENVS` names another folder."""

import os
import subprocess
import sys
from pathlib import Path

# The peer as the crawl issues measured it.
SCRAPY_REQUIREMENT = "scrapy>=2.13"


def venv_python(name: str, requirements: list[str]) -> Path:
    """The Python of the venv `name` with `requirements` installed (built when missing)."""
    base = Path(os.environ.get("SCRAPEFLOW_BENCH_VENVS") or Path.home() / ".cache/scrapeflow-bench")
    venv = base / name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = "\n".join(requirements)
    if not (python.exists() and stamp.exists() and stamp.read_text() == wanted):
        print(f"installing {', '.join(requirements)} into {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements], check=True)
        stamp.write_text(wanted)
    return python


def scrapy_version(python: Path) -> str:
    """The Scrapy version in the venv of `python`."""
    done = subprocess.run(
        [str(python), "-c", "import scrapy; print(scrapy.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()
