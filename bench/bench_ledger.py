"""How fast the DuckDB ledger records, spools and ingests rows, and rebuilds from status files.

    .venv/bin/python -m bench.bench_ledger [--rows 100000] [--status-files 100000]

Prints rows/s per phase and the peak RSS after each part (ru_maxrss is a high-water mark).
"""

import argparse
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.history import (
    Ledger,
    StepRow,
    connect_readonly,
    rebuild_from_status_dir,
)

T0 = datetime(2026, 11, 22, 14, 0, 0)


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def step_row(i: int) -> StepRow:
    failed = i % 10 == 0
    return StepRow(
        key=f"task-{i:07d}",
        executor="scrape",
        status="ERROR" if failed else "SUCCESS",
        error_class="HttpStatusError" if failed else None,
        error_kind="transient" if failed else None,
        message="HTTP response 503 via http://user:pw@10.0.0.1:8080" if failed else None,
        attempts=1 + i % 3,
        http_status=503 if failed else 200,
        size=None if failed else 10_000 + i,
        md5=None if failed else f"{i:032x}",
        proxy_host="10.0.0.1:8080",
        domain=f"site{i % 100}.test",
        started_at=T0 + timedelta(milliseconds=i),
        ended_at=T0 + timedelta(milliseconds=i + 350),
    )


def bench_record_flush_sync(work: Path, rows: int) -> None:
    """Record `rows` step rows, flush them to the spool, and sync the spool into DuckDB."""
    db_path = work / "bench.duckdb"
    step_rows = [step_row(i) for i in range(rows)]  # built up front: not the ledger's cost
    ledger = Ledger(db_path, run_id="bench")

    started = time.perf_counter()
    for row in step_rows:
        ledger.record_step(row)
    recorded = time.perf_counter()
    ledger.flush()
    flushed = time.perf_counter()
    result = ledger.sync()
    synced = time.perf_counter()

    with connect_readonly(db_path) as conn:
        count = conn.execute("SELECT count(*) FROM step_runs").fetchone()
    assert count == (rows,) and result.ingested_rows == rows, (count, result)
    total = synced - started
    print(f"ledger: {rows:,} step rows, {result.ingested_files} spool files")
    print(f"  record (incl. auto-flush) {rows / (recorded - started):>12,.0f} rows/s")
    print(f"  flush (last file)         {(flushed - recorded) * 1000:>12,.1f} ms")
    print(f"  sync into DuckDB          {rows / (synced - flushed):>12,.0f} rows/s")
    print(f"  record+flush+sync         {rows / total:>12,.0f} rows/s ({total:.2f} s)")
    print(f"  peak RSS                  {peak_rss_mib():>12,.1f} MiB")


def bench_rebuild(work: Path, files: int) -> None:
    """Write `files` status files, then time `rebuild_from_status_dir` over them."""
    status_dir = work / "status"
    status_dir.mkdir()
    headers = {"content-type": "text/html; charset=utf-8", "server": "nginx", "x-cache": "HIT"}
    for i in range(files):
        key = f"task-{i:07d}"
        url = f"https://site{i % 100}.test/page/{i}"
        data = {
            "name": key,
            "params": {"url": url},
            "scrape": {
                "size": 10_000 + i,
                "content": f"{i:032x}",
                "response_headers": headers,
                "http_status": 200,
                "final_url": url,
            },
            "scrape_status": "SUCCESS",
            "scrape_last_run": str(T0 + timedelta(seconds=i)),
            "scrape_started": str(T0 + timedelta(seconds=i - 1)),
            "scrape_attempts": 1,
            "scrape_proxy": "10.0.0.1:8080",
        }
        (status_dir / f"{key}.status.json").write_bytes(orjson.dumps(data))

    started = time.perf_counter()
    result = rebuild_from_status_dir(status_dir, work / "rebuild.duckdb")
    elapsed = time.perf_counter() - started
    started = time.perf_counter()
    again = rebuild_from_status_dir(status_dir, work / "rebuild.duckdb")
    elapsed_again = time.perf_counter() - started

    assert result.files_read == files and result.step_rows_inserted == files, result
    assert again.step_rows_inserted == 0, again
    print(f"rebuild: {files:,} status files")
    print(f"  into an empty database    {files / elapsed:>12,.0f} files/s ({elapsed:.2f} s)")
    again_rate = files / elapsed_again
    print(f"  again (nothing to change) {again_rate:>12,.0f} files/s ({elapsed_again:.2f} s)")
    print(f"  peak RSS                  {peak_rss_mib():>12,.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="step rows to record")
    parser.add_argument("--status-files", type=int, default=0, help="status files to rebuild")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        bench_record_flush_sync(Path(tmp), args.rows)
        if args.status_files:
            bench_rebuild(Path(tmp), args.status_files)


if __name__ == "__main__":
    main()
