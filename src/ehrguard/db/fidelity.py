"""Fidelity of a built database: how many published EHRSQL answers its gold SQL reproduces."""

from __future__ import annotations

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


# The EHRSQL split reader lives in ehrguard.benchmarks.ehrsql; these keep the old imports working.
# They import it on call: benchmarks imports db, so db must not import benchmarks while it loads.
def load_ehrsql_split(split_dir: str | Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """:func:`ehrguard.benchmarks.ehrsql.load_ehrsql_split`."""
    from ehrguard.benchmarks.ehrsql import load_ehrsql_split as load

    return load(split_dir)


def ehrsql_pairs(split_dir: str | Path) -> list[tuple[str, str]]:
    """:func:`ehrguard.benchmarks.ehrsql.ehrsql_pairs`."""
    from ehrguard.benchmarks.ehrsql import ehrsql_pairs as pairs

    return pairs(split_dir)


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
                {"id": key, "sql": sql, "published": answers[key][:300],
                 "ours": str(ours)[:300] if ours is not None else None, "error": error}
            )
    report.without_table = {focus_table: without}
    return report
