"""Text-to-SQL with execution-guided refinement: direct or chain-of-thought prompting, then up to N
refinement rounds fed by the engine's error (ClinSQL paper, §5.1), every attempt recorded.

The model answers in a fenced ```sql block (the last one counts). Each query runs on the database
it is written for; ``transpile`` turns SQL written in another dialect into SQL this engine runs
(ClinSQL's BigQuery answers on the DuckDB MIMIC-IV), and the attempt keeps the SQL as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.db import Result, read_schema
from ehrguard.db.engine import Database
from ehrguard.errors import DatabaseError
from ehrguard.llm import LLM, GenerateConfig

PROMPTS = Path(__file__).parent / "prompts"
_FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
MODES = ("direct", "cot")
_DIALECT_NAMES = {"duckdb": "DuckDB", "bigquery": "BigQuery", "sqlite": "SQLite"}


def last_sql_block(text: str) -> str | None:
    """The SQL of the last fenced block of a reply, or None when it has none."""
    blocks = _FENCE.findall(text)
    return blocks[-1].strip() if blocks else None


@dataclass
class Attempt:
    """One reply of the model: its SQL (as written), the engine's error or the row count, and the reply itself."""

    sql: str | None
    error: str | None
    rows: int | None = None
    reply: str = ""


@dataclass
class Generation:
    """Every attempt at one question, and the result of the one that ran."""

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
             hints: str = "", max_tokens: int = 2048, timeout_s: float = 120.0,
             transpile: Callable[[str], str] | None = None) -> Generation:
    """Generate SQL for ``question``, execute it, and refine it from errors (at most ``refine`` rounds).

    Args:
        question: the question, in plain language.
        db: the database the SQL runs on; its schema goes into the prompt.
        llm: the model that writes the SQL.
        mode: ``direct`` (the query only) or ``cot`` (reasoning first).
        refine: how many times a failed query goes back to the model with the engine's error.
        dialect: the SQL dialect the prompt asks for (``sqlite``, ``duckdb``, ``bigquery``).
        hints: text added to the prompt (schema hints).
        transpile: turns the SQL as written into the SQL ``db`` runs, when the dialects differ.

    Raises:
        LLMError: a model call failed (recorded by callers as an error).

    Examples:
        >>> gen = generate("How many patients are there?", db, LLM("openai/gpt-4o-mini"), dialect="sqlite")  # doctest: +SKIP
        >>> gen.final_sql, gen.result.rows  # doctest: +SKIP
        ('SELECT COUNT(*) FROM patients', [(100,)])
    """
    if mode not in MODES:
        raise ValueError(f"mode is one of {MODES}")
    system = (PROMPTS / f"generate_{mode}.txt").read_text().format(
        dialect=_DIALECT_NAMES[dialect], schema=schema_text(db), question=question,
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
                runnable = transpile(sql) if transpile is not None else sql
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
