"""PostgreSQL, read-only by construction: the MIT-LCP mimic-code layout (``mimiciv_hosp``, ``mimiciv_icu``, ...) or any
schema a hospital runs.

Each query runs in a transaction opened ``READ ONLY`` (the server refuses any write, whatever the SQL says: a
data-modifying CTE, a function with side effects), with ``statement_timeout``, ``lock_timeout`` and
``idle_in_transaction_session_timeout`` set for that transaction only, and is rolled back when its rows are read.
Before that, the SQL passes the same single-SELECT check as the other engines, and functions that reach outside the
database (``pg_read_file``, ``lo_import``, ``dblink``, ``COPY ... PROGRAM`` is not a query at all) are refused by
name; a least-privilege role (docs/databases.md, "PostgreSQL") keeps them out of reach as well. Rows are fetched
through a server-side cursor under the same row and byte caps as SQLite and DuckDB. Connections are pooled per
database (``max_concurrent_queries`` at most), shared by a server's threads.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ehrguard.db.engine import Result, check_select_only
from ehrguard.db.limits import QueryLimits, fetch_bounded
from ehrguard.errors import (
    ConfigError,
    DatabaseError,
    DatabaseNotFoundError,
    QueryExecutionError,
    QueryRefusedError,
    QueryTimeoutError,
    ReadOnlyViolationError,
)

SCHEMES = ("postgresql://", "postgres://")
# Functions that read or write server files, large objects, other servers or the server's own state.
_DENIED = re.compile(
    r"\b(pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|lo_\w+|dblink\w*|pg_file_write|pg_reload_conf|"
    r"pg_terminate_backend|pg_cancel_backend|pg_rotate_logfile|set_config|pg_advisory\w*|pg_notify|query_to_xml\w*|"
    r"current_setting|pg_promote|pg_switch_wal|txid_current|pg_current_xact_id)\s*\(", re.IGNORECASE)


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.lower().startswith(SCHEMES)


def redact_url(url: str) -> str:
    """A URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class PostgresDatabase:
    """A PostgreSQL database reached by URL (``postgresql://user@host/db``), queried read-only."""

    dialect = "postgres"

    def __init__(self, url: str, *, name: str | None = None, pool_size: int | None = None) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError("PostgreSQL needs psycopg: pip install 'ehrguard[postgres]'") from None
        self._psycopg = psycopg
        self.url = url
        parts = urlsplit(url)
        self.name = name or parts.path.lstrip("/") or parse_qs(parts.query).get("dbname", ["postgres"])[0]
        self.path: Path | None = None  # not a file: checksums and lexicons do not apply
        from ehrguard.config import int_setting

        self._size = pool_size or int_setting("max_concurrent_queries")
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._open = 0
        self._lock = threading.Lock()
        self._closed = False
        self._reserve()
        self._release(self._connect())  # fail now, with the reason, rather than on the first query

    def _connect(self) -> Any:
        """A new connection, in a slot already counted in ``_open`` (given back when the connection fails)."""
        try:
            conn = self._psycopg.connect(self.url, autocommit=False, connect_timeout=10, application_name="ehrguard")
        except self._psycopg.Error as exc:
            with self._lock:
                self._open -= 1
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DatabaseNotFoundError(f"Cannot connect to {redact_url(self.url)}: {first}") from None
        conn.read_only = True  # every transaction of this connection begins READ ONLY
        return conn

    def _reserve(self) -> bool:
        with self._lock:
            if self._open >= self._size:
                return False
            self._open += 1
            return True

    def _acquire(self, wait_s: float) -> Any:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        if self._reserve():
            return self._connect()
        try:
            return self._idle.get(timeout=wait_s)
        except queue.Empty:
            raise QueryRefusedError(f"All {self._size} connections to {self.name} are busy; try again shortly.") from None

    def _release(self, conn: Any) -> None:
        if self._closed or conn.closed or conn.broken:
            self._discard(conn)
            return
        self._idle.put(conn)

    def _discard(self, conn: Any) -> None:
        try:
            conn.close()
        finally:
            with self._lock:
                self._open -= 1

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result:
        """Run one SELECT in a read-only transaction under a time limit, a row cap and a byte cap (see the module).

        Raises:
            QueryRefusedError: not a single read-only statement, too large, or a function that reaches outside.
            ReadOnlyViolationError: the statement writes (refused before it runs, or by the server).
            QueryTimeoutError: ran past ``timeout_s`` (default: the setting ``query_timeout``).
            QueryExecutionError: PostgreSQL's own error (message kept).
        """
        check_select_only(sql, self.dialect)
        if "\x00" in sql:  # libpq would send the text up to it: a different query from the one checked
            raise QueryRefusedError("The SQL holds a NUL character: remove it (PostgreSQL would read only the text before it).")
        denied = _DENIED.search(sql)
        if denied:
            raise QueryRefusedError(f"{denied.group(1)}() reaches outside the database or changes the server: it may not run here.")
        if self._closed:
            raise DatabaseError(f"The database {self.name} is closed.")
        limits = QueryLimits.resolve(timeout_s, max_rows)
        conn = self._acquire(limits.timeout_s)
        started = time.perf_counter()
        try:
            ms = max(1, int(limits.timeout_s * 1000))
            conn.execute(f"SET LOCAL statement_timeout = {ms}")
            conn.execute(f"SET LOCAL lock_timeout = {ms}")
            conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = {ms + 5000}")
            with conn.cursor(name="ehrguard_query") as cur:
                cur.itersize = 500
                cur.execute(sql)
                columns = [d.name for d in (cur.description or [])]
                rows, reason = fetch_bounded(cur.fetchmany, limits)
        except self._psycopg.Error as exc:
            raise self._error(exc, limits) from None
        finally:
            try:
                conn.rollback()
            except self._psycopg.Error:
                pass
            self._release(conn)
        rows = [tuple(_plain(v) for v in row) for row in rows]
        return Result(columns=columns, rows=rows, truncated=bool(reason), elapsed_s=time.perf_counter() - started,
                      truncated_reason=reason)

    def _error(self, exc: Exception, limits: QueryLimits) -> DatabaseError:
        errors = self._psycopg.errors
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, errors.QueryCanceled | errors.LockNotAvailable):
            return QueryTimeoutError(f"The query ran past {limits.timeout_s:g} s and was stopped. Narrow it, or raise --timeout.")
        if isinstance(exc, errors.ReadOnlySqlTransaction) or "data-modifying" in message:
            return ReadOnlyViolationError(f"The database is read-only here: {message}")
        if isinstance(exc, errors.InsufficientPrivilege):
            return QueryRefusedError(f"Not allowed for this database role: {message}")
        return QueryExecutionError(message)

    def internal_connection(self) -> Any:
        """A connection of the pool for schema introspection; give it back with :meth:`release_internal`."""
        return self._acquire(30.0)

    def release_internal(self, conn: Any) -> None:
        try:
            conn.rollback()
        except self._psycopg.Error:
            pass
        self._release(conn)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                break
            self._discard(conn)


def _plain(value: Any) -> Any:
    """A value as the other engines return it: numbers, text, bytes; dates and decimals as their text."""
    if value is None or isinstance(value, (int, float, str, bytes)):
        return value
    if isinstance(value, memoryview):
        return bytes(value)
    from decimal import Decimal

    if isinstance(value, Decimal):
        return float(value)
    return str(value)


__all__ = ["SCHEMES", "PostgresDatabase", "is_postgres_url", "redact_url"]
