"""Who is calling the REST API: bearer tokens, their ids, and a per-minute rate limit per token.

A token is known by its id (the first 12 hex digits of its SHA-256) in the audit log and the
rate limiter; the token itself is never stored. Without auth (``ehrguard serve --no-auth``,
loopback only) every caller is ``local`` and unlimited.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import defaultdict, deque

from fastapi import Request

from ehrguard.config import int_setting, setting
from ehrguard.errors import ConfigError
from ehrguard.server.errors import ApiError


def token_id(token: str) -> str:
    """The name a token goes by in the audit log and the rate limiter."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


class RateLimiter:
    """At most ``per_minute`` calls per key in any sliding minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.calls: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            q = self.calls[key]
            while q and now - q[0] > 60:
                q.popleft()
            if len(q) >= self.per_minute:
                return False
            q.append(now)
            return True


class Auth:
    """The bearer tokens a server accepts and their rate limit.

    Args:
        required: False serves everyone as ``local`` (``ehrguard serve`` allows it on loopback only).
        tokens: the accepted tokens; None reads ``EHRGUARD_API_TOKENS`` (comma-separated).
        rate_limit: requests per minute per token; None reads ``EHRGUARD_API_RATE_LIMIT``.

    Raises:
        ConfigError: auth is required and there is no token.
    """

    def __init__(self, *, required: bool = True, tokens: list[str] | None = None, rate_limit: int | None = None) -> None:
        token_list = tokens if tokens is not None else [t.strip() for t in setting("api_tokens").split(",") if t.strip()]
        if required and not token_list:
            raise ConfigError("The API needs at least one bearer token: set EHRGUARD_API_TOKENS (or serve on 127.0.0.1 with --no-auth).")
        self.required = required
        self.token_ids = {t: token_id(t) for t in token_list}
        self.limiter = RateLimiter(int_setting("api_rate_limit", rate_limit))

    def identify(self, authorization: str) -> str:
        """The caller's token id from an ``Authorization`` header (``local`` without auth).

        Raises:
            ApiError: 401 for a missing or unknown token, 429 past the rate limit.
        """
        if not self.required:
            return "local"
        token = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
        if token not in self.token_ids:
            raise ApiError(401, "unauthorized", "Send a valid bearer token: Authorization: Bearer <token>.")
        if not self.limiter.allow(self.token_ids[token]):
            raise ApiError(429, "rate_limited", f"More than {self.limiter.per_minute} requests in a minute; slow down.")
        return self.token_ids[token]


def caller(request: Request) -> str:
    """The FastAPI dependency of every ``/v1`` route: the calling token's id (see :meth:`Auth.identify`)."""
    auth: Auth = request.app.state.auth
    return auth.identify(request.headers.get("authorization", ""))
