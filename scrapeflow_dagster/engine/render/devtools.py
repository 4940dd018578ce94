"""Chromium driven over its DevTools pipe, from the run's event loop: no driver process between.

Chromium started with `--remote-debugging-pipe` reads the DevTools protocol's commands on its
file descriptor 3 and writes answers and events on 4, each a JSON message ended by a NUL byte
(Playwright and Puppeteer drive it the same way). A pipe, unlike a DevTools port, can be
reached by no other process or user of the host. Chromium quits when the pipe closes, so a
run that dies (SIGKILL included) takes its browser with it.

`DevToolsPipe.launch` starts the browser in a process group of its own; `send` runs one
command (of the browser, or of a target's session: `session_id`) and returns its result;
`on` registers the handler of a session's events. The protocol is Chromium's own, its messages
plain dicts: https://chromedevtools.github.io/devtools-protocol/
"""

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import signal
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# Handlers of one session's events: (method, params).
EventHandler = Callable[[str, dict[str, Any]], None]
# A command unanswered this long fails (the browser may be hung): nothing waits forever.
COMMAND_SECONDS = 60.0
# Chromium's last lines on stderr kept for an error message (why it did not start).
_STDERR_LINES = 20
_CLOSE_SECONDS = 5.0


class BrowserError(Exception):
    """A DevTools command failed, or the browser is gone (crashed, closed)."""


class _Reader(asyncio.Protocol):
    """Hands what a pipe's read end receives to `data`, and its end to `lost`."""

    def __init__(self, data: Callable[[bytes], None], lost: Callable[[], None]) -> None:
        self._data = data
        self._lost = lost

    def data_received(self, data: bytes) -> None:
        self._data(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost()


class DevToolsPipe:
    """One Chromium process and the pipe that drives it (see the module)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.connected = True
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, EventHandler] = {}
        self._buffer = bytearray()
        self._stderr_buffer = b""
        self._stderr_lines: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._transports: list[asyncio.BaseTransport] = []
        self._commands: asyncio.WriteTransport | None = None
        self._closing = False

    @classmethod
    async def launch(cls, executable: str, args: list[str]) -> "DevToolsPipe":
        """Start `executable` with `args` and `--remote-debugging-pipe`, its DevTools on fds 3
        and 4, stdout to /dev/null, stderr kept (its last lines name why it failed).

        Raises:
            BrowserError: it could not be started, or did not answer its first command.
        """
        commands_read, commands_write = os.pipe()
        answers_read, answers_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        ours = (commands_write, answers_read, stderr_read)
        theirs = (commands_read, answers_write, stderr_write)
        actions = [
            (os.POSIX_SPAWN_DUP2, commands_read, 3),
            (os.POSIX_SPAWN_DUP2, answers_write, 4),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, stderr_write, 2),
        ]
        try:
            pid = os.posix_spawn(
                executable,
                [executable, *args, "--remote-debugging-pipe"],
                os.environ,
                file_actions=actions,
                setpgroup=0,  # its zygotes and renderers are killed with it (`close`)
            )
        except OSError as exc:
            for fd in (*ours, *theirs):
                os.close(fd)
            raise BrowserError(f"{executable} could not be started: {exc.strerror}") from None
        for fd in theirs:
            os.close(fd)
        pipe = cls(pid)
        try:
            await pipe._connect(*ours)
            await pipe.send("Browser.getVersion", timeout=30)
        except BrowserError as exc:
            await asyncio.sleep(0.1)  # its last words on stderr
            why = pipe.last_stderr() or str(exc)
            await pipe.close()
            raise BrowserError(why) from None
        except BaseException:  # cancelled: the browser goes with the launch
            await asyncio.shield(pipe.close())
            raise
        return pipe

    async def _connect(self, commands: int, answers: int, stderr: int) -> None:
        loop = asyncio.get_running_loop()
        writing, _ = await loop.connect_write_pipe(
            asyncio.Protocol, open(commands, "wb", buffering=0)
        )
        self._commands = writing
        reading, _ = await loop.connect_read_pipe(
            lambda: _Reader(self._answered, lambda: self._lost("the browser is gone")),
            open(answers, "rb", buffering=0),
        )
        stderr_reading, _ = await loop.connect_read_pipe(
            lambda: _Reader(self._logged, lambda: None), open(stderr, "rb", buffering=0)
        )
        self._transports = [writing, reading, stderr_reading]

    def last_stderr(self) -> str:
        """Chromium's last lines on stderr (why it failed), or ''."""
        return " | ".join(line for line in self._stderr_lines if line.strip())

    def on(self, session_id: str, handler: EventHandler | None) -> None:
        """Send `session_id`'s events ('' for the browser's) to `handler` (None: to nobody)."""
        if handler is None:
            self._handlers.pop(session_id, None)
        else:
            self._handlers[session_id] = handler

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session_id: str = "",
        *,
        timeout: float = COMMAND_SECONDS,
    ) -> dict[str, Any]:
        """Run the DevTools command `method` (of `session_id`'s target, '' for the browser)
        and return its result.

        Raises:
            BrowserError: the command failed (its message), was not answered within
                `timeout` seconds, or the browser is gone.
        """
        if not self.connected or self._commands is None:
            raise BrowserError("the browser is gone")
        message: dict[str, Any] = {"id": next(self._ids), "method": method}
        if params:
            message["params"] = params
        if session_id:
            message["sessionId"] = session_id
        answer = asyncio.get_running_loop().create_future()
        self._waiting[message["id"]] = answer
        try:
            # Buffered by the transport: a large fulfilled body never blocks the loop.
            self._commands.write(json.dumps(message).encode() + b"\0")
            async with asyncio.timeout(timeout):
                return await answer
        except TimeoutError:
            raise BrowserError(f"{method}: no answer within {timeout:g} s") from None
        finally:
            self._waiting.pop(message["id"], None)

    def _answered(self, chunk: bytes) -> None:
        self._buffer += chunk
        while (end := self._buffer.find(b"\0")) >= 0:
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            try:
                self._dispatch(json.loads(raw))
            except Exception:  # one bad message or handler: the others still go through
                logger.exception("a DevTools message could not be handled")

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            answer = self._waiting.get(message["id"])
            if answer is None or answer.done():
                return
            if "error" in message:
                answer.set_exception(BrowserError(message["error"].get("message", "error")))
            else:
                answer.set_result(message.get("result", {}))
            return
        handler = self._handlers.get(message.get("sessionId", ""))
        if handler is not None:
            handler(message["method"], message.get("params", {}))

    def _logged(self, chunk: bytes) -> None:
        lines = (self._stderr_buffer + chunk).split(b"\n")
        self._stderr_buffer = lines.pop()[-4096:]
        self._stderr_lines.extend(line.decode(errors="replace")[:500] for line in lines)

    def _lost(self, why: str) -> None:
        if not self.connected:
            return
        self.connected = False
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(BrowserError(why))
        self._waiting.clear()
        for handler in list(self._handlers.values()):
            with contextlib.suppress(Exception):
                handler("Inspector.detached", {"reason": why})

    async def close(self) -> None:
        """Close the browser: asked to, then its process group killed if it is not gone within
        5 s, and whatever else of the group is left; its pipe closed and its process reaped
        (idempotent)."""
        if self._closing:
            return
        self._closing = True
        if self.connected:
            with contextlib.suppress(BrowserError):
                await self.send("Browser.close", timeout=_CLOSE_SECONDS)
        self._lost("the browser was closed")
        for transport in self._transports:
            transport.close()
        if not await _exited(self.pid, _CLOSE_SECONDS):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            await _exited(self.pid, _CLOSE_SECONDS)
        # Its group's id cannot be reused while the exited leader is not reaped: what it left
        # behind (a zygote, a renderer) is killed first, so nothing outlives the run.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, os.WNOHANG)


async def _exited(pid: int, seconds: float) -> bool:
    """Wait up to `seconds` for child `pid` to exit, leaving it unreaped; whether it did."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        try:
            found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True  # reaped already
        if found is not None:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)
