"""The `scrapeflow` console script ends the process itself once a command is done
(`cli.console_main`): what the interpreter's exit would still do happens first (a non-daemon
thread that waits for the main thread to end is waited for, atexit handlers run, buffered
output reaches a pipe) and the exit code is the command's."""

import subprocess
import textwrap
from pathlib import Path

from scrapeflow_dagster_tests.support.paths import COMMAND_CWD, PYTHON
from scrapeflow_dagster_tests.support.processes import init_dagster_home, process_env

SCRIPT = textwrap.dedent(
    """
    import atexit, sys, threading, time
    from pathlib import Path

    out = Path(sys.argv[1])
    atexit.register(lambda: (out / "atexit").write_text("ran"))

    def late():
        threading.main_thread().join()  # returns once the interpreter's exit has begun
        time.sleep(0.3)
        (out / "thread").write_text("done")  # only if the exit waits for this thread

    threading.Thread(target=late).start()
    print("buffered before the command")
    sys.argv = ["scrapeflow", *sys.argv[2:]]
    from scrapeflow_dagster.cli import console_main
    console_main()
    """
)


def run_console(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = init_dagster_home(tmp_path / "home")
    return subprocess.run(
        [PYTHON, "-c", SCRIPT, str(tmp_path), *args],
        env=process_env(home, tmp_path / "data"), cwd=COMMAND_CWD,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_command_ends_with_its_code_after_threads_atexit_and_output(tmp_path: Path) -> None:
    (tmp_path / "tasks.csv").write_text("key,url\na,https://example.com/a\n")
    done = run_console(tmp_path, "tasks", "add", str(tmp_path / "tasks.csv"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("buffered before the command\n")
    assert done.stdout.splitlines()[-1].endswith(
        ": 1 valid tasks (1 new params, 1 new partitions), 0 lines refused"
    )
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_failing_command_keeps_its_exit_code(tmp_path: Path) -> None:
    done = run_console(tmp_path, "status")  # no data folder yet
    assert done.returncode == 2
    assert "no status folder" in done.stderr
    assert (tmp_path / "atexit").read_text() == "ran"
