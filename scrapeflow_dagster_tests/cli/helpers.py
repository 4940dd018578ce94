"""Plain helpers of the CLI tests: task files, tasks run in-process, `scrapeflow` on a terminal."""

import fcntl
import os
import pty
import struct
import subprocess
import termios
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.support.partitions import range_tags
from scrapeflow_dagster_tests.support.paths import BIN_DIR
from scrapeflow_dagster_tests.support.runs import run_assets, run_resources
from scrapeflow_dagster_tests.support.tasks import TaskRows, store_and_add

Run = Callable[..., subprocess.CompletedProcess[str]]
EXECUTORS = ["scrape", "validation", "pages"]


def write_csv(path: Path, rows: Sequence[tuple[str, str]]) -> Path:
    """A `key,url` task file."""
    path.write_text("key,url\n" + "".join(f"{key},{url}\n" for key, url in rows))
    return path


def add_through_the_cli(run: Run, folder: Path, rows: Sequence[tuple[str, str]]) -> list[str]:
    """`scrapeflow tasks add` of a `key,url` file of `rows`, which must all be added."""
    added = run("scrapeflow", "tasks", "add", str(write_csv(folder / "tasks.csv", rows)))
    assert added.returncode == 0, added.stdout + added.stderr
    return [key for key, _ in rows]


def run_in_process(layout: DataLayout, rows: TaskRows, assets: Sequence[str] = EXECUTORS) -> None:
    """Store `rows` as tasks and run each of `assets` over all of them, in this process (an
    ephemeral instance): results in the status files and DuckDB, as real runs leave them.

    One run per asset: in a run where a task fails, Dagster skips the steps downstream.
    """
    with dg.DagsterInstance.ephemeral() as instance:
        keys = store_and_add(layout, instance, rows)
        resources = run_resources(layout.root, max_attempts=1, request_timeout_seconds=5.0)
        for asset in assets:
            run_assets(instance, resources, [asset], range_tags(keys[0], keys[-1]))


def scrapeflow_on_a_terminal(args: Sequence[str], env: dict[str, str], cwd: Path) -> str:
    """Run `scrapeflow` with its stderr on a pseudo-terminal; returns what it wrote there."""
    leader, follower = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, where tqdm draws nothing: size it as a window.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [str(BIN_DIR / "scrapeflow"), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    written = bytearray()
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the process closed the terminal's last writer
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert proc.wait(timeout=120) == 0, written.decode(errors="replace")
    return written.decode(errors="replace")
