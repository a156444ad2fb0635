"""The REST API's one error shape, ``{"error": {"code": ..., "message": ...}}``, and the table behind it.

:data:`ERRORS` maps each :class:`~ehrguard.errors.EhrguardError` class to its HTTP status and
code. An error is looked up along its class's MRO, so the most specific class in the table wins
(a :class:`~ehrguard.errors.DatabaseNameError` is ``invalid_request``, though it is also a
:class:`~ehrguard.errors.DatabaseNotFoundError`), whatever the order of the table. Any other
``EhrguardError`` answers 400 with its class name as the code.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ehrguard.errors import (
    ConfigError,
    DatabaseNameError,
    DatabaseNotFoundError,
    EhrguardError,
    LLMError,
    QueryExecutionError,
    QueryRefusedError,
    QueryResourceError,
    QueryTimeoutError,
    QueryTooLargeError,
    QueryWorkerError,
)

ERRORS: dict[type[EhrguardError], tuple[int, str]] = {
    DatabaseNameError: (400, "invalid_request"),
    DatabaseNotFoundError: (404, "database_not_found"),
    QueryRefusedError: (400, "query_refused"),
    QueryTooLargeError: (413, "too_large"),
    QueryTimeoutError: (422, "query_timeout"),
    QueryResourceError: (422, "query_too_costly"),
    QueryWorkerError: (503, "unavailable"),
    QueryExecutionError: (422, "query_failed"),
    ConfigError: (400, "bad_configuration"),
    LLMError: (502, "model_error"),  # the model server failed, not the request
}


class ApiError(Exception):
    """A refusal of the API itself (no token, rate limit, a disabled route), with its status and code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def status_and_code(error: type[EhrguardError]) -> tuple[int, str]:
    """The HTTP status and error code of an ``EhrguardError`` class: its nearest class in :data:`ERRORS`."""
    for cls in error.__mro__:
        if cls in ERRORS:
            return ERRORS[cls]
    return 400, error.__name__


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status, exc.code, exc.message)


async def _ehrguard_error(request: Request, exc: EhrguardError) -> JSONResponse:
    return error_response(*status_and_code(type(exc)), str(exc))


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", [])[1:])
    too_long = first.get("type") == "string_too_long"
    status, code = (413, "too_large") if too_long else (422, "invalid_request")
    kind = first.get("type")
    if kind == "json_invalid":
        message = "The body is not valid JSON; send a JSON object such as {\"db\": \"mimic_iv\", \"question\": \"...\"}."
    elif kind in ("model_attributes_type", "dict_type") or not where:
        message = f"The body must be a JSON object with the fields of this request ({first.get('msg', 'invalid')}); see /docs."
    elif kind == "extra_forbidden":
        message = f"{where}: not a field of this request; see /docs for its fields."
    else:
        message = f"{where}: {first.get('msg', 'invalid')}"
    return error_response(status, code, message)


# What FastAPI says when the JSON parser itself fails (not a syntax error): the body nests past the parser's depth, or a
# number has more digits than Python reads.
_UNREADABLE_BODY = "There was an error parsing the body"


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code == 400 and exc.detail == _UNREADABLE_BODY:
        return error_response(422, "invalid_request", "The body could not be read: it nests too deeply or holds a number with "
                              "thousands of digits. Send a flat JSON object such as {\"db\": \"mimic_iv\", \"question\": \"...\"}.")
    return error_response(exc.status_code, "not_found" if exc.status_code == 404 else "http_error", str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, RecursionError):  # input nested past what a parser can follow
        return error_response(413, "too_large", "The input is nested too deeply to process. Flatten it.")
    if isinstance(exc, MemoryError):
        return error_response(503, "busy", "The server is short of memory for this request. Retry later, or send a smaller one.")
    return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")


def add_error_handlers(app: FastAPI) -> None:
    """Answer every failure of ``app`` in the one error shape."""
    app.exception_handler(ApiError)(_api_error)
    app.exception_handler(RequestValidationError)(_validation_error)
    app.exception_handler(StarletteHTTPException)(_http_error)
    app.exception_handler(EhrguardError)(_ehrguard_error)
    app.exception_handler(Exception)(_unexpected)
