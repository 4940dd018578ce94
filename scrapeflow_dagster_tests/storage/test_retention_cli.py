"""`scrapeflow home init --retention` and `scrapeflow home prune` through the real CLI, on a
SQLite home the shipped chain ran in twice."""

import subprocess
import sys
from pathlib import Path

from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster.storage.retention.prune import RetentionPolicy
from scrapeflow_dagster_tests.storage.homes import instance_of
from scrapeflow_dagster_tests.storage.retention_homes import ChainHome, reads, task_rows
from scrapeflow_dagster_tests.support.processes import process_env


def _scrapeflow(home: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapeflow_dagster.cli", *args],
        env=process_env(home, data),
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_home_init_writes_retention_and_home_prune_prints_what_it_deleted(
    tmp_path: Path,
) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    done = _scrapeflow(home, data, "home", "init", "--retention")
    assert done.returncode == 0, done.stderr
    assert (
        "    retention:\n      superseded_grace_seconds: 3600\n"
        in (home / "dagster.yaml").read_text()
    )
    assert _scrapeflow(home, data, "home", "init", "--retention").returncode == 0  # the same
    assert _scrapeflow(home, data, "home", "init").returncode == 1  # another: needs --force
    with instance_of(home) as instance:
        assert instance.event_log_storage.retention_policy == RetentionPolicy()  # type: ignore[attr-defined]

    with SiteThread(pages=40, page_bytes=2000) as site:
        chain = ChainHome(home, data, task_rows(site, 20))
        chain.run(forced=False, cwd=tmp_path)
        chain.run(forced=True, cwd=tmp_path)
    # The grace of the block written (an hour) keeps every row of runs this recent.
    dry = _scrapeflow(home, data, "home", "prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "asset events would delete: none" in dry.stdout
    # With no grace: the first run's rows go.
    text = (home / "dagster.yaml").read_text()
    (home / "dagster.yaml").write_text(text.replace("seconds: 3600", "seconds: 0"))
    reads(home, chain.keys)
    before = reads(home, chain.keys)

    pruned = _scrapeflow(home, data, "home", "prune", "--vacuum")

    assert pruned.returncode == 0, pruned.stderr
    lines = pruned.stdout.splitlines()
    superseded = sum(
        len(before[asset]["materialized"]) for asset in ("scrape", "validation", "pages")
    )
    assert lines[0].startswith("asset events deleted: ")
    assert f"{superseded} materializations" in lines[0]  # the first run's, one per partition
    assert lines[1] == "run logs deleted: 0 runs"  # kept 7 days
    before_bytes, after_bytes = (
        int(word.replace(",", "")) for word in lines[2].split() if word[0].isdigit()
    )
    assert after_bytes < before_bytes
    assert reads(home, chain.keys) == before


def test_without_a_retention_block_the_home_prunes_nothing_by_itself(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    assert _scrapeflow(home, data, "home", "init").returncode == 0
    with instance_of(home) as instance:
        assert instance.event_log_storage.retention_policy is None  # type: ignore[attr-defined]
    dry = _scrapeflow(home, data, "home", "prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("dagster.yaml has no retention block: using the defaults")
