"""Limits of the REST server itself: the size of a request body, and how many raw SQL queries run at once.

Field limits (question and SQL length) are checked by the request models; a body can still carry
megabytes in fields no model reads, so :class:`BodyLimit` refuses any body over
:data:`MAX_BODY_BYTES` before the app sees it (by its Content-Length, or by counting a body sent
without one). :class:`QuerySlots` bounds the raw queries in flight, in all and per caller, so a burst of
runaway queries cannot take every worker and thread from verification and other callers.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from ehrguard.server.errors import ApiError

# The largest legitimate request, a 2,000-character question and 20,000 characters of SQL with every
# character escaped, is about 130 KB of JSON.
MAX_BODY_BYTES = 256 << 10
# Longest candidate SQL a caller of the REST API or the MCP server may send: no question's SQL needs more, and the
# checks' time grows with it (the library's own cap, max_sql_chars, is for local use).
MAX_SQL = 20_000
WAIT_FOR_SLOT_S = 1.0
# Requests waiting on a model at once (the server's thread pool has 40 threads; these leave the rest to everyone else).
MODEL_SLOTS = 16
# Seconds the whole body of a request may take to arrive: a client that declares a body and trickles it (a byte every
# 20 s) would otherwise hold a connection, and its memory, for as long as it likes.
BODY_TIMEOUT_S = 30.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is answered 413 in the one error shape, unread by the app; one
    that has not all arrived within ``timeout_s`` is answered 408."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int = MAX_BODY_BYTES,
                 timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        body, more = bytearray(), True
        deadline = time.monotonic() + self.timeout_s
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await self._answer(send, 408, "too_slow", f"The request body did not arrive within {self.timeout_s:g} s. Send it "
                                   "at once.")
                return
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._refuse(send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        await self._answer(send, 413, "too_large", f"The request body is larger than {self.max_bytes // 1024} KiB. Send a shorter "
                           "question or SQL.")

    @staticmethod
    async def _answer(send: Send, status: int, code: str, message: str) -> None:
        payload = json.dumps({"error": {"code": code, "message": message}}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": payload})


class QuerySlots:
    """At most ``size`` raw queries at once, and at most half of them (at least one) for any one caller.

    A caller waits up to :data:`WAIT_FOR_SLOT_S` for a slot within its share and within the total, then is
    told to retry. So one client sending runaway queries holds at most half the slots, and the others are
    still served.
    """

    def __init__(self, size: int, *, shared: bool = True, what: str = "queries") -> None:
        self.size, self.what = size, what
        # shared by several callers: each at most half; one caller (auth off: everyone is the same caller): all of them
        self.per_caller = max(1, size // 2) if shared else size
        self._free = threading.Condition()
        self._running = 0
        self._held: dict[str, int] = {}

    @contextmanager
    def hold(self, caller: str) -> Iterator[None]:
        deadline = time.monotonic() + WAIT_FOR_SLOT_S
        with self._free:
            while self._held.get(caller, 0) >= self.per_caller or self._running >= self.size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._busy(caller)
                self._free.wait(remaining)
            self._held[caller] = self._held.get(caller, 0) + 1
            self._running += 1
        try:
            yield
        finally:
            with self._free:
                self._running -= 1
                self._held[caller] -= 1
                if not self._held[caller]:
                    del self._held[caller]
                self._free.notify_all()

    def _busy(self, caller: str) -> ApiError:
        setting = " (EHRGUARD_MAX_CONCURRENT_QUERIES sets the limit)" if self.what == "queries" else ""
        if self._held.get(caller, 0) >= self.per_caller:
            return ApiError(503, "busy", f"You already have {self.per_caller} {self.what} running on this server; wait for them to "
                            f"finish{setting}.")
        return ApiError(503, "busy", f"{self.size} {self.what} are already running on this server{setting}. Retry in a few seconds.")
