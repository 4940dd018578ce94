"""Per-host limits shared by every machine of a deployment, through Redis: the slots and the
delay of a host hold across worker hosts that do not share a file system (lock files only hold
on one machine). A deployment with Celery workers has Redis already (its broker).

A slot is a lease in a sorted set per host (`scrapeflow:host:<host>:slots`, scored by when it
expires), taken by a Lua script only while fewer than `limit` unexpired leases are there. A
live process renews its leases every third of `lease_seconds` for as long as it holds them
(however long a request, or its wait for the host's delay, lasts), so a worker host that dies
mid-request frees its slots within `lease_seconds` (30 s), not after the longest a request could
take. The renewal runs on the run's event loop: a loop blocked for more than two thirds of a
lease (20 s) could let a lease run out while its request goes on. A host's next start time is
booked the same way (`scrapeflow:host:<host>:next`). Times are Redis's own clock (`TIME`), so
machines with drifting clocks still agree.

When Redis cannot be reached (a restart, a failover), the limits fall back to each machine's
own (`SharedLimitsDown`: the caller uses its lock files) for `RETRY_AFTER_SECONDS` before Redis
is asked again: a shard keeps fetching through a broker outage, politely per machine.
"""

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

# KEYS[1]: the host's lease set. ARGV: limit, lease in ms, token. Returns 1 when taken.
_TAKE = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
"""
# KEYS[1]: the host's next start (ms). ARGV: delay in ms. Returns ms to wait for this start.
_BOOK = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
local booked = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = math.max(ms, booked)
redis.call('SET', KEYS[1], start + tonumber(ARGV[1]), 'PX', tonumber(ARGV[1]) + 60000)
return start - ms
"""
# KEYS[1]: the host's lease set. ARGV: lease in ms, then the tokens to renew. Renews those
# still there (one that ran out may have been taken by another: it is not brought back).
_RENEW = """
local now = redis.call('TIME')
local ms = now[1] * 1000 + math.floor(now[2] / 1000)
local kept = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], 'XX', ms + tonumber(ARGV[1]), ARGV[i])
    kept = kept + 1
  end
end
if kept > 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return kept
"""
DEFAULT_LEASE_SECONDS = 30.0
RETRY_AFTER_SECONDS = 5.0
_TIMEOUT_SECONDS = 2.0

logger = logging.getLogger(__name__)


class SharedLimitsDown(Exception):
    """Redis cannot be reached: use this machine's limits for now."""


class SharedHostLimits:
    """Host slots and delays kept in the Redis at `url` (see the module).

    Raises:
        ImportError: naming the extra when the redis client is not installed.
    """

    def __init__(self, url: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        try:
            import redis.asyncio as redis_asyncio
            import redis.exceptions as redis_errors
        except ImportError as exc:
            raise ImportError(
                "per-host limits shared through Redis need the redis client: "
                "`pip install 'scrapeflow-dagster[celery]'`"
            ) from exc
        self._client: Any = redis_asyncio.Redis.from_url(
            url, socket_connect_timeout=_TIMEOUT_SECONDS, socket_timeout=_TIMEOUT_SECONDS
        )
        self._unreachable: tuple[type[BaseException], ...] = (
            redis_errors.ConnectionError,
            redis_errors.TimeoutError,
            OSError,
        )
        self._down_until = 0.0
        self._lease_ms = int(lease_seconds * 1000)
        self._take = self._client.register_script(_TAKE)
        self._book = self._client.register_script(_BOOK)
        self._renew = self._client.register_script(_RENEW)
        self._held: dict[str, set[str]] = {}  # host -> tokens of the leases held here
        self._renewing: asyncio.Task[None] | None = None

    @staticmethod
    def _key(host: str, what: str) -> str:
        return f"scrapeflow:host:{host}:{what}"

    def _check_up(self) -> None:
        if time.monotonic() < self._down_until:
            raise SharedLimitsDown("Redis was unreachable moments ago")

    def _went_down(self, exc: BaseException) -> SharedLimitsDown:
        if time.monotonic() >= self._down_until:
            logger.warning(
                "per-host limits: Redis unreachable (%s); each machine keeps its own for %.0f s",
                type(exc).__name__,
                RETRY_AFTER_SECONDS,
            )
        self._down_until = time.monotonic() + RETRY_AFTER_SECONDS
        return SharedLimitsDown(str(exc))

    async def try_take(self, host: str, limit: int) -> str | None:
        """A lease on one of `host`'s `limit` slots (its token), None when all are taken.

        Raises:
            SharedLimitsDown: Redis cannot be reached.
        """
        self._check_up()
        token = uuid.uuid4().hex
        key = self._key(host, "slots")
        try:
            taken = await self._take(keys=[key], args=[limit, self._lease_ms, token])
        except self._unreachable as exc:
            raise self._went_down(exc) from exc
        if not taken:
            return None
        self._held.setdefault(host, set()).add(token)
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.get_running_loop().create_task(self._renew_while_held())
        return token

    async def give_back(self, host: str, token: str) -> None:
        """End the lease `token` on a slot of `host` (when Redis cannot be reached, the lease
        runs out by itself)."""
        tokens = self._held.get(host)
        if tokens is not None:
            tokens.discard(token)
            if not tokens:
                del self._held[host]
        try:
            await self._client.zrem(self._key(host, "slots"), token)
        except self._unreachable as exc:
            self._went_down(exc)

    async def _renew_while_held(self) -> None:
        """Renew every lease held here each third of the lease, until none is held: all hosts
        in one round trip (a pipeline), so a renewal takes one timeout at the most."""
        while self._held:
            await asyncio.sleep(self._lease_ms / 3000)
            held = [(host, list(tokens)) for host, tokens in self._held.items() if tokens]
            if not held:
                continue
            try:
                async with self._client.pipeline(transaction=False) as pipe:
                    for host, tokens in held:
                        await self._renew(
                            keys=[self._key(host, "slots")],
                            args=[self._lease_ms, *tokens],
                            client=pipe,
                        )
                    await pipe.execute()
            except self._unreachable as exc:
                self._went_down(exc)  # the leases may run out: the slots are given back
            except Exception:  # an error answer (READONLY in a failover, OOM): next time
                logger.exception("per-host limits: renewing the slot leases failed")

    async def book(self, host: str, delay_seconds: float) -> float:
        """Book this request's start at `host`, `delay_seconds` after the one booked before it;
        returns how long to wait until then (seconds).

        Raises:
            SharedLimitsDown: Redis cannot be reached.
        """
        self._check_up()
        key = self._key(host, "next")
        try:
            wait_ms = await self._book(keys=[key], args=[int(delay_seconds * 1000)])
        except self._unreachable as exc:
            raise self._went_down(exc) from exc
        return float(wait_ms) / 1000

    async def close(self) -> None:
        """Stop renewing and close the connections."""
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._renewing
            self._renewing = None
        try:
            await self._client.aclose()
        except self._unreachable:
            pass
