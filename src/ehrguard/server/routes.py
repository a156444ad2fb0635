"""The REST API's routes: each parses its request, makes one library call and shapes the reply.

Verification and asking go through :func:`ehrguard.answer` (which writes the audit entry);
the per-app parts (tokens, audit log, the raw-SQL switch) live on ``app.state``, set by
:func:`ehrguard.server.app.create_app`. Route function names are the OpenAPI operation ids.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ehrguard import Answer, __version__, answer
from ehrguard.audit import AuditLog
from ehrguard.config import setting
from ehrguard.db import built_databases, named_database
from ehrguard.generation import example_questions
from ehrguard.runtime import runtime
from ehrguard.server.auth import caller
from ehrguard.server.errors import ApiError
from ehrguard.server.limits import MAX_SQL
from ehrguard.verify import MAX_QUESTION_CHARS, database_context

MAX_QUESTION = MAX_QUESTION_CHARS  # the library refuses longer questions too
STATIC = Path(__file__).parent / "static"

router = APIRouter()


def _not_a_switch(value: object) -> object:
    if isinstance(value, bool):  # JSON true would be read as 1 row
        raise ValueError("a number of rows, not true or false")
    return value


RowCount = Annotated[int, BeforeValidator(_not_a_switch), Field(ge=1, le=10_000)]


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not silently ignored

    db: str = Field(description="A built database's name (mimic_iv, eicu, ...) or file path.")
    question: str = Field(max_length=MAX_QUESTION)
    sql: str = Field(max_length=MAX_SQL, description="The candidate SQL from the text-to-SQL model.")
    method: str = "offline"
    model: str | None = None
    operating_point: str | None = None
    execute: bool = Field(default=False, description="Also run the verdict's SQL (preserve / correct) and return its rows in "
                          "`result`; the receipt then carries their fingerprint.")
    max_rows: RowCount = 1000


class SqlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db: str
    sql: str = Field(max_length=MAX_SQL)
    max_rows: RowCount = 1000


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db: str
    question: str = Field(max_length=MAX_QUESTION)
    model: str | None = None  # None: the offline reader writes the SQL (no LLM)
    penalty: float | None = Field(default=None, ge=0, le=1000, allow_inf_nan=False)  # the offline reader's bar is chosen for it


def audit_log(request: Request) -> AuditLog:
    """The app's audit log."""
    log: AuditLog = request.app.state.audit
    return log


def sql_enabled(request: Request) -> bool:
    """Whether ``POST /v1/sql`` may run raw SQL on this server."""
    return bool(request.app.state.sql_enabled)


# The dependencies of the routes: they add nothing to the OpenAPI document.
Caller = Annotated[str, Depends(caller)]
Audit = Annotated[AuditLog, Depends(audit_log)]
SqlEnabled = Annotated[bool, Depends(sql_enabled)]


@router.get("/healthz")
def healthz(request: Request) -> dict[str, Any]:
    artifacts: dict[str, str] = request.app.state.artifacts  # the shipped ones, checked at start
    healthy = all(state == "ok" for state in artifacts.values())
    # How many databases have a current value lexicon (counts: /healthz needs no token, and the names need one). Without
    # one the verdicts are the same, the first checks slower: said here and, by name, in `ehrguard doctor`.
    lexicons: dict[str, int] = {}
    for path in built_databases():
        state = _lexicon_state(request.app.state.lexicon_states, path)
        lexicons[state] = lexicons.get(state, 0) + 1
    return {"status": "ok" if healthy else "degraded", "version": __version__, "artifacts": artifacts,
            "value_lexicons": lexicons}


def _lexicon_state(cache: dict[tuple[Any, ...], str], path: Path) -> str:
    """A database's lexicon state, worked out again only when the database or its lexicon changed (working it out can
    mean hashing the database file)."""
    from ehrguard.db import lexicon_path, lexicon_state
    from ehrguard.profiles import profile_for_file
    from ehrguard.runtime import file_key

    def stamp(p: Path) -> tuple[str, int, int] | None:
        try:
            return file_key(p)
        except OSError:
            return None

    key = (str(path), stamp(path), stamp(lexicon_path(path)))
    if key not in cache:
        if len(cache) > 256:
            cache.clear()
        cache[key] = lexicon_state(path, profile_for_file(path).value_columns)
    return cache[key]


@router.get("/v1/databases")
def databases(who: Caller) -> dict[str, Any]:
    return {"databases": [{"name": p.stem, "file": p.name} for p in built_databases()]}


@router.get("/v1/databases/{db}/schema")
def schema(db: str, who: Caller) -> dict[str, Any]:
    return database_context(named_database(db)).schema.to_dict()


MAX_API_MODELS = 16  # different model names one server run serves when the operator lists none (each keeps a client)


def _allowed_model(model: str | None, request: Request) -> None:
    """A model in this server's process (``local/...``: a GGUF file read and loaded here) is the operator's to choose,
    never a caller's: a path would read any file the server can, and loading one stalls every other request. Other
    models: those the operator lists (EHRGUARD_API_MODELS), else any, up to MAX_API_MODELS names (each name keeps a
    client and its threads for the life of the process)."""
    if model is None:
        return
    if model.strip().lower().startswith("local/"):
        raise ApiError(400, "local_model", f"{model!r} names a model loaded inside this server; over the API choose a served "
                       "model (an endpoint the operator configured), or run `ehrguard verify --model local/...` on your machine.")
    provider, _, name = model.strip().partition("/")
    if provider.lower() == "scripted":
        from ehrguard.llm import scripted_ready

        if not scripted_ready(name):  # a test's stand-in: only one a test in this process prepared answers anything
            raise ApiError(400, "model_not_allowed", f"{model!r} is a test provider with no replies prepared in this server; "
                           "choose a served model (openai/..., an endpoint the operator configured).")
    allowed = [m.strip() for m in (setting("api_models") or "").split(",") if m.strip()]
    if allowed and model not in allowed:
        raise ApiError(400, "model_not_allowed", f"{model!r} is not a model this server offers; choose one of: {', '.join(allowed)}.")
    seen: set[str] = request.app.state.api_models
    if not allowed and model not in seen and len(seen) >= MAX_API_MODELS:
        raise ApiError(400, "model_not_allowed", f"This server has already served {MAX_API_MODELS} different models; use one "
                       "of them, or ask the operator to list the models it offers (EHRGUARD_API_MODELS).")


def _served(model: str | None, reply: Answer, request: Request) -> None:
    """Count a model name among those served once a request with it got a verdict: names that name no model (or a model
    that did not answer) do not use up the server's budget of names, which would lock every caller out."""
    if model is not None and reply.verdict is not None and reply.error is None:
        request.app.state.api_models.add(model)


def _slot(request: Request, who: str, needed: bool) -> AbstractContextManager[None]:
    """One of the caller's query slots for a request that runs SQL; else one of the model slots (it waits on a model)."""
    return request.app.state.query_slots.hold(who) if needed else request.app.state.model_slots.hold(who)


@router.post("/v1/verify")
def verify(body: VerifyRequest, request: Request, who: Caller, log: Audit) -> dict[str, Any]:
    _allowed_model(body.model, request)
    # Verifying without a model runs the candidate (the offline checks; a baseline such as preserve_all with execute runs
    # it as it is): it holds a query slot like a raw query, so a caller sending runaway SQL to verify holds at most their
    # share, and the others are served. With execute the verdict's SQL runs, whatever the method: a slot too. A method
    # that waits on an LLM and runs nothing holds one of the model slots instead.
    with _slot(request, who, not body.model or body.execute):
        reply = answer(body.question, db=body.db, sql=body.sql, method=body.method, verifier_model=body.model,
                       operating_point=body.operating_point, names_only=True, execute=body.execute, max_rows=body.max_rows,
                       audit=log, caller=who, interface="api")
    _served(body.model, reply, request)
    out = reply.raise_for_error().verdict_dict()
    if body.execute:
        out["result"] = reply.result_dict()
    return out


@router.post("/v1/sql")
def run_sql(body: SqlRequest, request: Request, who: Caller, log: Audit, enabled: SqlEnabled) -> dict[str, Any]:
    if not enabled:
        raise ApiError(403, "disabled", "Raw SQL execution is disabled on this server (EHRGUARD_API_SQL=off).")
    start = time.perf_counter()
    context = database_context(named_database(body.db))
    with request.app.state.query_slots.hold(who):
        result = context.db.execute(body.sql, max_rows=body.max_rows)
    log.record(caller=who, interface="api-sql", db=body.db, candidate_sql=body.sql, executed_sql=body.sql, row_count=len(result.rows),
               duration_ms=round(1000 * (time.perf_counter() - start), 3), result_values=result.rows)
    return result.to_dict()


@router.post("/v1/ask")
def ask(body: AskRequest, request: Request, who: Caller, log: Audit) -> dict[str, Any]:
    _allowed_model(body.model, request)
    with _slot(request, who, not body.model):
        reply = answer(body.question, db=body.db, model=body.model or None, names_only=True, max_rows=1000, audit=log, caller=who,
                       interface="api-ask", penalty=body.penalty)
    _served(body.model, reply, request)
    if reply.error is not None and reply.verdict is None:
        raise reply.error
    return reply.to_dict()


_HISTORY_CHARS = 300  # a question in the history is cut here (one pasted 100 KB question must not flood the page)


@router.get("/v1/history")
def history(who: Caller, log: Audit, limit: int = 10) -> dict[str, Any]:
    """The caller's own recent questions (never anyone else's), each cut to a few hundred characters."""
    rows = log.entries(limit=min(max(limit, 1), 50), caller=who)
    return {"entries": [{"id": e["id"], "time": e["time"], "db": e["db"], "action": e["action"] or _unanswered(e),
                         "status": e["status"], "question": _cut(e["question"] or e["candidate_sql"] or "")} for e in rows]}


def _unanswered(entry: dict[str, Any]) -> str | None:
    """What an entry with no verdict was: an error, a question not answered, or (None) a raw SQL run."""
    if entry["error"]:
        return "error"
    return "not answered" if entry["status"] == "abstained" else None


def _cut(text: str) -> str:
    return text if len(text) <= _HISTORY_CHARS else text[:_HISTORY_CHARS - 1] + "…"


@router.get("/v1/databases/{db}/examples")
def examples(db: str, who: Caller, n: int = 6) -> dict[str, Any]:
    """Questions the offline reader answers on this database, drawn from its known forms."""
    context = database_context(named_database(db))
    found = runtime().memo("example_questions", (context.db_id, str(named_database(db))), lambda: example_questions(context, 12))
    return {"examples": found[: min(max(n, 1), 12)]}


@router.get("/v1/databases/{db}/tables/{table}/values")
def table_values(db: str, table: str, who: Caller) -> dict[str, Any]:
    """A few example values of each column of one table (the schema browser's)."""
    context = database_context(named_database(db))
    known = {t.qualified_name: t for t in context.schema.tables}
    if table not in known:
        raise ApiError(404, "no_table", f"{db} has no table {table!r}; GET /v1/databases/{db}/schema lists them.")
    out: dict[str, list[Any]] = {}
    quoted = ".".join(f'"{part}"' for part in table.split("."))
    for column in known[table].columns:
        rows = context.db.execute(f'SELECT DISTINCT "{column.name}" FROM {quoted} WHERE "{column.name}" IS NOT NULL LIMIT 3',
                                  max_rows=3).rows
        out[column.name] = [_cut(str(r[0]))[:80] for r in rows]
    return {"table": table, "values": out}


@router.get("/v1/audit")
def audit_entries(who: Caller, log: Audit, limit: int = 20) -> dict[str, Any]:
    """The caller's own audit entries, newest first (at most 200); the whole log is the operator's: `ehrguard audit export`."""
    return {"entries": log.entries(limit=min(max(limit, 1), 200), caller=who)}


@router.get("/v1/audit/{entry_id}/receipt")
def audit_receipt(entry_id: int, who: Caller, log: Audit) -> dict[str, Any]:
    mine = 0 < entry_id < 2**63 and log.caller_of(entry_id) == who
    receipt = log.receipt(entry_id) if mine else None
    if receipt is None:
        raise ApiError(404, "no_receipt",
                       f"Audit entry {entry_id} has no receipt of yours (no such entry, another caller's, or it records an error "
                       "or a raw SQL run).")
    return receipt


@router.get("/", include_in_schema=False)
def index() -> FileResponse:
    return FileResponse(STATIC / "index.html")
