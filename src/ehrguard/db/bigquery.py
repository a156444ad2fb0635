"""BigQuery as a query backend (for ClinSQL's SQL as written, on the full MIMIC-IV a user has access to).

Optional: ``pip install 'ehrguard[bigquery]'`` and Google credentials
(``gcloud auth application-default login``). Every query is one read-only SELECT (checked
before anything is sent), is first sent as a dry run (free: BigQuery says how many bytes it
would scan, :meth:`BigQueryDatabase.estimate`; over the cap it is refused with that figure,
before any job runs) and then runs with ``maximum_bytes_billed``, so that a query that would
scan more than the cap fails at BigQuery instead of costing money.

Not exercised against the real service here (this machine has no internet); the tests drive
it with a fake client that records what would be sent.
"""

from __future__ import annotations

import time
from typing import Any

import sqlglot
from sqlglot import exp

from ehrguard.db.engine import Result
from ehrguard.errors import ConfigError, QueryExecutionError, QueryRefusedError, QueryTimeoutError, ReadOnlyViolationError

DEFAULT_MAX_BYTES_BILLED = 10 * 1024**3  # 10 GiB


def check_bigquery_select(sql: str) -> None:
    """One SELECT (or WITH ... SELECT / set operation), nothing else.

    Raises:
        QueryRefusedError: empty, several statements, unparsable, or not a query.
    """
    try:
        statements = [s for s in sqlglot.parse(sql, read="bigquery") if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise QueryRefusedError(f"The SQL does not parse as BigQuery: {exc}") from exc
    if len(statements) != 1:
        raise QueryRefusedError(f"Pass exactly one statement (got {len(statements)}).")
    if not isinstance(statements[0], (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        raise ReadOnlyViolationError(f"Only SELECT queries run on BigQuery here, not {statements[0].key.upper()}.")


class BigQueryDatabase:
    name = "bigquery"

    def __init__(self, project: str | None = None, *, max_bytes_billed: int = DEFAULT_MAX_BYTES_BILLED, client: Any = None,
                 bigquery_module: Any = None, dry_run_first: bool = True) -> None:
        if bigquery_module is None:
            try:
                from google.cloud import bigquery as bigquery_module  # type: ignore[no-redef]
            except ImportError:
                raise ConfigError("The BigQuery backend needs its SDK: pip install 'ehrguard[bigquery]'.") from None
        self._bq = bigquery_module
        if client is None:
            try:
                client = bigquery_module.Client(project=project)
            except Exception as exc:
                raise ConfigError(f"Cannot connect to BigQuery ({exc}). Run `gcloud auth application-default login`, "
                                  "or set GOOGLE_APPLICATION_CREDENTIALS, and pass the billing project.") from exc
        self.client = client
        self.max_bytes_billed = int(max_bytes_billed)
        self.dry_run_first = dry_run_first

    def estimate(self, sql: str, *, timeout_s: float | None = None) -> int:
        """The bytes BigQuery would scan for ``sql`` (a dry run: nothing runs, nothing is billed).

        Raises:
            QueryRefusedError: not one SELECT.
            QueryExecutionError: BigQuery rejects the query (the message is BigQuery's).
        """
        check_bigquery_select(sql)
        config = self._bq.QueryJobConfig(dry_run=True, use_query_cache=False, use_legacy_sql=False)
        try:
            job = self.client.query(sql, job_config=config, timeout=timeout_s)
        except Exception as exc:
            raise QueryExecutionError(f"BigQuery: {exc}") from exc
        return int(job.total_bytes_processed or 0)

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result:
        check_bigquery_select(sql)
        if self.dry_run_first:
            scanned = self.estimate(sql, timeout_s=timeout_s)
            if scanned > self.max_bytes_billed:
                raise QueryRefusedError(f"The query would scan {scanned:,} bytes ({scanned / 2**40:.3f} TiB), more than the cap of "
                                        f"{self.max_bytes_billed:,}; nothing ran. Raise --max-bytes-billed if you mean it.")
        config = self._bq.QueryJobConfig(maximum_bytes_billed=self.max_bytes_billed, use_legacy_sql=False)
        start = time.perf_counter()
        try:
            job = self.client.query(sql, job_config=config, timeout=timeout_s)
            rows = job.result(timeout=timeout_s, max_results=None if max_rows is None else max_rows + 1)
            data = [tuple(r.values()) for r in rows]
            columns = [f.name for f in rows.schema]
        except TimeoutError as exc:
            raise QueryTimeoutError(f"BigQuery did not finish within {timeout_s} s.") from exc
        except Exception as exc:
            text = str(exc)
            if "bytesBilledLimitExceeded" in text or "bytes billed" in text.lower():
                raise QueryRefusedError(f"The query would bill more than {self.max_bytes_billed:,} bytes; "
                                        f"raise the cap if you mean it. ({text})") from exc
            raise QueryExecutionError(f"BigQuery: {text}") from exc
        truncated = max_rows is not None and len(data) > max_rows
        return Result(columns, data[:max_rows] if truncated else data, truncated, time.perf_counter() - start)

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close:
            close()
