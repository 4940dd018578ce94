"""Crawlee's side of the benchmark installed (npm, install scripts off, no browser downloaded)
and reused while its `package.json` is unchanged."""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from bench.lib.repo import REPO

PEER = REPO / "bench" / "peers" / "crawlee_render"
# Nothing here may fetch a browser, whatever a package's defaults.
NO_DOWNLOADS = {
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "1",
}


def install_peer(node_dir: Path) -> dict[str, str]:
    """Crawlee's side installed in `node_dir` (npm, install scripts off, no browser), reused
    while `package.json` is unchanged; `crawl.mjs` copied there on every run (Node resolves
    its imports from the script's folder). The installed versions."""
    manifest = (PEER / "package.json").read_bytes()
    wanted = hashlib.sha256(manifest).hexdigest()
    stamp = node_dir / ".installed"
    node_dir.mkdir(parents=True, exist_ok=True)
    installed = stamp.exists() and stamp.read_text() == wanted
    if not (installed and (node_dir / "node_modules").is_dir()):
        print(f"installing the Crawlee peer into {node_dir} (npm)", flush=True)
        stamp.unlink(missing_ok=True)
        shutil.rmtree(node_dir / "node_modules", ignore_errors=True)
        (node_dir / "package-lock.json").unlink(missing_ok=True)
        (node_dir / "package.json").write_bytes(manifest)
        npm = shutil.which("npm") or "/usr/bin/npm"
        env = {**os.environ, **NO_DOWNLOADS, "npm_config_update_notifier": "false"}
        command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts"]
        subprocess.run(command, cwd=node_dir, env=env, check=True)
        stamp.write_text(wanted)
    shutil.copyfile(PEER / "crawl.mjs", node_dir / "crawl.mjs")
    versions = {}
    for package in ("crawlee", "playwright"):
        meta = json.loads((node_dir / "node_modules" / package / "package.json").read_text())
        versions[package] = meta["version"]
    node = shutil.which("node") or "/usr/bin/node"
    versions["node"] = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return versions
