"""A period tied to a visit is counted from the start of the visit the question names.

"The first 6 hours of the ICU stay" starts when the patient reached the unit, not when the hospital admitted them
(hours or days earlier); "within 24 hours of admission to hospital" starts at the hospital admission.
``wrong_anchor`` (error, no repair: which join reaches the other visit's start is the query's to choose) speaks when
the question ties a period to the start of one kind of visit, and the query counts time from the other kind's start
column (the moment it shifts, subtracts or bounds the period by) and never from the named kind's. Which column
starts a visit comes from the database profile (:func:`~ehrguard.verify.checks.alignment.visit_start`); the phrases
are general English.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.verify.checks.alignment import visit_start
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.verdict import Finding

_AMOUNT = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty-four|forty-eight|seventy-two|a|an)"
_UNIT = r"(?:hours?|hrs?|h|days?|minutes?|mins?|weeks?)"
_OWNER = r"(?:(?:the|his|her|their|this|that|its|an?|each|every|patient\s+\d+'s|\d+'s|[a-z]+'s)\s+)*"
_ICU = r"(?:icu|intensive care(?: unit)?|unit|micu|sicu|ccu|cvicu|tsicu)"
_HOSPITAL = r"(?:hospital|hospitali[sz]ation|inpatient)"
# "the first 6 hours of the ICU stay", "the first day in the ICU", "the first hour of the admission": a period from
# the visit's start ...
_OF = rf"\b(?:(?:first|initial)\s+(?:{_AMOUNT}\s*-?\s*)?{_UNIT}|{_AMOUNT}\s*-?\s*{_UNIT})\s+(?:of|into|in)\s+{_OWNER}"
# ... and "within 24 hours of ICU admission", "48 h after arrival in the ICU": from the arrival itself ("after their
# ICU stay" counts from its end, and is left alone)
_FROM = rf"\b{_AMOUNT}\s*-?\s*{_UNIT}\s+(?:of|after|following|from|since|within)\s+{_OWNER}"
_TIED = {
    "stay": re.compile(rf"{_OF}(?:{_ICU}\s+(?:stay|admission|course)|the {_ICU}\b)"
                       rf"|{_FROM}(?:{_ICU}\s+(?:admission|arrival|transfer)|(?:arrival|admission|transfer)\s+(?:in|to|into)\s+"
                       rf"(?:the\s+)?{_ICU})\b", re.IGNORECASE),
    "admission": re.compile(rf"{_OF}(?:{_HOSPITAL}\s+(?:stay|admission|course)|hospitali[sz]ation|the hospital\b)"
                            rf"|{_FROM}(?:{_HOSPITAL}\s+(?:admission|arrival)|(?:arrival|admission)\s+(?:in|to|into)\s+"
                            rf"(?:the\s+)?{_HOSPITAL})\b", re.IGNORECASE),
}
_OTHER = {"stay": "admission", "admission": "stay"}
_VISIT = {"stay": "ICU stay", "admission": "hospital admission"}


def _column_in(node: exp.Expression | None) -> str | None:
    """The one column a moment is read from (``admittime``, ``julianday(admittime)``, ``date(admittime)``)."""
    columns = list(node.find_all(exp.Column)) if node is not None else []
    return columns[0].name.lower() if len(columns) == 1 else None


def _anchors(tree: exp.Expression) -> set[str]:
    """The columns a query counts periods from: a moment shifted by an amount (``datetime(x, '+6 hours')``, ``x +
    INTERVAL``), the moment subtracted from another (``julianday(t) - julianday(x)``), the lower bound of a range
    (``BETWEEN x AND ...``, ``t >= x``)."""
    found_: set[str] = set()
    for node in tree.find_all(exp.Anonymous, exp.DateAdd, exp.DateSub, exp.TsOrDsAdd, exp.Add, exp.Sub, exp.Between, exp.GT, exp.GTE,
                              exp.LT, exp.LTE):
        base: exp.Expression | None = None
        if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("datetime", "date", "julianday", "strftime") \
                and len(node.expressions) >= 2:
            base = node.expressions[1] if str(node.this).lower() == "strftime" else node.expressions[0]
            if not any(isinstance(a, exp.Literal) and a.is_string and re.match(r"\s*[+-]", a.this) for a in node.expressions[1:]):
                base = None  # no shift: a format, not a period
        elif isinstance(node, exp.DateAdd | exp.DateSub | exp.TsOrDsAdd):
            base = node.this
        elif isinstance(node, exp.Add) and node.find(exp.Interval) is not None:
            base = node.this if not isinstance(node.this, exp.Interval) else node.expression
        elif isinstance(node, exp.Sub):
            base = node.expression
        elif isinstance(node, exp.Between):
            base = node.args.get("low")
        elif isinstance(node, exp.GT | exp.GTE):
            base = node.expression  # t > x: x bounds the period from below
        elif isinstance(node, exp.LT | exp.LTE):
            base = node.this  # x < t
        if base is not None and not base.find(exp.Anonymous, exp.DateAdd, exp.Add, exp.Sub) or isinstance(base, exp.Anonymous):
            name = _column_in(base)
            if name:
                found_.add(name)
    return found_


def check_anchor(ctx: SqlContext) -> CheckResult:
    """The question counts a period from one kind of visit; the query counts it from the other kind's start."""
    if ctx.tree is None:
        return NOTHING
    asked = [kind for kind, pattern in _TIED.items() if pattern.search(ctx.question)]
    if len(asked) != 1:
        return NOTHING
    kind = asked[0]
    want, other = visit_start(ctx, kind), visit_start(ctx, _OTHER[kind])
    if want is None or other is None or want == other:
        return NOTHING
    anchors = _anchors(ctx.tree)
    if other.lower() not in anchors or want.lower() in anchors:
        return NOTHING
    return found(Finding("wrong_anchor", "error",
                         f"The question counts the period from the start of the {_VISIT[kind]}; the query counts it from "
                         f"{other} (the start of the {_VISIT[_OTHER[kind]]}), never from {want}.",
                         ctx.span_of(other)))
