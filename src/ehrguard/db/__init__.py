"""EHR databases: building them from public sources, opening them read-only, running SQL safely.

The names below are the API (``from ehrguard.db import open_database``); :mod:`ehrguard.db.builders`
is a package with its own (the builder registry). The modules are internal: :mod:`.engine`
(read-only SQLite and DuckDB, safe execution, finding built databases), :mod:`.schema`,
:mod:`.values` (the value index), :mod:`.fidelity` (how many published EHRSQL answers a
database reproduces), :mod:`.download` (the open PhysioNet demos), :mod:`.bigquery` (BigQuery
as a query backend).

``BigQueryDatabase`` and ``download_demo`` are imported on first use (PEP 562): the BigQuery
backend loads sqlglot (and, when used, the optional google-cloud-bigquery), the download
urllib's HTTP stack, and ``import ehrguard.db``, hence ``import ehrguard``, pays for neither.
"""

from typing import TYPE_CHECKING

from ehrguard.db.builders import BUILDERS, BuildReport, Progress, build_database
from ehrguard.db.engine import (
    LINK_SUFFIX,
    Database,
    DuckDBDatabase,
    Link,
    Result,
    SQLiteDatabase,
    built_databases,
    check_select_only,
    connect_database,
    locate_database,
    named_database,
    open_database,
    read_link,
    write_link,
)
from ehrguard.db.fidelity import FidelityReport, check_fidelity, load_ehrsql_split
from ehrguard.db.lexicon import build_lexicon, lexicon_path, lexicon_state
from ehrguard.db.schema import Schema, read_schema
from ehrguard.db.values import Lookup, ValueIndex
from ehrguard.lazy import lazy_exports

if TYPE_CHECKING:
    from ehrguard.db.bigquery import BigQueryDatabase
    from ehrguard.db.builders.postgres import load_into_postgres
    from ehrguard.db.download import download_demo
    from ehrguard.db.postgres import PostgresDatabase, is_postgres_url, redact_url

_LAZY = {"BigQueryDatabase": ".bigquery", "download_demo": ".download", "load_into_postgres": ".builders.postgres",
         **dict.fromkeys(("PostgresDatabase", "is_postgres_url", "redact_url"), ".postgres")}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "BUILDERS",
    "LINK_SUFFIX",
    "BigQueryDatabase",
    "BuildReport",
    "Database",
    "DuckDBDatabase",
    "FidelityReport",
    "Link",
    "Lookup",
    "Progress",
    "Result",
    "SQLiteDatabase",
    "Schema",
    "ValueIndex",
    "build_database",
    "build_lexicon",
    "built_databases",
    "check_fidelity",
    "check_select_only",
    "connect_database",
    "is_postgres_url",
    "load_into_postgres",
    "redact_url",
    "PostgresDatabase",
    "download_demo",
    "lexicon_path",
    "lexicon_state",
    "load_ehrsql_split",
    "locate_database",
    "named_database",
    "open_database",
    "read_link",
    "read_schema",
    "write_link",
]
