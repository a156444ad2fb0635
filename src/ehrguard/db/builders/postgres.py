"""Loading a built database into PostgreSQL: ``ehrguard db build mimic_iv_raw --target postgresql://...``.

The builder writes its DuckDB file first (DuckDB reads the ``.csv.gz`` files of the demo or of a full MIMIC-IV
download as streams); each of its tables is then created in PostgreSQL under the same schema (``mimiciv_hosp``,
``mimiciv_icu``, ``mimiciv_derived``: the MIT-LCP mimic-code layout) and filled with ``COPY ... FROM STDIN``, streamed
from DuckDB in CSV blocks, never held in memory whole. Each table is replaced in one transaction: a failed load
leaves the table as it was. The join and filter columns (``subject_id``, ``hadm_id``, ``stay_id``, ``itemid``,
``icd_code``, ``charttime``) are indexed and each table analysed. The role in the URL needs CREATE on the database;
the role ehrguard then queries with needs only USAGE and SELECT (docs/databases.md, "PostgreSQL").
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ehrguard.db.builders.base import Progress
from ehrguard.db.postgres import redact_url
from ehrguard.errors import BuildError, ConfigError

_BLOCK = 1 << 20
# The columns queries join and filter on, indexed as mimic-code's PostgreSQL scripts index them (a row store without
# them scans a whole events table for each correlated lookup).
INDEXED = frozenset({"subject_id", "hadm_id", "stay_id", "itemid", "icd_code", "charttime"})
_TYPES = {"TINYINT": "SMALLINT", "SMALLINT": "SMALLINT", "INTEGER": "INTEGER", "BIGINT": "BIGINT", "HUGEINT": "NUMERIC",
          "UTINYINT": "SMALLINT", "USMALLINT": "INTEGER", "UINTEGER": "BIGINT", "UBIGINT": "NUMERIC", "FLOAT": "REAL",
          "DOUBLE": "DOUBLE PRECISION", "BOOLEAN": "BOOLEAN", "DATE": "DATE", "TIME": "TIME", "TIMESTAMP": "TIMESTAMP",
          "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ", "VARCHAR": "TEXT", "BLOB": "BYTEA", "INTERVAL": "INTERVAL", "UUID": "UUID"}


def postgres_type(duckdb_type: str) -> str:
    """The PostgreSQL type of a DuckDB column type (DECIMAL keeps its precision; anything unusual becomes TEXT)."""
    t = duckdb_type.upper()
    decimal = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", t)
    if decimal:
        return f"NUMERIC({decimal.group(1)},{decimal.group(2)})"
    return _TYPES.get(t, "TEXT")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def load_into_postgres(duckdb_path: Path, url: str, progress: Progress | None = None) -> dict[str, int]:
    """Copy every table of the DuckDB file into the PostgreSQL database at ``url``; returns rows per table.

    Raises:
        ConfigError: psycopg is not installed.
        BuildError: PostgreSQL refused a step (the message names the table and PostgreSQL's reason).
    """
    try:
        import psycopg
    except ImportError:
        raise ConfigError("PostgreSQL needs psycopg: pip install 'ehrguard[postgres]'") from None
    import duckdb

    progress = progress or Progress()
    with tempfile.TemporaryDirectory(prefix="ehrguard-load-") as scratch:
        try:
            source = duckdb.connect(str(duckdb_path), read_only=True)
        except duckdb.ConnectionException:
            # this process already has the file open with other settings (a verifier's connection): read a copy
            copy = Path(scratch) / Path(duckdb_path).name
            shutil.copyfile(duckdb_path, copy)
            source = duckdb.connect(str(copy), read_only=True)
        return _load(source, url, progress, psycopg)


def _load(source: Any, url: str, progress: Progress, psycopg: Any) -> dict[str, int]:
    try:
        tables = source.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT internal "
                                "ORDER BY schema_name, table_name").fetchall()
        try:
            target = psycopg.connect(url, autocommit=False, connect_timeout=10, application_name="ehrguard-build")
        except psycopg.Error as exc:
            raise BuildError(f"Cannot connect to {redact_url(url)}: {str(exc).strip().splitlines()[0]}") from None
        counts: dict[str, int] = {}
        try:
            for schema, table in tables:
                qualified = f"{schema}.{table}" if schema != "main" else table
                progress.step(f"PostgreSQL: {qualified}")
                counts[qualified] = _copy_table(source, target, schema, table, psycopg)
        finally:
            target.close()
        return counts
    finally:
        source.close()


def _copy_table(source: Any, target: Any, schema: str, table: str, psycopg: Any) -> int:
    columns = source.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = ? "
                             "ORDER BY column_index", [schema, table]).fetchall()
    pg_schema = "public" if schema == "main" else schema
    name = f"{_ident(pg_schema)}.{_ident(table)}"
    definition = ", ".join(f"{_ident(c)} {postgres_type(t)}" for c, t in columns)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "rows.csv"
        source.execute(f"COPY (SELECT * FROM {_ident(schema)}.{_ident(table)}) TO '{csv_path}' (FORMAT csv, HEADER false)")
        try:
            with target.transaction():
                target.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(pg_schema)}")
                target.execute(f"DROP TABLE IF EXISTS {name}")
                target.execute(f"CREATE TABLE {name} ({definition})")
                with target.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN WITH (FORMAT csv)") as copy, csv_path.open("rb") as fh:
                    while block := fh.read(_BLOCK):
                        copy.write(block)
                for column in [c for c, _ in columns if c.lower() in INDEXED]:
                    target.execute(f"CREATE INDEX ON {name} ({_ident(column)})")
                target.execute(f"ANALYZE {name}")
                rows = target.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        except psycopg.Error as exc:
            raise BuildError(f"Loading {pg_schema}.{table} into PostgreSQL failed: {str(exc).strip().splitlines()[0]}") from None
    return int(rows)


__all__ = ["load_into_postgres", "postgres_type"]
