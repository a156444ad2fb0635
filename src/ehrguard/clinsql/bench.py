"""``ehrguard bench clinsql``: generate SQL for every task of a split, resumably, in the published layout.

Per task, ``RUN_DIR/outputs/<Scenario>/<level>/<id>/`` receives ``sql_<id>.sql``,
``result_<id>.csv`` and ``execution_summary.json`` (every attempt), the layout of the published
model outputs, so ``clinsql judge``, ``resultcheck`` and ``execcheck --sql-from`` read it.
``RUN_DIR/predictions.jsonl`` records each finished task; a rerun skips them.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from ehrguard.benchmarks.rundir import RunDir, file_sha256
from ehrguard.clinsql.data import Task, load_split
from ehrguard.clinsql.generate import generate
from ehrguard.db.engine import Database
from ehrguard.errors import LLMError
from ehrguard.llm import LLM

_CODE = re.compile(r"'([A-Z]?\d{2,6}[A-Z0-9]*)%?'")


def gold_hints(task: Task) -> str:
    """Schema hints from the gold artifacts (the paper's §5.4 analysis setting): ICD codes the gold SQL
    names and the columns the gold result has. For analysis runs only: they leak the answer's shape."""
    codes = sorted(set(_CODE.findall(task.gold_sql)))
    lines = []
    if codes:
        lines.append("ICD codes (or prefixes) that matter: " + ", ".join(codes[:40]))
    if task.gold_csv.is_file():
        with open(task.gold_csv, newline="") as f:
            header = next(csv.reader(f), [])
        if header:
            lines.append("The answer has the columns: " + ", ".join(header))
    return "\n".join(lines)


def _write_outputs(folder: Path, task: Task, record: dict[str, Any], columns: list[str] | None, rows: list[tuple] | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if record.get("final_sql"):
        (folder / f"sql_{task.id}.sql").write_text(record["final_sql"])
    if columns is not None and rows is not None:
        with open(folder / f"result_{task.id}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)
    (folder / "execution_summary.json").write_text(json.dumps(
        {"query": task.question, "final_sql": record.get("final_sql"), "attempts": record.get("attempts", []),
         "error": record.get("error")}, indent=1))


def run_clinsql(split_dir: str | Path, db: Database, db_path: str | Path, llm: LLM, out: str | Path, *, mode: str = "cot", refine: int = 2,
                dialect: str = "duckdb", hints: str = "none", limit: int | None = None) -> dict[str, Any]:
    """Generate for every task (skipping finished ones); returns counts of the whole run."""
    tasks = list(load_split(split_dir).values())[:limit]
    identity = {"benchmark": "clinsql", "model": llm.model, "mode": mode, "refine": refine, "dialect": dialect, "hints": hints,
                "database": file_sha256(db_path)}
    run = RunDir(out)
    done = run.open(identity, extra={"llm": llm.describe(), "split": str(split_dir)})
    try:
        for task in tasks:
            if task.key in done:
                continue
            record: dict[str, Any] = {"key": task.key, "scenario": task.scenario, "difficulty": task.difficulty}
            columns = rows = None
            try:
                gen = generate(task.question, db, llm, mode=mode, refine=refine, dialect=dialect,
                               hints=gold_hints(task) if hints == "gold" else "")
            except LLMError as exc:
                record.update(final_sql=None, succeeded=False, attempts=[], error=f"{type(exc).__name__}: {exc}")
            else:
                record.update(final_sql=gen.final_sql, succeeded=gen.succeeded, error=None,
                              attempts=[{"sql": a.sql, "error": a.error, "rows": a.rows} for a in gen.attempts])
                if gen.result is not None:
                    columns, rows = gen.result.columns, gen.result.rows
            _write_outputs(Path(out) / "outputs" / task.key, task, record, columns, rows)
            run.append(record)
    finally:
        run.close()
    records = [r for r in run.records() if r["key"] in {t.key for t in tasks}]
    return {"n": len(records), "executed": sum(r["succeeded"] for r in records), "errors": sum(r["error"] is not None for r in records),
            "refined": sum(len(r["attempts"]) > 1 for r in records), "outputs": str(Path(out) / "outputs")}
