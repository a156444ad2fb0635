"""EHR databases: building them from public sources, opening them read-only, running SQL safely."""

from ehrguard.db.builders import BUILDERS, BuildReport, Progress, build_database
from ehrguard.db.engine import DuckDBDatabase, Result, SQLiteDatabase, locate_database, open_database
from ehrguard.db.fidelity import FidelityReport, check_fidelity, load_ehrsql_split
from ehrguard.db.schema import Schema, read_schema
from ehrguard.db.values import Lookup, ValueIndex

__all__ = [
    "BUILDERS",
    "BuildReport",
    "DuckDBDatabase",
    "FidelityReport",
    "Lookup",
    "Progress",
    "Result",
    "SQLiteDatabase",
    "Schema",
    "ValueIndex",
    "build_database",
    "check_fidelity",
    "load_ehrsql_split",
    "locate_database",
    "open_database",
    "read_schema",
]
