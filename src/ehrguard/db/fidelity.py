"""Fidelity of a built database: how many published EHRSQL answers its gold SQL reproduces."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.errors import DatasetError
from ehrguard.evaluation.execution_match import execute_answer, normalize_gold, parse_answer


@dataclass
class FidelityReport:
    """Share of published answers reproduced, overall and per table touched."""

    split: str
    total: int = 0
    reproduced: int = 0
    per_table: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    without_table: dict[str, list[int]] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.reproduced / self.total if self.total else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "total": self.total,
            "reproduced": self.reproduced,
            "share": self.share,
            "per_table": {t: {"reproduced": a, "total": n, "share": a / n} for t, (a, n) in sorted(self.per_table.items())},
            "without_table": {t: {"reproduced": a, "total": n, "share": a / n if n else None} for t, (a, n) in self.without_table.items()},
            "mismatches": self.mismatches,
        }


def load_ehrsql_split(split_dir: str | Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Read ``data.json`` (questions), ``label.json`` (gold SQL or "null") and ``answer.json`` of a split.

    Raises:
        DatasetError: a file is missing or not the expected JSON shape.
    """
    d = Path(split_dir)
    out = []
    for name in ("data.json", "label.json", "answer.json"):
        path = d / name
        if not path.is_file():
            raise DatasetError(f"{path} is missing: an EHRSQL-2024 split folder holds data.json, label.json and answer.json.")
        try:
            out.append(json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} is not valid JSON: {exc}") from exc
    data, labels, answers = out
    if isinstance(data, dict) and "data" in data:
        questions = {item["id"]: item["question"] for item in data["data"]}
    else:
        raise DatasetError(f"{d / 'data.json'} should be an object with a 'data' list of {{id, question}}.")
    if not isinstance(labels, dict) or not isinstance(answers, dict):
        raise DatasetError(f"{d}: label.json and answer.json should map ids to strings.")
    return questions, labels, answers


def ehrsql_pairs(split_dir: str | Path) -> list[tuple[str, str]]:
    """(question, gold SQL or "null") of an EHRSQL-2024 split, in the split's order."""
    questions, labels, _ = load_ehrsql_split(split_dir)
    return [(question, labels[qid]) for qid, question in questions.items()]


def tables_in(sql: str, tables: list[str]) -> list[str]:
    return [t for t in tables if re.search(rf"\b{re.escape(t)}\b", sql)]


def check_fidelity(
    db: Any,
    split_dir: str | Path,
    *,
    focus_table: str = "chartevents",
    on_item: Callable[[], None] | None = None,
    timeout_s: float = 60.0,
) -> FidelityReport:
    """Execute every gold query of an EHRSQL split on ``db`` and compare with the published answers.

    Answers are compared after the scorers' canonicalisation (values rounded to 3 decimals,
    rows sorted, first 100 kept).
    """
    _, labels, answers = load_ehrsql_split(split_dir)
    from ehrguard.db.schema import read_schema

    tables = [t.name for t in read_schema(db).tables]
    report = FidelityReport(split=str(split_dir))
    without = [0, 0]
    for key, sql in labels.items():
        if on_item:
            on_item()
        if sql == "null":
            continue
        if key not in answers:
            raise DatasetError(f"answer.json has no answer for id {key}.")
        gold = parse_answer(answers[key])
        ours, error = execute_answer(db, normalize_gold(sql), timeout_s=timeout_s)
        ok = error is None and ours == gold
        used = tables_in(sql, tables)
        for t in used:
            report.per_table[t][0] += ok
            report.per_table[t][1] += 1
        if focus_table not in used:
            without[0] += ok
            without[1] += 1
        report.total += 1
        report.reproduced += ok
        if not ok:
            report.mismatches.append(
                {"id": key, "sql": sql, "published": answers[key][:300], "ours": str(ours)[:300] if ours is not None else None, "error": error}
            )
    report.without_table = {focus_table: without}
    return report
