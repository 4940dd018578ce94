"""A site and a guarded client in one process, for the DNS rebinding test (run inside a network
namespace whose hosts file the test rewrites).

`python -m scrapeflow_dagster_tests.engine.polite.rebind_child NAME` serves on 0.0.0.0 (a free
port, printed as the first line), then for each line read on stdin requests
`http://NAME:PORT/` and prints one JSON line:

- `guarded`: through a session built as a run builds the one of public tasks (its connector
  resolving with `GuardedResolver`, aiohttp's DNS cache off), under `AddressGuard.guarding`:
  `{"status": 200}` or `{"refused": message}`;
- `plain`: through a plain aiohttp session (the control: where the name leads unguarded);
- `served`: `{"served": [...]}`, the local address of every request the site answered.

It exits at the end of stdin.
"""

import asyncio
import json
import sys
from typing import Any

import aiohttp
from aiohttp import web

from scrapeflow_dagster.engine.errors import AddressRefusedError
from scrapeflow_dagster.engine.polite.addresses import AddressGuard, GuardedResolver


async def main(name: str) -> None:
    served: list[str] = []

    async def page(request: web.Request) -> web.Response:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        served.append(str(sockname[0]) if sockname else "?")
        response = web.Response(text="ok")
        # A rebinding site closes each connection, so the next request opens (and resolves)
        # a new one rather than reusing the public connection from the keep-alive pool.
        response.force_close()
        return response

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "0.0.0.0", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(port, flush=True)
    url = f"http://{name}:{port}/"

    guard = AddressGuard()
    loop = asyncio.get_running_loop()
    # The two options the run's guarded session rests on (built here rather than imported:
    # where the run builds it is being moved); other connector options change nothing here.
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(guard), use_dns_cache=False)
    async with aiohttp.ClientSession(connector=connector) as guarded:
        while command := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            answer: dict[str, Any]
            if command == "guarded":
                try:
                    with guard.guarding(name, task_internal=False, what=f"link to {url}"):
                        async with guarded.get(url) as response:
                            answer = {"status": response.status}
                except AddressRefusedError as exc:
                    answer = {"refused": str(exc)}
            elif command == "plain":
                async with aiohttp.ClientSession() as plain, plain.get(url) as response:
                    answer = {"status": response.status}
            else:
                answer = {"served": served}
            print(json.dumps(answer), flush=True)
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
