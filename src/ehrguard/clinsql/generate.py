"""ClinSQL generation: direct or chain-of-thought prompting, then up to N refinement rounds fed by
the engine's error (the paper's §5.1), every attempt recorded.

The model answers in a fenced ```sql block (the last one counts). Queries run on the DuckDB
MIMIC-IV (``mimic_iv_raw``); with ``dialect="bigquery"`` the model writes BigQuery SQL, which
is transpiled for execution here and kept as written for a BigQuery backend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.clinsql.transpile import to_duckdb
from ehrguard.db.engine import Database, Result
from ehrguard.db.schema import read_schema
from ehrguard.errors import DatabaseError, LLMError
from ehrguard.llm import LLM, GenerateConfig

PROMPTS = Path(__file__).parent / "prompts"
_FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
MODES = ("direct", "cot")


def last_sql_block(text: str) -> str | None:
    blocks = _FENCE.findall(text)
    return blocks[-1].strip() if blocks else None


@dataclass
class Attempt:
    sql: str | None
    error: str | None
    rows: int | None = None
    reply: str = ""


@dataclass
class Generation:
    question: str
    attempts: list[Attempt] = field(default_factory=list)
    result: Result | None = None

    @property
    def final_sql(self) -> str | None:
        return self.attempts[-1].sql if self.attempts else None

    @property
    def succeeded(self) -> bool:
        return self.result is not None

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "final_sql": self.final_sql, "succeeded": self.succeeded,
                "attempts": [a.__dict__ for a in self.attempts], "columns": self.result.columns if self.result else None}


def schema_text(db: Database) -> str:
    """Tables with their columns and types, plus the notes a clinician-analyst needs for MIMIC-IV."""
    schema = read_schema(db)
    text = schema.render_compact(types=True)
    if any(t.namespace == "mimiciv_hosp" or t.name == "patients" for t in schema.tables):
        text += "\n\n" + (PROMPTS / "mimic_iv_notes.txt").read_text().strip()
    return text


def generate(question: str, db: Database, llm: LLM, *, mode: str = "cot", refine: int = 2, dialect: str = "duckdb",
             hints: str = "", max_tokens: int = 2048, timeout_s: float = 120.0) -> Generation:
    """Generate SQL for ``question``, execute it, and refine it from errors (at most ``refine`` rounds).

    Raises:
        LLMError: a model call failed (recorded by callers as an error).
    """
    if mode not in MODES:
        raise ValueError(f"mode is one of {MODES}")
    system = (PROMPTS / f"generate_{mode}.txt").read_text().format(
        dialect={"duckdb": "DuckDB", "bigquery": "BigQuery", "sqlite": "SQLite"}[dialect], schema=schema_text(db), question=question,
        hints=f"\nHints:\n{hints}\n" if hints else "")
    messages = [{"role": "user", "content": system}]
    gen = Generation(question)
    config = GenerateConfig(temperature=0.0, seed=0, max_tokens=max_tokens)
    for round_ in range(refine + 1):
        reply = llm.complete(messages, config).text
        sql = last_sql_block(reply)
        if sql is None:
            attempt = Attempt(None, "the reply holds no ```sql block", reply=reply)
        else:
            try:
                runnable = to_duckdb(sql) if dialect == "bigquery" else sql
                result = db.execute(runnable, timeout_s=timeout_s, max_rows=10_000)
            except DatabaseError as exc:
                attempt = Attempt(sql, str(exc), reply=reply)
            else:
                gen.attempts.append(Attempt(sql, None, len(result.rows), reply))
                gen.result = result
                return gen
        gen.attempts.append(attempt)
        if round_ < refine:
            messages = [*messages, {"role": "assistant", "content": reply},
                        {"role": "user", "content": (PROMPTS / "refine.txt").read_text().format(error=attempt.error)}]
    return gen


__all__ = ["Attempt", "Generation", "LLMError", "generate", "last_sql_block"]
