"""Child processes of the tests: the environment naming their temp homes, stopping or killing a
process group, and waiting for what a process does."""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from scrapeflow_dagster.engine.state.layout import DATA_DIR_ENV
from scrapeflow_dagster.instance import dagster_yaml
from scrapeflow_dagster_tests.support.paths import BIN_DIR, REPO_ROOT

_T = TypeVar("_T")

# Proxy settings of the developer's shell would change what a test's child process fetches.
PROXY_ENV_NAMES = ("SCRAPEFLOW_PROXY_KIND", "SCRAPEFLOW_PROXY_URLS", "WEBSHARE_API_KEY")


def init_dagster_home(home: Path) -> Path:
    """Create `home` as a `DAGSTER_HOME` with the dagster.yaml `scrapeflow home init` writes
    (SQLite, batched asset events, telemetry off); returns it."""
    home.mkdir()
    (home / "dagster.yaml").write_text(dagster_yaml(home))
    return home


def process_env(dagster_home: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a `scrapeflow` / `dagster` child process on temp homes.

    Args:
        dagster_home: its `DAGSTER_HOME`.
        data_dir: its `SCRAPEFLOW_DATA_DIR`.
        **extra: more variables, set last.
    """
    env = dict(os.environ)
    for name in PROXY_ENV_NAMES:
        env.pop(name, None)
    env.update(
        {
            "DAGSTER_HOME": str(dagster_home),
            DATA_DIR_ENV: str(data_dir),
            "PYTHONUNBUFFERED": "1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            # The tests switch sensors on where they test them: a retry sensor running on its
            # own would launch runs that other tests do not expect.
            "SCRAPEFLOW_SENSORS_DEFAULT": "stopped",
            # Code locations of the tests (`scrapeflow_dagster_tests...`) load from any folder.
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
            ),
            **extra,
        }
    )
    return env


def run_installed(
    env: dict[str, str], cwd: Path, command: str, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run an installed command of the venv (`scrapeflow`, `dagster`) as a user runs it, to its
    end; its output captured as text (the caller asserts on its return code)."""
    return subprocess.run(
        [str(BIN_DIR / command), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group of `proc` (started with `start_new_session=True`) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def stop_group(proc: subprocess.Popen[Any], *, timeout_seconds: float = 30) -> None:
    """SIGTERM the process group of `proc` (started with `start_new_session=True`), so that
    what it started stops too; SIGKILL the group if `proc` outlasts `timeout_seconds`."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_seconds)
    except subprocess.TimeoutExpired:
        kill_group(proc)


def wait_until(
    done: Callable[[], _T],
    *,
    what: str,
    timeout_seconds: float,
    poll_seconds: float,
    process: subprocess.Popen[Any] | None = None,
    log_tail: Callable[[], str] = str,
) -> _T:
    """Call `done` every `poll_seconds` until it returns something true, and return that.

    Args:
        done: the condition; its first true result is returned.
        what: what is awaited, for the failure message.
        timeout_seconds: how long to wait at the most.
        poll_seconds: the pause between two calls of `done`.
        process: a process that must stay alive meanwhile.
        log_tail: the end of that process's log, for the failure message.

    Raises:
        AssertionError: `process` ended, or `timeout_seconds` passed, before `done` held.
    """
    deadline = time.monotonic() + timeout_seconds
    while not (found := done()):
        if process is not None:
            assert process.poll() is None, f"exited waiting for {what}:\n{log_tail()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log_tail()}"
        time.sleep(poll_seconds)
    return found


def wait_for_text(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until `text` shows in the file `path` (True) or `proc` ends first (False).

    Raises:
        AssertionError: neither happened within `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    needle = text.encode()
    while time.monotonic() < deadline:
        if needle in path.read_bytes():
            return True
        if proc.poll() is not None:
            return needle in path.read_bytes()
        time.sleep(0.05)
    raise AssertionError(f"{text!r} did not show in {path} within {timeout} s")


def ask(child: subprocess.Popen[str], command: str) -> dict[str, Any]:
    """Send `command` (a line) to a child that answers each with one JSON line; its answer."""
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(command + "\n")
    child.stdin.flush()
    line = child.stdout.readline()
    assert line, f"the child ended without answering {command!r} (exit {child.wait()})"
    answer: dict[str, Any] = json.loads(line)
    return answer
