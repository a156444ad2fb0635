"""The bound the question states, with its end included or not, is the bound the query compares with.

"Aged 65 or over" keeps 65 (``age >= 65``), "over 65" does not (``age > 65``); "at most 2 days" keeps 2, "under 2"
does not. A query that compares with the question's number the other way answers for another group: the patients
aged exactly 65 (often the largest single age in a cohort question) are in or out against the question's word.

The phrases are general English: comparative words ("more than", "older than", "under", "at least", "no more than",
"up to") and the "N or more" / "N and over" forms, each with the side of the number it keeps. Only a number the
question states once, with one such phrase, and the query compares once with a column is read; the repair writes
the comparison the phrase states.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found
from ehrguard.verify.verdict import Finding

_N = r"(\d+(?:\.\d+)?)"
# "Over 3 days" may be a duration ("stayed over 3 days") or a period ("the intake over 3 days"): not read as a bound.
_NOT_A_PERIOD = r"(?!\s*(?:hours?|hrs?|days?|weeks?|months?|years?)\b)"
# (pattern with the number as group 1, the comparison it states). Every phrase is read; a number two phrases overlap
# on ("older than 18 and younger than 65": "18 and younger") is left out, as is a phrase after a negation.
_PHRASES: tuple[tuple[re.Pattern[str], type[exp.Expression]], ...] = tuple((re.compile(p, re.IGNORECASE), op) for p, op in (
    (rf"(?:\b(?:at least|no (?:less|fewer|lower|younger|smaller|shorter) than|not (?:less|fewer|lower|younger|smaller|shorter) "
     rf"than|a minimum of|minimum of)|>=|≥)\s*{_N}", exp.GTE),
    (rf"(?:\b(?:at most|no (?:more|greater|higher|older|larger|longer) than|not (?:more|greater|higher|older|larger|longer) than|"
     rf"up to|a maximum of|maximum of)|<=|≤)\s*{_N}", exp.LTE),
    (rf"(?<![\w.]){_N}\s*(?:[a-z%/]+\s+){{0,2}}?(?:or|and) (?:more|over|above|older|greater|higher|up|upwards|beyond)\b(?!\s+than\b)|"
     rf"(?<![\w.]){_N}\+(?!\d)", exp.GTE),
    (rf"(?<![\w.]){_N}\s*(?:[a-z%/]+\s+){{0,2}}?(?:or|and) (?:less|fewer|under|below|younger|lower|smaller|down)\b(?!\s+than\b)",
     exp.LTE),
    (rf"(?:\b(?:more than|greater than|higher than|older than|larger than|longer than|above|exceeding|in excess of)|>(?!=))\s*{_N}"
     rf"|\bover\s*{_N}{_NOT_A_PERIOD}", exp.GT),
    (rf"(?:\b(?:less than|fewer than|lower than|younger than|smaller than|shorter than|below)|<(?!=))\s*{_N}"
     rf"|\bunder\s*{_N}{_NOT_A_PERIOD}", exp.LT),
))
# A negation or an exclusion anywhere in the question may turn a bound into its complement ("never above 100",
# "excluding those under 18", "not below 2"): the question's bound and the query's comparison may then both be right.
_NEGATED_BOUND = re.compile(r"\b(?:no|not) (?:less|fewer|lower|younger|smaller|shorter|more|greater|higher|older|larger|longer) than\b",
                            re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nor|without|excluding|exclude[sd]?|except|other than|apart from|besides|"
                       r"neither)\b|n't\b", re.IGNORECASE)
_COMPARISONS: tuple[type[exp.Expression], ...] = (exp.GT, exp.GTE, exp.LT, exp.LTE)
_WORDS: dict[type[exp.Expression], str] = {exp.GT: "above it, leaving it out", exp.GTE: "it and above",
                                           exp.LT: "below it, leaving it out", exp.LTE: "it and below"}
_SYMBOL: dict[type[exp.Expression], str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
# The same comparison with the number on the left: 65 < age is age > 65.
_MIRROR: dict[type[exp.Expression], type[exp.Expression]] = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}


def stated_bounds(question: str) -> dict[float, type[exp.Expression]]:
    """Each number the question bounds with one phrase, and the comparison the phrase states; a number stated more than
    once, or bounded two ways, is left out (which mention a comparison reads is then a guess)."""
    text = question.replace(",", "")
    if _NEGATION.search(_NEGATED_BOUND.sub(" ", text)):  # "no more than 3" is a bound of its own, not a negation
        return {}
    mentions: dict[float, int] = {}
    for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.]*\w)", text):
        mentions[float(m.group(0))] = mentions.get(float(m.group(0)), 0) + 1
    found_phrases: list[tuple[int, int, float, type[exp.Expression]]] = []
    for pattern, op in _PHRASES:
        for m in pattern.finditer(text):
            number = next(g for g in m.groups() if g is not None)
            found_phrases.append((m.start(), m.end(), float(number), op))
    # the longest phrase over a stretch is the one meant ("no more than 3", not "more than 3"); two that overlap without
    # one holding the other ("older than 18 and younger": "18 and younger") leave which one is meant a guess
    kept: list[tuple[int, int, float, type[exp.Expression]]] = []
    for phrase in sorted(found_phrases, key=lambda f: f[0] - f[1]):
        if not any(c <= phrase[0] and phrase[1] <= d for c, d, _, _ in kept):
            kept.append(phrase)
    unsure = {n for a, b, n, _ in kept for c, d, _, _ in kept if (a, b) != (c, d) and a < d and c < b}
    bounds: dict[float, set[type[exp.Expression]]] = {}
    for _, _, number, op in kept:
        bounds.setdefault(number, set()).add(op)
    return {n: next(iter(ops)) for n, ops in bounds.items() if len(ops) == 1 and mentions.get(n) == 1 and n not in unsure}


def _number(node: exp.Expression) -> float | None:
    """The value of a numeric literal (a number written as text too: '65' compared as a number is the same bound)."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _number(node.this)
        return -value if value is not None else None
    if isinstance(node, exp.Literal):
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def _rewrite(op: type[exp.Expression]) -> Callable[[exp.Expression], None]:
    def apply(node: exp.Expression) -> None:
        node.replace(op(this=node.this, expression=node.expression))

    return apply


def check_bounds(ctx: SqlContext) -> CheckResult:
    """The query compares a column with the question's number the other way than the question's phrase states."""
    if ctx.tree is None:
        return NOTHING
    stated = stated_bounds(ctx.question)
    if not stated:
        return NOTHING
    compared: dict[float, list[tuple[exp.Expression, type[exp.Expression]]]] = {}
    for node in ctx.tree.find_all(*_COMPARISONS):
        if node.find_ancestor(exp.Not, exp.Except, exp.Case, exp.If) is not None:
            # under NOT (NOT IN, NOT EXISTS) or on the removed side of EXCEPT: the query keeps the complement; inside
            # CASE / IF: a bin's edge ("< 85" for the bin below "85 and over"), not a filter
            continue
        left, right = _number(node.this), _number(node.expression)
        if right is not None and left is None:
            compared.setdefault(right, []).append((node, type(node)))
        elif left is not None and right is None:
            compared.setdefault(left, []).append((node, _MIRROR[type(node)]))
    findings, edits = [], []
    for number, wanted in stated.items():
        nodes = compared.get(number, [])
        if len(nodes) != 1 or nodes[0][1] is wanted:
            continue
        node, written = nodes[0]
        shown = f"{number:g}"
        findings.append(Finding("wrong_bound", "error",
                                f"The question's bound on {shown} keeps {_WORDS[wanted]}; the query compares {_SYMBOL[written]} {shown}, "
                                f"which keeps {_WORDS[written]}.", ctx.span_of(node.sql(dialect="sqlite")),
                                f"{_SYMBOL[wanted]} {shown}"))
        op = wanted if written is type(node) else _MIRROR[wanted]  # keep the number on the side it is written
        edits.append(TreeEdit(_rewrite(op), target=node))
    return found(*findings, edits=edits)
