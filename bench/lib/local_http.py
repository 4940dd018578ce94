"""Talking to the local servers of a benchmark: a free port, waiting for one, GraphQL POSTs."""

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    check: Callable[[], bool], *, timeout: float, interval: float = 0.1, what: str = "condition"
) -> float:
    """Call `check` until it returns True; returns the seconds waited.

    Raises:
        TimeoutError: when `timeout` seconds pass first.
    """
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what} not reached within {timeout:.0f} s")
        time.sleep(interval)
    return time.monotonic() - started


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """True when GET `url` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def graphql(
    url: str, query: str, variables: Mapping[str, Any] | None = None, *, timeout: float = 600
) -> dict[str, Any]:
    """POST a GraphQL query to `url` (e.g. http://127.0.0.1:3000/graphql); returns `data`.

    Raises:
        RuntimeError: when the answer carries GraphQL errors.
    """
    body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.loads(response.read())
    if answer.get("errors"):
        raise RuntimeError(f"GraphQL errors: {json.dumps(answer['errors'])[:2000]}")
    data: dict[str, Any] = answer["data"]
    return data
