"""Variant B of the engine benchmark: what a careful hand-written aiohttp loop does for the tasks.

P workers pull from the same kind of generator as the engine, GET, read the body, md5 it, write
it atomically (temp file + `os.replace`) and write a small status JSON atomically (orjson,
indent 2): the honest baseline the engine's throughput is compared with.
"""

import asyncio
import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson

USER_AGENT = "scrapeflow-dagster-bench/0.1"


def task_stream(base_url: str, n: int, pages: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The tasks, as a generator of `(key, params)` pairs: both variants consume the same."""
    for i in range(n):
        yield f"page-{i:07d}", {"url": f"{base_url}/page/{i % pages}"}


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


async def run_baseline(base_url: str, directory: Path, n: int, pages: int, parallelism: int) -> int:
    """Variant B: what a careful hand-written aiohttp loop does for the same tasks."""
    pairs = task_stream(base_url, n, pages)
    done = 0
    connector = aiohttp.TCPConnector(limit=parallelism, limit_per_host=0)
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=10),
        headers={"User-Agent": USER_AGENT},
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:

        async def worker() -> None:
            nonlocal done
            for key, params in pairs:
                async with session.get(params["url"]) as response:
                    body = await response.read()
                    code = response.status
                    headers = {str(k): v for k, v in response.headers.items()}
                    final_url = str(response.url)
                if code != 200:
                    raise RuntimeError(f"{params['url']} answered {code}")
                _write_atomic(directory / f"{key}.scrape", body)
                status = {
                    "name": key,
                    "params": params,
                    "scrape": {
                        "size": len(body),
                        "content": hashlib.md5(body).hexdigest(),
                        "response_headers": headers,
                        "http_status": code,
                        "final_url": final_url,
                    },
                    "scrape_status": "SUCCESS",
                    "scrape_last_run": str(datetime.now(UTC).replace(tzinfo=None)),
                }
                _write_atomic(
                    directory / f"{key}.status.json",
                    orjson.dumps(status, option=orjson.OPT_INDENT_2),
                )
                done += 1

        async with asyncio.TaskGroup() as group:
            for _ in range(parallelism):
                group.create_task(worker())
    return done
