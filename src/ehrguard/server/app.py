"""``ehrguard serve``: the REST API for EHR QA systems, and the web app at ``/``.

Every failure answers with one JSON shape: ``{"error": {"code": ..., "message": ...}}``
(:mod:`ehrguard.server.errors`). Requests need a bearer token (``EHRGUARD_API_TOKENS``) unless the
server is bound to loopback and started with auth disabled; each token has a per-minute rate limit
(:mod:`ehrguard.server.auth`). CORS is off. Every verification is written to the audit log.
The routes are in :mod:`ehrguard.server.routes`; this module only wires them.
"""

from __future__ import annotations

from fastapi import FastAPI

from ehrguard import __version__
from ehrguard.audit import AuditLog
from ehrguard.config import int_setting, switch_setting
from ehrguard.receipt import receipt_key
from ehrguard.server.auth import Auth
from ehrguard.server.errors import add_error_handlers
from ehrguard.server.limits import MODEL_SLOTS, BodyLimit, QuerySlots
from ehrguard.server.routes import router
from ehrguard.verify import get_method
from ehrguard.verify.offline import bank_status


def create_app(*, auth: bool = True, tokens: list[str] | None = None, audit: AuditLog | None = None, rate_limit: int | None = None,
               allow_sql: bool | None = None) -> FastAPI:
    """The application. ``auth=False`` is for loopback only (``ehrguard serve`` enforces it).

    Args:
        auth: require a bearer token.
        tokens: the accepted tokens; None reads ``EHRGUARD_API_TOKENS``.
        audit: the audit log; None opens the one at ``EHRGUARD_AUDIT_PATH``.
        rate_limit: requests per minute per token; None reads ``EHRGUARD_API_RATE_LIMIT``.
        allow_sql: serve ``POST /v1/sql``; None reads ``EHRGUARD_API_SQL``.

    Raises:
        ConfigError: auth is required and there is no token, or the receipt key file cannot be read.
    """
    app = FastAPI(title="ehrguard", version=__version__, description="A safety layer for question answering over EHR databases.")
    receipt_key()  # a receipt key file that cannot be read stops the start, not every request
    app.state.auth = Auth(required=auth, tokens=tokens, rate_limit=rate_limit)
    app.state.audit = audit if audit is not None else AuditLog()
    get_method("offline")  # load the question models now, not under the first requests
    # What the verifier ships with, checked once: /healthz says "degraded" and names what is missing or altered.
    app.state.artifacts = {f"question bank {name}": entry["state"] for name, entry in bank_status().items()}
    app.state.lexicon_states = {}  # (database, its stamp, its lexicon's stamp) -> the lexicon's state, for /healthz
    app.state.sql_enabled = allow_sql if allow_sql is not None else switch_setting("api_sql")
    app.state.query_slots = QuerySlots(int_setting("max_concurrent_queries"), shared=auth)
    # Requests waiting on a model (each up to llm_timeout x retries) hold one of these instead: a slow or hung endpoint
    # then fills these, not the thread pool every other request is served from.
    app.state.model_slots = QuerySlots(MODEL_SLOTS, shared=auth, what="model calls")
    app.state.api_models = set()  # the model names callers have chosen (routes._allowed_model bounds them)
    add_error_handlers(app)
    app.add_middleware(BodyLimit)
    app.include_router(router)
    return app
