"""How much of ClinSQL's SQL runs here: transpile each query and execute it on ``mimic_iv_raw``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ehrguard.clinsql.data import load_split
from ehrguard.clinsql.transpile import error_class, transpiler_for
from ehrguard.db.engine import Database
from ehrguard.errors import DatabaseError, DatasetError

if TYPE_CHECKING:
    from ehrguard.db.bigquery import BigQueryDatabase


def queries(split_dir: str | Path, sql_from: str | Path | None = None) -> dict[str, str | None]:
    """The SQL of every task: the gold query, or a model's final query from an outputs folder of the
    published layout (``<outputs>/<Scenario>/<level>/<id>/sql_<id>.sql``; None when the model produced none)."""
    tasks = load_split(split_dir)
    if sql_from is None or str(sql_from) == "gold":
        return {k: t.gold_sql for k, t in tasks.items()}
    root = Path(sql_from)
    if not root.is_dir():
        raise DatasetError(f"No model outputs folder at {root} (expected <Scenario>/<level>/<id>/sql_<id>.sql).")
    out: dict[str, str | None] = {}
    for key, t in tasks.items():
        path = root / key / f"sql_{t.id}.sql"
        out[key] = path.read_text() if path.is_file() and path.read_text().strip() else None
    return out


def execcheck(split_dir: str | Path, db: Database | BigQueryDatabase, sql_from: str | Path | None = None, timeout_s: float = 120.0,
              transpile: bool = True) -> dict[str, Any]:
    """``{"n", "executed", "errors": {class: count}, "failures": [{task, error}]}``.

    ``transpile=False`` sends the BigQuery SQL as written (the BigQuery backend); else it is transpiled into the
    database's dialect (DuckDB or PostgreSQL)."""
    convert = transpiler_for(cast("Database", db).dialect) if transpile else None  # BigQuery sends it as written
    errors: Counter[str] = Counter()
    failures = []
    executed = 0
    sqls = queries(split_dir, sql_from)
    for key, sql in sqls.items():
        if sql is None:
            errors["no output"] += 1
            failures.append({"task": key, "error": "no output"})
            continue
        try:
            db.execute(convert(sql) if convert else sql, timeout_s=timeout_s, max_rows=100)
        except DatabaseError as exc:
            text = str(exc)
            if text.startswith(("Cannot parse", "Cannot transpile")):
                detail = text.split(": ", 1)[1].splitlines()[0].split("'")[0].split(".")[0].strip()
                cls = "transpile: " + detail[:60]
            else:
                cls = error_class(text)
            errors[cls] += 1
            failures.append({"task": key, "error": str(exc)[:300]})
            continue
        executed += 1
    return {"n": len(sqls), "executed": executed, "errors": dict(errors.most_common()), "failures": failures}
