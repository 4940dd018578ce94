"""`scrapeflow tasks add | list | show | find`, `status` and the options every command takes,
as real processes: exit codes, wording, `--data-dir` after the subcommand, progress bars."""

import re
from importlib.metadata import version
from pathlib import Path

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.server import SiteThread
from scrapeflow_dagster_tests.cli.helpers import (
    Run,
    add_through_the_cli,
    run_in_process,
    scrapeflow_on_a_terminal,
    write_csv,
)
from scrapeflow_dagster_tests.support.processes import process_env


def test_tasks_add_exits_0_all_added_1_some_refused_2_nothing_read(
    run_command: Run, site_thread: SiteThread, tmp_path: Path
) -> None:
    good = write_csv(tmp_path / "good.csv", [("a-1", site_thread.url("/page/1"))])
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(f"{site_thread.url('/page/2')}\nftp://example.com/x\n")
    comments = tmp_path / "comments.txt"
    comments.write_text("# nothing but a comment\n\n")
    missing = tmp_path / "missing.txt"

    all_added = run_command("scrapeflow", "tasks", "add", str(good))
    some_refused = run_command("scrapeflow", "tasks", "add", str(mixed))
    no_file = run_command("scrapeflow", "tasks", "add", str(missing))
    no_task_line = run_command("scrapeflow", "tasks", "add", str(comments))
    one_file_missing = run_command("scrapeflow", "tasks", "add", str(good), str(missing))

    assert all_added.returncode == 0, all_added.stderr
    assert some_refused.returncode == 1, some_refused.stderr
    assert f"refused: {mixed}:2:" in some_refused.stderr
    assert no_file.returncode == 2
    assert f"cannot read {missing}: No such file" in no_file.stderr
    assert "valid tasks" not in no_file.stdout and "Traceback" not in no_file.stderr
    assert no_task_line.returncode == 2, no_task_line.stdout + no_task_line.stderr
    assert "no task could be read" in no_task_line.stderr
    assert one_file_missing.returncode == 1
    assert f"{good}: 1 valid tasks" in one_file_missing.stdout


def test_status_says_tasks_stored_before_any_run(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    assert run_command("scrapeflow", "status").stdout.strip() == "no tasks yet"
    rows = [(f"s-{n}", site_thread.url(f"/page/{n}")) for n in range(3)]
    add_through_the_cli(run_command, tmp_path, rows)

    stored = run_command("scrapeflow", "status")

    assert (stored.returncode, stored.stdout.strip()) == (0, "3 tasks stored, none run yet")
    nowhere = run_command("scrapeflow", "status", "--data-dir", str(tmp_path / "nowhere"))
    assert nowhere.returncode == 2 and "no status folder at" in nowhere.stderr


def test_data_dir_is_taken_before_and_after_the_subcommand(
    run_command: Run, site_thread: SiteThread, tmp_path: Path
) -> None:
    other = tmp_path / "other-data"
    task_file = write_csv(tmp_path / "t.csv", [("o-1", site_thread.url("/page/1"))])

    added = run_command("scrapeflow", "tasks", "add", str(task_file), "--data-dir", str(other))

    assert added.returncode == 0, added.stderr
    assert (other / "status" / "o-1.status.json").is_file()
    for args in (["--data-dir", str(other), "status"], ["status", "--data-dir", str(other)]):
        done = run_command("scrapeflow", *args)
        assert done.stdout.strip() == "1 task stored, none run yet", (args, done.stderr)
    assert run_command("scrapeflow", "status").stdout.strip() == "no tasks yet"  # env's folder
    after = run_command("scrapeflow", "tasks", "show", "o-1", "--data-dir", str(other))
    assert after.returncode == 0 and "o-1" in after.stdout, after.stderr


def test_version_and_the_exit_codes_in_help(run_command: Run) -> None:
    shown = run_command("scrapeflow", "--version")
    helped = run_command("scrapeflow", "--help")
    bad = run_command("scrapeflow", "tasks", "nonsense")

    assert (shown.returncode, shown.stdout.strip()) == (
        0,
        f"scrapeflow {version('scrapeflow-dagster')}",
    )
    assert helped.returncode == 0
    epilog = helped.stdout[helped.stdout.index("exit codes:") :]
    for code in ("0  done", "1  some input refused", "2  nothing done: bad usage"):
        assert code in epilog, epilog
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_tasks_list_show_and_find_read_status_files_and_duckdb(
    run_command: Run, site_thread: SiteThread, layout: DataLayout
) -> None:
    rows = [
        ("v-1", site_thread.url("/page/1")),
        ("v-2", site_thread.url("/status/404")),
        ("v-3", site_thread.url("/page/3")),
    ]
    run_in_process(layout, rows, ["scrape"])

    listed = run_command("scrapeflow", "tasks", "list")
    limited = run_command("scrapeflow", "tasks", "list", "--limit", "1")
    shown = run_command("scrapeflow", "tasks", "show", "v-2")
    unknown = run_command("scrapeflow", "tasks", "show", "v-9")
    found = run_command("scrapeflow", "tasks", "find", "/status/404")
    none = run_command("scrapeflow", "tasks", "find", "/nowhere")

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["KEY", "SCRAPE", "URL"]
    assert [line.split() for line in lines[1:]] == [
        ["v-1", "SUCCESS", rows[0][1]],
        ["v-2", "ERROR", "HttpStatusError", rows[1][1]],
        ["v-3", "SUCCESS", rows[2][1]],
    ]
    assert lines[1].index("http") == lines[2].index("http")  # aligned columns
    assert len(limited.stdout.splitlines()) == 2 and "1 of 3 tasks" in limited.stderr
    assert shown.returncode == 0, shown.stderr
    assert f'"url":"{rows[1][1]}"' in shown.stdout
    assert "scrape: ERROR HttpStatusError::HTTP response 404" in shown.stdout
    assert re.search(r"http status: 404, error kind: permanent", shown.stdout), shown.stdout
    assert unknown.returncode == 2 and "no task 'v-9'" in unknown.stderr
    assert (found.returncode, found.stdout.splitlines()[1:]) == (0, [f"v-2  {rows[1][1]}"])
    assert none.returncode == 1 and "no task URL contains '/nowhere'" in none.stderr
    layout.db_path.unlink()  # without DuckDB the status files answer
    again = run_command("scrapeflow", "tasks", "find", "page/")
    assert [line.split()[0] for line in again.stdout.splitlines()[1:]] == ["v-1", "v-3"]


def test_credentials_in_tasks_are_shown_nowhere_but_the_status_file(
    run_command: Run, site_thread: SiteThread, tmp_path: Path, layout: DataLayout
) -> None:
    url = site_thread.url("/page/1").replace("http://", "http://bob:hunter2@") + "?api_key=SECRET"
    tasks = tmp_path / "secret.jsonl"
    tasks.write_text(
        f'{{"key": "s-1", "url": "{url}", "headers": {{"Authorization": "Bearer SECRET"}}}}\n'
        '{"key": "s-2", "url": "ftp://bob:hunter2@files.test/x"}\n'
    )

    added = run_command("scrapeflow", "tasks", "add", str(tasks))
    outputs = [
        added,
        run_command("scrapeflow", "tasks", "list"),
        run_command("scrapeflow", "tasks", "show", "s-1"),
        run_command("scrapeflow", "tasks", "find", "page/1"),
    ]

    assert added.returncode == 1  # the ftp line is refused, quoted without its password
    assert "'ftp://***@files.test/x': only http and https URLs" in added.stderr
    for done in outputs:
        assert "hunter2" not in done.stdout + done.stderr and "SECRET" not in done.stdout
    assert "api_key=***" in outputs[1].stdout and '"Authorization":"***"' in outputs[2].stdout
    assert "s-1" in outputs[3].stdout
    # The status file keeps them: the task needs them to run.
    assert "hunter2" in (layout.status_dir / "s-1.status.json").read_text()


def test_tasks_add_draws_a_progress_bar_on_a_terminal_only(
    run_command: Run,
    site_thread: SiteThread,
    tmp_path: Path,
    dagster_home: Path,
    layout: DataLayout,
) -> None:
    big = tmp_path / "big.txt"  # one task and 20,000 comment lines: large, quick to add
    big.write_text(site_thread.url("/page/1") + "\n" + "# a comment line to read\n" * 20_000)

    on_terminal = scrapeflow_on_a_terminal(
        ["tasks", "add", str(big)], process_env(dagster_home, layout.root), tmp_path
    )
    piped = run_command("scrapeflow", "tasks", "add", str(big))

    assert "big.txt: 100%" in on_terminal and "20001/20001" in on_terminal, on_terminal
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr


def test_a_file_longer_than_a_chunk_is_added_whole_with_its_repeats_judged_across_chunks(
    run_command: Run, layout: DataLayout, tmp_path: Path
) -> None:
    """`tasks add` stores a file chunk by chunk (flat memory): a line that repeats an earlier
    chunk's key with the same params counts once, with other params it is refused by line."""
    from scrapeflow_dagster.cli.tasks import CHUNK_LINES

    count = CHUNK_LINES + 10
    lines = [f"http://shop.example.com/item/{n}" for n in range(count)]
    lines += [lines[0], lines[1]]  # repeats of the first chunk, in the second
    big = tmp_path / "big.txt"
    big.write_text("\n".join(lines) + "\n")
    added = run_command("scrapeflow", "tasks", "add", str(big), timeout_seconds=300)
    assert added.returncode == 0, added.stderr
    assert f"{big}: {count} valid tasks ({count} new params, {count} new partitions)" in (
        added.stdout
    )
    assert len(list(layout.status_dir.glob("*.status.json"))) == count

    changed = tmp_path / "changed.jsonl"
    changed.write_text(
        "".join(f'{{"url": "{url}"}}\n' for url in lines[: CHUNK_LINES + 1])
        + f'{{"url": "{lines[0]}", "country": "de"}}\n'
    )
    again = run_command("scrapeflow", "tasks", "add", str(changed), timeout_seconds=300)
    assert again.returncode == 1, again.stderr
    assert f"refused: {changed}:{CHUNK_LINES + 2}: " in again.stderr
    assert "country differ" in again.stderr
    assert f"{CHUNK_LINES + 1} valid tasks (0 new params, 0 new partitions), 1 lines" in (
        again.stdout
    )
