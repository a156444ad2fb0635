"""``ehrguard serve``: the REST API for EHR QA systems, and the web app at ``/``.

Every failure answers with one JSON shape: ``{"error": {"code": ..., "message": ...}}``.
Requests need a bearer token (``EHRGUARD_API_TOKENS``) unless the server is bound to
loopback and started with auth disabled. Each token has a per-minute rate limit. CORS is off.
Every verification is written to the audit log.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ehrguard import __version__
from ehrguard.audit import AuditLog
from ehrguard.config import setting
from ehrguard.db.engine import built_databases, named_database
from ehrguard.errors import ConfigError, DatabaseNameError, DatabaseNotFoundError, EhrguardError, LLMError, QueryRefusedError

MAX_QUESTION = 2_000
MAX_SQL = 20_000
STATIC = Path(__file__).parent / "static"


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class VerifyRequest(BaseModel):
    db: str = Field(description="A built database's name (mimic_iv, eicu, ...) or file path.")
    question: str = Field(max_length=MAX_QUESTION)
    sql: str = Field(max_length=MAX_SQL, description="The candidate SQL from the text-to-SQL model.")
    method: str = "offline"
    model: str | None = None
    operating_point: str | None = None


class SqlRequest(BaseModel):
    db: str
    sql: str = Field(max_length=MAX_SQL)
    max_rows: int = Field(default=1000, ge=1, le=10_000)


class AskRequest(BaseModel):
    db: str
    question: str = Field(max_length=MAX_QUESTION)
    model: str | None = None


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class RateLimiter:
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


def create_app(*, auth: bool = True, tokens: list[str] | None = None, audit: AuditLog | None = None, rate_limit: int | None = None,
               allow_sql: bool | None = None) -> FastAPI:
    """The application. ``auth=False`` is for loopback only (``ehrguard serve`` enforces it)."""
    app = FastAPI(title="ehrguard", version=__version__, description="A safety layer for question answering over EHR databases.")
    token_list = tokens if tokens is not None else [t.strip() for t in setting("api_tokens").split(",") if t.strip()]
    if auth and not token_list:
        raise ConfigError("The API needs at least one bearer token: set EHRGUARD_API_TOKENS (or serve on 127.0.0.1 with --no-auth).")
    token_ids = {t: hashlib.sha256(t.encode()).hexdigest()[:12] for t in token_list}
    limiter = RateLimiter(int(rate_limit if rate_limit is not None else setting("api_rate_limit")))
    log = audit or AuditLog()
    from ehrguard.verify.methods import get_method

    get_method("offline")  # load the question models now, not under the first requests
    sql_enabled = allow_sql if allow_sql is not None else setting("api_sql") == "on"

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", [])[1:])
        too_long = first.get("type") == "string_too_long"
        return _error(413 if too_long else 422, "too_large" if too_long else "invalid_request", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "not_found" if exc.status_code == 404 else "http_error", str(exc.detail))

    @app.exception_handler(EhrguardError)
    async def _ehrguard(request: Request, exc: EhrguardError) -> JSONResponse:
        if isinstance(exc, DatabaseNameError):
            return _error(400, "invalid_request", str(exc))
        if isinstance(exc, DatabaseNotFoundError):
            return _error(404, "database_not_found", str(exc))
        if isinstance(exc, QueryRefusedError):
            return _error(400, "query_refused", str(exc))
        if isinstance(exc, ConfigError):
            return _error(400, "bad_configuration", str(exc))
        if isinstance(exc, LLMError):
            return _error(502, "model_error", str(exc))
        return _error(400, type(exc).__name__, str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return _error(500, "internal_error", f"{type(exc).__name__}: {exc}")

    def caller(request: Request) -> str:
        if not auth:
            return "local"
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if token not in token_ids:
            raise ApiError(401, "unauthorized", "Send a valid bearer token: Authorization: Bearer <token>.")
        if not limiter.allow(token_ids[token]):
            raise ApiError(429, "rate_limited", f"More than {limiter.per_minute} requests in a minute; slow down.")
        return token_ids[token]

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": __version__}

    @app.get("/v1/databases")
    def databases(who: str = Depends(caller)) -> dict[str, Any]:
        return {"databases": [{"name": p.stem, "file": p.name} for p in built_databases()]}

    @app.get("/v1/databases/{db}/schema")
    def schema(db: str, who: str = Depends(caller)) -> dict[str, Any]:
        from ehrguard.verify.api import database_context

        return database_context(named_database(db)).schema.to_dict()

    @app.post("/v1/verify")
    def verify(body: VerifyRequest, who: str = Depends(caller)) -> dict[str, Any]:
        return _verify(body, who, "api")

    def _verify(body: VerifyRequest, who: str, interface: str) -> dict[str, Any]:
        from ehrguard.verify import verify as run_verify

        start = time.perf_counter()
        options = {"operating_point": body.operating_point} if body.operating_point else {}
        try:
            verdict = run_verify(body.question, body.sql, db=named_database(body.db), method=body.method, model=body.model, **options)
        except EhrguardError as exc:
            log.record(caller=who, interface=interface, db=body.db, question=body.question, candidate_sql=body.sql,
                       error=f"{type(exc).__name__}: {exc}", duration_ms=1000 * (time.perf_counter() - start))
            raise
        out = verdict.to_dict()
        out["usage"] = {"llm_calls": verdict.llm_calls, "tokens": verdict.tokens}
        out["audit_id"] = log.record_verdict(verdict, caller=who, interface=interface, db=body.db, question=body.question, sql=body.sql,
                                             started=start)
        return out

    @app.post("/v1/sql")
    def run_sql(body: SqlRequest, who: str = Depends(caller)) -> dict[str, Any]:
        if not sql_enabled:
            raise ApiError(403, "disabled", "Raw SQL execution is disabled on this server (EHRGUARD_API_SQL=off).")
        from ehrguard.db import open_database

        start = time.perf_counter()
        result = open_database(named_database(body.db)).execute(body.sql, max_rows=body.max_rows)
        log.record(caller=who, interface="api-sql", db=body.db, candidate_sql=body.sql, executed_sql=body.sql, row_count=len(result.rows),
                   duration_ms=round(1000 * (time.perf_counter() - start), 3), result_values=result.rows)
        return result.to_dict()

    @app.post("/v1/ask")
    def ask(body: AskRequest, who: str = Depends(caller)) -> dict[str, Any]:
        if not body.model:
            raise ApiError(400, "no_model", "Asking needs a model to write the SQL: pass \"model\": \"provider/model\".")
        from ehrguard.clinsql.generate import generate
        from ehrguard.db import open_database
        from ehrguard.llm import LLM

        path = named_database(body.db)
        db = open_database(path)
        gen = generate(body.question, db, LLM(body.model), mode="direct", refine=1, dialect="sqlite" if path.suffix == ".sqlite" else "duckdb")
        if gen.final_sql is None:
            raise ApiError(502, "model_error", "The model wrote no SQL.")
        verdict = _verify(VerifyRequest(db=body.db, question=body.question, sql=gen.final_sql), who, "api-ask")
        rows = None
        if verdict["action"] in ("preserve", "correct"):
            result = db.execute(verdict["sql"], max_rows=1000)
            rows = {"columns": result.columns, "rows": result.rows, "truncated": result.truncated}
        return {"generated_sql": gen.final_sql, "verdict": verdict, "result": rows}

    @app.get("/v1/audit")
    def audit_entries(limit: int = 20, who: str = Depends(caller)) -> dict[str, Any]:
        return {"entries": log.entries(limit=min(limit, 200))}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    return app
