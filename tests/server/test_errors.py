"""The REST error table: each EhrguardError class resolves along its MRO to one (status, code), in the one error shape."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from ehrguard.errors import (
    BuildError,
    ConfigError,
    DatabaseNameError,
    DatabaseNotFoundError,
    EhrguardError,
    LLMError,
    ProviderError,
    QueryExecutionError,
    QueryRefusedError,
    QueryResourceError,
    QueryTimeoutError,
    QueryTooLargeError,
    ReadOnlyViolationError,
)
from ehrguard.server import errors
from ehrguard.server.errors import ERRORS, ApiError, add_error_handlers, status_and_code


class RefusedByPolicyError(QueryRefusedError):
    """A refusal defined outside ehrguard."""


class UnrelatedError(EhrguardError):
    """An error the table does not name."""


class NameAndModelError(DatabaseNameError, LLMError):
    """Two mapped ancestors: the first in the MRO wins."""


@pytest.mark.parametrize("error, expected", [
    (DatabaseNameError, (400, "invalid_request")),  # though it is also a DatabaseNotFoundError
    (DatabaseNotFoundError, (404, "database_not_found")),
    (QueryRefusedError, (400, "query_refused")),
    (ReadOnlyViolationError, (400, "query_refused")),
    (RefusedByPolicyError, (400, "query_refused")),
    (ConfigError, (400, "bad_configuration")),
    (LLMError, (502, "model_error")),
    (ProviderError, (502, "model_error")),
    (NameAndModelError, (400, "invalid_request")),
    (UnrelatedError, (400, "UnrelatedError")),
    (QueryTimeoutError, (422, "query_timeout")),
    (QueryTooLargeError, (413, "too_large")),  # though it is also a QueryRefusedError
    (QueryResourceError, (422, "query_too_costly")),
    (QueryExecutionError, (422, "query_failed")),
    (BuildError, (400, "BuildError")),
    (EhrguardError, (400, "EhrguardError")),
])
def test_each_error_class_resolves_along_its_mro(error, expected):
    assert status_and_code(error) == expected


def test_the_order_of_the_table_does_not_matter(monkeypatch):
    monkeypatch.setattr(errors, "ERRORS", dict(reversed(list(ERRORS.items()))))
    assert errors.status_and_code(DatabaseNameError) == (400, "invalid_request")
    assert errors.status_and_code(DatabaseNotFoundError) == (404, "database_not_found")


def test_every_failure_answers_in_the_one_shape():
    app = FastAPI()
    add_error_handlers(app)
    raised: dict[str, Exception] = {"refused": RefusedByPolicyError("not by policy"), "unrelated": UnrelatedError("odd"),
                                    "api": ApiError(403, "disabled", "off here"), "bug": KeyError("k")}

    @app.get("/raise/{kind}")
    def boom(kind: str) -> None:
        raise raised[kind]

    client = TestClient(app, raise_server_exceptions=False)
    expected = {"refused": (400, "query_refused", "not by policy"), "unrelated": (400, "UnrelatedError", "odd"),
                "api": (403, "disabled", "off here"), "bug": (500, "internal_error", "KeyError: 'k'")}
    for kind, (status, code, message) in expected.items():
        r = client.get(f"/raise/{kind}")
        assert (r.status_code, r.json()) == (status, {"error": {"code": code, "message": message}}), kind
    r = client.get("/nowhere")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "not_found")
