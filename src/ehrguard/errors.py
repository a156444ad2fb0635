"""The one exception hierarchy of ehrguard.

An exception means ehrguard could not do what it was asked. A SQL query that is
wrong, unsafe or unanswerable is a *result* (a verdict with findings), never an
exception.
"""

from __future__ import annotations


class EhrguardError(Exception):
    """Base class of every error ehrguard raises on purpose."""


class ConfigError(EhrguardError):
    """A setting, flag or environment variable has a value ehrguard cannot use."""


class DatasetError(EhrguardError):
    """A source dataset or benchmark file is missing, malformed or incomplete."""


class DatabaseError(EhrguardError):
    """A database could not be opened, built or queried."""


class DatabaseNotFoundError(DatabaseError):
    """The database file or name does not exist."""


class DatabaseNameError(DatabaseNotFoundError):
    """A path was given where only the name of a built database is accepted (network callers never name server files)."""


class SchemaLookupError(DatabaseError):
    """A table or column the database does not have (the message names the closest ones)."""


class QueryRefusedError(DatabaseError):
    """The statement was refused before it ran: not a single read-only SELECT."""


class ReadOnlyViolationError(QueryRefusedError):
    """The statement tried to write, attach, load an extension or change a pragma."""


class QueryTooLargeError(QueryRefusedError):
    """The SQL is too long or too deeply built to parse or plan in bounded time; refused before any engine saw it."""


class QueryResourceError(DatabaseError):
    """The query needed more memory than its limit, or its worker process died; nothing else was affected."""


class QueryWorkerError(QueryResourceError):
    """No query worker process could be had (it would not start, or every one stayed busy): the server's fault, not the query's."""


class QueryTimeoutError(DatabaseError):
    """The query ran past its wall-clock limit and was interrupted by the engine."""


class QueryExecutionError(DatabaseError):
    """The engine rejected or failed the query; the engine's message is kept."""


class BuildError(DatabaseError):
    """Building a database from its sources failed; nothing was written."""


class RunError(EhrguardError):
    """A benchmark run cannot start or resume (for example, its folder holds a different run)."""


class LLMError(EhrguardError):
    """A model call failed. Callers record it as an error; it is never turned into a score or a label."""


class ProviderError(LLMError):
    """The model server answered with an error (``status`` holds the HTTP status, when there is one)."""

    def __init__(self, message: str, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class LLMTimeoutError(LLMError):
    """The model did not answer within the time limit."""


class StructuredOutputError(LLMError):
    """The reply did not satisfy the requested JSON schema, even after asking once more."""


class CacheMissError(LLMError):
    """Replay-only cache mode, and this exact call was never made before."""
