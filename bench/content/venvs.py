"""The peer extractors' venvs, built once and reused like `bench.peers.venvs` builds Scrapy's
(`~/.cache/scrapeflow-bench/<name>`, or `SCRAPEFLOW_BENCH_VENVS`), with one difference: a peer
may need another Python (rs-trafilatura ships wheels for CPython 3.12 only), found on PATH or
under pyenv; without it that peer is skipped with a note."""

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

# Each peer: the venv it runs in, the Python it needs and its requirements.
PEERS = {
    "trafilatura": ("content-peers", "3.11", ["trafilatura>=2.0,<3"]),
    "readability": ("content-peers", "3.11", ["readability-lxml>=0.8"]),
    "resiliparse": ("content-peers", "3.11", ["resiliparse>=0.14"]),
    "rs_trafilatura": ("content-rs-trafilatura", "3.12", ["rs-trafilatura>=0.1"]),
}


def _python(version: str) -> str | None:
    if sys.version_info[:2] == tuple(int(part) for part in version.split(".")):
        return sys.executable
    pyenv = glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python{version}"))
    for candidate in [shutil.which(f"python{version}"), *sorted(pyenv)]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return None


def peer_python(name: str) -> Path | str:
    """The Python of the venv of peer `name`, built when missing; a note (str) when it cannot
    be built here."""
    venv_name, version, _ = PEERS[name]
    base = Path(os.environ.get("SCRAPEFLOW_BENCH_VENVS") or Path.home() / ".cache/scrapeflow-bench")
    venv = base / venv_name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    wanted = sorted({r for v, _, reqs in PEERS.values() if v == venv_name for r in reqs})
    if python.exists() and stamp.exists() and stamp.read_text() == "\n".join(wanted):
        return python
    interpreter = _python(version)
    if interpreter is None:
        return f"skipped: {name} needs Python {version}, not found"
    print(f"installing {', '.join(wanted)} into {venv}", flush=True)
    subprocess.run([interpreter, "-m", "venv", "--clear", str(venv)], check=True)
    for requirement in wanted:  # one at a time: pip trips on two asking lxml's extra twice
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", requirement], capture_output=True
        )
        if done.returncode != 0:
            return f"skipped: {requirement} did not install"
    stamp.write_text("\n".join(wanted))
    return python
