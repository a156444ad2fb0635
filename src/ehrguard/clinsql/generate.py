"""ClinSQL generation: the general text-to-SQL loop (:mod:`ehrguard.generation`) on MIMIC-IV in the mimic-code layout
(``mimic_iv_raw``, DuckDB or PostgreSQL), where ``dialect="bigquery"`` means the model writes BigQuery SQL, which is
transpiled for execution here and kept as written for a BigQuery backend.
"""

from __future__ import annotations

from ehrguard.clinsql.transpile import transpiler_for
from ehrguard.db.engine import Database
from ehrguard.errors import LLMError
from ehrguard.generation import MODES, Attempt, Generation, last_sql_block, schema_text
from ehrguard.generation import generate as generate_sql
from ehrguard.llm import LLM


def generate(question: str, db: Database, llm: LLM, *, mode: str = "cot", refine: int = 2, dialect: str = "duckdb",
             hints: str = "", max_tokens: int = 2048, timeout_s: float = 120.0) -> Generation:
    """Generate SQL for ``question``, execute it, and refine it from errors (at most ``refine`` rounds);
    BigQuery SQL (``dialect="bigquery"``) runs transpiled into the database's dialect.

    Raises:
        LLMError: a model call failed (recorded by callers as an error).
    """
    return generate_sql(question, db, llm, mode=mode, refine=refine, dialect=dialect, hints=hints, max_tokens=max_tokens,
                        timeout_s=timeout_s, transpile=transpiler_for(db.dialect) if dialect == "bigquery" else None)


__all__ = ["MODES", "Attempt", "Generation", "LLMError", "generate", "last_sql_block", "schema_text"]
