"""Execution match: the rule SCARE and EHRSQL use to decide that a predicted query is correct.

The rule follows the public evaluation code of SCARE (``src/utils/utils.py``) and the
EHRSQL-2024 scorer (``scoring_program/postprocessing.py``):

1. Normalise both queries (time anchors, vital-sign placeholders, strftime formats);
   the prediction additionally loses code fences, collapses whitespace, and has its
   double-quoted literals turned into single-quoted ones.
2. Make the prediction's top-level ``SELECT DISTINCT`` agree with the gold query's.
3. Execute both; an answer is the sorted list of rows with every value rounded to 3
   decimals when numeric and stringified, first 100 rows kept.
4. Compare (see :func:`answers_match`).

One deliberate difference: the reference code turns an execution error into its
message string and compares strings, so two queries failing with the same message
"match". Here an error on either side is never a match.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ehrguard.errors import DatabaseError
from ehrguard.labels import AMBIGUOUS_SUBTYPES, UNANSWERABLE_SUBTYPES
from ehrguard.profiles import EHRSQL_NOW, answer_rule

NOW = EHRSQL_NOW  # EHRSQL/SCARE fix "now" here (the databases end at this instant); their scorers rewrite it into queries.
NOW_DATE, NOW_TIME = NOW.split(" ")

# Normal ranges substituted for `<vital>_lower` / `<vital>_upper` placeholders (EHRSQL templates).
VITAL_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (35.5, 38.1),
    "sao2": (95.0, 100.0),
    "heart rate": (60.0, 100.0),
    "respiration": (12.0, 18.0),
    "systolic bp": (90.0, 120.0),
    "diastolic bp": (60.0, 90.0),
    "mean bp": (60.0, 110.0),
}

AMBIGUOUS_LABELS = frozenset({"ambiguous", *AMBIGUOUS_SUBTYPES})
UNANSWERABLE_LABELS = frozenset({"unanswerable", *UNANSWERABLE_SUBTYPES})
ABSTENTION_LABELS = AMBIGUOUS_LABELS | UNANSWERABLE_LABELS | {"null"}

MAX_COMPARED_ROWS = 100  # both scorers compare only the first 100 sorted rows.


def is_abstention(output: str | None) -> bool:
    """True when an output is a label (ambiguous/unanswerable/null), not SQL to execute."""
    return output is None or output.strip().lower() in ABSTENTION_LABELS


def label_category(output: str | None) -> str | None:
    """Map an output to ``ambiguous`` / ``unanswerable`` when it is such a label (SCARE's mapping)."""
    if output is None:
        return None
    text = output.strip().lower()
    if text in AMBIGUOUS_LABELS:
        return "ambiguous"
    if text in UNANSWERABLE_LABELS:
        return "unanswerable"
    return None


_LOWER = re.compile(r"[ \n]+([a-zA-Z0-9_]+_lower)")
_UPPER = re.compile(r"[ \n]+([a-zA-Z0-9_]+_upper)")


def _substitute_vitals(query: str) -> str:
    lowers, uppers = _LOWER.findall(query), _UPPER.findall(query)
    if not (lowers and uppers):
        return query
    lower_expr, upper_expr = lowers[0], uppers[0]
    names = {lower_expr[: -len("_lower")], upper_expr[: -len("_upper")]}
    if len(names) != 1:
        return query
    vital = names.pop().replace("_", " ")
    if vital not in VITAL_RANGES:
        return query
    low, high = VITAL_RANGES[vital]
    return query.replace(lower_expr, f"{low}").replace(upper_expr, f"{high}")


def normalize_gold(query: str) -> str:
    """Normalise a gold query the way the reference scorers do before executing it."""
    if "select" not in query.lower():
        return query
    query = query.replace("current_time", f"'{NOW}'")
    query = _substitute_vitals(query)
    return query.replace("%y", "%Y").replace("%j", "%J")


_DOUBLE_QUOTED = re.compile(r'"([^\']*)"')


def normalize_prediction(query: str) -> str:
    """Normalise a predicted query the way SCARE's ``postprocess_pred`` does.

    Examples:
        >>> normalize_prediction("```sql\\nSELECT  x FROM t WHERE a > = \\"b\\"\\n```")
        "SELECT x FROM t WHERE a >= 'b'"
    """
    if "select" not in query.lower():
        return query
    query = query.replace("```sql", "").replace("```", "")
    query = query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")
    query = re.sub("[ ]+", " ", query.replace("\n", " ")).strip()
    query = _DOUBLE_QUOTED.sub(r"'\1'", query)
    query = query.replace("current_time", f"'{NOW}'")
    query = query.replace("'now'", f"'{NOW}'")
    query = query.replace("NOW()", f"'{NOW}'")
    query = query.replace("CURDATE()", f"'{NOW_DATE}'")
    query = query.replace("CURTIME()", f"'{NOW_TIME}'")
    query = _substitute_vitals(query)
    return query.replace("%y", "%Y").replace("%j", "%J")


_SELECT_DISTINCT = re.compile(r"(?i)\bSELECT\s+DISTINCT\b")
_SELECT = re.compile(r"(?i)\bSELECT\b")


def align_distinct(pred: str, gold: str) -> str:
    """Add or remove the prediction's first ``SELECT DISTINCT`` so it agrees with the gold query."""
    pred = pred.strip()
    if pred.lower() == "null" or gold.lower() == "null" or "select" not in pred.lower():
        return pred
    gold_distinct = bool(_SELECT_DISTINCT.search(gold))
    pred_distinct = bool(_SELECT_DISTINCT.search(pred))
    if gold_distinct and not pred_distinct:
        return _SELECT.sub("SELECT DISTINCT", pred, count=1)
    if pred_distinct and not gold_distinct:
        return _SELECT_DISTINCT.sub("SELECT", pred, count=1)
    return pred


def canonical_value(value: Any) -> str:
    """A value as the scorers see it: rounded to 3 decimals when it reads as a number, then a string."""
    try:
        value = round(float(value), 3)
    except (TypeError, ValueError, OverflowError):
        pass
    return str(value)


def canonical_answer(rows: Iterable[Sequence[Any]]) -> list[list[str]]:
    """Rows → sorted list of stringified rows, first 100 kept."""
    return sorted([canonical_value(v) for v in row] for row in rows)[:MAX_COMPARED_ROWS]


def parse_answer(text: str) -> list[list[str]] | None:
    """Read a published answer string (``"[['7.42']]"``) back into canonical rows; None for ``null``."""
    text = text.strip()
    if text == "null":
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"Not an answer list: {text[:80]!r}") from exc
    return canonical_answer(value)


def answers_match(pred: list[list[str]], gold: list[list[str]], gold_sql: str, db_id: str) -> bool:
    """Compare two canonical answers with SCARE's rule (the database profile's ``answer_rule``).

    * ``mimicsql``: row *i* of both must hold the same set of values, for every gold row.
    * Otherwise: both empty → match; prediction empty, gold not → no match; a single-column
      prediction must equal the gold exactly (survival-rate questions — gold SQL with both
      ``AVG`` and ``CASE`` — first scale a predicted value above 1.0 down by 100); a
      multi-column prediction matches when any of its columns' set of non-``None`` values
      equals the set of the gold's first-column values.
    """
    if answer_rule(db_id) == "mimicsql":
        if len(pred) < len(gold):
            return False
        return all(set(g) == set(p) for g, p in zip(gold, pred, strict=False))
    if not pred:
        return not gold
    width = len(pred[0])
    if width == 1:
        if "AVG" in gold_sql and "CASE" in gold_sql:
            try:
                converted = float(pred[0][0])
            except ValueError:
                converted = None
            if converted is not None and converted > 1.0:
                pred = [[str(round(converted / 100, 3))]]
        return pred == gold
    if width > 1:
        gold_first = {row[0] for row in gold}
        for column in zip(*pred, strict=False):
            if {v for v in column if v != "None"} == gold_first:
                return True
    return False


@dataclass
class MatchResult:
    """Outcome of comparing one predicted query with its gold query by execution."""

    match: bool
    pred_sql: str
    gold_sql: str
    pred_answer: list[list[str]] | None = None
    gold_answer: list[list[str]] | None = None
    pred_error: str | None = None
    gold_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def execute_answer(db: Any, sql: str, *, timeout_s: float = 60.0) -> tuple[list[list[str]] | None, str | None]:
    """Execute a query for comparison; returns (canonical answer, None) or (None, error message)."""
    try:
        # The scorers read every row; keep enough to sort before cutting to 100.
        result = db.execute(sql, timeout_s=timeout_s, max_rows=1_000_000)
    except DatabaseError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return canonical_answer(result.rows), None


def execution_match(
    db: Any,
    pred_sql: str,
    gold_sql: str,
    *,
    db_id: str,
    gold_answer: list[list[str]] | None = None,
    timeout_s: float = 60.0,
) -> MatchResult:
    """Decide whether ``pred_sql`` answers like ``gold_sql`` on ``db``.

    Abstention labels are never executed: a labelled prediction does not match an
    answerable gold query (the caller scores abstentions separately).

    Args:
        db: an open database (:func:`ehrguard.db.open_database`).
        pred_sql: the predicted SQL (or a label).
        gold_sql: the gold SQL.
        db_id: ``mimic_iv``, ``eicu`` or ``mimicsql`` (mimicsql compares row by row).
        gold_answer: a precomputed canonical gold answer, to skip executing the gold query.
        timeout_s: limit per query (SCARE uses 60 s).
    """
    pred_norm = normalize_prediction(align_distinct(pred_sql, gold_sql))
    result = MatchResult(match=False, pred_sql=pred_norm, gold_sql=gold_sql)
    if is_abstention(pred_sql) or is_abstention(gold_sql):
        return result
    if gold_answer is None:
        gold_answer, result.gold_error = execute_answer(db, normalize_gold(gold_sql), timeout_s=timeout_s)
    result.gold_answer = gold_answer
    result.pred_answer, result.pred_error = execute_answer(db, pred_norm, timeout_s=timeout_s)
    if result.gold_error or result.pred_error or gold_answer is None or result.pred_answer is None:
        return result
    result.match = answers_match(result.pred_answer, gold_answer, gold_sql, db_id)
    return result
