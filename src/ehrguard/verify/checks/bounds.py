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


# A range a text states: "aged 50 to 60", "between 40 and 60", "from 2 through 5", "50-60", "63–73"; eICU patient ids
# ("003-10465") and dates are no ranges.
_RANGE = re.compile(rf"\bbetween\s+{_N}\s+and\s+{_N}|(?<![\w.]){_N}\s*([-\u2010-\u2014]|to|through|thru|and)\s*{_N}(?![\w.])",
                    re.IGNORECASE)
_NOT_RANGES = re.compile(r"\b\d{4}[-\u2010-\u2014]\d{1,2}(?:[-\u2010-\u2014]\d{1,2})?\b|\b\d{1,2}:\d{2}\b|\b\d{3}-\d{4,}\b")
# A decade of life, "in their 70s": 70 up to, not including, 80.
_DECADE = re.compile(r"\b(?:in (?:their|his|her|the)|aged?(?: in (?:their|his|her|the))?)\s+([1-9]0)'?s\b", re.IGNORECASE)
_TIME_OF_DAY_AFTER = re.compile(r"\s*(?:am|pm|o'?clock|hours?|hrs?|h)\b", re.IGNORECASE)


def range_mentions(text: str) -> list[tuple[float, float, int, str]]:
    """Every range the text states with its low end first: (low, high, where it ends, the word joining the ends:
    "between" for "between 40 and 60", else "-", "to", "through", "thru" or a bare "and")."""
    text = _NOT_RANGES.sub(lambda m: " " * len(m.group(0)), text.replace(",", " "))
    out = []
    for m in _RANGE.finditer(text):
        a, b, c, joint, d = m.groups()
        low, high = (float(a), float(b)) if a is not None else (float(c), float(d))
        if low < high:
            out.append((low, high, m.end(), "between" if a is not None else joint.lower()))
    return out


def stated_ranges(question: str) -> list[tuple[float, float, bool]]:
    """Each range the question states once, with both ends kept: (low, high, high end kept). A bare "and" lists two
    numbers rather than joining them; hours of the day are no bound."""
    text = question.replace(",", " ")
    out = [(lo, hi, True) for lo, hi, end, joint in range_mentions(question) if joint != "and" and not _TIME_OF_DAY_AFTER.match(text, end)]
    out += [(float(m.group(1)), float(m.group(1)) + 10, False) for m in _DECADE.finditer(text)]
    return out if len({(lo, hi) for lo, hi, _ in out}) == len(out) else []


def check_ranges(ctx: SqlContext) -> CheckResult:
    """The query leaves out an end of the range the question states ("aged 50 to 60": ``age > 50 AND age < 60``), or
    takes in the next decade's first year ("in their 70s": ``BETWEEN 70 AND 80``). Only where the query compares one
    column with both ends (the range's column), each end the one way that differs from the question's in keeping it."""
    if ctx.tree is None or _NEGATION.search(ctx.question):
        return NOTHING
    findings, edits = [], []
    for low, high, kept in stated_ranges(ctx.question):
        ends: dict[float, list[tuple[exp.Expression, type[exp.Expression], str]]] = {low: [], high: []}
        for node in ctx.tree.find_all(*_COMPARISONS):
            if node.find_ancestor(exp.Not, exp.Except, exp.Case, exp.If) is not None:
                continue
            left, right = _number(node.this), _number(node.expression)
            if right in ends and left is None:
                ends[right].append((node, type(node), node.this.sql()))
            elif left in ends and right is None:
                ends[left].append((node, _MIRROR[type(node)], node.expression.sql()))
        wanted = {low: exp.GTE, high: exp.LTE if kept else exp.LT}
        if any(len(nodes) != 1 for nodes in ends.values()) or ends[low][0][2] != ends[high][0][2]:
            if not kept:
                found_between = _decade_between(ctx, low, high)
                findings += found_between[0]
                edits += found_between[1]
            continue  # not one column bounded by both ends: whatever the query compares, it is not this range
        said = f"the {low:g}s ({low:g} up to {high:g}, not including it)" if not kept else f"{low:g} to {high:g}"
        for number, ((node, written, _),) in ends.items():
            if written is wanted[number] or written is not _STRICT[wanted[number]]:
                continue  # as the question says, or a comparison the other way (another bound, not this range's end)
            effect = "leaves it out" if wanted[number] in (exp.GTE, exp.LTE) else "takes it in"
            findings.append(Finding("wrong_range_end", "error", f"The question asks for {said}; the query's "
                                    f"{_SYMBOL[written]} {number:g} {effect}.", ctx.span_of(node.sql(dialect="sqlite")),
                                    f"{_SYMBOL[wanted[number]]} {number:g}"))
            edits.append(TreeEdit(_rewrite(wanted[number] if written is type(node) else _MIRROR[wanted[number]]), target=node))
    return found(*findings, edits=edits)


# The comparison that differs from a wanted one only in keeping its end (>= vs >, <= vs <).
_STRICT: dict[type[exp.Expression], type[exp.Expression]] = {exp.GTE: exp.GT, exp.LTE: exp.LT, exp.LT: exp.LTE, exp.GT: exp.GTE}


def _decade_between(ctx: SqlContext, low: float, high: float) -> tuple[list[Finding], list[TreeEdit]]:
    """``BETWEEN 70 AND 80`` for "in their 70s": BETWEEN keeps 80, which the decade does not; repaired to
    ``>= 70 AND < 80`` (a value of 79.5 is in the 70s too)."""
    assert ctx.tree is not None
    for node in ctx.tree.find_all(exp.Between):
        if node.find_ancestor(exp.Not) is None and _number(node.args["low"]) == low and _number(node.args["high"]) == high:
            def apply(n: exp.Expression) -> None:
                n.replace(exp.and_(exp.GTE(this=n.this.copy(), expression=n.args["low"].copy()),
                                   exp.LT(this=n.this.copy(), expression=n.args["high"].copy())))
            return ([Finding("wrong_range_end", "error", f"The question asks for the {low:g}s ({low:g} up to {high:g}, not "
                             f"including it); the query's BETWEEN keeps {high:g} too.", ctx.span_of(node.sql(dialect="sqlite")),
                             f">= {low:g} AND < {high:g}")], [TreeEdit(apply, target=node)])
    return [], []
